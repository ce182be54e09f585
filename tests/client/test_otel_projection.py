"""The outbound OTel projection on hand-built unit rows: stable ids, parents, log correlation, redaction
by default and its opt-ins, and the OTLP/JSON encoding."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quarry.cli.otel_export import (
    ExportOptions,
    OtlpPushError,
    SessionRows,
    endpoint_urls,
    project,
    push,
    scrub_paths,
    session_scope,
    span_id,
    trace_id,
)
from quarry.core.errors import QuarryError
from quarry.v1 import units_pb2

PARENT = "claude-code-session:p1"
CHILD = f"{PARENT}/agent-a1"
CWD = "/home/dev/ledger"
T0 = 1772445600000
OUTPUT = "SECRET-OUTPUT 1\tdef acquire(self): see /home/dev/ledger/db/pool.py"
PROMPT = "Fix the pool in /home/dev/ledger/db/pool.py please"


def parent_rows() -> SessionRows:
    session = units_pb2.Session(
        id=PARENT,
        origin="claude-code-session",
        native_id="p1",
        title="Fix the pool",
        repo="ledger",
        cwd=CWD,
        branch="main",
        model="claude-sonnet-4-6",
        created_ms=T0,
        updated_ms=T0 + 60_000,
        source_path="/home/dev/.claude/projects/ledger/p1.jsonl",
    )
    messages = [
        units_pb2.Message(
            id=f"{PARENT}:m0",
            session_id=PARENT,
            seq=0,
            role="user",
            authored=True,
            time_ms=T0,
            words=9,
            blocks=[units_pb2.Block(id=f"{PARENT}:m0:0", type="text", text=PROMPT)],
        ),
        units_pb2.Message(
            id=f"{PARENT}:m1",
            session_id=PARENT,
            seq=1,
            role="assistant",
            authored=True,
            time_ms=T0 + 1000,
            model="claude-sonnet-4-6",
            input_tokens=10,
            output_tokens=20,
            blocks=[
                units_pb2.Block(
                    id=f"{PARENT}:m1:0",
                    type="tool_use",
                    tool_name="Read",
                    tool_use_id="toolu_read",
                    text="/home/dev/ledger/db/pool.py",
                    path="/home/dev/ledger/db/pool.py",
                ),
                units_pb2.Block(id=f"{PARENT}:m1:1", type="tool_use", tool_name="Agent", tool_use_id="toolu_agent"),
            ],
        ),
        units_pb2.Message(
            id=f"{PARENT}:m2",
            session_id=PARENT,
            seq=2,
            role="user",
            time_ms=T0 + 3000,
            blocks=[
                units_pb2.Block(id=f"{PARENT}:m2:0", type="tool_result", tool_use_id="toolu_read", text=OUTPUT),
                units_pb2.Block(
                    id=f"{PARENT}:m2:1", type="tool_result", tool_use_id="toolu_agent", text="done", is_error=True
                ),
            ],
        ),
    ]
    actions = [
        units_pb2.Action(
            id=f"{PARENT}:action:0",
            session_id=PARENT,
            message_id=f"{PARENT}:m1",
            block_id=f"{PARENT}:m1:0",
            seq=0,
            category="file_read",
            tool="read",
            path="/home/dev/ledger/db/pool.py",
            output=OUTPUT,
            input_json='{"file_path": "/home/dev/ledger/db/pool.py"}',
            time_ms=T0 + 1000,
        ),
        units_pb2.Action(
            id=f"{PARENT}:action:1",
            session_id=PARENT,
            message_id=f"{PARENT}:m1",
            block_id=f"{PARENT}:m1:1",
            seq=1,
            category="subagent",
            tool="agent",
            output="done",
            failed=True,
            time_ms=T0 + 1000,
        ),
        units_pb2.Action(
            id=f"{PARENT}:action:2",
            session_id=PARENT,
            seq=2,
            category="file_read",
            tool="read",
            path="/etc/hosts",
            time_ms=T0 + 4000,
        ),
    ]
    runs = [
        units_pb2.Run(
            id=f"{PARENT}:run:main",
            session_id=PARENT,
            role="main",
            status="completed",
            started_ms=T0,
            ended_ms=T0 + 60_000,
        ),
        units_pb2.Run(
            id=f"{PARENT}:run:1",
            session_id=PARENT,
            role="subagent",
            status="failed",
            agent="Explore",
            child_session_id=CHILD,
            delegation_id=f"{PARENT}:delegation:1",
            started_ms=T0 + 1000,
            ended_ms=T0 + 3000,
        ),
    ]
    delegations = [
        units_pb2.Delegation(
            id=f"{PARENT}:delegation:1", session_id=PARENT, child_session_id=CHILD, tool_use_ref=f"block:{PARENT}:m1:1"
        )
    ]
    events = [
        units_pb2.ObservedEvent(
            id=f"{PARENT}:event:0",
            session_id=PARENT,
            seq=0,
            kind="session_started",
            time_ms=T0,
            text=f"session started in {CWD} on main",
            source_ref=f"message:{PARENT}:m0",
            object_ref=f"session:{PARENT}",
            delivery_state="recorded",
        ),
        units_pb2.ObservedEvent(
            id=f"{PARENT}:event:1",
            session_id=PARENT,
            seq=1,
            kind="tool_finished",
            time_ms=T0 + 3000,
            text="Read finished: /home/dev/ledger/db/pool.py",
            source_ref=f"block:{PARENT}:m2:0",
            object_ref="Read",
            delivery_state="failed",
        ),
    ]
    snapshots = [
        units_pb2.ContextSnapshot(
            id=f"{PARENT}:snapshot:0",
            session_id=PARENT,
            seq=0,
            boundary="session_start",
            time_ms=T0,
            message_ref=f"message:{PARENT}:m0",
            preview=PROMPT,
            cwd=CWD,
            branch="main",
        )
    ]
    return SessionRows(
        session=session,
        runs=runs,
        actions=actions,
        messages=messages,
        events=events,
        snapshots=snapshots,
        delegations=delegations,
    )


def child_rows() -> SessionRows:
    session = units_pb2.Session(
        id=CHILD, origin="claude-code-session", cwd=CWD, parent_session_id=PARENT, agent="Explore", created_ms=T0 + 1500
    )
    runs = [units_pb2.Run(id=f"{CHILD}:run:main", session_id=CHILD, role="main", started_ms=T0 + 1500)]
    return SessionRows(session=session, runs=runs, trace_root=PARENT, parent_run_ref=f"run:{PARENT}:run:1")


def spans_by_ref(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                out[attributes(span)["quarry.ref"]] = span
    return out


def records_by_ref(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for resource in document["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                out[attributes(record)["quarry.ref"]] = record
    return out


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in item.get("attributes", []):
        value = kv["value"]
        if "arrayValue" in value:
            out[kv["key"]] = [next(iter(v.values())) for v in value["arrayValue"].get("values", [])]
        else:
            out[kv["key"]] = next(iter(value.values()))
    return out


def export(options: ExportOptions | None = None) -> dict[str, Any]:
    return project([parent_rows(), child_rows()], options).document()


def test_ids_are_stable_hashes_and_the_family_shares_one_trace() -> None:
    first, second = export(), export()
    assert first == second
    spans = spans_by_ref(first)
    main = spans[f"run:{PARENT}:run:main"]
    assert main["traceId"] == trace_id(PARENT).hex() and len(main["traceId"]) == 32
    assert main["spanId"] == span_id(f"run:{PARENT}:run:main").hex() and len(main["spanId"]) == 16
    assert {s["traceId"] for s in spans.values()} == {trace_id(PARENT).hex()}
    assert len({s["spanId"] for s in spans.values()}) == len(spans) == 6
    # the trace id does not depend on what else is exported
    alone = spans_by_ref(project([parent_rows()]).document())
    assert alone[f"run:{PARENT}:run:main"] == main


def test_parents_runs_actions_and_the_child_session() -> None:
    spans = spans_by_ref(export())
    main = spans[f"run:{PARENT}:run:main"]
    read = spans[f"action:{PARENT}:action:0"]
    dispatch = spans[f"action:{PARENT}:action:1"]
    subagent = spans[f"run:{PARENT}:run:1"]
    child_main = spans[f"run:{CHILD}:run:main"]
    assert "parentSpanId" not in main
    assert read["parentSpanId"] == dispatch["parentSpanId"] == main["spanId"]
    assert subagent["parentSpanId"] == dispatch["spanId"]  # the delegation's tool_use
    assert child_main["parentSpanId"] == subagent["spanId"]
    assert read["name"] == "execute_tool read" and subagent["name"] == "invoke_agent Explore"
    assert child_main["name"] == "invoke_agent Explore"
    # times: nanosecond strings; the action ends when its result arrived
    assert read["startTimeUnixNano"] == str((T0 + 1000) * 1_000_000)
    assert read["endTimeUnixNano"] == str((T0 + 3000) * 1_000_000)
    assert read["kind"] == 1
    assert dispatch["status"]["code"] == 2 and subagent["status"]["code"] == 2
    assert attributes(dispatch)["quarry.action.failed"] is True
    assert attributes(read)["gen_ai.tool.call.id"] == "toolu_read"
    assert attributes(read)["gen_ai.operation.name"] == "execute_tool"
    assert attributes(subagent)["quarry.child_session.id"] == CHILD


def test_log_records_are_correlated_to_their_spans() -> None:
    document = export()
    spans = spans_by_ref(document)
    records = records_by_ref(document)
    main = spans[f"run:{PARENT}:run:main"]["spanId"]
    read = spans[f"action:{PARENT}:action:0"]["spanId"]
    prompt = records[f"message:{PARENT}:m0"]
    assert prompt["eventName"] == "gen_ai.user.message" and prompt["spanId"] == main
    assert prompt["traceId"] == trace_id(PARENT).hex()
    assert records[f"message:{PARENT}:m1"]["spanId"] == read  # holds the Read call
    assert records[f"message:{PARENT}:m2"]["spanId"] == read  # holds its result
    event = records[f"observed-event:{PARENT}:event:1"]
    assert event["spanId"] == read and event["severityNumber"] == 17
    assert records[f"observed-event:{PARENT}:event:0"]["spanId"] == main
    snapshot = records[f"context-snapshot:{PARENT}:snapshot:0"]
    assert snapshot["eventName"] == "quarry.context_snapshot" and snapshot["spanId"] == main
    assert attributes(records[f"message:{PARENT}:m1"])["gen_ai.usage.output_tokens"] == "20"


def test_redaction_by_default() -> None:
    document = export()
    text = json.dumps(document)
    assert "SECRET-OUTPUT" not in text
    assert "/home/dev" not in text and "/etc/hosts" not in text
    assert "Fix the pool" not in text  # message text, title, preview
    spans = spans_by_ref(document)
    read = attributes(spans[f"action:{PARENT}:action:0"])
    assert read["quarry.output.present"] is True
    assert read["quarry.output.length"] == str(len(OUTPUT))
    assert read["quarry.action.path"] == "db/pool.py"  # relative to the cwd
    assert sorted(read["quarry.redacted"]) == ["output", "path", "text"]
    outside = attributes(spans[f"action:{PARENT}:action:2"])
    assert "quarry.action.path" not in outside and outside["quarry.redacted"] == ["path"]
    records = records_by_ref(document)
    prompt = records[f"message:{PARENT}:m0"]
    assert "body" not in prompt
    assert attributes(prompt)["quarry.text.length"] == str(len(PROMPT))
    assert attributes(prompt)["quarry.redacted"] == ["text"]
    result = attributes(records[f"message:{PARENT}:m2"])
    assert result["quarry.redacted"] == ["output"] and result["quarry.is_error"] is True
    resource = attributes(document["resourceSpans"][0]["resource"])
    assert resource["quarry.session.id"] == PARENT and resource["service.name"] == "claude-code"
    assert "quarry.session.cwd" not in resource and "quarry.session.source_path" not in resource
    assert sorted(resource["quarry.redacted"]) == ["path", "text"]


def test_opt_ins_bring_outputs_text_and_paths_back() -> None:
    outputs = export(ExportOptions(include_outputs=True))
    read = attributes(spans_by_ref(outputs)[f"action:{PARENT}:action:0"])
    # the output is there, its absolute path still cut to the cwd
    assert read["gen_ai.tool.call.result"] == "SECRET-OUTPUT 1\tdef acquire(self): see db/pool.py"
    assert "/home/dev" not in json.dumps(outputs)
    text = export(ExportOptions(include_text=True))
    records = records_by_ref(text)
    assert records[f"message:{PARENT}:m0"]["body"]["stringValue"] == "Fix the pool in db/pool.py please"
    assert records[f"observed-event:{PARENT}:event:0"]["body"]["stringValue"] == "session started in . on main"
    assert "SECRET-OUTPUT" not in json.dumps(text)
    everything = export(ExportOptions(include_outputs=True, include_paths=True, include_text=True))
    spans = spans_by_ref(everything)
    read = attributes(spans[f"action:{PARENT}:action:0"])
    assert read["gen_ai.tool.call.result"] == OUTPUT
    assert read["quarry.action.path"] == "/home/dev/ledger/db/pool.py"
    assert "quarry.redacted" not in read
    assert attributes(spans[f"action:{PARENT}:action:2"])["quarry.action.path"] == "/etc/hosts"
    records = records_by_ref(everything)
    assert records[f"message:{PARENT}:m0"]["body"]["stringValue"] == PROMPT
    assert OUTPUT in records[f"message:{PARENT}:m2"]["body"]["stringValue"]
    snapshot = attributes(records[f"context-snapshot:{PARENT}:snapshot:0"])
    assert snapshot["quarry.snapshot.cwd"] == CWD
    resource = attributes(everything["resourceLogs"][0]["resource"])
    assert resource["quarry.session.cwd"] == CWD and resource["quarry.session.title"] == "Fix the pool"


def test_scrub_paths() -> None:
    assert scrub_paths("in /home/dev/ledger on main", CWD) == ("in . on main", True)
    assert scrub_paths("read /home/dev/ledger/a/b.py and /etc/hosts", CWD) == ("read a/b.py and <path>", True)
    assert scrub_paths("run /review with https://example.com/a/b and/or", CWD)[1] is False


def test_session_scope_quotes_ids() -> None:
    assert session_scope("runs", ["codex-session:a", 'codex-session:b "c"']) == (
        'runs where session.id:(codex-session:a|"codex-session:b \\"c\\"")'
    )


def test_push_posts_each_signal_and_names_a_failure() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    def post(url: str, body: bytes, timeout: float) -> bytes:
        sent.append((url, json.loads(body)))
        return b'{"partialSuccess": {"rejectedSpans": "1", "errorMessage": "too old"}}' if "traces" in url else b"{}"

    projection = project([parent_rows(), child_rows()])
    report = push(projection, "http://collector:4318/", post=post)
    assert [url for url, _ in sent] == ["http://collector:4318/v1/traces", "http://collector:4318/v1/logs"]
    assert sent[0][1] == {"resourceSpans": projection.document()["resourceSpans"]}
    assert report.rejected_spans == 1 and report.messages == ["http://collector:4318/v1/traces: too old"]

    def refuse(url: str, body: bytes, timeout: float) -> bytes:
        raise OtlpPushError(url, 415, "unsupported media type")

    with pytest.raises(OtlpPushError, match=r"http://collector:4318/v1/traces answered HTTP 415"):
        push(projection, "http://collector:4318", post=refuse)
    with pytest.raises(QuarryError):
        endpoint_urls("collector:4318")
