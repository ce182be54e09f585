"""Origins Quarry does not read: a well-formed name (another agent's origin, as `<origin>:<native id>`
too) is valid syntax that matches nothing, and the empty answer says so; a malformed one is an error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.core.errors import QuarryError
from quarry.core.vocab import ORIGINS
from quarry.dsl import compile_query
from quarry.v1 import errors_pb2, query_pb2
from tests.query.inprocess import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    made = Cluster(tmp_path_factory.mktemp("origins"), 2)
    yield made
    made.close()


@pytest.mark.parametrize(
    "query",
    [
        "origin:windsurf-session",
        "origin:(continue-session|codex-session) tests",
        "session:windsurf-session:abc123",
        "sessions where origin:amp-session AND repo:x",
        "messages where session.origin:zed-session",
        "sessions where origin:kiro-session | actions where tool:Bash",
        "origin:CURSOR-SESSION",
    ],
)
def test_another_agents_origin_is_valid_syntax(query: str) -> None:
    compile_query(query)


@pytest.mark.parametrize(
    ("query", "token"),
    [("origin:Cursor_Session", "Cursor_Session"), ("session:cursor!:abc", "cursor!:abc"), ("origin:-x", "-x")],
)
def test_a_malformed_origin_is_still_a_typed_error(query: str, token: str) -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    assert (caught.value.code, caught.value.token) == (errors_pb2.BAD_VALUE, token)


def test_origin_values_fold_to_lower_case() -> None:
    plan = compile_query("sessions where origin:CODEX-SESSION").plan
    assert list(plan.where.field.values) == ["codex-session"]


def test_a_search_for_an_unread_origin_is_empty_and_says_why(cluster: Cluster) -> None:
    envelope = cluster.coordinator.search(query_pb2.SearchRequest(query="origin:windsurf-session tests"))
    assert not envelope.hits
    said = [c for c in envelope.caveats if "does not read sessions of origin windsurf-session" in c]
    assert said and all(origin in said[0] for origin in ORIGINS)


def test_a_session_id_of_an_unread_origin_finds_nothing_and_says_why(cluster: Cluster) -> None:
    envelope = cluster.coordinator.search(query_pb2.SearchRequest(query="session:continue-session:abc"))
    assert not envelope.hits and any("origin continue-session" in c for c in envelope.caveats)


def test_a_unit_query_scoped_to_an_unread_origin_is_empty_and_says_why(cluster: Cluster) -> None:
    scoped = (
        "messages where session.origin:amp-session",
        "sessions where origin:amp-session | messages where role:user",
    )
    for query in scoped:
        envelope = cluster.coordinator.query_units(query_pb2.QueryUnitsRequest(query=query))
        assert not envelope.rows and any("origin amp-session" in c for c in envelope.caveats), query


def test_a_known_origin_missing_from_the_archive_keeps_its_own_caveat(cluster: Cluster) -> None:
    envelope = cluster.coordinator.search(query_pb2.SearchRequest(query="origin:gemini-cli-session tests"))
    assert not envelope.hits
    assert any("holds no session of origin gemini-cli-session" in c for c in envelope.caveats)
    assert not any("does not read" in c for c in envelope.caveats)
