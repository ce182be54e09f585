"""`quarry export otel` on a real 2-partition cluster: the sessions a query selects become OTLP spans (runs,
tool calls, with their parents across a subagent family) and log records (messages, observed events,
context snapshots); the ids are the same on every export; outputs, text and absolute paths are left out
by default and come back with the flags; --endpoint pushes to an OTLP/HTTP collector."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from quarry.cli.local import LocalCluster
from quarry.cli.otel_export import ExportOptions, export_otel, span_id, trace_id
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2
from tests.client.test_otel_projection import attributes, records_by_ref, spans_by_ref
from tests.cluster.corpus import session_id, write_corpus
from tests.cluster.test_cli import quarry
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
MAIN = "claude-code-session:sess-3"
CHILD = f"{MAIN}/agent-a1b2"
OUTPUT_MARK = "def acquire(self)"  # the output of the Read call (tool output)
TEXT_MARK = "Review the pool module"  # a user message (archive text)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("quarry-otel")
    local = LocalCluster(path, partitions=2, embedder="none", ingest_roots=INGEST_ROOTS)
    local.start()
    archive = tmp_path_factory.mktemp("archive")
    write_corpus(archive)
    shutil.copy(FIXTURES / "delegating.jsonl", archive / "delegating.jsonl")
    shutil.copytree(FIXTURES / "delegating", archive / "delegating")
    try:
        with QuarryClient(local.info().query, local.info().ingest) as client:
            assert list(client.ingest_paths([archive]))[-1].report.sessions_written == 8
        yield path
    finally:
        local.stop()


@pytest.fixture(scope="module")
def client(home: Path) -> Iterator[QuarryClient]:
    with QuarryClient.for_home(home) as quarry:
        yield quarry


def export(home: Path, *args: str) -> dict[str, Any]:
    return json.loads(quarry(home, "export", "otel", *args).stdout)


def test_spans_logs_and_parents_of_a_subagent_family(home: Path) -> None:
    document = export(home, "sessions where repo:quarry")
    spans = spans_by_ref(document)
    records = records_by_ref(document)
    resources = [attributes(r["resource"])["quarry.session.id"] for r in document["resourceSpans"]]
    assert sorted(resources) == [MAIN, CHILD]
    # one trace for the family, named by the root session
    assert {s["traceId"] for s in spans.values()} == {trace_id(MAIN).hex()}
    main = spans[f"run:{MAIN}:run:main"]
    assert "parentSpanId" not in main and main["name"] == "invoke_agent claude-code"
    actions = {ref: span for ref, span in spans.items() if ref.startswith("action:")}
    assert len(actions) == 6  # five in the main session, one in the child
    for ref, span in actions.items():
        owner = MAIN if ref.startswith(f"action:{MAIN}:") else CHILD
        assert span["parentSpanId"] == span_id(f"run:{owner}:run:main").hex(), ref
    dispatch = spans[f"action:{MAIN}:action:0"]
    subagent = spans[f"run:{MAIN}:run:1"]
    child_main = spans[f"run:{CHILD}:run:main"]
    assert subagent["parentSpanId"] == dispatch["spanId"]
    assert child_main["parentSpanId"] == subagent["spanId"]
    assert spans[f"action:{MAIN}:action:2"]["status"]["code"] == 2  # the failed Edit
    # every message is a log record in the trace, on its run's or its tool call's span
    messages = [ref for ref in records if ref.startswith("message:")]
    assert len(messages) == 15 + 4
    span_ids = {s["spanId"] for s in spans.values()}
    for record in records.values():
        assert record["traceId"] == trace_id(MAIN).hex() and record["spanId"] in span_ids
    assert records[f"message:{MAIN}:m5"]["spanId"] == spans[f"action:{MAIN}:action:1"]["spanId"]
    assert any(ref.startswith("observed-event:") for ref in records)
    assert f"context-snapshot:{CHILD}:snapshot:0" in records


def test_ids_are_identical_across_exports(home: Path, client: QuarryClient) -> None:
    first = export(home, "repo:quarry")
    second = export(home, "sessions where repo:quarry")
    assert first == second
    assert export_otel(client, "repo:quarry").document() == first


def test_redaction_by_default_and_the_flags(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "otel.json"
    summary = quarry(home, "--format", "json", "export", "otel", "repo:quarry", "--out", str(out)).stdout
    assert json.loads(summary)["sessions"] == 2 and json.loads(summary)["spans"] > 0
    default = out.read_text()
    assert set(json.loads(default)) == {"resourceSpans", "resourceLogs"}
    assert "/home/dev" not in default
    assert OUTPUT_MARK not in default and TEXT_MARK not in default
    spans = spans_by_ref(json.loads(default))
    read = attributes(spans[f"action:{MAIN}:action:1"])
    assert read["quarry.output.present"] is True and int(read["quarry.output.length"]) > 0
    assert "output" in read["quarry.redacted"]
    assert read["quarry.action.path"] == "db/pool.py"

    outputs = json.dumps(export(home, "repo:quarry", "--include-outputs"))
    assert OUTPUT_MARK in outputs and TEXT_MARK not in outputs and "/home/dev" not in outputs
    text = json.dumps(export(home, "repo:quarry", "--include-text"))
    assert TEXT_MARK in text and OUTPUT_MARK not in text and "/home/dev" not in text
    everything = export(home, "repo:quarry", "--include-outputs", "--include-text", "--include-paths")
    encoded = json.dumps(everything)
    assert OUTPUT_MARK in encoded and TEXT_MARK in encoded and "/home/dev/projects/quarry" in encoded
    resource = attributes(everything["resourceSpans"][0]["resource"])
    assert resource["quarry.session.cwd"] == "/home/dev/projects/quarry"


def test_sessions_without_tool_calls_and_an_empty_selection(home: Path) -> None:
    document = export(home, "sessions where repo:ledger")
    spans = spans_by_ref(document)
    assert set(spans) == {f"run:{session_id(k)}:run:main" for k in ("sqlite", "retry")}
    assert len(records_by_ref(document)) > 5
    assert export(home, "repo:nothing-here") == {"resourceSpans": [], "resourceLogs": []}


def test_invalid_query_is_a_typed_error(home: Path, client: QuarryClient) -> None:
    result = quarry(home, "--format", "json", "export", "otel", "sessions where repo:x AND (", check=False)
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "INVALID_QUERY"
    result = quarry(home, "export", "otel", "messages where role:user", check=False)
    assert result.returncode == 2 and "session query" in result.stderr
    with pytest.raises(QuarryError) as caught:
        export_otel(client, "sessions where (")
    assert caught.value.code == errors_pb2.INVALID_QUERY and caught.value.offset is not None


class Sink:
    """A tiny OTLP/HTTP collector: records every POST, answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                sink.requests.append((self.path, self.headers["Content-Type"], json.loads(body)))
                self.send_response(sink.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}" if sink.status == 200 else b'{"message": "collector says no"}')

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_endpoint_pushes_traces_and_logs(home: Path) -> None:
    sink = Sink()
    try:
        result = quarry(home, "export", "otel", "repo:quarry", "--endpoint", sink.url)
        assert "pushed" in result.stdout and sink.url in result.stdout
        assert [(path, kind) for path, kind, _ in sink.requests] == [
            ("/v1/traces", "application/json"),
            ("/v1/logs", "application/json"),
        ]
        document = export(home, "repo:quarry")
        assert sink.requests[0][2] == {"resourceSpans": document["resourceSpans"]}
        assert sink.requests[1][2] == {"resourceLogs": document["resourceLogs"]}
        pushed = json.dumps(sink.requests[0][2]) + json.dumps(sink.requests[1][2])
        assert OUTPUT_MARK not in pushed and "/home/dev" not in pushed
    finally:
        sink.stop()
    failing = Sink(status=503)
    try:
        result = quarry(home, "export", "otel", "repo:quarry", "--endpoint", failing.url, check=False)
        assert result.returncode == 2
        assert f"{failing.url}/v1/traces" in result.stderr and "503" in result.stderr
    finally:
        failing.stop()
    both = quarry(home, "export", "otel", "repo:quarry", "--endpoint", "http://x", "--out", "f.json", check=False)
    assert both.returncode == 2 and "exclude each other" in both.stderr


def test_library_options_match_the_flags(client: QuarryClient) -> None:
    projection = export_otel(client, "repo:quarry", ExportOptions(include_outputs=True))
    assert OUTPUT_MARK in json.dumps(projection.document())
    assert projection.sessions == 2 and projection.span_count == 6 + 2 + 2  # actions, main runs, subagent runs
