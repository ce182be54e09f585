"""BM25 with the archive's term statistics: a session scores the same however many partitions the
archive is cut into (the query node sums every partition's statistics and sends them with the search, or
the one node holding every partition sums them itself)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.dsl import compile_query
from quarry.v1 import index_pb2, query_pb2
from tests.index.sessions import Msg, session
from tests.query.inprocess import Cluster

QUERIES = ("tests number", "done", "running tests", "please run")


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    one, three = Cluster(tmp_path_factory.mktemp("one"), 1), Cluster(tmp_path_factory.mktemp("three"), 3)
    yield one, three
    one.close()
    three.close()


@pytest.fixture
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    """An archive in one partition, and the same in three partitions all held by one index node."""
    one = Cluster(tmp_path_factory.mktemp("whole"), 1)
    held = Cluster(tmp_path_factory.mktemp("held"), 3, one_node=True)
    yield one, held
    one.close()
    held.close()


def scores(cluster: Cluster, query: str) -> dict[str, float]:
    envelope = cluster.coordinator.search(query_pb2.SearchRequest(query=query, limit=50))
    return {h.session.id: h.match.score for h in envelope.hits}


@pytest.mark.parametrize("query", QUERIES)
def test_a_session_scores_alike_in_one_partition_and_in_three(clusters: tuple[Cluster, Cluster], query: str) -> None:
    one, three = clusters
    whole, cut = scores(one, query), scores(three, query)
    assert whole and whole.keys() == cut.keys()
    for session_id, score in whole.items():
        assert cut[session_id] == pytest.approx(score, rel=1e-5)


def test_without_the_archives_statistics_the_partitions_would_disagree(clusters: tuple[Cluster, Cluster]) -> None:
    """What the statistics correct: each partition's own IDF weighs the same words differently."""
    one, three = clusters
    plan = compile_query("tests number").plan
    request = index_pb2.PartitionSearchRequest(plan=plan, lane="dialogue", limit=50)
    local = {h.session.id: h.score for partition in three.partitions for h in partition.search(request).hits}
    whole = {h.session.id: h.score for h in one.partitions[0].search(request).hits}
    assert any(abs(local[s] - whole[s]) > 1e-3 * whole[s] for s in whole)


@pytest.mark.parametrize("query", QUERIES)
def test_one_node_holding_every_partition_scores_as_one_partition(
    one_node: tuple[Cluster, Cluster], query: str
) -> None:
    one, held = one_node
    whole, cut = scores(one, query), scores(held, query)
    assert whole and whole.keys() == cut.keys()
    for session_id, score in whole.items():
        assert cut[session_id] == pytest.approx(score, rel=1e-5)


def test_sessions_stored_since_the_last_search_weigh_in_on_the_next(
    one_node: tuple[Cluster, Cluster], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The node sums its partitions' statistics for every search: nothing cached can go stale. After new
    sessions, a search scores as on an archive that held them from the start."""
    _, held = one_node
    before = scores(held, "done")
    more = [session(f"more-{n}", [Msg("user", f"done and done again {n}")]) for n in range(6)]
    held.add(more)
    fresh = Cluster(tmp_path_factory.mktemp("fresh"), 3, one_node=True)
    try:
        fresh.add(more)
        expected, after = scores(fresh, "done"), scores(held, "done")
    finally:
        fresh.close()
    assert expected.keys() == after.keys() > before.keys()
    for session_id, score in expected.items():
        assert after[session_id] == pytest.approx(score, rel=1e-5)
    assert any(after[s] != pytest.approx(before[s], rel=1e-5) for s in before)
