"""The vector node's in-memory session of each rowid: what collapsing nearest messages to sessions reads."""

from __future__ import annotations

import numpy as np

from quarry.index.vector.row_sessions import RowSessions


def test_codes_follow_adds_and_removals_and_unknown_rowids_have_none() -> None:
    sessions = RowSessions()
    sessions.add(np.array([1, 2, 7]), ["s:a", "s:b", "s:a"])
    sessions.add(np.array([40_000]), ["s:c"])  # past the array: it grows
    codes = sessions.codes(np.array([7, 2, 1, 40_000, 3, 10**9]))
    assert [sessions.session_id(c) for c in codes[:4]] == ["s:a", "s:b", "s:a", "s:c"]
    assert list(codes[4:]) == [-1, -1]
    sessions.remove([2, 10**9])
    assert list(sessions.codes(np.array([2, 1]))) == [-1, codes[2]]
