"""The surface contract: one request through gRPC (the Python SDK), the HTTP JSON API, MCP (a real client
session of the official SDK over stdio) and the CLI's `--format json` gives the same message, and a typed
error the same ErrorDetail, on one 2-partition cluster.

Each surface's answer is read back into the gRPC message with `json_format.ParseDict`: HTTP, MCP and the
CLI's json all write proto3 JSON (`quarry.core.proto_json`), and the CLI's document is the HTTP body itself.
Messages are then compared whole (in proto3 JSON, by test_http_api's `same_page`), but for the server
timings and clock (`timingsMs`, `generatedAt`) and the mint time inside a cursor: cursors compare by what
they bind and where the walk stands.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from anyio.from_thread import start_blocking_portal
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_status import rpc_status
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.proto_json import to_json
from quarry.v1 import errors_pb2, query_pb2, refs_pb2
from tests.cluster.corpus import session_id, write_corpus
from tests.cluster.test_http_api import free_port, get, same_page
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

Surfaces = dict[str, Message]  # surface name -> its answer as the gRPC message


@dataclass(frozen=True)
class Cluster:
    home: Path  # what the CLI and `quarry mcp` are pointed at (--home: its cluster.json)
    base: str  # the HTTP API
    client: QuarryClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("quarry-surfaces")
    port = free_port()
    local = LocalCluster(home, partitions=2, embedder="none", http=f"127.0.0.1:{port}", ingest_roots=INGEST_ROOTS)
    local.start()
    archive = tmp_path_factory.mktemp("archive")
    write_corpus(archive)
    try:
        with QuarryClient(local.info().query, local.info().ingest) as client:
            assert list(client.ingest_paths([archive]))[-1].report.sessions_written > 0
            yield Cluster(home, f"http://127.0.0.1:{port}", client)
    finally:
        local.stop()


@pytest.fixture(scope="module")
def mcp_tool(cluster: Cluster) -> Iterator[Callable[[str, dict[str, Any]], Any]]:
    """One MCP client session over stdio with `quarry mcp`, held open for the module (test_mcp's
    `mcp_calls` runs a fixed list of calls per session; the second page needs the first page's cursor):
    call(tool, arguments) -> CallToolResult."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "quarry.cli", "--home", str(cluster.home), "mcp"]
    )

    @asynccontextmanager
    async def session() -> AsyncIterator[ClientSession]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as opened:
            await opened.initialize()
            yield opened

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(session()) as opened:
        yield lambda tool, arguments: portal.call(opened.call_tool, tool, arguments)


def quarry_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`quarry --home HOME --format json ARGS…`, as test_cli.py runs it."""
    command = [sys.executable, "-m", "quarry.cli", "--home", str(home), "--format", "json", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


# ----- reading each surface back into the gRPC message -------------------------------------------


def assert_same(answers: Surfaces) -> None:
    """Every surface's message equals gRPC's but for timings, clock and a cursor's mint time (same_page)."""
    expected = to_json(answers["grpc"])
    for surface, message in answers.items():
        got = to_json(message)
        assert same_page(got, expected), f"{surface} differs from gRPC:\n{got}\n!=\n{expected}"


@dataclass(frozen=True)
class Request:
    """One request as each surface spells it."""

    message_type: type[Message]
    grpc: Callable[[QuarryClient], Message]
    http: tuple[str, dict[str, Any]]  # route, query parameters
    mcp: tuple[str, dict[str, Any]]  # tool, arguments
    cli: tuple[str, ...]  # after `quarry --home … --format json`


def ask(cluster: Cluster, mcp_tool: Callable[[str, dict[str, Any]], Any], request: Request) -> Surfaces:
    message_type = request.message_type
    status, body = get(cluster.base, request.http[0], **request.http[1])
    assert status == 200, body
    tool = mcp_tool(*request.mcp)
    assert not tool.is_error, tool.structured_content
    cli = quarry_cli(cluster.home, *request.cli)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    printed = orjson.loads(cli.stdout)
    assert same_page(printed, body), f"the CLI's json differs from the HTTP body:\n{printed}\n!=\n{body}"
    return {
        "grpc": request.grpc(cluster.client),
        "http": json_format.ParseDict(body, message_type()),
        "mcp": json_format.ParseDict(tool.structured_content, message_type()),
        "cli": json_format.ParseDict(printed, message_type()),
    }


def search_request(query: str, limit: int, cursors: dict[str, str] | None = None) -> Request:
    """A lexical search (the dialogue lane); `cursors`: each surface's own next_cursor of the page before."""
    cursors = cursors or {}

    def cursor(surface: str) -> dict[str, str]:
        return {"cursor": cursors[surface]} if surface in cursors else {}

    cli_cursor = ("--cursor", cursors["cli"]) if "cli" in cursors else ()
    return Request(
        query_pb2.SearchEnvelope,
        lambda c: c.search(query, lane="dialogue", limit=limit, cursor=cursors.get("grpc", "")),
        ("/api/sessions", {"query": query, "lane": "dialogue", "limit": limit, **cursor("http")}),
        ("search", {"query": query, "lane": "dialogue", "limit": limit, **cursor("mcp")}),
        ("search", "--lane", "dialogue", "--limit", str(limit), *cli_cursor, query),
    )


