"""Each stored vector's session, by rowid, in memory: collapsing FAISS's nearest messages to their
sessions needs the session of every candidate (hundreds per search), and reading them from the store
cost more than the search itself (~4 ms for 800 rows at 40k vectors); only the messages that make the
answer are read there. The vectors a filtered search may return (its allowed sessions') come from it too,
and those a caller may see (its scopes' sessions': a session's scope is read off its id).

Sessions are numbered once seen (`-1`: no vector at that rowid). Writers hold the node's write lock; a
reader sees either the array before a change or after it (a grown array is swapped in whole).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from quarry.core.session_ids import scope_of

_ABSENT = -1


class RowSessions:
    def __init__(self) -> None:
        self._codes = np.full(0, _ABSENT, dtype=np.int32)
        self._code_of: dict[str, int] = {}
        self._session_scopes = np.zeros(0, dtype=np.int32)  # by session number: its scope's number
        self._scope_code_of: dict[str, int] = {}

    def add(self, rowids: np.ndarray, session_ids: Sequence[str]) -> None:
        if not len(rowids):
            return
        known = len(self._code_of)
        codes = np.fromiter((self._code(s) for s in session_ids), dtype=np.int32, count=len(session_ids))
        if len(self._code_of) > known:  # new sessions' scopes, published before any rowid points at them
            self._add_scopes([s for s in dict.fromkeys(session_ids) if self._code_of[s] >= known])
        top = int(rowids.max())
        current = self._codes
        if top >= len(current):
            grown = np.full(max(top + 1, 2 * len(current)), _ABSENT, dtype=np.int32)
            grown[: len(current)] = current
            current = grown
        current[rowids] = codes
        self._codes = current

    def remove(self, rowids: Sequence[int]) -> None:
        if rowids:
            known = np.array([r for r in rowids if r < len(self._codes)], dtype=np.int64)
            self._codes[known] = _ABSENT

    def codes(self, rowids: np.ndarray) -> np.ndarray:
        """The session number of each rowid (-1 for a rowid without a vector)."""
        current = self._codes
        inside = rowids < len(current)
        out = np.full(len(rowids), _ABSENT, dtype=np.int32)
        out[inside] = current[rowids[inside]]
        return out

    def rowids_of(self, session_ids: Sequence[str]) -> np.ndarray:
        """The rowids of these sessions' vectors, ascending: a search's allowed candidates, found without
        reading the store (which cost more than the search for a filter admitting thousands of sessions)."""
        wanted = [code for s in session_ids if (code := self._code_of.get(s)) is not None]
        if not wanted:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.isin(self._codes, np.array(wanted, dtype=np.int32))).astype(np.int64)

    def rowids_in_scopes(self, scopes: Collection[str]) -> np.ndarray | None:
        """The rowids of the vectors of these scopes' sessions, ascending; None when that is every vector
        held now (no restriction to pass on: a vector of another scope added after this read is the
        searcher's to drop, `VectorNode.search`)."""
        codes = self._codes.copy()  # before the scopes (published before their rowids), fixed while read
        wanted = [code for s in scopes if (code := self._scope_code_of.get(s)) is not None]
        if not wanted:
            return np.zeros(0, dtype=np.int64)
        by_session = np.isin(self._session_scopes, np.array(wanted, dtype=np.int32))
        present = codes >= 0
        admitted = present & (codes < len(by_session))
        admitted[admitted] = by_session[codes[admitted]]
        if admitted.sum() == present.sum():
            return None
        return np.flatnonzero(admitted).astype(np.int64)

    def _code(self, session_id: str) -> int:
        return self._code_of.setdefault(session_id, len(self._code_of))

    def _add_scopes(self, session_ids: list[str]) -> None:
        """The scope numbers of newly numbered sessions, in the order of their numbers."""
        scopes = np.fromiter(
            (self._scope_code_of.setdefault(scope_of(s), len(self._scope_code_of)) for s in session_ids),
            dtype=np.int32,
            count=len(session_ids),
        )
        self._session_scopes = np.concatenate([self._session_scopes, scopes])
