"""Every number a request carries is range-checked, on gRPC and HTTP alike: a hostile value is a typed
INVALID_REQUEST naming its parameter (HTTP 400), never an INTERNAL error (`Value out of range`), an
unbounded wait, or a NaN that silently matches nothing.

The query node here is the real coordinator over two real index nodes in this process, serving
QueryService and SessionQueryService on gRPC and the HTTP API under uvicorn, as `quarry node query`
does."""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import uvicorn

from quarry.core.errors import QuarryError, from_rpc_error
from quarry.query.embedding import EmbeddingOps
from quarry.query.http_api import build_app
from quarry.query.http_hosts import AllowedHosts
from quarry.query.limits import MAX_DEADLINE_MS, MAX_OFFSET
from quarry.query.server import QueryServicer, SessionQueryServicer
from quarry.query.sessions import SessionQueries
from quarry.v1 import query_pb2, query_pb2_grpc, refs_pb2, sessions_pb2, sessions_pb2_grpc
from tests.cluster.test_http_api import free_port
from tests.query.inprocess import Cluster

INT32_MAX = 2**31 - 1


@dataclass
class Node:
    query: query_pb2_grpc.QueryServiceStub
    sessions: sessions_pb2_grpc.SessionQueryServiceStub
    http: str

    def grpc_error(self, call: Callable[[Any], Any], request: Any) -> QuarryError:
        try:
            call(request, timeout=30)
        except grpc.RpcError as error:
            return from_rpc_error(error)
        raise AssertionError(f"{request} was accepted")

    def http_get(self, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
        url = f"{self.http}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    cluster = Cluster(tmp_path_factory.mktemp("limits"), 2)
    coordinator = cluster.coordinator
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(coordinator), server)
    sessions_pb2_grpc.add_SessionQueryServiceServicer_to_server(
        SessionQueryServicer(SessionQueries(coordinator.cluster)), server
    )
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    port = free_port()
    app = build_app(coordinator, EmbeddingOps(coordinator.cluster, None, ""), AllowedHosts.of("127.0.0.1"))
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=http.run, daemon=True)
    thread.start()
    while not http.started:
        time.sleep(0.02)
    channel = grpc.insecure_channel(address)
    try:
        yield Node(
            query_pb2_grpc.QueryServiceStub(channel),
            sessions_pb2_grpc.SessionQueryServiceStub(channel),
            f"http://127.0.0.1:{port}",
        )
    finally:
        channel.close()
        http.should_exit = True
        thread.join(timeout=10)
        server.stop(None)
        cluster.close()


def _assert_invalid(error: QuarryError, parameter: str, *said: str) -> None:
    assert (error.code_name, error.parameter) == ("INVALID_REQUEST", parameter), error
    for text in said:
        assert text in error.message, error.message


def _assert_http_invalid(answer: tuple[int, dict[str, Any]], parameter: str, *said: str) -> None:
    status, body = answer
    assert status == 400, body
    assert (body["error"]["code"], body["error"].get("parameter")) == ("INVALID_REQUEST", parameter), body
    for text in said:
        assert text in body["error"]["message"], body


def test_an_offset_at_the_int32_limit_is_refused_not_an_internal_error(node: Node) -> None:
    """offset + limit + 1 overflowed the partition request's int32: gRPC INTERNAL, HTTP 500."""
    search = query_pb2.SearchRequest(query="tests", offset=INT32_MAX)
    _assert_invalid(node.grpc_error(node.query.Search, search), "offset", str(MAX_OFFSET), "next_cursor")
    units = query_pb2.QueryUnitsRequest(query="messages where role:user", offset=INT32_MAX)
    _assert_invalid(node.grpc_error(node.query.QueryUnits, units), "offset", str(MAX_OFFSET))
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", offset=INT32_MAX), "offset", str(MAX_OFFSET))
    answer = node.http_get("/api/query-units", expression="messages where role:user", offset=INT32_MAX)
    _assert_http_invalid(answer, "offset", str(MAX_OFFSET))


def test_an_offset_the_query_adds_is_refused_too(node: Node) -> None:
    request = query_pb2.QueryUnitsRequest(query=f"messages where role:user | offset {INT32_MAX}", offset=5)
    _assert_invalid(node.grpc_error(node.query.QueryUnits, request), "offset", "`| offset`", str(MAX_OFFSET))
    answer = node.http_get("/api/query-units", expression="messages where role:user | offset 20000")
    _assert_http_invalid(answer, "offset", str(MAX_OFFSET))


