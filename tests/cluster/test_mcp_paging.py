"""`quarry mcp` as an agent pages through a long session and tunes a search: `read_session` returns a page
that fits an agent's context and a cursor to the next, the pages together are the whole log as ReadSession
gives it; `list_events` pages as ListEvents does; `search` takes the search controls, with the typed error
of a bad one."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from quarry.cli.mcp_server import PAGE_CHARS, PAGE_EVENTS
from quarry.client.client import QuarryClient
from quarry.client.controls_json import controls_from_json
from quarry.core.proto_json import to_json
from quarry.v1 import sessions_pb2
from tests.cluster.corpus import session_id, write_corpus, write_session
from tests.cluster.test_mcp import without_timings

pytestmark = pytest.mark.cluster

TURNS = 130  # events of the long session: more than two default pages


def with_mcp(home: Path, run: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """What `run` returns, given one MCP session over stdio with `quarry mcp`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "quarry.cli", "--home", str(home), "mcp"])

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await run(session)

    return anyio.run(main)


@pytest.fixture(scope="module")
def long_session(light_client: QuarryClient, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("archive")
    write_corpus(folder)
    turns = [("user" if n % 2 == 0 else "assistant", f"step {n}: the retry loop still times out") for n in range(TURNS)]
    write_session(folder, "long", "ledger", turns)
    assert list(light_client.ingest_paths([folder]))[-1].report.sessions_written > 0
    return session_id("long")


async def walk(session: ClientSession, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of read_session, following nextCursor."""
    pages = []
    cursor = ""
    while True:
        result = await session.call_tool("read_session", {**arguments, "cursor": cursor})
        assert not result.is_error, result.structured_content
        pages.append(result.structured_content)
        cursor = result.structured_content.get("nextCursor", "")
        if not cursor:
            return pages


def test_read_session_pages_through_the_whole_log(
    light_home: Path, light_client: QuarryClient, long_session: str
) -> None:
    header, events = light_client.sessions.read(long_session)
    whole = [to_json(e) for e in events]
    assert len(whole) == TURNS

    async def run(session: ClientSession) -> tuple[list[Any], list[Any]]:
        return await walk(session, {"session_id": long_session}), await walk(
            session, {"session_id": long_session, "limit": 7, "max_chars": 2000}
        )

    default, small = with_mcp(light_home, run)
    first = default[0]
    assert len(first["events"]) == PAGE_EVENTS and first["nextCursor"]
    assert first["session"] == to_json(header)
    assert len(json.dumps(first, ensure_ascii=False)) < PAGE_CHARS + 5_000  # the events and the header
    assert [e for page in default for e in page["events"]] == whole
    assert [e for page in small for e in page["events"]] == whole
    for page in small:
        size = sum(len(json.dumps(e, ensure_ascii=False)) for e in page["events"])
        assert len(page["events"]) <= 7 and (size <= 2000 or len(page["events"]) == 1)
    assert len(small) > TURNS // 7


def test_read_session_refuses_what_it_cannot_page(light_home: Path, long_session: str) -> None:
    async def run(session: ClientSession) -> list[Any]:
        calls = [
            {"session_id": long_session, "limit": 0},
            {"session_id": long_session, "limit": 1001},
            {"session_id": long_session, "max_chars": 0},
            {"session_id": long_session, "cursor": "not-a-cursor"},
            {"session_id": "claude-code-session:nope"},
        ]
        return [(await session.call_tool("read_session", c)).structured_content["error"] for c in calls]

    errors = with_mcp(light_home, run)
    assert [(e["code"], e.get("parameter")) for e in errors] == [
        ("INVALID_REQUEST", "limit"),
        ("INVALID_REQUEST", "limit"),
        ("INVALID_REQUEST", "max_chars"),
        ("INVALID_CURSOR", "cursor"),
        ("NOT_FOUND", "session_id"),
    ]


def test_list_events_pages_as_list_events_does(light_home: Path, light_client: QuarryClient, long_session: str) -> None:
    async def run(session: ClientSession) -> list[Any]:
        first = await session.call_tool("list_events", {"session_id": long_session, "limit": 40})
        cursor = first.structured_content["nextCursor"]
        second = await session.call_tool("list_events", {"session_id": long_session, "limit": 40, "cursor": cursor})
        return [first.structured_content, second.structured_content, cursor]

    first, second, cursor = with_mcp(light_home, run)
    stub = light_client.sessions.stub
    grpc_second = stub.ListEvents(sessions_pb2.ListEventsRequest(session_id=long_session, limit=40, cursor=cursor))
    assert [e["record"].get("seq", 0) for e in first["events"]] == list(range(40))
    assert {k: v for k, v in second.items() if k != "nextCursor"} == {
        k: v for k, v in to_json(grpc_second).items() if k != "nextCursor"
    }


def test_search_takes_the_search_controls(light_home: Path, light_client: QuarryClient, long_session: str) -> None:
    controls = {"admission": {"lexical_coverage": 0.5}, "min_score": 0.01, "include_scores": True}

    async def run(session: ClientSession) -> list[Any]:
        arguments = {"query": "sqlite writers retry timeout", "lane": "dialogue", "limit": 5}
        tuned = await session.call_tool("search", {**arguments, "controls": controls})
        bad = await session.call_tool("search", {**arguments, "controls": {"admission": {"lexical_coverage": 2}}})
        unknown = await session.call_tool("search", {**arguments, "controls": {"colour": "red"}})
        return [tuned, bad, unknown]

    tuned, bad, unknown = with_mcp(light_home, run)
    grpc = light_client.search(
        "sqlite writers retry timeout", lane="dialogue", limit=5, controls=controls_from_json(controls)
    )
    assert not tuned.is_error and without_timings(tuned.structured_content) == without_timings(to_json(grpc))
    assert tuned.structured_content["hits"] and all("scores" in h["match"] for h in tuned.structured_content["hits"])
    assert bad.is_error and bad.structured_content["error"]["parameter"] == "controls.admission.lexical_coverage"
    assert unknown.is_error and unknown.structured_content["error"]["parameter"] == "controls.colour"
