"""Authentication and scope isolation on a 2-partition cluster with two scopes, through every surface.

Team A and team B each ingest sessions about the same topics (so every query that finds A's could find
B's). A token of A must never see anything of B's: no B session id appears in any answer to any read
API, through gRPC, HTTP, MCP or the CLI; a cursor minted for B is stale for A; `near:id:` of a B session
fails as for an unknown one. Writes need the `write` grant on the session's scope; calls without a valid
token are refused, every one, and no malformed token or header gets a 500 or a traceback.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from quarry.cli.local import LocalCluster
from quarry.cli.push import Pusher
from quarry.client.client import QuarryClient
from quarry.core.auth import GRANT_BY_METHOD
from quarry.core.errors import QuarryError
from quarry.core.session_ids import scoped_id
from quarry.core.tokens import TokenStore
from quarry.ingest.parse import parse_file
from quarry.v1 import errors_pb2, units_pb2
from tests.cluster.corpus import SESSIONS, session_id, session_uuid, write_session
from tests.cluster.test_http_api import free_port
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster


@dataclass
class Scoped:
    home: Path
    http: str
    query: str
    ingest: str
    tokens: dict[str, str]  # who -> token

    def client(self, who: str | None) -> QuarryClient:
        return QuarryClient(self.query, self.ingest, token=self.tokens[who] if who else "")


def team_sessions(team: str) -> list[str]:
    """The archive's ids of a team's sessions: its scope's (quarry.core.session_ids)."""
    return [scoped_id(team, session_id(f"{team}/{key}")) for key in SESSIONS]


def team_uuids(team: str) -> list[str]:
    return [session_uuid(f"{team}/{key}") for key in SESSIONS]


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scoped]:
    home = tmp_path_factory.mktemp("quarry-scopes")
    store = TokenStore.in_home(home)
    grants = {
        "admin": {"team-a": ["admin"], "team-b": ["admin"]},
        "a": {"team-a": ["read", "write"]},
        "a-reader": {"team-a": ["read"]},
        "b": {"team-b": ["read", "write"]},
    }
    tokens = {who: store.create(who, held)[0] for who, held in grants.items()}
    port = free_port()
    local = LocalCluster(home, partitions=2, embedder="none", http=f"127.0.0.1:{port}", ingest_roots=INGEST_ROOTS)
    local.start()
    try:
        info = local.info()
        cluster = Scoped(home, f"127.0.0.1:{port}", info.query, info.ingest, tokens)
        for team in ("a", "b"):
            folder = tmp_path_factory.mktemp(f"team-{team}")
            for key, (repo, turns) in SESSIONS.items():
                write_session(folder, f"team-{team}/{key}", repo, turns)
            with cluster.client(team) as client, Pusher(client, state_home=folder / ".state") as pusher:
                report = pusher.push([folder])
                assert report.sessions_written == len(SESSIONS), report
        yield cluster
    finally:
        local.stop()


def leaks(answer: Any, team: str = "team-b") -> list[str]:
    """The ids of `team`'s sessions that appear anywhere in an answer (a message, JSON text or dict)."""
    if isinstance(answer, str):
        text = answer
    elif hasattr(answer, "SerializeToString"):
        text = str(answer)
    else:
        text = json.dumps(answer)
    return [uuid for uuid in team_uuids(team) if uuid in text]


# ----- gRPC: every read API --------------------------------------------------------------------


