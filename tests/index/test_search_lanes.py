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
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PartitionServer]:
    server = PartitionServer(tmp_path_factory.mktemp("lanes"), list(range(PARTITIONS)), PARTITIONS)
    sessions = list(generate_sessions(1500, seed=3))
    for partition in range(PARTITIONS):
        mine = [s for s in sessions if partition_for(s.id, PARTITIONS) == partition]
        server.lexical(partition).upsert(mine)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def node(server: PartitionServer) -> Iterator[index_pb2_grpc.IndexServiceStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield index_pb2_grpc.IndexServiceStub(channel)


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


def explaining(request: index_pb2.PartitionSearchRequest, hits: dict[int, list]) -> index_pb2.PartitionSearchRequest:
    """`request` asking its partitions to explain rank-only `hits` (by partition) instead of searching."""
    asked = index_pb2.PartitionSearchRequest()
    asked.CopyFrom(request)
    asked.rank_only = False
    for partition, partition_hits in hits.items():
        asked.explain.add(partition=partition, hits=partition_hits)
    return asked


@pytest.mark.parametrize("lane", ["dialogue", "actions"])
def test_rank_only_hits_are_explained_where_ranked_as_the_search_explains_them(
    node: index_pb2_grpc.IndexServiceStub, lane: str
) -> None:
    """The complete phase of a hybrid search: a rank-only answer names each hit's best message, and the
    partition explains those hits from there exactly as the full search does, without searching again."""
    ranked = apart(node, search(lane, rank_only=True))
    assert all(h.HasField("best") for hits in ranked.values() for h in hits)
    full = {h.session.id: h for hits in apart(node, search(lane, False)).values() for h in hits}
    page = {p: hits[::3] for p, hits in ranked.items()}  # a page: some hits of each partition
    together = node.SearchLanes(
        index_pb2.PartitionLanesRequest(
            searches=[explaining(search(lane, False), page)], partitions=anchors(list(range(PARTITIONS)))
        ),
        timeout=30,
    )
    explained = {h.session.id: h for p in together.partitions for h in p.searches[0].hits}
    assert sorted(explained) == sorted(h.session.id for hits in page.values() for h in hits)
    for session_id, hit in explained.items():
        assert hit.message_id and hit.snippet and hit.session.origin
        expected = full[session_id]
        assert (hit.message_id, hit.snippet, list(hit.matched_terms), hit.session) == (
            expected.message_id,
            expected.snippet,
            list(expected.matched_terms),
            expected.session,
        )
        assert hit.score == expected.score and hit.match_surface == expected.match_surface


def test_a_place_holding_another_session_explains_nothing(node: index_pb2_grpc.IndexServiceStub) -> None:
    """A rank-only hit whose place now holds another session (replaced since it was ranked) is left out,
    not explained with another session's message."""
    ranked = apart(node, search("dialogue", rank_only=True))
    partition, hits = next((p, hits) for p, hits in ranked.items() if len(hits) >= 2)
    moved = index_pb2.PartitionHit()
    moved.CopyFrom(hits[0])
    moved.best.CopyFrom(hits[1].best)  # the place of another session
    request = explaining(search("dialogue", False), {partition: [moved, hits[1]]})
    request.partitions.extend(anchors([partition]))
    together = node.SearchSessions(request, timeout=30)
    assert [h.session.id for p in together.partitions for h in p.hits] == [hits[1].session.id]


def test_hits_of_scopes_the_caller_cannot_see_are_not_explained(
    server: PartitionServer, node: index_pb2_grpc.IndexServiceStub
) -> None:
    ranked = apart(node, search("dialogue", rank_only=True))
    partition, hits = next((p, hits) for p, hits in ranked.items() if hits)
    request = search("dialogue", False)
    lexical = server.lexical(partition)
    assert [h.session.id for h in lexical.explain(request, hits, visible=frozenset({"default"})).hits] == [
        h.session.id for h in hits
    ]
    assert list(lexical.explain(request, hits, visible=frozenset({"another-team"})).hits) == []
