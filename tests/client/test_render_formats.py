"""Every `--format` of the CLI for sessions, unit rows of each kind and aggregate groups: json and yaml
are the envelope, ndjson one object per item, csv a header and one record per item."""

from __future__ import annotations

import csv
import io

import orjson
import pytest
import yaml
from google.protobuf.message import Message
from rich.console import Console
from typer.testing import CliRunner

from quarry.cli import render
from quarry.cli.lines import RichLines
from quarry.cli.main import app, with_default_command
from quarry.core.errors import QuarryError
from quarry.v1 import ingest_pb2, plan_pb2, query_pb2, units_pb2

SID = "claude-code-session:abc"


def search_envelope() -> query_pb2.SearchEnvelope:
    hits = [
        query_pb2.SearchHit(
            session=units_pb2.Session(id=f"{SID}{n}", origin="claude-code-session", title=f'Fix, "pool" {n}'),
            match=query_pb2.SessionSearchMatch(rank=n, score=-1.5 * n, score_kind="bm25", snippet="line one\nline two"),
        )
        for n in (1, 2)
    ]
    hits.append(
        query_pb2.SearchHit(session=units_pb2.Session(id=f"{SID}3"), match=query_pb2.SessionSearchMatch(rank=3))
    )
    projected = hits[0].projections.add(unit="actions", fields=["tool_name", "is_error", "input"], total=44, cut=True)
    for n in range(2):
        projected.rows.add().update({"tool_name": "Bash", "is_error": n == 1, "input": {"command": "pytest\n-q"}})
    return query_pb2.SearchEnvelope(query="pool with actions[first:2]", retrieval_lane="dialogue", hits=hits, limit=20)


# one row per unit kind, with text that needs quoting in csv
ROWS = {
    "messages": query_pb2.QueryUnitRow(
        message=units_pb2.Message(
            id=f"{SID}:m1",
            role="assistant",
            time_ms=1_750_000_000_000,
            blocks=[
                units_pb2.Block(type="text", text='first, "quoted"'),
                units_pb2.Block(type="code", text="x = 1\ny = 2"),
            ],
        ),
    ),
    "actions": query_pb2.QueryUnitRow(
        action=units_pb2.Action(id=f"{SID}:action:1", category="shell", tool="Bash", command="pytest", failed=True)
    ),
    "blocks": query_pb2.QueryUnitRow(block=units_pb2.Block(id=f"{SID}:m1:0", type="code", text="a,b")),
    "files": query_pb2.QueryUnitRow(
        file=units_pb2.FileTouch(id=f"{SID}:file:db/pool.py", path="db/pool.py", actions=3, categories={"file_edit": 2})
    ),
    "assertions": query_pb2.QueryUnitRow(
        assertion=units_pb2.Assertion(id="a1", kind="decision", status="active", body="use WAL", evidence_refs=["m:1"])
    ),
    "runs": query_pb2.QueryUnitRow(run=units_pb2.Run(id=f"{SID}:run:1", role="subagent", agent="Explore")),
    "observed-events": query_pb2.QueryUnitRow(
        observed_event=units_pb2.ObservedEvent(id=f"{SID}:event:0", kind="api_error", text="overloaded")
    ),
    "context-snapshots": query_pb2.QueryUnitRow(
        context_snapshot=units_pb2.ContextSnapshot(id=f"{SID}:snapshot:0", boundary="compaction", preview="so far")
    ),
    "delegations": query_pb2.QueryUnitRow(
        delegation=units_pb2.Delegation(id=f"{SID}:delegation:1", mapping_state="resolved", description="review")
    ),
}
REF_KINDS = {
    "messages": "message",
    "actions": "action",
    "blocks": "block",
    "files": "file",
    "assertions": "assertion",
    "runs": "run",
    "observed-events": "observed-event",
    "context-snapshots": "context-snapshot",
    "delegations": "delegation",
}


def unit_envelope(unit: str, copies: int = 2) -> query_pb2.QueryUnitEnvelope:
    rows = []
    for _ in range(copies):
        row = query_pb2.QueryUnitRow()
        row.CopyFrom(ROWS[unit])
        payload = getattr(row, row.WhichOneof("row"))
        row.session_id, row.ref = SID, f"{REF_KINDS[unit]}:{payload.id}"
        rows.append(row)
    return query_pb2.QueryUnitEnvelope(query=f"{unit} where x", unit=unit, rows=rows, limit=50)


def aggregate_envelope() -> query_pb2.QueryUnitEnvelope:
    groups = [query_pb2.AggregateCount(key=k, count=n) for k, n in (("assistant", 7), ("user", 3), ("", 1))]
    return query_pb2.QueryUnitEnvelope(
        query="messages where x | group by role | count",
        unit="messages",
        aggregate=True,
        group_by="role",
        groups=groups,
        limit=50,
    )


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, color_system=None), out