def test_grpc_reads_see_only_the_callers_scope(scoped: Scoped) -> None:
    a_session, b_session = team_sessions("team-a")[0], team_sessions("team-b")[0]
    with scoped.client("a") as client:
        answers: list[Any] = [
            client.search("sqlite"),
            client.search("sessions where repo:ledger", limit=50),
            client.query_units("messages where text:sqlite", limit=100),
            client.query_units("actions where session.repo:ledger", limit=100),
            client.query_units("messages where session.repo:ledger | group by role | count"),
            client.facets("sqlite"),
            client.facets(""),
            client.sessions.list(limit=100),
            client.sessions.search_sessions("sqlite"),
            client.sessions.titles([a_session]),
        ]
        for answer in answers:
            assert leaks(answer) == [], answer
        assert leaks(client.search("sqlite"), "team-a"), "A's own sessions are found"
        assert getattr(client.facets(""), "global").total_sessions == len(SESSIONS)
        assert client.resolve_ref(f"session:{b_session}").resolved is False
        assert client.resolve_ref(f"session:{a_session}").resolved is True
        for read in (
            lambda: client.sessions.read(b_session),
            lambda: client.sessions.surface(b_session),
            lambda: client.sessions.events(b_session),
            lambda: client.sessions.event(b_session, 0),
            lambda: client.sessions.trace_event(b_session, 0),
            lambda: client.sessions.lineage(b_session),
            lambda: client.sessions.search_events(b_session, "sqlite"),
        ):
            with pytest.raises(QuarryError) as hidden:
                read()
            assert hidden.value.code == errors_pb2.NOT_FOUND
            assert leaks(hidden.value.message) == [] or b_session in hidden.value.message  # only the id asked
        unknown_id = "claude-code-session:00000000-0000-0000-0000-000000000000"
        hidden_title, unknown_title = client.sessions.titles([b_session, unknown_id]).results
        assert hidden_title.WhichOneof("outcome") == unknown_title.WhichOneof("outcome") == "reason"
        assert hidden_title.reason.message.replace(b_session, "X") == unknown_title.reason.message.replace(
            unknown_id, "X"
        )
        with pytest.raises(QuarryError) as unknown:
            client.sessions.surface(unknown_id)
        with pytest.raises(QuarryError) as hidden_again:
            client.sessions.surface(b_session)
        assert hidden_again.value.message.replace(b_session, "X") == unknown.value.message.replace(unknown_id, "X"), (
            "a hidden session fails exactly as a missing one"
        )


def test_naming_another_scope_is_denied_and_own_scope_narrows(scoped: Scoped) -> None:
    with scoped.client("a") as client:
        with pytest.raises(QuarryError) as denied:
            client.search("scope:team-b sqlite")
        assert denied.value.code == errors_pb2.PERMISSION_DENIED
        with pytest.raises(QuarryError) as nowhere:
            client.search("scope:no-such-team sqlite")
        assert nowhere.value.code == errors_pb2.PERMISSION_DENIED
        assert nowhere.value.message.replace("no-such-team", "X") == denied.value.message.replace("team-b", "X")
        own = client.search("scope:team-a", limit=50)
        assert len(own.hits) == len(SESSIONS)
    with scoped.client("admin") as admin:
        both = admin.search("sessions where repo:ledger", limit=50)
        assert leaks(both) and leaks(both, "team-a"), "an admin of both scopes reads both"
        only_b = admin.search("scope:team-b", limit=50)
        assert {h.session.scope for h in only_b.hits} == {"team-b"}


def test_cursor_of_another_scope_is_stale(scoped: Scoped) -> None:
    with scoped.client("b") as b:
        page = b.search("sessions where repo:ledger", limit=1)
        assert page.next_cursor
    with scoped.client("a") as a, pytest.raises(QuarryError) as stale:
        a.search("sessions where repo:ledger", limit=1, cursor=page.next_cursor)
    assert stale.value.code == errors_pb2.STALE_CURSOR


def test_near_id_of_another_scopes_session_fails_as_an_unknown_one(scoped: Scoped) -> None:
    b_session = team_sessions("team-b")[0]
    with scoped.client("a") as client:
        with pytest.raises(QuarryError) as hidden:
            client.search(f"sessions where near:id:{b_session}")
        with pytest.raises(QuarryError) as unknown:
            client.search("sessions where near:id:claude-code-session:00000000-0000-0000-0000-000000000000")
    assert hidden.value.code == unknown.value.code
    assert hidden.value.message.replace(b_session, "X") == unknown.value.message.replace(
        "claude-code-session:00000000-0000-0000-0000-000000000000", "X"
    )


def test_local_paths_only_for_admins(scoped: Scoped) -> None:
    with scoped.client("a") as a, scoped.client("admin") as admin:
        assert all(not h.session.source_path for h in a.search("sqlite").hits)
        assert all(h.session.source_path for h in admin.search("sqlite").hits)


# ----- writes ------------------------------------------------------------------------------------


