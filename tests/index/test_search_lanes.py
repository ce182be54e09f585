"""SearchLanes: one call answering several searches of a query and summaries, per partition, exactly as
SearchSessions and GetSessions answer them apart (a hybrid search's lanes, its page's evidence)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from quarry.cli.synthetic import generate_sessions
from quarry.core.routing import partition_for
from quarry.dsl import compile_query
from quarry.v1 import index_pb2, index_pb2_grpc, plan_pb2
from tests.partition_servers import PartitionServer

PARTITIONS = 2
QUERY = compile_query("error OR test OR build").plan


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[index_pb2_grpc.IndexServiceStub]:
    server = PartitionServer(tmp_path_factory.mktemp("lanes"), list(range(PARTITIONS)), PARTITIONS)
    sessions = list(generate_sessions(1500, seed=3))
    for partition in range(PARTITIONS):
        mine = [s for s in sessions if partition_for(s.id, PARTITIONS) == partition]
        server.lexical(partition).upsert(mine)
    with grpc.insecure_channel(server.address) as channel:
        yield index_pb2_grpc.IndexServiceStub(channel)
    server.stop()


def search(lane: str, rank_only: bool, where: plan_pb2.Predicate | None = None) -> index_pb2.PartitionSearchRequest:
    plan = plan_pb2.QueryPlan()
    plan.CopyFrom(QUERY)
    if where is not None:
        plan.where.CopyFrom(where)
    return index_pb2.PartitionSearchRequest(plan=plan, lane=lane, limit=30, with_snippets=True, rank_only=rank_only)


def anchors(partitions: list[int]) -> list[index_pb2.PartitionAnchor]:
    return [index_pb2.PartitionAnchor(partition=p) for p in partitions]


def apart(node: index_pb2_grpc.IndexServiceStub, request: index_pb2.PartitionSearchRequest) -> dict[int, list]:
    one = index_pb2.PartitionSearchRequest()
    one.CopyFrom(request)
    one.partitions.extend(anchors(list(range(PARTITIONS))))
    return {r.partition: list(r.hits) for r in node.SearchSessions(one, timeout=30).partitions}


def test_each_search_answers_as_it_would_alone(node: index_pb2_grpc.IndexServiceStub) -> None:
    searches = [search("dialogue", rank_only=True), search("actions", rank_only=True), search("dialogue", False)]
    together = node.SearchLanes(
        index_pb2.PartitionLanesRequest(searches=searches, partitions=anchors(list(range(PARTITIONS)))), timeout=30
    )
    assert not together.failures and sorted(p.partition for p in together.partitions) == [0, 1]
    for i, request in enumerate(searches):
        alone = apart(node, request)
        assert any(alone.values())
        for answer in together.partitions:
            assert list(answer.searches[i].hits) == alone[answer.partition]


def test_summaries_come_with_the_searches_from_the_partitions_holding_them(
    node: index_pb2_grpc.IndexServiceStub,
) -> None:
    hits = [h for hits in apart(node, search("dialogue", False)).values() for h in hits]
    wanted = [h.session.id for h in hits[:6]]
    named = plan_pb2.Predicate(session_ids=plan_pb2.SessionIdSet(ids=wanted[:3]))
    together = node.SearchLanes(
        index_pb2.PartitionLanesRequest(
            searches=[search("dialogue", False, where=named)],
            partitions=anchors(list(range(PARTITIONS))),
            summary_session_ids=[*wanted[3:], "claude-code-session:not-held"],
        ),
        timeout=30,
    )
    explained = {h.session.id: h for p in together.partitions for h in p.searches[0].hits}
    assert sorted(explained) == sorted(wanted[:3])
    assert all(h.session == explained[h.session.id].session and h.message_id for h in hits[:3])
    summaries = {s.id: (p.partition, s) for p in together.partitions for s in p.summaries}
    assert sorted(summaries) == sorted(wanted[3:])
    for session_id, (partition, session) in summaries.items():
        assert partition == partition_for(session_id, PARTITIONS) and session.origin


def test_a_partition_the_node_does_not_hold_fails_alone(node: index_pb2_grpc.IndexServiceStub) -> None:
    together = node.SearchLanes(
        index_pb2.PartitionLanesRequest(
            searches=[search("dialogue", True), search("actions", True)], partitions=anchors([0, 7])
        ),
        timeout=30,
    )
    assert [p.partition for p in together.partitions] == [0]
    assert len(together.partitions[0].searches) == 2
    assert [f.partition for f in together.failures] == [7]
