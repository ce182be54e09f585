"""Cursor tokens: opaque, versioned, bound to the request they were minted for."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.query import cursors
from quarry.v1 import errors_pb2

NOW = 1_750_000_000_000


def bound(query: str = "sqlite locking", lane: str = "dialogue", limit: int = 25) -> cursors.Binding:
    return cursors.binding(compile_query(query, now_ms=NOW).plan, lane, limit, partitions=16)


def minted(**kwargs: object) -> cursors.Cursor:
    anchors = {
        0: cursors.Anchor(7.25, "claude-code-session:a", "index-1"),
        9: cursors.Anchor(6.5, "codex-cli-session:b", "index-2"),
    }
    return cursors.Cursor(bound(**kwargs), now_ms=NOW, served=50, anchors=anchors)  # type: ignore[arg-type]


def test_a_token_round_trips_and_is_url_safe() -> None:
    cursor = minted()
    token = cursors.encode(cursor)
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert cursors.decode(token) == cursor
    cursors.check(cursors.decode(token), bound())  # the same request: accepted


def test_the_same_query_binds_alike_and_a_relative_date_binds_to_the_first_pages_clock() -> None:
    assert bound("since:7d sqlite") == bound("since:7d  sqlite")
    later = cursors.binding(compile_query("since:7d sqlite", now_ms=NOW + 60_000).plan, "dialogue", 25, 16)
    assert later != bound("since:7d sqlite")  # so a walk recompiles with the clock its cursor carries


@pytest.mark.parametrize(
    "token",
    ["", "not a cursor", "%%%", "eyJ2IjoxfQ", cursors.seal({}), cursors.seal({"v": 2, "after": "x"})],
    # Sealed tokens differ between processes (a node without a cluster key seals with a random key): fixed
    # ids keep the collection the same in every pytest worker.
    ids=["empty", "words", "percent", "plain-json", "sealed-empty", "sealed-no-anchors"],
)
def test_a_malformed_token_is_an_invalid_cursor(token: str) -> None:
    with pytest.raises(QuarryError) as caught:
        cursors.decode(token)
    assert caught.value.code == errors_pb2.INVALID_CURSOR
    assert caught.value.parameter == "cursor"


@pytest.mark.parametrize("at", [0, 17, 40])
def test_an_edited_or_cut_token_is_an_invalid_cursor(at: int) -> None:
    token = cursors.encode(minted())
    changed = "B" if token[at] == "A" else "A"
    for damaged in (token[:at] + changed + token[at + 1 :], token[: at + 4]):
        with pytest.raises(QuarryError) as caught:
            cursors.decode(damaged)
        assert caught.value.code == errors_pb2.INVALID_CURSOR


@pytest.mark.parametrize("version", [1, 3])
def test_another_version_is_rejected_with_the_version_named(version: int) -> None:
    """Version 1 cursors were bound to partition counts and anchored per partition: a walk restarts."""
    token = cursors.seal({**cursors.unseal(cursors.encode(minted())), "v": version})
    with pytest.raises(QuarryError) as caught:
        cursors.decode(token)
    assert caught.value.code == errors_pb2.INVALID_CURSOR
    assert f"version {version}" in caught.value.message


def test_anchors_name_the_replica_that_served_them() -> None:
    """So that a walk asks the same replica of each partition again while it lives."""
    decoded = cursors.decode(cursors.encode(minted()))
    assert {p: a.node for p, a in decoded.anchors.items()} == {0: "index-1", 9: "index-2"}


@pytest.mark.parametrize(
    ("request_binding", "named"),
    [
        (bound(query="sqlite"), "the query"),
        (bound(query="sqlite locking repo:quarry"), "the query"),
        (bound(lane="hybrid"), "the lane (dialogue → hybrid)"),
        (bound(limit=10), "the limit (25 → 10)"),
        (cursors.binding(compile_query("sqlite locking", now_ms=NOW).plan, "dialogue", 25, 8), "partition count"),
    ],
)
def test_a_cursor_for_another_request_is_stale_naming_what_differs(
    request_binding: cursors.Binding, named: str
) -> None:
    with pytest.raises(QuarryError) as caught:
        cursors.check(cursors.decode(cursors.encode(minted())), request_binding)
    assert caught.value.code == errors_pb2.STALE_CURSOR
    assert named in caught.value.message