def test_an_http_number_past_its_type_names_the_parameter(node: Node) -> None:
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", offset=2**31), "offset")
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", limit="1e400"), "limit")


def test_an_http_boolean_takes_true_or_false(node: Node) -> None:
    for value in ("true", "1", "false", "0", "TRUE"):
        status, body = node.http_get("/api/sessions", query="tests", require_complete=value)
        assert status == 200 and body["hits"], (value, body)
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", require_complete="yes"), "require_complete")


@pytest.mark.parametrize("deadline", [1e12, MAX_DEADLINE_MS + 1, math.inf, -math.inf, math.nan, -1.0])
def test_a_deadline_is_finite_and_capped_on_grpc(node: Node, deadline: float) -> None:
    search = query_pb2.SearchRequest(query="tests", deadline_ms=deadline)
    _assert_invalid(node.grpc_error(node.query.Search, search), "deadline_ms", f"{MAX_DEADLINE_MS:.0f}")
    units = query_pb2.QueryUnitsRequest(query="messages where role:user", deadline_ms=deadline)
    _assert_invalid(node.grpc_error(node.query.QueryUnits, units), "deadline_ms", f"{MAX_DEADLINE_MS:.0f}")


@pytest.mark.parametrize("deadline", ["1e12", "Infinity", "-Infinity", "NaN", "-1"])
def test_a_deadline_is_finite_and_capped_on_http(node: Node, deadline: str) -> None:
    answer = node.http_get("/api/sessions", query="tests", deadline_ms=deadline)
    _assert_http_invalid(answer, "deadline_ms", f"{MAX_DEADLINE_MS:.0f}")
    answer = node.http_get("/api/query-units", expression="actions where tool:bash", deadline_ms=deadline)
    _assert_http_invalid(answer, "deadline_ms", f"{MAX_DEADLINE_MS:.0f}")


def test_a_deadline_at_the_cap_is_served(node: Node) -> None:
    envelope = node.query.Search(query_pb2.SearchRequest(query="tests", deadline_ms=MAX_DEADLINE_MS), timeout=30)
    assert envelope.hits
    status, body = node.http_get("/api/sessions", query="tests", deadline_ms=MAX_DEADLINE_MS)
    assert status == 200 and body["hits"]


@pytest.mark.parametrize("limit", [-1, -(2**31), 1001, INT32_MAX])
def test_negative_and_huge_limits_are_refused(node: Node, limit: int) -> None:
    search = query_pb2.SearchRequest(query="tests", limit=limit)
    _assert_invalid(node.grpc_error(node.query.Search, search), "limit", "1..1000")
    units = query_pb2.QueryUnitsRequest(query="messages where role:user", limit=limit)
    _assert_invalid(node.grpc_error(node.query.QueryUnits, units), "limit", "1..1000")
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", limit=limit), "limit")
    _assert_http_invalid(node.http_get("/api/sessions", query="tests", limit=limit * 2**32), "limit")
    _assert_http_invalid(node.http_get("/api/query-units", expression="actions where tool:bash", limit=limit), "limit")
    sessions = sessions_pb2.ListSessionsRequest(limit=limit)
    _assert_invalid(node.grpc_error(node.sessions.ListSessions, sessions), "limit")
    search_sessions = sessions_pb2.SessionSearchRequest(query="tests", limit=limit)
    _assert_invalid(node.grpc_error(node.sessions.SearchSessions, search_sessions), "limit")


def test_max_chars_is_capped(node: Node) -> None:
    request = refs_pb2.ResolveRefRequest(ref="session:claude-code-session:s0", max_chars=INT32_MAX)
    _assert_invalid(node.grpc_error(node.query.ResolveRef, request), "max_chars", "100000")
    answer = node.http_get("/api/refs/resolve", ref="session:claude-code-session:s0", max_chars=-1)
    _assert_http_invalid(answer, "max_chars")


@pytest.mark.parametrize(
    ("bounds", "parameter"),
    [({"min": -1}, "filters[0].seq.min"), ({"max": 2**40}, "filters[0].seq.max")],
)
def test_a_seq_range_of_the_session_api_is_checked(node: Node, bounds: dict[str, int], parameter: str) -> None:
    seq = sessions_pb2.EventFilter(seq=sessions_pb2.Range(**bounds))
    request = sessions_pb2.ListEventsRequest(session_id="claude-code-session:s0", filters=[seq])
    _assert_invalid(node.grpc_error(node.sessions.ListEvents, request), parameter)