def test_writes_need_the_write_grant_on_the_sessions_scope(scoped: Scoped, tmp_path: Path) -> None:
    a_session, b_session = team_sessions("team-a")[0], team_sessions("team-b")[0]
    write_session(tmp_path, "team-a/extra", "ledger", [("user", "one more sqlite question")])
    sessions = parse_file(next(tmp_path.iterdir())).sessions
    with scoped.client("a-reader") as reader:
        for write in (
            lambda: reader.ingest_sessions(sessions),
            lambda: list(reader.ingest_paths([tmp_path])),
            lambda: reader.delete([a_session]),
            lambda: reader.write_assertion(
                units_pb2.Assertion(target_ref=f"session:{a_session}", kind="tag", body="x")
            ),
            lambda: reader.judge_candidate("assertion:x", "accept"),
        ):
            with pytest.raises(QuarryError) as refused:
                write()
            assert refused.value.code == errors_pb2.PERMISSION_DENIED
    with scoped.client("a") as a:
        for other_scope in (
            lambda: list(a.ingest_paths([tmp_path], scope="team-b")),
            lambda: a.ingest_sessions([_in_scope(session, "team-b") for session in sessions]),
        ):
            with pytest.raises(QuarryError) as refused:
                other_scope()
            assert refused.value.code == errors_pb2.PERMISSION_DENIED
        assert list(a.delete([b_session]).not_found) == [b_session]
        with pytest.raises(QuarryError) as foreign:
            a.write_assertion(units_pb2.Assertion(target_ref=f"session:{b_session}", kind="tag", body="mine"))
        assert foreign.value.code == errors_pb2.NOT_FOUND
    with scoped.client("b") as b:
        assert b.resolve_ref(f"session:{b_session}").resolved, "B's session survived A's delete"


def _in_scope(session: units_pb2.Session, scope: str) -> units_pb2.Session:
    copy = units_pb2.Session()
    copy.CopyFrom(session)
    copy.scope = scope
    return copy


# ----- every call needs a valid token -------------------------------------------------------------


def test_every_public_method_refuses_a_call_without_a_valid_token(scoped: Scoped) -> None:
    channels = {"IngestService": scoped.ingest}
    for method in GRANT_BY_METHOD:
        service = method.split("/")[1].rsplit(".", 1)[1]
        address = channels.get(service, scoped.query)
        with grpc.insecure_channel(address) as channel:
            for metadata in ((), (("authorization", "Bearer qry_000000000000_" + "x" * 43),)):
                codes = _call_code(channel, method, metadata)
                assert codes == grpc.StatusCode.UNAUTHENTICATED, (method, metadata, codes)


def _call_code(channel: grpc.Channel, method: str, metadata: Any) -> grpc.StatusCode:
    """The status of a call of `method` with an empty request, whatever its shape."""
    identity = (lambda b: b), (lambda b: b)
    streaming_in = method.endswith(("/IngestSessions",))
    streaming_out = method.endswith(("/IngestPaths", "/ReadSession"))
    try:
        if streaming_in:
            channel.stream_unary(method, *identity)(iter([b""]), metadata=metadata, timeout=10)
        elif streaming_out:
            list(channel.unary_stream(method, *identity)(b"", metadata=metadata, timeout=10))
        else:
            channel.unary_unary(method, *identity)(b"", metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=120))
def test_malformed_grpc_authorization_is_unauthenticated(scoped: Scoped, value: str) -> None:
    with grpc.insecure_channel(scoped.query) as channel:
        code = _call_code(channel, "/quarry.v1.QueryService/Search", (("authorization", value.strip() or "x"),))
    assert code == grpc.StatusCode.UNAUTHENTICATED


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.binary(max_size=200).filter(lambda b: b"\r" not in b and b"\n" not in b and b"\0" not in b))
def test_malformed_http_authorization_never_gets_a_500(scoped: Scoped, value: bytes) -> None:
    status, body = _http(scoped.http, "/api/sessions?query=sqlite", {b"Authorization": value})
    assert b"Traceback" not in body
    if status == 400:  # not a valid HTTP header value (RFC 9110 field-value): the HTTP server refuses it
        assert any((c < 0x20 and c != 0x09) or c == 0x7F for c in value), (value, body)
        return
    assert status == 401, (value, status, body)
    assert json.loads(body)["error"]["code"] == "UNAUTHENTICATED"


# ----- HTTP, MCP and the CLI ------------------------------------------------------------------------


