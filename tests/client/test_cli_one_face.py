"""The CLI says what the HTTP API and the MCP tools say, the same way: `--format json` is the response
message in proto3 JSON (`quarry.core.proto_json.to_json`, lowerCamelCase names), and `--format ndjson`
prints one record per line of every list-shaped answer. Run against a real query node (the query and the
session services over real partitions, in this process) holding real Claude Code logs; the session API
search finds a word that only a session's title holds."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
import orjson
import pytest
from typer.testing import CliRunner

from quarry.cli.main import app, with_default_command
from quarry.client.client import QuarryClient
from quarry.core.config import ClusterInfo
from quarry.core.proto_json import to_json
from quarry.core.routing import partition_for
from quarry.ingest.discover import iter_source_files
from quarry.ingest.parse import iter_parse
from quarry.query.root import Coordinator
from quarry.query.server import QueryServicer, SessionQueryServicer
from quarry.query.sessions import SessionQueries
from quarry.v1 import query_pb2_grpc, sessions_pb2_grpc
from tests.cluster.corpus import session_id, write_session
from tests.partition_servers import PartitionServer, one_partition_each, topology

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
PARENT = "claude-code-session:sess-3"  # delegating.jsonl, with the subagent session below it
CHILD = f"{PARENT}/agent-a1b2"
TITLED = session_id("titled")  # a word only its title holds: TITLE_WORD
TITLE_WORD = "zanzibar"


@dataclass
class Served:
    home: Path
    client: QuarryClient


def _titled_log(folder: Path) -> Path:
    """A Claude Code log whose ai-title record names what no message says."""
    path = write_session(
        folder,
        "titled",
        "ledger",
        [("user", "The nightly totals disagree with the bank export."), ("assistant", "The rounding differs.")],
    )
    title = {"type": "ai-title", "aiTitle": "Zanzibar ledger reconciliation", "sessionId": TITLED.split(":", 1)[1]}
    path.write_bytes(path.read_bytes() + orjson.dumps(title) + b"\n")
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    logs = tmp_path_factory.mktemp("logs")
    paths = [_titled_log(logs), FIXTURES / "delegating.jsonl", FIXTURES / "delegating", FIXTURES / "session.jsonl"]
    sessions = [s for result in iter_parse(iter_source_files(paths)) for s in result.sessions]
    nodes: list[PartitionServer] = one_partition_each(tmp_path_factory.mktemp("partitions"), 2)
    for i, node in enumerate(nodes):
        node.lexical(i).upsert([s for s in sessions if partition_for(s.id, 2) == i])
    coordinator = Coordinator(topology(nodes), None, None)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(coordinator), server)
    sessions_pb2_grpc.add_SessionQueryServiceServicer_to_server(
        SessionQueryServicer(SessionQueries(coordinator.cluster)), server
    )
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    home = tmp_path_factory.mktemp("home")
    ClusterInfo(home=str(home), ingest="", query=address, index=[], vector="").save(home)
    try:
        with QuarryClient(address, "") as client:
            yield Served(home, client)
    finally:
        server.stop(None)
        for node in nodes:
            node.stop()


def quarry(served: Served, *args: str) -> str:
    result = CliRunner().invoke(app, with_default_command(["--home", str(served.home), *args]))
    assert result.exit_code == 0, result.output
    return result.output


def as_json(served: Served, *args: str) -> dict:
    return orjson.loads(quarry(served, "--format", "json", *args))


def lines(served: Served, *args: str) -> list[dict]:
    return [orjson.loads(line) for line in quarry(served, "--format", "ndjson", *args).splitlines()]


# Each session command: its arguments, the SDK call answering the same request, and the repeated field of
# that answer ndjson prints one item per line ("": the answer is no list, one line).
COMMANDS = {
    "list": (("sessions", "list"), lambda s: s.list(), "items"),
    "surface": (("sessions", "surface", PARENT), lambda s: s.surface(PARENT), "events"),
    "events": (("sessions", "events", PARENT, "--seq", "2..6"), None, "events"),
    "event": (("sessions", "event", PARENT, "4", "--before", "2", "--after", "1"), None, "events"),
    "trace-event": (("sessions", "trace-event", PARENT, "4"), lambda s: s.trace_event(PARENT, 4), ""),
    "titles": (("sessions", "titles", PARENT, TITLED, "claude-code-session:nope"), None, "results"),
    "search": (("sessions", "search", "pool"), lambda s: s.search_sessions("pool"), "items"),
    "search-in": (("sessions", "search", "--in", PARENT, "pool"), None, "items"),
}


def _sdk(served: Served, name: str):  # type: ignore[no-untyped-def]
    from quarry.client.sessions import event_filters

    sessions = served.client.sessions
    calls = {
        "events": lambda: sessions.events(PARENT, event_filters(seq=(2, 6))),
        "event": lambda: sessions.event(PARENT, 4, before=2, after=1),
        "titles": lambda: sessions.titles([PARENT, TITLED, "claude-code-session:nope"]),
        "search-in": lambda: sessions.search_events(PARENT, "pool"),
    }
    call = COMMANDS[name][1]
    return call(sessions) if call is not None else calls[name]()


@pytest.mark.parametrize("name", COMMANDS)
def test_json_is_the_answer_in_proto3_json_as_http_and_mcp_write_it(served: Served, name: str) -> None:
    args, _, _ = COMMANDS[name]
    assert as_json(served, *args) == to_json(_sdk(served, name))


@pytest.mark.parametrize("name", COMMANDS)
def test_ndjson_prints_one_record_per_line(served: Served, name: str) -> None:
    args, _, records = COMMANDS[name]
    answer = _sdk(served, name)
    expected = [to_json(item) for item in getattr(answer, records)] if records else [to_json(answer)]
    assert len(expected) > (1 if records else 0), name  # a list of several records, to be printed apart
    assert lines(served, *args) == expected


def test_read_prints_the_header_and_events_or_one_event_per_line(served: Served) -> None:
    header, events = served.client.sessions.read(PARENT)
    document = as_json(served, "sessions", "read", PARENT)
    assert document == {"session": to_json(header), "events": [to_json(e) for e in events]}
    assert "rawJson" in document["events"][0] and "raw_json" not in document["events"][0]
    assert lines(served, "sessions", "read", PARENT) == document["events"]


def test_a_lineage_prints_each_session_with_its_relation_top_down(served: Served) -> None:
    trace = served.client.sessions.lineage(CHILD)
    assert as_json(served, "sessions", "lineage", CHILD) == to_json(trace)
    records = lines(served, "sessions", "lineage", CHILD)
    assert [(r["relation"], r["depth"], r["session"]["header"]["id"]) for r in records] == [
        ("ancestor", -1, PARENT),
        ("target", 0, CHILD),
    ]
    below = lines(served, "sessions", "lineage", PARENT)
    assert [(r["relation"], r["depth"], r["session"]["header"]["id"]) for r in below] == [
        ("target", 0, PARENT),
        ("descendant", 1, CHILD),
    ]


def test_searches_and_unit_queries_name_fields_as_http_does(served: Served) -> None:
    query = "messages where role:user | sort by time desc"
    envelope = as_json(served, query)
    assert envelope == to_json(served.client.query_units(query, limit=20))  # the CLI's default limit
    assert "retrievalLane" not in envelope and envelope["rows"][0]["sessionId"]
    assert [line["ref"] for line in lines(served, query)] == [row["ref"] for row in envelope["rows"]]
    found = as_json(served, "search", "--lane", "dialogue", "rounding")
    assert found["retrievalLane"] == "dialogue" and found["hits"][0]["session"]["id"] == TITLED
    assert "retrieval_lane" not in found and "createdMs" in found["hits"][0]["session"]


def test_an_error_is_the_error_detail_in_proto3_json(served: Served) -> None:
    command = [sys.executable, "-m", "quarry.cli", "--home", str(served.home), "--format", "json", "sessions", "event"]
    failed = subprocess.run([*command, PARENT, "99"], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2, failed.stderr
    error = orjson.loads(failed.stdout)["error"]
    assert (error["code"], error["parameter"]) == ("NOT_FOUND", "seq")
    assert error["message"].endswith("[SESSION_QUERY_EVENT_NOT_FOUND]")


def test_session_search_finds_a_word_only_the_title_holds(served: Served) -> None:
    assert TITLE_WORD not in quarry(served, "sessions", "events", TITLED, "--text", TITLE_WORD).lower()
    page = as_json(served, "sessions", "search", TITLE_WORD.upper())
    [hit] = page["items"]
    assert hit["record"]["header"]["id"] == TITLED
    match = hit["bestMatch"]
    assert match["snippet"] == "Zanzibar ledger reconciliation" and match["record"]["type"] == "claude-code:ai-title"
    plain = quarry(served, "sessions", "search", TITLE_WORD)
    assert TITLED in plain and "Zanzibar ledger reconciliation" in plain
    # the title's words and a message's together: each document must hold every word
    assert as_json(served, "sessions", "search", "zanzibar rounding").get("items", []) == []
    # event filters apply to the title's event as to a message's
    assert as_json(served, "sessions", "search", TITLE_WORD, "--type", "claude-code:user").get("items", []) == []
    both = as_json(served, "sessions", "search", "ledger reconciliation", "--type", "claude-code:ai-title")
    assert [item["record"]["header"]["id"] for item in both["items"]] == [TITLED]


def test_facets_print_one_record_per_view_family_and_value(served: Served) -> None:
    records = lines(served, "facets")
    table = quarry(served, "--format", "csv", "facets").splitlines()
    assert table[0] == "view,family,value,count,idf" and len(records) == len(table) - 1 > 1
    assert {r["view"] for r in records} == {"global"} and all(r["count"] > 0 for r in records)
    printed, answered = as_json(served, "facets"), to_json(served.client.facets(""))
    assert printed.pop("generatedAt") and answered.pop("generatedAt")  # each answer's own clock
    assert printed == answered


def test_a_ref_reads_as_json_yaml_or_one_ndjson_line(served: Served) -> None:
    import yaml

    ref = f"session:{PARENT}"
    document = as_json(served, "read", ref)
    assert document == to_json(served.client.resolve_ref(ref)) and document["session"]["id"] == PARENT
    assert yaml.safe_load(quarry(served, "--format", "yaml", "read", ref)) == document
    assert lines(served, "read", ref) == [document]
