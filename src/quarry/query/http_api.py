"""The query node's HTTP JSON API: a thin layer over the objects its gRPC servicers call.

Each route is an Operation (http_contract.py): it reads the gRPC request message from its path and query
parameters (field names in proto3 JSON or as written in the .proto; repeated fields by repeating the
parameter; nested fields by dotted names, `controls.min_score=0.2`; repeated messages as JSON), calls the
same method the servicer calls, and answers with the response message in proto3 JSON (a stream as NDJSON,
one message a line). A failure answers `{"error": ErrorDetail}` in proto3 JSON with an HTTP status that
fits its code (http_status.py). `/openapi.json` is generated from the operations (openapi.py).

    GET /api/sessions?query=sqlite+locking&lane=hybrid&limit=10&cursor=…   SearchRequest -> SearchEnvelope
    GET /api/query-units?expression=actions+where+tool:bash&limit=50        QueryUnitsRequest -> QueryUnitEnvelope
    GET /api/facets?query=…&origins=…&families=…                            FacetsRequest -> FacetsResponse
    GET /api/refs/resolve?ref=session:…                                     ResolveRefRequest -> ResolvedRef
    GET /api/embedding/status                                               EmbeddingStatus
    GET /api/sessions/{session_id}/…, /api/session-records, …              the session API (http_sessions.py)
    GET /openapi.json                                                       this API as an OpenAPI 3.1 document

Before anything else, every request must name the API by one of its allowed hosts and come from no
page or a page on one of them (http_hosts.py: 421 / 403), so a web page cannot read it by DNS rebinding.
With tokens configured (quarry.core.auth), every route but /openapi.json needs `Authorization: Bearer
<token>` with `read` on some scope, checked before the request is read (401 / 403), and runs within the
token's scopes, local paths left out for a caller without `admin`, as a gRPC call would. Parameters are
range-checked where gRPC requests are (quarry.query.limits, controls.py): the same 400 for both.

The server runs beside the gRPC server in the query node process (uvicorn on its own thread), started
by `quarry node query --http HOST:PORT [--http-allowed-host NAME …]` (`quarry up --http`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import orjson
import uvicorn
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from quarry.core import auth, tls
from quarry.core.admission import run_admitted
from quarry.core.errors import QuarryError
from quarry.core.proto_json import error_json, to_json
from quarry.core.tokens import READ
from quarry.query.embedding import EmbeddingOps
from quarry.query.http_contract import Operation, request_of
from quarry.query.http_hosts import MISDIRECTED, AllowedHosts
from quarry.query.http_sessions import session_operations
from quarry.query.http_status import http_status
from quarry.query.http_usage import usage_routes
from quarry.query.openapi import NDJSON, openapi_document
from quarry.query.response_headers import ResponseHeaders
from quarry.query.root import Coordinator
from quarry.query.sessions import SessionQueries
from quarry.query.web.app import web_routes
from quarry.v1 import embedding_pb2, query_pb2, refs_pb2


def error_response(error: QuarryError, status: int | None = None) -> JSONResponse:
    """`{"error": ErrorDetail}` with the status of its code (or `status`)."""
    status = status or http_status(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_json(error), status_code=status, headers=headers)


class HostGuard:
    """Refuses, before any route runs, a request naming another host or sent by a page of another
    origin (http_hosts.py)."""

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(Headers(scope=scope)) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> JSONResponse | None:
        try:
            self.hosts.check_host(headers.get("host"))
        except QuarryError as error:
            return error_response(error, MISDIRECTED)
        try:
            self.hosts.check_origin(headers.get("origin"))
        except QuarryError as error:
            return error_response(error)
        return None


class OperationRoute(Route):
    """A Starlette route serving one Operation, which it keeps for /openapi.json."""

    def __init__(self, operation: Operation, gate: auth.Gate) -> None:
        self.operation = operation
        endpoint = _stream_endpoint(operation, gate) if operation.stream else _endpoint(operation, gate)
        endpoint.__doc__ = operation.summary
        super().__init__(operation.route_path, endpoint, methods=["GET"], name=operation.name)


def _admitted(operation: Operation, gate: auth.Gate, request: Request) -> tuple[Any, Any, Message | None]:
    """The caller, its scopes and the request message; the token is checked before the request is read."""
    caller, scopes = gate.admit(request.headers.get("authorization"), READ)
    return caller, scopes, request_of(operation, request.path_params, request.query_params)


def _endpoint(operation: Operation, gate: auth.Gate) -> Callable[[Request], Any]:
    def answer(message: Message | None) -> bytes:
        # Encoded on the worker thread: on the event loop, proto3 JSON of one answer (1-2 ms for a
        # page of hits) held up every other connection (bench/RESULTS.md, HTTP under load).
        return orjson.dumps(to_json(auth.redact_local_paths(operation.call(message))))

    async def endpoint(request: Request) -> Response:
        try:
            caller, scopes, message = _admitted(operation, gate, request)
            body = await run_in_threadpool(run_admitted, auth.run_as, caller, scopes, answer, message)
        except QuarryError as error:
            return error_response(error)
        return Response(body, media_type="application/json")

    return endpoint


def _stream_endpoint(operation: Operation, gate: auth.Gate) -> Callable[[Request], Any]:
    """NDJSON of the messages `call` yields. The first is made before the status is sent, so that a failure
    (an unknown session, a log that does not replay) answers its own status; each runs as the caller."""

    def line(messages: Iterator[Message]) -> bytes | None:
        message = next(messages, None)
        return None if message is None else orjson.dumps(to_json(auth.redact_local_paths(message))) + b"\n"

    async def endpoint(request: Request) -> Response:
        try:
            caller, scopes, message = _admitted(operation, gate, request)
            messages = iter(operation.call(message))  # a generator: its work runs at each next()
            first = await run_in_threadpool(run_admitted, auth.run_as, caller, scopes, line, messages)
        except QuarryError as error:
            return error_response(error)

        async def lines() -> AsyncIterator[bytes]:
            following = first
            while following is not None:
                yield following
                following = await run_in_threadpool(run_admitted, auth.run_as, caller, scopes, line, messages)

        return StreamingResponse(lines(), media_type=NDJSON)

    return endpoint


def build_app(
    coordinator: Coordinator,
    embedding: EmbeddingOps,
    hosts: AllowedHosts,
    gate: auth.Gate | None = None,
    sessions: SessionQueries | None = None,
) -> Starlette:
    """The routes over the coordinator and the session API (`sessions`: the gRPC servicer's, else one of
    the coordinator's cluster), answering the `hosts` names only; `gate`: the node's authentication (this
    process's by default), checked on every route but /openapi.json, before the request is read."""
    gate = gate or auth.security().gate
    sessions = sessions or SessionQueries(coordinator.cluster)

    def route(
        path: str,
        message_type: type[Message],
        call: Callable[[Any], Message],
        summary: str,
        renamed: Mapping[str, str] | None = None,
    ) -> Route:
        """The route of the gRPC method that takes `message_type` (http_contract.Operation.answering)."""
        return OperationRoute(Operation.answering(path, message_type, call, summary, renamed), gate)

    routes: list[Route] = [
        route("/api/sessions", query_pb2.SearchRequest, coordinator.search, "Sessions ranked for a query"),
        route(
            "/api/query-units",
            query_pb2.QueryUnitsRequest,
            coordinator.query_units,
            "Rows of a unit query; the query in `expression`",
            renamed={"expression": "query"},
        ),
        route("/api/facets", query_pb2.FacetsRequest, coordinator.facets.facets, "Session counts per facet value"),
        route(
            "/api/refs/resolve", refs_pb2.ResolveRefRequest, coordinator.refs.resolve, "The object a public ref names"
        ),
        OperationRoute(
            Operation(
                "EmbeddingStatus",
                "/api/embedding/status",
                None,
                embedding_pb2.EmbeddingStatus,
                lambda _: embedding.status(),
                "Coverage and backlog of the semantic lane",
            ),
            gate,
        ),
        *usage_routes(route, coordinator),
        *(OperationRoute(operation, gate) for operation in session_operations(sessions)),
    ]
    document = openapi_document([r.operation for r in routes if isinstance(r, OperationRoute)])

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(document)

    pages = web_routes(coordinator, sessions, gate, secure=tls.http_files() is not None)
    return Starlette(
        routes=[*routes, Route("/openapi.json", openapi, methods=["GET"]), *pages],
        middleware=[Middleware(ResponseHeaders), Middleware(HostGuard, hosts=hosts)],
    )


def serve_http(
    coordinator: Coordinator,
    embedding: EmbeddingOps,
    sessions: SessionQueries,
    host: str,
    port: int,
    allowed_hosts: Sequence[str] = (),
) -> threading.Thread:
    """Serve the API on its own thread (uvicorn installs no signal handlers off the main thread), under
    the loopback names, `host` and `allowed_hosts` (http_hosts.py)."""
    certificate = tls.http_files()  # HTTPS with the node's certificate when it serves TLS
    config = uvicorn.Config(
        build_app(coordinator, embedding, AllowedHosts.of(host, allowed_hosts), sessions=sessions),
        host=host,
        port=port,
        log_level="warning",
        loop="uvloop",
        http="httptools",
        timeout_keep_alive=75,  # a dashboard polling every minute keeps its connection
        ssl_certfile=certificate[0] if certificate else None,
        ssl_keyfile=certificate[1] if certificate else None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="http-api", daemon=True)
    thread.start()
    return thread