def _http(address: str, path: str, headers: dict[bytes, bytes], body: bytes | None = None) -> tuple[int, bytes]:
    """A GET (or with a body, a POST) with header values sent as raw bytes; the status and body."""
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("GET" if body is None else "POST", path)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_http_routes_are_scoped_and_authenticated(scoped: Scoped) -> None:
    b_session = team_sessions("team-b")[0]
    bearer = {b"Authorization": f"Bearer {scoped.tokens['a']}".encode()}
    routes = [
        "/api/sessions?query=sqlite",
        "/api/sessions?query=" + urllib.parse.quote("sessions where repo:ledger") + "&limit=50",
        "/api/query-units?expression=" + urllib.parse.quote("messages where text:sqlite"),
        "/api/facets?query=sqlite",
        "/api/refs/resolve?ref=" + urllib.parse.quote(f"session:{b_session}"),
        "/api/embedding/status",
    ]
    for route in routes:
        assert _http(scoped.http, route, {})[0] == 401, route
        status, body = _http(scoped.http, route, bearer)
        assert status == 200, (route, body)
        assert leaks(body.decode()) == [] or route.startswith("/api/refs"), (route, body)
    status, body = _http(scoped.http, routes[4], bearer)
    assert json.loads(body).get("resolved", False) is False
    denied = _http(scoped.http, "/api/sessions?query=" + urllib.parse.quote("scope:team-b"), bearer)
    assert denied[0] == 403
    assert json.loads(denied[1])["error"]["code"] == "PERMISSION_DENIED"


def test_mcp_and_cli_are_scoped_by_the_callers_token(scoped: Scoped) -> None:
    b_session = team_sessions("team-b")[0]
    env = {**os.environ, "QUARRY_TOKEN": scoped.tokens["a"]}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "quarry.cli", "--home", str(scoped.home), "mcp"], env=env
    )

    async def run() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            calls = [
                ("search", {"query": "sqlite"}),
                ("query_units", {"query": "messages where text:sqlite"}),
                ("facets", {"query": "sqlite"}),
                ("list_sessions", {"limit": 100}),
                ("search_sessions", {"query": "sqlite"}),
                ("read_surface", {"session_id": b_session}),
            ]
            return [await session.call_tool(name, arguments) for name, arguments in calls]

    *reads, hidden = anyio.run(run)
    for result in reads:
        assert not result.is_error and leaks(result.structured_content) == [], result
    assert leaks(reads[0].structured_content, "team-a")
    assert hidden.is_error and hidden.structured_content["error"]["code"] == "NOT_FOUND"

    def cli(*args: str, token: str | None) -> subprocess.CompletedProcess[str]:
        run_env = {k: v for k, v in os.environ.items() if k != "QUARRY_TOKEN"}
        if token:
            run_env["QUARRY_TOKEN"] = token
        command = [sys.executable, "-m", "quarry.cli", "--home", str(scoped.home), "--format", "json", *args]
        return subprocess.run(command, capture_output=True, text=True, env=run_env, timeout=120)

    found = cli("search", "sqlite", token=scoped.tokens["a"])
    assert found.returncode == 0, found.stderr
    assert leaks(found.stdout) == [] and leaks(found.stdout, "team-a")
    for args in (("sessions", "list"), ("facets",), ("search", "messages where session.repo:ledger")):
        answer = cli(*args, token=scoped.tokens["a"])
        assert answer.returncode == 0, (args, answer.stderr)
        assert leaks(answer.stdout) == [], args
    hidden_ref = cli("read", f"session:{b_session}", token=scoped.tokens["a"])
    assert json.loads(hidden_ref.stdout).get("resolved") in (None, False), hidden_ref.stdout
    refused = cli("search", "sqlite", token=None)
    assert refused.returncode != 0
    assert json.loads(refused.stdout)["error"]["code"] == "UNAUTHENTICATED", (refused.stdout, refused.stderr)


def test_mcp_over_http_runs_each_call_with_its_callers_token(scoped: Scoped) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "QUARRY_TOKEN"}
    command = [sys.executable, "-m", "quarry.cli", "--home", str(scoped.home)]
    server = subprocess.Popen(
        [*command, "mcp", "--http", f"127.0.0.1:{port}", "--auth"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, server)
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        mcp_headers = {b"Content-Type": b"application/json", b"Accept": b"application/json, text/event-stream"}
        for bearer in ({}, {b"Authorization": b"Bearer qry_000000000000_" + b"x" * 43}):
            assert _http(f"127.0.0.1:{port}", "/mcp", {**mcp_headers, **bearer}, ping)[0] == 401

        async def search(who: str) -> Any:
            headers = {"Authorization": f"Bearer {scoped.tokens[who]}"}
            async with (
                create_mcp_http_client(headers=headers) as http_client,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http_client) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                return (await session.call_tool("search", {"query": "sqlite"})).structured_content

        seen_by_a, seen_by_b = anyio.run(search, "a"), anyio.run(search, "b")
        assert leaks(seen_by_a, "team-a") and not leaks(seen_by_a, "team-b")
        assert leaks(seen_by_b, "team-b") and not leaks(seen_by_b, "team-a")
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stderr.read().decode() if process.stderr else "exited")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")
