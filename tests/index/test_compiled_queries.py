"""The contract with quarry.dsl: plans compiled from real query text run on a partition as users expect."""

from __future__ import annotations

import pytest

from quarry.dsl.compile import compile_query
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import index_pb2
from tests.index.conftest import sid


def sessions(partition: LexicalPartition, query: str, lane: str = "dialogue") -> list[index_pb2.PartitionHit]:
    plan = compile_query(query).plan
    return list(
        partition.search(index_pb2.PartitionSearchRequest(plan=plan, lane=lane, limit=10, with_snippets=True)).hits
    )


def rows(partition: LexicalPartition, query: str) -> list[str]:
    plan = compile_query(query).plan
    return [r.sort_id for r in partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows]


def test_compact_text_with_role(loaded: LexicalPartition) -> None:
    assert [h.session.id for h in sessions(loaded, "sqlite locking role:assistant")] == [sid("lock-same")]


def test_separate_fts_leaves_hold_each_in_some_message(loaded: LexicalPartition) -> None:
    """Compact text is one leaf: both words in one message. Separate `~` leaves each hold in some
    message of the session, so lock-split (the words in different messages) matches them too; where
    one message holds both, it scores as the compact query does."""
    compact = {h.session.id: h.score for h in sessions(loaded, "sqlite locking")}
    leaves = {h.session.id: h.score for h in sessions(loaded, 'sessions where ~"sqlite" AND ~"locking"')}
    assert compact.keys() == {sid("lock-same"), sid("lock-user")}
    assert leaves.keys() == compact.keys() | {"codex-session:lock-split"}
    for session_id, score in compact.items():
        assert leaves[session_id] == pytest.approx(score, rel=1e-6)


def test_or_of_fts_leaves_and_negated_text(loaded: LexicalPartition) -> None:
    either = {h.session.id for h in sessions(loaded, 'sessions where ~"kangaroo" OR ~"zebra"')}
    assert either == {sid("tie-a"), sid("tie-b"), sid("zebra-hi"), sid("zebra-lo")}
    # `-word` alone: sessions with no message containing it (unranked, newest first)
    without = [h.session.id for h in sessions(loaded, "repo:quarry -zebra -kangaroo")]
    assert without == [sid("tools"), sid("lock-user"), sid("lock-same")]


def test_phrase_prefix_and_filters(loaded: LexicalPartition) -> None:
    assert [h.session.id for h in sessions(loaded, '"locking keeps failing" tag:active')] == [sid("lock-same")]
    assert {h.session.id for h in sessions(loaded, "kanga*")} == {sid("tie-a"), sid("tie-b")}
    assert [h.session.id for h in sessions(loaded, "pool tool:bash -tag:stale")] == [sid("tools")]
    assert [h.session.id for h in sessions(loaded, 'title:"lodz" migration')] == [sid("polish")]


def test_actions_lane(loaded: LexicalPartition) -> None:
    assert [h.session.id for h in sessions(loaded, "pytest", lane="actions")] == [sid("tools")]


def test_unit_pipelines(loaded: LexicalPartition) -> None:
    assert rows(loaded, "messages where role:assistant AND text:locking") == [
        f"{sid('lock-same')}:m1",
        f"{sid('lock-split', 'codex-session')}:m1",
    ]
    assert rows(loaded, 'sessions where ~"sqlite locking" | messages where role:assistant | sort by time desc') == [
        f"{sid('lock-user')}:m1",
        f"{sid('lock-same')}:m1",
    ]
    assert rows(loaded, "actions where session.repo:quarry AND action:file_edit AND path:db/connection") == [
        f"{sid('tools')}:action:1"
    ]
    assert rows(loaded, "actions where tool:edit AND text:SECRETBODY") == [f"{sid('tools')}:action:1"]
    assert rows(loaded, "blocks where type:code AND text:pool") == [f"{sid('tools')}:m4:1"]
