"""Usage figures on a 2-partition cluster with tokens, shared by two teams: the gRPC report, `GET /api/usage`
and `quarry --format json usage` are one report; its figures are the rows of the unit queries it names, run
by the same caller; a token of one team sees none of the other's usage, and naming the other's scope is
refused in the words an unknown scope gets. Team A's replies are tests/query/usage_archive.py's; team B's
use models of their own."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import json_format

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2, units_pb2
from tests.cluster.token_cluster import TokenCluster, token_cluster
from tests.index.sessions import Msg, session
from tests.query.usage_archive import archive, at

pytestmark = pytest.mark.cluster

B_MODELS = ("claude-opus-4-1", "team-b-private-model")
WINDOW = {"since": "2026-05-21", "until": "2026-06-30"}


def team_b_sessions() -> list[units_pb2.Session]:
    """Two sessions of team B, on 2026-06-18, one reply of each of its models (the second recorded at $2)."""
    out = []
    for n, model in enumerate(B_MODELS):
        s = session(
            f"b{n}", [Msg("user", "a question"), Msg("assistant", "an answer")], repo="b-repo", start_ms=at(6, 18)
        )
        reply = s.messages[1]
        reply.model, reply.input_tokens, reply.output_tokens = model, 5000, 700
        reply.cost_usd = 2.0 if n else 0.0
        out.append(s)
    return out


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenCluster]:
    grants = {"a": {"team-a": ["read", "write"]}, "b": {"team-b": ["read", "write"]}}
    with token_cluster(tmp_path_factory.mktemp("quarry-usage"), grants) as cluster:
        for who, sessions in (("a", archive()), ("b", team_b_sessions())):
            with cluster.client(who) as client:
                assert client.ingest_sessions(sessions).sessions_written == len(sessions)
        yield cluster


def http_get(teams: TokenCluster, who: str | None, **params: Any) -> tuple[int, dict[str, Any]]:
    url = f"{teams.http}/api/usage?{urllib.parse.urlencode(params, doseq=True)}"
    headers = {"Authorization": f"Bearer {teams.tokens[who]}"} if who else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def cli(teams: TokenCluster, who: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")} | {"QUARRY_TOKEN": teams.tokens[who]}
    result = subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(teams.home / "cli"), "--cluster", f"grpc://{teams.query}",
         *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, f"exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def report_of(document: dict[str, Any]) -> query_pb2.UsageReport:
    """A report from JSON (proto3 JSON or the CLI's proto field names), its pricing instant left out: each
    surface's report is made when it is asked."""
    report = json_format.ParseDict(document, query_pb2.UsageReport())
    report.ClearField("priced_at_ms")
    return report


@pytest.mark.parametrize("by", ["day", "model", "origin", "repo"])
def test_grpc_http_and_cli_give_one_report(teams: TokenCluster, by: str) -> None:
    with teams.client("a") as client:
        grpc_report = client.usage(by=by, **WINDOW)
    status, http_report = http_get(teams, "a", by=by, **WINDOW)
    assert status == 200, http_report
    cli_report = json.loads(cli(teams, "a", "--format", "json", "usage", "--by", by, "--since", WINDOW["since"],
                                "--until", WINDOW["until"]))  # fmt: skip
    assert grpc_report.total.messages == 8 and grpc_report.total.estimated_cost_usd > 0
    assert report_of(http_report) == report_of(cli_report) == report_of(json_format.MessageToDict(grpc_report))


def test_the_figures_are_the_rows_of_the_unit_queries_it_names(teams: TokenCluster) -> None:
    with teams.client("a") as client:
        report = client.usage(by="repo", **WINDOW)
        total, rows = (client.query_units(query) for query in report.unit_queries[:2])
    assert [(g.key, g.count, g.values[1].value) for g in total.groups] == [
        ("", report.total.messages, report.total.sessions)
    ]
    assert {g.key: [v.value for v in g.values] for g in rows.groups} == {
        row.key: [
            row.figures.messages,
            row.figures.sessions,
            row.figures.input_tokens,
            row.figures.output_tokens,
            row.figures.cache_read_tokens,
            row.figures.cache_write_tokens,
            row.figures.recorded_cost_usd,
        ]
        for row in report.rows
    }
    assert [row.key for row in report.rows] == ["ledger", "webapp"]


def test_a_token_sees_none_of_another_scopes_usage(teams: TokenCluster) -> None:
    with teams.client("b") as client:
        report = client.usage(by="model", **WINDOW)
        repos = client.usage(by="repo", **WINDOW)
    assert sorted(row.key for row in report.rows) == sorted(B_MODELS)
    assert (report.total.sessions, report.total.messages, report.total.input_tokens) == (2, 2, 10_000)
    assert (report.total.recorded_cost_usd, report.total.recorded_messages) == (2.0, 1)
    assert (report.total.estimated_messages, list(report.unpriced_models)) == (1, [])
    assert [row.key for row in repos.rows] == ["b-repo"]
    with teams.client("a") as client:
        a_models = {row.key for row in client.usage(by="model", **WINDOW).rows}
    assert not a_models & set(B_MODELS)


def test_naming_another_scope_is_refused_as_an_unknown_one(teams: TokenCluster) -> None:
    errors = []
    for scope in ("team-b", "team-nobody"):
        with teams.client("a") as client, pytest.raises(QuarryError) as raised:
            client.usage(scopes=[scope])
        errors.append((raised.value.code, raised.value.message.replace(scope, "<scope>")))
        status, body = http_get(teams, "a", scopes=scope)
        assert status == 403 and body["error"]["code"] == "PERMISSION_DENIED"
    assert errors[0] == errors[1] and errors[0][0] == errors_pb2.PERMISSION_DENIED
    with teams.client("a") as client:
        assert client.usage(scopes=["team-a"], **WINDOW).total.messages == 8


def test_http_refuses_what_is_not_a_usage_request(teams: TokenCluster) -> None:
    assert http_get(teams, None, by="day")[0] == 401
    for params, parameter in (
        ({"since": "7d OR role:user"}, "since"),
        ({"by": "week"}, "by"),
        ({"scopes": "TEAM A"}, "scopes"),
        ({"expression": "messages where role:user"}, "expression"),
    ):
        status, body = http_get(teams, "a", **params)
        assert (status, body["error"]["code"], body["error"]["parameter"]) == (400, "INVALID_REQUEST", parameter)


def test_the_cli_prints_recorded_and_estimated_cost_in_labelled_columns(teams: TokenCluster) -> None:
    window = ("--since", WINDOW["since"], "--until", WINDOW["until"])
    table = cli(teams, "a", "usage", "--by", "origin", *window)
    heading = next(line.split() for line in table.splitlines() if line.startswith("origin"))
    assert heading[-2:] == ["USD", "USD"] and "recorded  estimated" in table and "\ntotal " in table
    assert "genai-prices 0.2.3" in table and "mystery-model-9" in table and "messages where role:assistant" in table
    lines = list(csv.DictReader(io.StringIO(cli(teams, "a", "--format", "csv", "usage", "--by", "origin", *window))))
    assert [(line["row"], line["key"]) for line in lines] == [
        ("group", "claude-code-session"),
        ("group", "codex-session"),
        ("group", "gemini-cli-session"),
        ("total", ""),
    ]
    assert lines[-1]["recorded_cost_usd"] == "0.75" and lines[-1]["messages"] == "8"
    ndjson = [
        json.loads(line)
        for line in cli(teams, "a", "--format", "ndjson", "usage", "--by", "origin", *window).splitlines()
    ]
    assert [{k: str(v) for k, v in line.items()} for line in ndjson] == lines
