"""`quarry mcp --http` is no confused deputy. Its operator starts it holding a token that reads both teams;
an attacker is any other local process reaching the port (another user, a container on the host network,
a script a web page could not run but a local one can), with no token or a token of its own. Without
--auth the server must not answer them with its operator's token; with --auth each call runs with the
caller's own token, and the operator's never stands in for a caller's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.cluster.corpus import SESSIONS, session_uuid, write_session
from tests.cluster.test_http_api import free_port
from tests.cluster.test_scopes import _http
from tests.security.team_cluster import TeamCluster

pytestmark = pytest.mark.cluster

VARIABLES = ("QUARRY_URL", "QUARRY_CONTEXT", "QUARRY_TOKEN", "QUARRY_TLS_CA", "QUARRY_HOME")
MCP_HEADERS = {b"Content-Type": b"application/json", b"Accept": b"application/json, text/event-stream"}


def team_uuids(team: str) -> list[str]:
    return [session_uuid(f"{team}/{key}") for key in SESSIONS]


def leaked(text: str) -> dict[str, list[str]]:
    """Which team's sessions appear in what a caller got."""
    found = {team: [u for u in team_uuids(team) if u in text] for team in ("team-a", "team-b")}
    return {team: ids for team, ids in found.items() if ids}


@pytest.fixture(scope="module")
def archive(teams: TeamCluster) -> TeamCluster:
    """Each team's sessions, about the same topics, ingested into its scope."""
    for team in ("team-a", "team-b"):
        folder = teams.root / team
        folder.mkdir()
        for key, (repo, turns) in SESSIONS.items():
            write_session(folder, f"{team}/{key}", repo, turns)
        with teams.client("operator") as operator:
            report = list(operator.ingest_paths([folder], scope=team))[-1].report
            assert report.sessions_written == len(SESSIONS), report
    return teams


@contextmanager
def start_mcp(
    teams: TeamCluster, config: Path, *args: str, token: str | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`quarry mcp --http 127.0.0.1:PORT ARGS` for the team cluster, with `token` as $QUARRY_TOKEN."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["XDG_CONFIG_HOME"] = str(config)
    if token:
        env["QUARRY_TOKEN"] = token
    command = [sys.executable, "-m", "quarry.cli", "--home", str(teams.local.home)]
    server = subprocess.Popen(
        [*command, "mcp", "--http", f"127.0.0.1:{port}", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield server, port
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:  # an open stream holds up uvicorn's graceful shutdown
                server.kill()
                server.wait(timeout=10)


def listening_or_exited(server: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> bool:
    """True once the port accepts connections, False once the server exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    raise AssertionError(f"the MCP server neither listens on {port} nor exited")


def exit_code(server: subprocess.Popen[bytes], timeout: float = 30.0) -> int | None:
    """The server's exit code, None while it is still serving after `timeout`."""
    try:
        return server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def call_search(port: int, headers: dict[str, str]) -> str:
    """What an MCP client with `headers` gets from `search` (the tool result as JSON text)."""

    async def run() -> str:
        async with (
            create_mcp_http_client(headers=headers) as http_client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http_client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool("search", {"query": "sqlite", "limit": 50})
            return json.dumps({"is_error": result.is_error, "content": result.structured_content})

    return anyio.run(run)


def test_without_auth_a_server_holding_a_token_lends_it_to_no_one(archive: TeamCluster, tmp_path: Path) -> None:
    """The operator's token in $QUARRY_TOKEN, no --auth: an anonymous local caller would act as the
    operator. The server refuses to serve, saying why, and an attacker reaches nothing."""
    with start_mcp(archive, tmp_path / "config", token=archive.tokens["operator"]) as (server, port):
        if listening_or_exited(server, port):
            stolen = call_search(port, {})  # an anonymous local process
            assert leaked(stolen) == {}, f"an anonymous caller read sessions with the server's token: {stolen[:300]}"
        assert exit_code(server) == 2, "without --auth, a server holding a token kept serving"
        error = server.stderr.read().decode() if server.stderr else ""
        assert "--auth" in error and "token" in error, error


def test_without_auth_a_token_from_a_context_is_not_lent_either(archive: TeamCluster, tmp_path: Path) -> None:
    """The same with the operator's token in a context's token file rather than the environment."""
    config = tmp_path / "config"
    token_file = tmp_path / "operator.token"
    token_file.write_text(archive.tokens["operator"])
    token_file.chmod(0o600)
    quarry = [sys.executable, "-m", "quarry.cli", "--home", str(archive.local.home)]
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES} | {"XDG_CONFIG_HOME": str(config)}
    info = archive.local.info()
    url = f"grpc://{info.query}?ingest={info.ingest}"
    for step in (["add", "ops", "--cluster", url, "--token-file", str(token_file)], ["use", "ops"]):
        subprocess.run([*quarry, "context", *step], env=env, check=True, capture_output=True, timeout=60)
    with start_mcp(archive, config) as (server, port):
        if listening_or_exited(server, port):
            stolen = call_search(port, {})
            assert leaked(stolen) == {}, f"an anonymous caller read sessions with the context's token: {stolen[:300]}"
        assert exit_code(server) == 2, "without --auth, a server holding a token kept serving"
        assert "--auth" in (server.stderr.read().decode() if server.stderr else "")


def test_without_auth_and_without_a_token_a_caller_can_do_no_more_than_alone(
    archive: TeamCluster, tmp_path: Path
) -> None:
    """No token to lend: the server serves on loopback, and every call runs with no token at all, which a
    cluster with tokens refuses, so a caller reads nothing it could not read by calling the cluster
    itself. A caller's own token is not taken up either: without --auth nobody's identity is checked."""
    with start_mcp(archive, tmp_path / "config") as (server, port):
        assert listening_or_exited(server, port), server.stderr.read().decode() if server.stderr else ""
        for headers in ({}, {"Authorization": f"Bearer {archive.tokens['a']}"}):
            answer = json.loads(call_search(port, headers))
            assert answer["is_error"] and answer["content"]["error"]["code"] == "UNAUTHENTICATED", answer
            assert leaked(json.dumps(answer)) == {}


def test_with_auth_every_call_runs_with_its_callers_token_never_the_servers(
    archive: TeamCluster, tmp_path: Path
) -> None:
    """--auth, the server started with the operator's token: no token or a forged one is refused (401),
    as is a cross-origin page's request; each team's token sees its own team's sessions only."""
    with start_mcp(archive, tmp_path / "config", "--auth", token=archive.tokens["operator"]) as (server, port):
        assert listening_or_exited(server, port), server.stderr.read().decode() if server.stderr else ""
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        forged = {b"Authorization": b"Bearer qry_000000000000_" + b"x" * 43}
        for headers in ({}, forged, {b"Origin": b"http://attacker.example"}):
            status, body = _http(f"127.0.0.1:{port}", "/mcp", {**MCP_HEADERS, **headers}, ping)
            assert status in (401, 403), (headers, status, body)
        seen_by_a = leaked(call_search(port, {"Authorization": f"Bearer {archive.tokens['a']}"}))
        seen_by_b = leaked(call_search(port, {"Authorization": f"Bearer {archive.tokens['b']}"}))
        assert list(seen_by_a) == ["team-a"] and list(seen_by_b) == ["team-b"], (seen_by_a, seen_by_b)
