"""The vector node's in-memory session of each rowid: what collapsing nearest messages to sessions reads."""

from __future__ import annotations

import numpy as np

from quarry.vector.row_sessions import RowSessions


def test_codes_follow_adds_and_removals_and_unknown_rowids_have_none() -> None:
    sessions = RowSessions()
    sessions.add(np.array([1, 2, 7]), ["s:a", "s:b", "s:a"])
    sessions.add(np.array([40_000]), ["s:c"])  # past the array: it grows
    codes = sessions.codes(np.array([7, 2, 1, 40_000, 3, 10**9]))
    a, b, c = codes[2], codes[1], codes[3]  # the sessions of rowids 1, 2 and 40,000
    assert list(codes[:4]) == [a, b, a, c] and len({a, b, c}) == 3 and min(a, b, c) >= 0
    assert list(codes[4:]) == [-1, -1]
    sessions.remove([2, 10**9])
    assert list(sessions.codes(np.array([2, 1]))) == [-1, codes[2]]


def test_a_filters_allowed_rowids_are_its_sessions_vectors_that_are_held() -> None:
    sessions = RowSessions()
    sessions.add(np.array([1, 2, 7, 9]), ["s:a", "s:b", "s:a", "s:c"])
    sessions.remove([9])
    assert sessions.rowids_of(["s:a", "s:unknown"]).tolist() == [1, 7]
    assert sessions.rowids_of(["s:c"]).tolist() == []  # its one vector was removed
    assert sessions.rowids_of([]).dtype == np.int64 and sessions.rowids_of(["s:b"]).tolist() == [2]


def test_a_callers_rowids_are_its_scopes_sessions_vectors_and_none_when_it_sees_them_all() -> None:
    sessions = RowSessions()
    sessions.add(np.array([1, 2, 3]), ["codex:a", "team-a@codex:b", "team-b@codex:c"])
    sessions.add(np.array([8, 9]), ["team-a@codex:d", "codex:a"])  # a new session, a known one
    assert sessions.rowids_in_scopes({"team-a"}).tolist() == [2, 8]
    assert sessions.rowids_in_scopes({"default", "team-b"}).tolist() == [1, 3, 9]
    assert sessions.rowids_in_scopes({"nobody"}).tolist() == []
    assert sessions.rowids_in_scopes(set()).tolist() == []
    assert sessions.rowids_in_scopes({"default", "team-a", "team-b"}) is None  # every vector: no restriction
    sessions.remove([3])
    assert sessions.rowids_in_scopes({"team-b"}).tolist() == []
    assert sessions.rowids_in_scopes({"default", "team-a"}) is None  # team b holds no vector any more
