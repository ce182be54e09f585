"""`quarry mcp` as an agent meets it: a real MCP client session of the official SDK over stdio, against a
2-partition cluster, gets exactly the gRPC API's messages in proto3 JSON, and the same typed error detail."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.proto_json import to_json
from tests.cluster.corpus import write_corpus

pytestmark = pytest.mark.cluster

SESSION_TOOLS = {
    "list_sessions",
    "read_session",
    "read_surface",
    "list_events",
    "read_event",
    "trace_event",
    "trace_session",
    "read_titles",
    "search_sessions",
    "search_events",
}


def mcp_calls(home: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """The tool names the server lists, and the result of each call, from one MCP session over stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "quarry.cli", "--home", str(home), "mcp"])

    async def run() -> tuple[set[str], list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            return tools, [await session.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


def without_timings(envelope: dict[str, Any]) -> dict[str, Any]:
    """An envelope without its server timings and clock (they differ on every call, whatever the surface)."""
    return {key: value for key, value in envelope.items() if key not in ("timingsMs", "generatedAt")}


def test_mcp_tools_return_the_grpc_messages(light_home: Path, light_client: QuarryClient, tmp_path: Path) -> None:
    write_corpus(tmp_path / "archive")
    report = list(light_client.ingest_paths([tmp_path / "archive"]))[-1].report
    assert report.sessions_written > 0
    first = light_client.sessions.list(limit=1).items[0].header.id
    with pytest.raises(QuarryError) as bad:
        light_client.search("sessions where (")
    tools, (search, units, facets, ref, listed, window, error, missing) = mcp_calls(
        light_home,
        [
            ("search", {"query": "sqlite locking", "limit": 5}),
            ("query_units", {"query": "actions where tool:bash", "limit": 5}),
            ("facets", {"query": "sqlite"}),
            ("resolve_ref", {"ref": f"session:{first}"}),
            ("list_sessions", {"limit": 3}),
            ("read_event", {"session_id": first, "seq": 1, "before": 1, "after": 1}),
            ("search", {"query": "sessions where ("}),
            ("read_surface", {"session_id": "claude-code-session:nope"}),
        ],
    )
    assert {"search", "query_units", "facets", "resolve_ref", "embedding_status", "embedding_preflight"} <= tools
    assert tools >= SESSION_TOOLS
    grpc_search = to_json(light_client.search("sqlite locking", limit=5))
    assert without_timings(search.structured_content) == without_timings(grpc_search)
    assert search.structured_content["hits"]
    assert without_timings(units.structured_content) == without_timings(
        to_json(light_client.query_units("actions where tool:bash", limit=5))
    )
    assert without_timings(facets.structured_content) == without_timings(to_json(light_client.facets("sqlite")))
    assert ref.structured_content == to_json(light_client.resolve_ref(f"session:{first}"))
    assert listed.structured_content == to_json(light_client.sessions.list(limit=3))
    assert window.structured_content == to_json(light_client.sessions.event(first, 1, before=1, after=1))
    assert error.is_error and error.structured_content == {"error": to_json(bad.value.to_detail())}
    assert (
        error.structured_content["error"]["code"] == "INVALID_QUERY" and "position" in error.structured_content["error"]
    )
    assert missing.is_error and missing.structured_content["error"]["code"] == "NOT_FOUND"
    assert missing.structured_content["error"]["parameter"] == "session_id"