def rendered(
    envelope: query_pb2.SearchEnvelope | query_pb2.QueryUnitEnvelope, fmt: str, capsys: pytest.CaptureFixture[str]
) -> str:
    console, plain = plain_console()
    if isinstance(envelope, query_pb2.SearchEnvelope):
        render.search_envelope(envelope, fmt, RichLines(console))
    else:
        render.unit_envelope(envelope, fmt, RichLines(console))
    return plain.getvalue() if fmt == "plain" else capsys.readouterr().out


ENVELOPES = {
    "sessions": search_envelope,
    "aggregate": aggregate_envelope,
    **{unit: (lambda unit=unit: unit_envelope(unit)) for unit in ROWS},
}


def items(envelope: query_pb2.SearchEnvelope | query_pb2.QueryUnitEnvelope) -> list[Message]:
    if isinstance(envelope, query_pb2.SearchEnvelope):
        return list(envelope.hits)
    return list(envelope.groups if envelope.aggregate else envelope.rows)


@pytest.mark.parametrize("name", ENVELOPES)
def test_json_and_yaml_are_the_whole_envelope(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    envelope = ENVELOPES[name]()
    expected = render.to_dict(envelope)
    assert orjson.loads(rendered(envelope, "json", capsys)) == expected
    assert yaml.safe_load(rendered(envelope, "yaml", capsys)) == expected


@pytest.mark.parametrize("name", ENVELOPES)
def test_ndjson_is_one_object_per_hit_row_or_group(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    envelope = ENVELOPES[name]()
    lines = rendered(envelope, "ndjson", capsys).splitlines()
    assert [orjson.loads(line) for line in lines] == [render.to_dict(item) for item in items(envelope)]


@pytest.mark.parametrize("name", ENVELOPES)
def test_csv_has_the_header_and_one_record_per_item(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    envelope = ENVELOPES[name]()
    records = list(csv.reader(io.StringIO(rendered(envelope, "csv", capsys))))
    header, body = records[0], records[1:]
    if name == "sessions":
        assert header == list(render.SESSION_COLUMNS)
    elif name == "aggregate":
        assert header == ["key", "count"]
        assert body == [["assistant", "7"], ["user", "3"], ["", "1"]]
    else:
        assert header[:2] == ["ref", "session_id"] and tuple(header) == render.unit_csv_columns(name)
        assert [r[0] for r in body] == [row.ref for row in envelope.rows]
    assert len(body) == len(items(envelope))
    assert all(len(record) == len(header) for record in body)


def test_csv_cells_keep_text_and_spell_out_values(capsys: pytest.CaptureFixture[str]) -> None:
    def record(unit: str) -> dict[str, str]:
        reader = csv.DictReader(io.StringIO(rendered(unit_envelope(unit, copies=1), "csv", capsys)))
        return next(reader)

    assert record("messages")["text"] == 'first, "quoted"\nx = 1\ny = 2'
    assert record("actions")["failed"] == "true"
    assert record("files")["categories"] == "file_edit=2"
    sessions = list(csv.DictReader(io.StringIO(rendered(search_envelope(), "csv", capsys))))
    assert sessions[0]["title"] == 'Fix, "pool" 1' and sessions[0]["score"] == "-1.5"
    assert sessions[2]["score"] == ""  # unranked: no score, not 0


def test_csv_of_an_empty_result_is_its_header(capsys: pytest.CaptureFixture[str]) -> None:
    empty = query_pb2.QueryUnitEnvelope(query="runs where x", unit="runs")
    assert rendered(empty, "csv", capsys).splitlines() == [",".join(render.unit_csv_columns("runs"))]


@pytest.mark.parametrize("name", ENVELOPES)
def test_plain_lists_every_item(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    envelope = ENVELOPES[name]()
    text = rendered(envelope, "plain", capsys)
    if name == "sessions":
        assert all(hit.session.id in text for hit in envelope.hits)
    elif name == "aggregate":
        assert "3 groups" in text and "assistant" in text and "(none)" in text
    else:
        assert all(row.ref in text for row in envelope.rows)


def test_projected_rows_are_json_objects_and_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    document = orjson.loads(rendered(search_envelope(), "json", capsys))
    assert document["hits"][0]["projections"][0]["rows"][1] == {
        "tool_name": "Bash",
        "is_error": True,
        "input": {"command": "pytest\n-q"},
    }
    text = rendered(search_envelope(), "plain", capsys)
    assert "actions · 2 of 44 rows" in text
    assert 'tool_name=Bash · is_error=true · input={"command":"pytest\\n-q"}' in text


# ----- explain ----------------------------------------------------------------------------------


def explanation() -> query_pb2.ExplainResponse:
    plan = plan_pb2.QueryPlan(
        unit="messages",
        stages=[plan_pb2.PipelineStage(group_by="role"), plan_pb2.PipelineStage(count=True)],
    )
    return query_pb2.ExplainResponse(
        query="messages where x | group by role | count",
        kind="units",
        unit_source="messages",
        ast_json='{"type": "UnitQuery", "unit": "messages"}',
        plan=plan,
    )


def test_explain_prints_the_response_as_json_yaml_or_plain(capsys: pytest.CaptureFixture[str]) -> None:
    response = explanation()
    console, plain = plain_console()
    render.explain(response, "json", console)
    as_json = orjson.loads(capsys.readouterr().out)
    assert as_json == render.to_dict(response)
    assert as_json["plan"]["stages"][0]["groupBy"] == "role" and as_json["unitSource"] == "messages"
    render.explain(response, "yaml", console)
    assert yaml.safe_load(capsys.readouterr().out) == as_json
    render.explain(response, "plain", console)
    text = plain.getvalue()
    assert "unit source messages" in text and '"UnitQuery"' in text and 'group_by: "role"' in text


def test_explain_shows_projections_and_aggregate_plans(capsys: pytest.CaptureFixture[str]) -> None:
    from quarry.dsl import explain

    for query, shown in (
        (
            "repo:x with actions(tool_name, is_error)[is_error:true, last:3]",
            ('unit: "actions"', 'labels: "tool_name"', "rows: 3", "last: true", 'field: "is_error"'),
        ),
        (
            "messages where role:assistant | group by type | agg count, p90:duration_ms",
            ('group_by: "type"', 'function: "p90"', 'field: "duration_ms"'),
        ),
    ):
        console, plain = plain_console()
        render.explain(explain(query), "plain", console)
        text = plain.getvalue()
        assert all(part in text for part in shown), text


def test_explain_and_ingest_reports_have_no_csv_form() -> None:
    console, _ = plain_console()
    with pytest.raises(QuarryError, match="not a table"):
        render.explain(explanation(), "csv", console)
    with pytest.raises(QuarryError, match="not a table"):
        render.ingest_report(ingest_pb2.IngestReport(files=1), "csv", console)


# ----- the options ------------------------------------------------------------------------------


def test_explain_is_a_global_flag_before_the_query() -> None:
    assert with_default_command(["--explain", "--format", "json", "files where path:a"]) == [
        "--explain", "--format", "json", "search", "files where path:a",
    ]  # fmt: skip


def test_an_unknown_format_is_refused() -> None:
    result = CliRunner().invoke(app, ["--format", "xml", "status"])
    assert result.exit_code != 0
    assert "plain, json, ndjson, yaml, csv" in result.output


def test_the_commands_consoles_print_emoji_codes_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    from quarry.cli.lazy import stderr, stdout

    stdout().print("fix :smile: in the :thumbs_up: parser")
    stderr().print("caveat :warning: as written")
    captured = capsys.readouterr()
    assert "fix :smile: in the :thumbs_up: parser" in captured.out
    assert "caveat :warning: as written" in captured.err


def test_explain_says_how_the_text_was_read() -> None:
    from quarry.dsl import explain

    for reading, query_read, shown in (
        ("prose", "why does the pool time out", "read as prose: the words 'why does the pool time out'"),
        ("query", "repo:x timeout", "read as the query language"),
    ):
        response = explain(query_read)
        response.reading, response.query_read = reading, query_read
        console, plain = plain_console()
        render.explain(response, "plain", console)
        assert shown in plain.getvalue()


# ----- status and reports -----------------------------------------------------------------------


def test_status_and_reports_print_proto3_json_and_one_ndjson_record_per_item(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console, _ = plain_console()
    status = query_pb2.ClusterStatusResponse(
        nodes=[
            query_pb2.NodeStatus(name="index-0", role="index", up=True, sessions=12, partitions=[0, 1]),
            query_pb2.NodeStatus(name="vector-0", role="vector", up=True, vectors_pending=3),
        ]
    )
    status.map.partition_replicas.add(partition=0).replicas.add(node="index-0", state="active", applied_seq=7)
    status.map.partition_replicas.add(partition=1).replicas.add(node="index-0", state="catching_up", lag=2)
    render.status(status, "json", console, {"index-0": 1})
    nodes = orjson.loads(capsys.readouterr().out)["nodes"]
    assert nodes[0] == {**render.to_dict(status.nodes[0]), "restarts": 1} and nodes[0]["sessions"] == "12"
    assert nodes[1]["vectorsPending"] == "3"
    render.status(status, "ndjson", console)
    assert [orjson.loads(line)["name"] for line in capsys.readouterr().out.splitlines()] == ["index-0", "vector-0"]
    render.status(status, "csv", console)
    assert capsys.readouterr().out.splitlines()[1].startswith("index-0,index,,true,0,12,")
    render.cluster_status(status, "ndjson", console)
    replicas = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert replicas == [
        {"partition": 0, "node": "index-0", "state": "active", "appliedSeq": "7"},
        {"partition": 1, "node": "index-0", "state": "catching_up", "lag": "2"},
    ]
    report = ingest_pb2.DeleteReport(deleted=["codex-session:a"], searchable=True)
    render.delete_report(report, "ndjson", console)
    assert capsys.readouterr().out == '{"deleted":["codex-session:a"],"searchable":true}\n'  # one line
    render.ingest_report(ingest_pb2.IngestReport(files=2, sessions_written=2), "json", console)
    assert orjson.loads(capsys.readouterr().out) == {"files": 2, "sessionsWritten": 2}