def units_request(query: str, limit: int) -> Request:
    return Request(
        query_pb2.QueryUnitEnvelope,
        lambda c: c.query_units(query, limit=limit),
        ("/api/query-units", {"expression": query, "limit": limit}),
        ("query_units", {"query": query, "limit": limit}),
        ("search", "--limit", str(limit), query),
    )


def ref_request(ref: str) -> Request:
    return Request(
        refs_pb2.ResolvedRef,
        lambda c: c.resolve_ref(ref),
        ("/api/refs/resolve", {"ref": ref}),
        ("resolve_ref", {"ref": ref}),
        ("read", ref),
    )


# ----- the contract ------------------------------------------------------------------------------


def test_a_lexical_search_and_its_next_page(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    first = ask(cluster, mcp_tool, search_request("timeout", 1))
    assert first["grpc"].hits and first["grpc"].next_cursor and first["grpc"].hits[0].match.HasField("score")
    assert_same(first)
    second = ask(cluster, mcp_tool, search_request("timeout", 1, {s: m.next_cursor for s, m in first.items()}))
    assert second["grpc"].hits and second["grpc"].hits[0].session.id != first["grpc"].hits[0].session.id
    assert second["grpc"].hits[0].match.rank == 2
    assert_same(second)


def test_a_unit_query(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    answers = ask(cluster, mcp_tool, units_request("messages where role:assistant AND text:timeout", 5))
    assert {row.session_id for row in answers["grpc"].rows} == {session_id("sqlite"), session_id("retry")}
    assert_same(answers)


def test_a_unit_aggregate(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    answers = ask(cluster, mcp_tool, units_request("messages where text:sqlite | group by role | count", 10))
    assert answers["grpc"].aggregate and [(g.key, g.count) for g in answers["grpc"].groups] == [
        ("user", 2),
        ("assistant", 1),
    ]
    assert_same(answers)


def test_facets(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    families = ["origins", "tags"]
    request = Request(
        query_pb2.FacetsResponse,
        lambda c: c.facets("sqlite", families=families),
        ("/api/facets", {"query": "sqlite", "families": families}),
        ("facets", {"query": "sqlite", "families": families}),
        ("facets", "--query", "sqlite", *(arg for family in families for arg in ("--family", family))),
    )
    answers = ask(cluster, mcp_tool, request)
    assert answers["grpc"].scoped_to_query and answers["grpc"].scoped.total_sessions > 0
    assert_same(answers)


def test_resolving_a_session_ref(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    answers = ask(cluster, mcp_tool, ref_request(f"session:{session_id('sqlite')}"))
    assert answers["grpc"].resolved and answers["grpc"].HasField("session")
    assert_same(answers)


def test_resolving_a_message_ref(cluster: Cluster, mcp_tool: Callable[..., Any]) -> None:
    row = cluster.client.query_units("messages where role:assistant AND text:wal", limit=1).rows[0]
    answers = ask(cluster, mcp_tool, ref_request(row.ref))
    assert answers["grpc"].resolved and answers["grpc"].HasField("message")
    assert_same(answers)


@pytest.mark.parametrize(
    ("query", "cursor", "code", "http_status"),
    [
        # a query-language error with a position (the CLI finds it compiling the query itself, to tell a
        # unit query from a search: main.search's compile_query, before any call)
        ("sessions where bogusfield:1", "", errors_pb2.UNKNOWN_FIELD, 422),
        # an error only the query node finds: the CLI relays the gRPC status detail
        ("timeout", "not-a-cursor", errors_pb2.INVALID_CURSOR, 400),
    ],
    ids=["query-error", "server-error"],
)
def test_a_typed_error(
    cluster: Cluster, mcp_tool: Callable[..., Any], query: str, cursor: str, code: int, http_status: int
) -> None:
    request = query_pb2.SearchRequest(query=query, lane="dialogue", limit=5, cursor=cursor)
    with pytest.raises(grpc.RpcError) as failed:
        cluster.client.query.Search(request, timeout=60)
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = [d for d in rpc_status.from_call(failed.value).details if d.Is(errors_pb2.ErrorDetail.DESCRIPTOR)]
    assert len(details) == 1
    expected = errors_pb2.ErrorDetail()
    details[0].Unpack(expected)
    assert expected.code == code and expected.message
    assert expected.HasField("position") == (code == errors_pb2.UNKNOWN_FIELD)

    with_cursor = {"cursor": cursor} if cursor else {}
    status, body = get(cluster.base, "/api/sessions", query=query, lane="dialogue", limit=5, **with_cursor)
    assert status == http_status and set(body) == {"error"}
    tool = mcp_tool("search", {"query": query, "lane": "dialogue", "limit": 5, **with_cursor})
    assert tool.is_error and set(tool.structured_content) == {"error"}
    cli_cursor = ("--cursor", cursor) if cursor else ()
    cli = quarry_cli(cluster.home, "search", "--lane", "dialogue", "--limit", "5", *cli_cursor, query)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    printed = orjson.loads(cli.stdout)
    assert set(printed) == {"error"}
    answers = {
        "http": json_format.ParseDict(body["error"], errors_pb2.ErrorDetail()),
        "mcp": json_format.ParseDict(tool.structured_content["error"], errors_pb2.ErrorDetail()),
        "cli": json_format.ParseDict(printed["error"], errors_pb2.ErrorDetail()),
    }
    for surface, detail in answers.items():
        assert detail == expected, f"{surface}: {to_json(detail)} != gRPC {to_json(expected)}"
