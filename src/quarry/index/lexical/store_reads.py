"""The partition store's named reads: the lookups the index node reads its rows with, each running one
of the statements store_schema.py holds.

`StoreReads` runs each lookup on the connection `_reading()` gives: the Store's are this thread's
reader (each statement its own snapshot), a `Snapshot`'s the one connection of a read transaction
(`Store.snapshot()`), so several lookups see one committed state. Conditions compiled from plans
(predicates.Lowering: `where` text with alias `s` for sessions, `u` for units, and its `params`) are
passed in by the callers; the statements around them are the store's.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import orjson

from quarry.index.lexical import store_schema as sql
from quarry.index.lexical.store_events import EventReads
from quarry.index.lexical.store_schema import json_list
from quarry.v1 import units_pb2

_TEXT_BLOCK_TYPES = frozenset(("text", "code"))
_CURRENT_SURFACES = frozenset(("", "current"))
_PROGRESS_STEPS = 2_000  # SQLite VM steps between deadline checks


class HitRow(NamedTuple):
    session_id: str
    updated_ms: int
    summary: bytes  # a serialized Session without messages and actions
    message: bytes  # a serialized Message; empty when it is gone (replaced after the searcher's snapshot)


class SessionHead(NamedTuple):
    ord: int
    summary: bytes  # a serialized Session without messages and actions
    scope: str


class StoreReads(EventReads):
    """Named lookups over the store's tables (module docstring)."""

    # ---- sessions ---------------------------------------------------------------------------------

    def session_ord(self, session_id: str) -> int | None:
        """The session's ordinal; None when it is not stored."""
        row = self._reading().execute(sql.SESSION_ORD, (session_id,)).fetchone()
        return None if row is None else int(row[0])

    def session_head(self, session_id: str) -> SessionHead | None:
        """The session's ordinal, summary and scope; None when it is not stored."""
        row = self._reading().execute(sql.SESSION_HEAD, (session_id,)).fetchone()
        return None if row is None else SessionHead(*row)

    def session_ords_of(self, session_ids: Sequence[str]) -> list[int]:
        """The ordinals of those of these sessions that are stored."""
        rows = self._reading().execute(sql.SESSION_ORDS_OF, (json_list(session_ids),))
        return [r[0] for r in rows]

    def stored_ids(self, session_ids: Sequence[str]) -> list[str]:
        """Those of these session ids that are stored, in id order."""
        return [r[0] for r in self._reading().execute(sql.STORED_IDS, [json_list(session_ids)])]

    def session_ids(self, session_ords: Sequence[int]) -> dict[int, str]:
        """The ids of these sessions (those still stored), by ordinal."""
        return dict(self._reading().execute(sql.SESSION_IDS, (json_list(session_ords),)).fetchall())

    def ids_and_tool_uses(self, session_ords: Sequence[int]) -> dict[int, tuple[str, int]]:
        """The ids of these sessions (those still stored) and how many of their messages carry a tool use,
        by ordinal: what a rank-only hit says (fusion does not hold a session without tool calls to the
        actions lane)."""
        rows = self._reading().execute(sql.IDS_AND_TOOL_USES, (json_list(session_ords),))
        return {ord_: (id_, tools) for ord_, id_, tools in rows.fetchall()}

    def ords_up_to(self, session_ords: Sequence[int], session_id: str) -> list[int]:
        """Those of these sessions whose id is not greater than `session_id`."""
        rows = self._reading().execute(sql.ORDS_UP_TO, (json_list(session_ords), session_id))
        return [r[0] for r in rows]

    def session_summaries(self, session_ords: Sequence[int]) -> list[tuple[int, str, bytes]]:
        """(ordinal, id, summary) of these sessions (those still stored)."""
        return self._reading().execute(sql.SESSION_SUMMARIES, (json_list(session_ords),)).fetchall()

    def sessions_by_id(
        self, session_ids: Sequence[str], scopes: Collection[str] | None = None
    ) -> list[units_pb2.Session]:
        """Summaries in the order asked, skipping ids this partition does not hold (or whose scope is not
        one of `scopes`, when given)."""
        statement = sql.SESSIONS_BY_ID
        params: list[object] = [json_list(session_ids)]
        if scopes is not None:
            statement += sql.IN_SCOPES
            params.append(json_list(sorted(scopes)))
        found = dict(self._reading().execute(statement, params).fetchall())
        seen: set[str] = set()
        out = []
        for sid in session_ids:
            if sid in found and sid not in seen:
                seen.add(sid)
                out.append(units_pb2.Session.FromString(found[sid]))
        return out

    def hit_rows(self, pairs: Sequence[tuple[int, int]]) -> dict[int, HitRow]:
        """The rows a search shows for (session ordinal, message ordinal) pairs, by session ordinal."""
        rows = self._reading().execute(sql.HIT_ROWS, (orjson.dumps(pairs).decode(),))
        return {row[0]: HitRow(*row[1:]) for row in rows}

    # ---- sessions passing a compiled condition (alias `s`) ---------------------------------------

    def session_ords_where(self, where: str, params: Sequence[object], among: Sequence[int] | None = None) -> list[int]:
        """The ordinals of the sessions passing the condition (of those `among`, when given)."""
        if among is None:
            return [r[0] for r in self._reading().execute(sql.SESSION_ORDS_WHERE.format(where=where), params)]
        rows = self._reading().execute(sql.SESSION_ORDS_AMONG.format(where=where), [json_list(among), *params])
        return [r[0] for r in rows]

    def session_ids_where(self, where: str, params: Sequence[object]) -> list[str]:
        """The ids of the sessions passing the condition, in id order."""
        return [r[0] for r in self._reading().execute(sql.SESSION_IDS_WHERE.format(where=where), params)]

    def count_sessions(self, where: str, params: Sequence[object]) -> int:
        """How many sessions pass the condition."""
        return int(self._reading().execute(sql.COUNT_SESSIONS.format(where=where), params).fetchone()[0])

    def newest_sessions(
        self, where: str, params: Sequence[object], after: tuple[int, str] | None, limit: int
    ) -> list[tuple[bytes, int]]:
        """(summary, updated time) of the first `limit` sessions passing the condition, newest first (ties
        on the id, ascending); with `after` (updated time, session id), those strictly after it."""
        keyset, keyset_params = "", []
        if after is not None:
            keyset, keyset_params = sql.AFTER_SESSION, [after[0], after[0], after[1]]
        statement = sql.NEWEST_SESSIONS.format(where=where, after=keyset)
        return self._reading().execute(statement, [*params, *keyset_params, limit]).fetchall()

    def facet_counts(self, family: str, where: str, params: Sequence[object]) -> list[tuple[str, int]]:
        """(value, sessions) of a facet family (store_schema.FACET_SQL) over the sessions passing the
        condition."""
        return self._reading().execute(sql.FACET_SQL[family].format(where=where), params).fetchall()

    @contextmanager
    def interruptible(self, end: float | None) -> Iterator[Callable[[], bool]]:
        """Interrupts the statements of this connection past `end` (monotonic seconds; they raise
        sqlite3.OperationalError "interrupted"); yields "is the budget spent"."""

        def spent() -> bool:
            return end is not None and time.monotonic() >= end

        if end is None:
            yield spent
            return
        conn = self._reading()
        conn.set_progress_handler(lambda: 1 if spent() else 0, _PROGRESS_STEPS)
        try:
            yield spent
        finally:
            conn.set_progress_handler(None, 0)

    # ---- units of one session (public refs) --------------------------------------------------------

    def message(self, session_ord: int, message_id: str) -> tuple[int, units_pb2.Message] | None:
        """The session's message of this id, with its ordinal; None when it has none."""
        row = self._reading().execute(sql.MESSAGE, (session_ord, message_id)).fetchone()
        return None if row is None else (row[0], units_pb2.Message.FromString(row[1]))

    def messages_around(
        self, session_ord: int, after: int | None = None, before: int | None = None
    ) -> Iterator[units_pb2.Message]:
        """The session's messages after one ordinal (in order) or before one (latest first), read lazily
        along the ordinals within the session's range (`+session_ord`: not through the session index,
        which would read and sort every message of the session first)."""
        conn = self._reading()
        low, high = conn.execute(sql.MESSAGE_SPAN, (session_ord,)).fetchone()
        if after is not None:
            statement, bounds = sql.MESSAGES_AFTER, (after, high)
        else:
            statement, bounds = sql.MESSAGES_BEFORE, (low, before)
        for (proto,) in conn.execute(statement, (*bounds, session_ord)):
            yield units_pb2.Message.FromString(proto)

    def action_block_id(self, session_ord: int, action_id: str) -> str | None:
        """The block id of the tool call the session's action of this id made; None when it has none."""
        row = self._reading().execute(sql.ACTION_BLOCK_ID, (session_ord, action_id)).fetchone()
        return None if row is None else str(row[0])

    def unit_proto(self, table: str, session_ord: int, unit_id: str) -> bytes | None:
        """The serialized derived unit (one of store_schema.UNIT_TABLES) of this id in the session."""
        row = self._reading().execute(sql.UNIT_PROTO.format(table=table), (session_ord, unit_id)).fetchone()
        return None if row is None else row[0]

    def final_text(self, session_ord: int) -> str:
        """The session's final answer (`final_text`)."""
        return final_text(self._reading(), session_ord)

    def commands(self, session_ords: Iterable[int], block_ids: Iterable[str]) -> dict[str, str]:
        """The normalized commands of the actions these tool_use blocks made, by block id."""
        rows = self._reading().execute(sql.COMMANDS, (json_list(session_ords), json_list(block_ids)))
        return dict(rows.fetchall())

    def blocks_of_messages(
        self, message_ords: Sequence[int], where: str | None = None, params: Sequence[object] = ()
    ) -> Iterator[tuple[int, int, str, int, bytes]]:
        """(block ordinal, time, block id, message ordinal, message proto) of the blocks of these messages
        that pass the condition (alias `u`, when given), in message order."""
        statement = sql.BLOCKS_OF_MESSAGES.format(where=f" AND {where}" if where is not None else "")
        return self._reading().execute(statement, [json_list(message_ords), *params])

    # ---- the whole partition -----------------------------------------------------------------------

    def content_digest(self) -> str:
        """sha256 over the sorted (session id, content hash) pairs: replicas holding the same versions of
        the same sessions have the same digest, whatever their ordinals or segment layout."""
        digest = hashlib.sha256()
        for session_id, content_hash in self._reading().execute(sql.CONTENT_HASHES):
            digest.update(f"{session_id}\0{content_hash}\n".encode())
        return digest.hexdigest()

    def totals(self, scopes: Collection[str] | None = None) -> tuple[int, int, int]:
        """(sessions, messages, actions) held by the partition, or by its sessions of `scopes` when given."""
        conn = self._reading()
        if scopes is None:
            return tuple(  # type: ignore[return-value]
                conn.execute(sql.COUNT_ROWS.format(table=table)).fetchone()[0]
                for table in ("sessions", "messages", "actions")
            )
        wanted = json_list(sorted(scopes))
        sessions, messages = conn.execute(sql.SCOPED_SESSION_TOTALS, (wanted,)).fetchone()
        (actions,) = conn.execute(sql.SCOPED_ACTION_TOTAL, (wanted,)).fetchone()
        return sessions, messages, actions


class Snapshot(StoreReads):
    """The store's lookups in one read transaction (Store.snapshot)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _reading(self) -> sqlite3.Connection:
        return self._conn


def dialogue_text(blocks: Iterable[units_pb2.Block]) -> str:
    """The prose and code of these blocks, one after the other; "" when they have none."""
    return "\n".join(b.text for b in blocks if b.type in _TEXT_BLOCK_TYPES and b.text and not b.text.isspace())


def final_text(conn: sqlite3.Connection, session_ord: int) -> str:
    """A session's final answer: the text of its last assistant message on the current surface that
    has some (a message with no surface recorded counts as current); "" when there is none."""
    for (proto,) in conn.execute(sql.ASSISTANT_MESSAGES, (session_ord,)):
        message = units_pb2.Message.FromString(proto)
        if message.surface in _CURRENT_SURFACES and (text := dialogue_text(message.blocks)):
            return text
    return ""
