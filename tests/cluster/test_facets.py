"""QueryService.Facets on a real two-partition cluster: global counts are the archive's, scoped counts are
those of the sessions a search selects, IDF on request, the budget, and `quarry facets`."""

from __future__ import annotations

import math
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from quarry.cli import main
from quarry.cli.facets import facets as facets_command
from quarry.cli.synthetic import generate_sessions
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2, units_pb2
from tests.index.sessions import Msg, session

pytestmark = pytest.mark.cluster

QUERY = "pytest"
DEFAULT_FAMILIES = ["origins", "tags", "count_buckets"]
ALL_FAMILIES = ["origins", "tags", "repos", "hosts", "pushers", "action_types", "count_buckets"]


def _archive() -> list[units_pb2.Session]:
    """The synthetic archive, a few sessions tagged, and two sessions of another origin."""
    sessions = list(generate_sessions(2000, seed=3))
    for i, item in enumerate(sessions):
        item.tags.extend(["even"] if i % 2 == 0 else ["odd", "tagged"] if i % 3 == 0 else [])
        item.host = "ana-laptop" if i % 5 else "bo-laptop"  # where a pushing laptop read it
    sessions.append(session("facet-a", [Msg("user", "run pytest on the parser")], origin="codex-session"))
    sessions.append(session("facet-b", [Msg("user", "a codex chat")], origin="codex-session", tags=("odd",)))
    return sessions


def _bucket(n: int) -> str:
    return "0" if n == 0 else "1-9" if n < 10 else "10-49" if n < 50 else "50-199" if n < 200 else "200+"


def _expected(sessions: list[units_pb2.Session]) -> dict[str, dict[str, int]]:
    return {
        "origins": dict(Counter(s.origin for s in sessions)),
        "tags": dict(Counter(t for s in sessions for t in set(s.tags))),
        "repos": dict(Counter(s.repo for s in sessions if s.repo)),
        "hosts": dict(Counter(s.host for s in sessions if s.host)),
        "pushers": {},  # a cluster without tokens: no token wrote them
        "action_types": dict(Counter(c for s in sessions for c in {a.category for a in s.actions})),
        "count_buckets": dict(Counter(_bucket(len(s.messages)) for s in sessions)),
    }


def _view(response: query_pb2.FacetsResponse, name: str) -> dict[str, dict[str, int]]:
    view = getattr(response, name)
    return {f.family: {v.value: v.count for v in f.values} for f in view.families}


@pytest.fixture(scope="module")
def archive(light_client: QuarryClient) -> list[units_pb2.Session]:
    sessions = _archive()
    report = light_client.ingest_sessions(sessions)
    assert report.sessions_written == len(sessions), report
    return sessions


def test_global_counts_are_the_archives_and_repos_and_action_types_wait_until_asked(
    light_client: QuarryClient, archive: list[units_pb2.Session]
) -> None:
    response = light_client.facets()
    assert not response.scoped_to_query and not response.HasField("scoped")
    assert getattr(response, "global").total_sessions == len(archive)
    assert list(response.complete_families) == DEFAULT_FAMILIES
    assert list(response.deferred_families) == ["repos", "hosts", "pushers", "action_types"]
    assert {s.family: (s.status, s.reason) for s in response.family_status}["repos"] == (
        "deferred",
        "deferred_by_default",
    )
    expected = _expected(archive)
    assert _view(response, "global") == {f: expected[f] for f in DEFAULT_FAMILIES}
    assert not response.budget_exceeded
    assert abs(response.generated_at - time.time() * 1000) < 60_000

    everything = light_client.facets(include_deferred=True)
    assert _view(everything, "global") == expected
    assert list(everything.complete_families) == ALL_FAMILIES and not everything.deferred_families
    named = light_client.facets(families=["action_types"])
    assert list(named.complete_families) == ["action_types"]
    assert _view(named, "global") == {"action_types": expected["action_types"]}


def test_scoped_counts_are_those_of_the_sessions_the_query_selects(
    light_client: QuarryClient, archive: list[units_pb2.Session]
) -> None:
    selected_ids = {h.session.id for h in light_client.search(QUERY, limit=1000).hits}
    assert 0 < len(selected_ids) < len(archive)
    response = light_client.facets(QUERY, include_deferred=True)
    assert response.scoped_to_query
    assert response.scoped.total_sessions == len(selected_ids)
    assert _view(response, "scoped") == _expected([s for s in archive if s.id in selected_ids])
    assert _view(response, "global") == _expected(archive)  # the global view is never narrowed

    by_origin = light_client.facets(QUERY, origins=["codex-session"])
    assert by_origin.scoped.total_sessions == 1  # facet-a: the only codex session about pytest
    assert _view(by_origin, "scoped")["origins"] == {"codex-session": 1}


