"""BM25 with the archive's term statistics: a session scores the same however many partitions the
archive is cut into (the query node sums every partition's statistics and sends them with the search)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.dsl import compile_query
from quarry.v1 import index_pb2, query_pb2
from tests.query.inprocess import Cluster

QUERIES = ("tests number", "done", "running tests", "please run")


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    one, three = Cluster(tmp_path_factory.mktemp("one"), 1), Cluster(tmp_path_factory.mktemp("three"), 3)
    yield one, three
    one.close()
    three.close()


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
