"""`lane:` in a compact query chooses the search lane as SearchRequest.lane does; a request that names
another lane is refused rather than one of the two silently winning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.v1 import errors_pb2, query_pb2
from tests.query.inprocess import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    made = Cluster(tmp_path_factory.mktemp("lanes"), 2)
    yield made
    made.close()


def search(cluster: Cluster, query: str, lane: str = "") -> query_pb2.SearchEnvelope:
    return cluster.coordinator.search(query_pb2.SearchRequest(query=query, lane=lane, limit=50))


def test_the_query_chooses_the_lane_and_searches_as_the_request_would(cluster: Cluster) -> None:
    by_query = search(cluster, "lane:actions pytest")
    by_request = search(cluster, "pytest", lane="actions")
    assert by_query.retrieval_lane == "actions"
    assert [h.session.id for h in by_query.hits] == [h.session.id for h in by_request.hits]
    assert by_query.hits  # the corpus's shell commands run pytest
    assert search(cluster, "pytest lane:actions", lane="actions").retrieval_lane == "actions"  # the same twice


def test_a_request_naming_another_lane_is_refused(cluster: Cluster) -> None:
    with pytest.raises(QuarryError) as caught:
        search(cluster, "lane:actions pytest", lane="dialogue")
    assert (caught.value.code, caught.value.parameter) == (errors_pb2.INVALID_REQUEST, "lane")


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("lane:fast pytest", errors_pb2.BAD_VALUE),
        ("lane:hybrid lane:dialogue pytest", errors_pb2.UNSUPPORTED_FORM),
        ("pytest OR lane:hybrid", errors_pb2.UNSUPPORTED_FORM),
        ("sessions where lane:hybrid AND repo:x", errors_pb2.UNSUPPORTED_FORM),
        ("messages where lane:hybrid", errors_pb2.UNSUPPORTED_FORM),
    ],
)
def test_lane_is_one_known_lane_at_the_top_of_a_compact_query(query: str, code: int) -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    assert caught.value.code == code


def test_the_lane_is_not_a_predicate() -> None:
    assert compile_query("lane:hybrid sqlite").plan == compile_query("sqlite").plan