def test_a_scope_that_selects_nothing_keeps_the_global_view(
    light_client: QuarryClient, archive: list[units_pb2.Session]
) -> None:
    response = light_client.facets("zzzunmatchableword")
    assert response.scoped_to_query and response.scoped.total_sessions == 0
    assert all(not f.values for f in response.scoped.families)
    assert getattr(response, "global").total_sessions == len(archive)


def test_idf_is_against_the_global_universe_and_can_be_left_out(
    light_client: QuarryClient, archive: list[units_pb2.Session]
) -> None:
    response = light_client.facets(QUERY)
    total = len(archive)
    global_tags = {v.value: v for v in _family(getattr(response, "global"), "tags")}
    for value in global_tags.values():
        assert value.idf == pytest.approx(math.log((1 + total) / (1 + value.count)), abs=1e-6)
    assert global_tags["odd"].idf > global_tags["even"].idf  # rarer is higher
    for value in _family(response.scoped, "tags"):  # a scoped value carries its global IDF
        assert value.idf == pytest.approx(global_tags[value.value].idf)
    origins = {v.value: v.idf for v in _family(getattr(response, "global"), "origins")}
    assert origins["claude-code-session"] < origins["codex-session"]

    plain = light_client.facets(QUERY, idf=False)
    assert not plain.idf
    assert all(not v.HasField("idf") for f in getattr(plain, "global").families for v in f.values)


def _family(view: query_pb2.FacetView, name: str) -> list[query_pb2.FacetValue]:
    return list(next(f for f in view.families if f.family == name).values)


def test_a_tiny_budget_returns_at_once_with_the_families_deferred(
    light_client: QuarryClient, archive: list[units_pb2.Session]
) -> None:
    started = time.monotonic()
    response = light_client.facets(QUERY, include_deferred=True, budget_ms=0.01)
    assert time.monotonic() - started < 2.0
    assert response.budget_exceeded
    statuses = {s.family: (s.status, s.reason) for s in response.family_status}
    assert set(response.deferred_families) == set(statuses) - set(response.complete_families)
    assert ("deferred", "budget_exceeded") in statuses.values()
    done = {f.family for f in getattr(response, "global").families}
    assert done == set(response.complete_families)


def test_bad_requests_fail_typed(light_client: QuarryClient) -> None:
    for kwargs, parameter in (
        ({"families": ["origin"]}, "families"),
        ({"origins": ["claude_code"]}, "origins"),
        ({"budget_ms": -1}, "budget_ms"),
    ):
        with pytest.raises(QuarryError) as error:
            light_client.facets(**kwargs)
        assert (error.value.code, error.value.parameter) == (errors_pb2.INVALID_REQUEST, parameter)


def test_cli_prints_the_response_as_json_and_tables(light_home: Path, archive: list[units_pb2.Session]) -> None:
    app = typer.Typer()  # the root CLI's global options, with the command as main.py registers it
    app.callback()(main.main)
    app.command("facets")(facets_command)
    home = ["--home", str(light_home)]
    try:
        result = CliRunner().invoke(
            app, [*home, "--format", "json", "facets", "-q", QUERY, "--no-idf", "--include-deferred"]
        )
        assert result.exit_code == 0, result.output
        document = orjson.loads(result.stdout)
        # proto3 JSON: false and unset fields are left out, int64 numbers are strings
        assert document["scopedToQuery"] is True and "idf" not in document
        assert document["global"]["totalSessions"] == str(len(archive))
        assert document["completeFamilies"] == ALL_FAMILIES
        assert "idf" not in document["global"]["families"][0]["values"][0]

        plain = CliRunner().invoke(app, [*home, "facets", "--origin", "codex-session"])
        assert plain.exit_code == 0, plain.output
        assert f"{len(archive)} sessions in the archive · 2 scoped to origin codex-session" in plain.stdout
        assert "repos: deferred (deferred_by_default)" in plain.stdout
    finally:
        main.settings.format = "plain"
