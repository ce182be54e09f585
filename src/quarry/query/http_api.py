"""The query node's HTTP JSON API: a thin layer over the objects its gRPC servicers call.

Each route reads its query parameters into the gRPC request message (the message's field names, in
proto3 JSON or as written in the .proto; repeated fields by repeating the parameter), calls the same
method the servicer calls, and answers with the response message in proto3 JSON. A failure answers
`{"error": ErrorDetail}` in proto3 JSON with an HTTP status that fits its code (`STATUS_BY_CODE`).

    GET /api/sessions?query=sqlite+locking&lane=hybrid&limit=10&cursor=…   SearchRequest -> SearchEnvelope
    GET /api/query-units?expression=actions+where+tool:bash&limit=50        QueryUnitsRequest -> QueryUnitEnvelope
    GET /api/facets?query=…&origins=…&families=…                            FacetsRequest -> FacetsResponse
    GET /api/refs/resolve?ref=session:…                                     ResolveRefRequest -> ResolvedRef
    GET /api/embedding/status                                               EmbeddingStatus
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
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import uvicorn
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from quarry.core import auth, tls
from quarry.core.errors import QuarryError
from quarry.core.proto_json import error_json, from_json, to_json
from quarry.core.tokens import READ
from quarry.query.embedding import EmbeddingOps
from quarry.query.http_hosts import MISDIRECTED, AllowedHosts
from quarry.query.root import Coordinator
from quarry.v1 import errors_pb2, query_pb2, refs_pb2

STATUS_BY_CODE = {
    errors_pb2.INVALID_REQUEST: 400,
    errors_pb2.INVALID_CURSOR: 400,
    errors_pb2.STALE_CURSOR: 400,
    errors_pb2.INVALID_QUERY: 422,
    errors_pb2.UNKNOWN_FIELD: 422,
    errors_pb2.BAD_VALUE: 422,
    errors_pb2.UNSUPPORTED_FORM: 422,
    errors_pb2.UNSUPPORTED_NEGATION: 422,
    errors_pb2.QUERY_TOO_COSTLY: 422,
    errors_pb2.NOT_FOUND: 404,
    errors_pb2.NOT_JUDGEABLE: 409,
    errors_pb2.INVALID_LINEAGE: 409,
    errors_pb2.SEMANTIC_UNAVAILABLE: 503,
    errors_pb2.NODE_UNAVAILABLE: 503,
    errors_pb2.PARTITION_UNAVAILABLE: 503,
    errors_pb2.NOT_HOSTED: 503,
    errors_pb2.DEADLINE_EXCEEDED: 504,
    errors_pb2.UNAUTHENTICATED: 401,
    errors_pb2.PERMISSION_DENIED: 403,
}


def error_response(error: QuarryError, status: int | None = None) -> JSONResponse:
    """`{"error": ErrorDetail}` with the status of its code (or `status`)."""
    status = status or STATUS_BY_CODE.get(error.code, 500)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_json(error), status_code=status, headers=headers)


def request_from_params(message_type: type[Message], params: Any, renamed: dict[str, str] | None = None) -> Message:
    """The request message of a route's query parameters; INVALID_REQUEST naming a parameter that is
    not a field of the request, or a value that does not fit its field."""
    renamed = renamed or {}
    descriptor = message_type.DESCRIPTOR
    message = message_type()
    for key in params:
        name = renamed.get(key, key)
        field = descriptor.fields_by_name.get(name) or next((f for f in descriptor.fields if f.json_name == name), None)
        if field is None or field.type == FieldDescriptor.TYPE_MESSAGE:
            raise QuarryError(errors_pb2.INVALID_REQUEST, f"unknown parameter {key!r}", parameter=key)
        values = [_query_value(field, value, key) for value in params.getlist(key)]
        try:  # one field at a time, so that the error names the parameter
            message.MergeFrom(from_json(message_type, {field.json_name: values if field.is_repeated else values[-1]}))
        except QuarryError as error:
            raise QuarryError(error.code, f"parameter {key!r}: {error.message}", parameter=key) from None
    return message


_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _query_value(field: FieldDescriptor, value: str, key: str) -> object:
    """A query string's value as its field's JSON: `true`/`false` (or 1/0) for a boolean, which proto3
    JSON takes only as a JSON boolean; anything else as written."""
    if field.type != FieldDescriptor.TYPE_BOOL:
        return value
    if value.lower() not in _BOOLEANS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"parameter {key!r} takes true or false, got {value!r}", parameter=key
        )
    return _BOOLEANS[value.lower()]


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


def build_app(
    coordinator: Coordinator, embedding: EmbeddingOps, hosts: AllowedHosts, gate: auth.Gate | None = None
) -> Starlette:
    """The routes over the coordinator, answering the `hosts` names only; `gate`: the node's
    authentication (this process's by default), checked on every route but /openapi.json, before the
    request is read."""
    gate = gate or auth.security().gate

    def route(
        path: str,
        message_type: type[Message] | None,
        call: Callable[[Any], Message],
        summary: str,
        renamed: dict[str, str] | None = None,
    ) -> Route:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                caller, scopes = gate.admit(request.headers.get("authorization"), READ)
                message = request_from_params(message_type, request.query_params, renamed) if message_type else None
                body = await run_in_threadpool(auth.run_as, caller, scopes, answer, message)
            except QuarryError as error:
                return error_response(error)
            return Response(body, media_type="application/json")

        def answer(message: Message | None) -> bytes:
            # Encoded on the worker thread: on the event loop, proto3 JSON of one answer (1-2 ms for a
            # page of hits) held up every other connection (bench/RESULTS.md, HTTP under load).
            return orjson.dumps(to_json(auth.redact_local_paths(call(message))))

        endpoint.__doc__ = summary
        return Route(path, endpoint, methods=["GET"], name=path)

    routes = [
        route(
            "/api/sessions", query_pb2.SearchRequest, coordinator.search, "Sessions ranked for a query (SearchEnvelope)"
        ),
        route(
            "/api/query-units",
            query_pb2.QueryUnitsRequest,
            coordinator.query_units,
            "Rows of a unit query (QueryUnitEnvelope); the query in `expression`",
            renamed={"expression": "query"},
        ),
        route("/api/facets", query_pb2.FacetsRequest, coordinator.facets.facets, "Session counts per facet value"),
        route(
            "/api/refs/resolve", refs_pb2.ResolveRefRequest, coordinator.refs.resolve, "The object a public ref names"
        ),
        route("/api/embedding/status", None, lambda _: embedding.status(), "Coverage and backlog of the semantic lane"),
    ]

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(openapi_document(routes))

    return Starlette(
        routes=[*routes, Route("/openapi.json", openapi, methods=["GET"])],
        middleware=[Middleware(HostGuard, hosts=hosts)],
    )


def openapi_document(routes: list[Route]) -> dict[str, Any]:
    """An OpenAPI 3.1 document of the routes: each a GET answering proto3 JSON or an ErrorDetail."""
    paths = {
        r.path: {
            "get": {
                "summary": r.endpoint.__doc__,
                "responses": {
                    "200": {"description": "the response message in proto3 JSON"},
                    "default": {"description": '{"error": ErrorDetail} in proto3 JSON'},
                },
            }
        }
        for r in routes
    }
    return {"openapi": "3.1.0", "info": {"title": "Quarry", "version": "v1"}, "paths": paths}


def serve_http(
    coordinator: Coordinator, embedding: EmbeddingOps, host: str, port: int, allowed_hosts: Sequence[str] = ()
) -> threading.Thread:
    """Serve the API on its own thread (uvicorn installs no signal handlers off the main thread), under
    the loopback names, `host` and `allowed_hosts` (http_hosts.py)."""
    certificate = tls.http_files()  # HTTPS with the node's certificate when it serves TLS
    config = uvicorn.Config(
        build_app(coordinator, embedding, AllowedHosts.of(host, allowed_hosts)),
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=75,  # a dashboard polling every minute keeps its connection
        ssl_certfile=certificate[0] if certificate else None,
        ssl_keyfile=certificate[1] if certificate else None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="http-api", daemon=True)
    thread.start()
    return thread
