"""`quarry mcp`: Quarry's API as MCP tools (the official `mcp` SDK), over stdio or streamable HTTP.

Each tool is one gRPC call of the query node through the Python client, and returns exactly the message
that call returns, in proto3 JSON (`quarry.core.proto_json`: lowerCamelCase names, 64-bit integers as
strings), as the tool's structured content and as its text. A failed call returns `isError` with
`{"error": ErrorDetail}` in the same JSON: the closed code, the message, the position in the query,
the parameter path. Arguments are the request's fields (the JSON names or the proto names), so an agent
reads the same contract as a gRPC client: `docs` of each tool name its request and response messages.
`read_session` alone is a page rather than one call's message: a session's log would not fit an agent's
context whole, so it returns the next events after a ListEvents cursor, within a page size and a budget of
characters, and the cursor of the page after.

Whose authority a tool call runs with. Over stdio, the server's own token ($QUARRY_TOKEN, or the context's
token file): the only caller is the agent that started it. Over streamable HTTP, anyone who reaches the port
is a caller: another local user or process, a container on the host network, a web page the user's
browser loads (the SDK checks Host and Origin on loopback, but a local process sends what it likes). A
server that answered them with its own token would be a confused deputy, lending its token to callers it
cannot tell apart. So over HTTP the server never uses a token of its own: with `--auth` every request
carries its caller's token (BearerTokens) and its tools run with that token alone; without `--auth` it
refuses to start when it holds a token (`check_http_without_auth`), and otherwise calls with no token at
all, which only a cluster without tokens on loopback answers: there a caller can do nothing it could not do
by calling the cluster itself. (A Unix socket owned by the user would identify callers too, but MCP
clients reach HTTP servers by URL; a bearer token is the identity every one of them can present.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
from google.protobuf.message import Message
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from quarry.client.calls import typed_call
from quarry.client.client import QuarryClient
from quarry.client.controls_json import controls_from_json
from quarry.core.addresses import is_loopback
from quarry.core.errors import QuarryError
from quarry.core.lanes import AUTO
from quarry.core.proto_json import error_json, from_json, to_json
from quarry.core.tokens import TOKEN_PATTERN
from quarry.v1 import embedding_pb2, errors_pb2, sessions_pb2

INSTRUCTIONS = (
    "Quarry searches the session logs of AI coding agents. `search` ranks sessions for a description in plain "
    "words (read as prose: any of its words, and its meaning) or a query of Quarry's language; `query_units` "
    "returns rows of messages, actions, files, runs and more; "
    "`resolve_ref` reads one object by its public ref; the session tools read a session's raw events exactly "
    "(surfaces current / shadowed / log-only, windows, traces, lineage, titles). Results are the gRPC API's "
    "messages in proto3 JSON; pass a result's nextCursor back as `cursor` for the next page."
)
PAGE_EVENTS = 50  # read_session's default page: a few tool round trips of a coding session
PAGE_CHARS = 60_000  # and at most about this much JSON (some 15k tokens), so a page fits an agent's context
MAX_PAGE_EVENTS = 1000  # ListEvents' largest page, and ReadEvent's widest window


def _result(data: dict[str, Any], is_error: bool = False) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=is_error)


def _request(message_type: type[Message], fields: dict[str, Any]) -> Message:
    """The request message of a tool's arguments; INVALID_REQUEST naming what does not fit."""
    return from_json(message_type, {name: value for name, value in fields.items() if value is not None})


def error_result(error: QuarryError) -> CallToolResult:
    return _result(error_json(error), is_error=True)


class BearerTokens:
    """Streamable HTTP with authentication: every HTTP request carries `Authorization: Bearer <token>`, a
    Quarry token (`quarry token create`), checked by the query node itself on a cheap read; each tool call
    then runs on a client carrying the caller's token, so the cluster limits it to the token's scopes.
    Checks are cached briefly (a revoked token stops working within CHECK_TTL_S)."""

    CHECK_TTL_S = 30.0

    def __init__(self, client_for: Callable[[str | None], QuarryClient]) -> None:
        self.client_for = client_for
        self._checked: dict[str, float] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        if not TOKEN_PATTERN.fullmatch(token):
            return None
        now = time.monotonic()
        if now - self._checked.get(token, -self.CHECK_TTL_S) >= self.CHECK_TTL_S:
            try:
                await anyio.to_thread.run_sync(self.client_for(token).status)
            except QuarryError as error:
                if error.code in (errors_pb2.UNAUTHENTICATED, errors_pb2.PERMISSION_DENIED):
                    return None
                raise
            self._checked[token] = now
        return AccessToken(token=token, client_id=token.split("_")[1], scopes=[])


def check_http_without_auth(host: str, own_token: str | None) -> None:
    """Streamable HTTP without --auth: INVALID_REQUEST when the server would lend `own_token` to whoever
    reaches the port (the module's docstring), or would serve beyond loopback unauthenticated."""
    if not is_loopback(host):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"serving MCP on {host}, beyond loopback, needs --auth (every request then carries a token)",
            parameter="--http",
        )
    if own_token:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "serving MCP over HTTP without --auth would run every caller that reaches the port (any local "
            "process or user, a web page) with this server's own token ($QUARRY_TOKEN or the context's token "
            "file): pass --auth, so that each request runs with its caller's own token, or serve over stdio",
            parameter="--auth",
        )


Current = Callable[[], QuarryClient]  # the client of the tool call being served
Call = Callable[[Callable[[], Message]], CallToolResult]  # a call's message as a result, or its error
Unary = Callable[[str, type[Message], dict[str, Any]], CallToolResult]  # a session API call of tool arguments


def build_server(client_for: Callable[[str | None], QuarryClient], auth_url: str | None = None) -> MCPServer:
    """The MCP server over the cluster `client_for` connects to: a client per token (None: the server's
    own). With `auth_url` (the server's own URL, streamable HTTP) every request needs a bearer token
    (BearerTokens) and its tools run with the caller's token, never the server's."""
    if auth_url is None:
        server: MCPServer = MCPServer("quarry", instructions=INSTRUCTIONS)
    else:
        server = MCPServer(
            "quarry",
            instructions=INSTRUCTIONS,
            token_verifier=BearerTokens(client_for),
            auth=AuthSettings(issuer_url=auth_url, resource_server_url=auth_url, required_scopes=[]),
        )

    def current() -> QuarryClient:
        """The client of the caller's token (over authenticated HTTP), else (stdio, or HTTP without auth
        and without a token) the server's own."""
        access = get_access_token()
        if access is not None:
            return client_for(access.token)
        if auth_url is not None:
            raise QuarryError(errors_pb2.UNAUTHENTICATED, "this MCP server answers only requests with a bearer token")
        return client_for(None)

    def call(run: Callable[[], Message]) -> CallToolResult:
        try:
            return _result(to_json(run()))
        except QuarryError as error:
            return error_result(error)

    _search_tools(server, current, call)
    _embedding_tools(server, current, call)
    _session_tools(server, current, _unary(current, call))
    _trace_and_search_tools(server, _unary(current, call))
    return server


def _search_tools(server: MCPServer, current: Current, call: Call) -> None:
    """Search, unit queries, facets and public refs (docs/search-api.md#mcp-tools)."""

    @server.tool()
    def search(
        query: str,
        lane: str = AUTO,
        limit: int = 20,
        cursor: str = "",
        require_complete: bool = False,
        reading: str = "",
        controls: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Sessions ranked for a description or a query of Quarry's language (SearchRequest ->
        SearchEnvelope). Text without fields, operators or quotes is read as prose: sessions holding any of
        its words, and by meaning where vectors exist; the envelope's `reading` says which. reading: ""
        (the text decides), prose or query. lane: auto, dialogue, actions, semantic or hybrid. End a query
        with a projection to get each session's rows in the same call: `repo:ledger with messages(role,
        text)[role:user, last:5], actions(tool_name, is_error)[is_error:true]` (each hit's `projections`).
        controls (SearchControls; omit a field for its default): `{"admission": {"lexical_coverage": 0.5,
        "lexical_min_matched_terms": 2, "min_semantic_similarity": 0.3}, "fusion": {"method": "rrf" or
        "minmax", "params": {"rank_constant": 60, "weights": {"text": 2, "action": 1, "vector": 1}}},
        "min_score": 0.2, "include_scores": true}`; the envelope's `controls` echoes what ran."""

        def run() -> Message:
            chosen = controls_from_json(controls) if controls is not None else None
            return current().search(
                query,
                lane=lane,
                limit=limit,
                cursor=cursor,
                require_complete=require_complete,
                reading=reading,
                controls=chosen,
            )

        return call(run)

    @server.tool()
    def query_units(query: str, limit: int = 50, offset: int = 0, cursor: str = "") -> CallToolResult:
        """Rows (or groups) of a unit query such as `actions where tool:bash | group by path | count`
        (QueryUnitsRequest -> QueryUnitEnvelope). A page cut by the limit has has_more and a next_cursor:
        pass it as `cursor`, with the same query and limit, for the next page."""
        return call(lambda: current().query_units(query, limit=limit, offset=offset, cursor=cursor))

    @server.tool()
    def facets(
        query: str = "", origins: list[str] | None = None, families: list[str] | None = None, idf: bool = True
    ) -> CallToolResult:
        """Session counts per facet value, global and scoped by a query (FacetsRequest -> FacetsResponse)."""
        return call(lambda: current().facets(query, origins=origins or (), families=families or (), idf=idf))

    @server.tool()
    def resolve_ref(ref: str, max_chars: int = 0) -> CallToolResult:
        """The object a public ref names: session:, message:, block:, action:, delegation:, … (ResolvedRef)."""
        return call(lambda: current().resolve_ref(ref, max_chars=max_chars))


def _embedding_tools(server: MCPServer, current: Current, call: Call) -> None:
    """The semantic lane's embedding state and catch-up window (docs/cluster.md#embedding-operations)."""

    @server.tool()
    def embedding_status() -> CallToolResult:
        """Embedder, coverage, backlog and the next action of the semantic lane (EmbeddingStatus)."""
        return call(lambda: current().embedding.Status(embedding_pb2.EmbeddingStatusRequest(), timeout=60))

    @server.tool()
    def embedding_preflight(max_sessions: int) -> CallToolResult:
        """The window a backfill of `max_sessions` would embed, and its estimated time (EmbeddingPreflight)."""
        request = embedding_pb2.EmbeddingWindowRequest(max_sessions=max_sessions)
        return call(lambda: current().embedding.Preflight(request, timeout=600))


def _unary(current: Current, call: Call) -> Unary:
    """A unary call of the session API (SessionQueryService method, request type, the tool's arguments)."""

    def unary(method: str, message_type: type[Message], fields: dict[str, Any]) -> CallToolResult:
        try:
            request = _request(message_type, fields)
        except QuarryError as error:
            return error_result(error)
        return call(lambda: typed_call(getattr(current().sessions.stub, method), request))

    return unary


def _session_page(client: QuarryClient, session_id: str, limit: int, cursor: str, max_chars: int) -> dict[str, Any]:
    """read_session's page: ListEvents' page of `limit` records says which events and where the next page
    starts; ReadEvent's window over them gives them whole. Events past `max_chars` of JSON wait for the next
    page, whose cursor ListEvents gives for the shorter page (its cursors bind no page size)."""
    if not 1 <= limit <= MAX_PAGE_EVENTS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"limit must be 1..{MAX_PAGE_EVENTS} events, not {limit}", parameter="limit"
        )
    if max_chars < 1:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"max_chars must be positive, not {max_chars}", parameter="max_chars"
        )
    stub = client.sessions.stub

    def listed(size: int) -> sessions_pb2.EventPage:
        request = sessions_pb2.ListEventsRequest(session_id=session_id, limit=size, cursor=cursor)
        return typed_call(stub.ListEvents, request)

    page = listed(limit)
    out: dict[str, Any] = {"session": to_json(page.session), "events": []}
    if not page.events:
        return out
    first, last = page.events[0].record.seq, page.events[-1].record.seq
    window = typed_call(
        stub.ReadEvent, sessions_pb2.ReadEventRequest(session_id=session_id, seq=first, after=last - first)
    )
    size = 0
    for event in window.events:
        encoded = to_json(event)
        size += len(json.dumps(encoded, ensure_ascii=False))
        if out["events"] and size > max_chars:
            page = listed(len(out["events"]))
            break
        out["events"].append(encoded)
    if page.next_cursor:
        out["nextCursor"] = page.next_cursor
    return out


def _session_tools(server: MCPServer, current: Current, unary: Unary) -> None:
    """The session API's reads (docs/sessions.md#mcp-tools); filters are SessionFilter / EventFilter
    messages in proto3 JSON, e.g. {"surfaces": {"values": ["current"]}} or {"seq": {"min": "10", "max": "40"}}."""

    @server.tool()
    def list_sessions(filters: list[dict[str, Any]] | None = None, limit: int = 0, cursor: str = "") -> CallToolResult:
        """Sessions newest first, filtered (ListSessionsRequest -> SessionRecordPage)."""
        return unary(
            "ListSessions", sessions_pb2.ListSessionsRequest, {"filters": filters, "limit": limit, "cursor": cursor}
        )

    @server.tool()
    def read_session(
        session_id: str, limit: int = PAGE_EVENTS, cursor: str = "", max_chars: int = PAGE_CHARS
    ) -> CallToolResult:
        """One page of a session's event log: its header and its next events in seq order, whole, raw
        records included (payloads held apart, such as images, as placeholders): at most `limit` events
        (1..1000) and, past the first, `max_chars` characters of JSON. A page that does not end the log has
        `nextCursor`: call again with it as `cursor` (same session_id) for the next page; none: the log's
        end. For the text alone, list_events with with_text."""
        try:
            return _result(_session_page(current(), session_id, limit, cursor, max_chars))
        except QuarryError as error:
            return error_result(error)

    @server.tool()
    def read_surface(session_id: str) -> CallToolResult:
        """What the model currently sees: the current surface (SessionIdRequest -> SurfaceSnapshot)."""
        return unary("ReadSurface", sessions_pb2.SessionIdRequest, {"sessionId": session_id})

    @server.tool()
    def list_events(
        session_id: str,
        filters: list[dict[str, Any]] | None = None,
        with_text: bool = False,
        limit: int = 0,
        cursor: str = "",
    ) -> CallToolResult:
        """Event records (with their text on request) matching filters, in seq order (EventPage). limit:
        1..1000 events a page (0: every one); pass a page's nextCursor as `cursor` for the next."""
        fields = {"sessionId": session_id, "filters": filters, "withText": with_text, "limit": limit, "cursor": cursor}
        return unary("ListEvents", sessions_pb2.ListEventsRequest, fields)

    @server.tool()
    def read_event(session_id: str, seq: int, before: int = 0, after: int = 0) -> CallToolResult:
        """One full event and its neighbours (ReadEventRequest -> EventWindow)."""
        fields = {"sessionId": session_id, "seq": seq, "before": before, "after": after}
        return unary("ReadEvent", sessions_pb2.ReadEventRequest, fields)


def _trace_and_search_tools(server: MCPServer, unary: Unary) -> None:
    """The session API's traces, titles and searches (docs/sessions.md#mcp-tools)."""

    @server.tool()
    def trace_event(session_id: str, seq: int) -> CallToolResult:
        """An event's replacement chain and its replacement, source and derived links (EventTrace)."""
        return unary("TraceEvent", sessions_pb2.TraceEventRequest, {"sessionId": session_id, "seq": seq})

    @server.tool()
    def trace_session(session_id: str) -> CallToolResult:
        """A session's ancestors and descendant tree (LineageTrace)."""
        return unary("TraceSession", sessions_pb2.SessionIdRequest, {"sessionId": session_id})

    @server.tool()
    def read_titles(session_ids: list[str]) -> CallToolResult:
        """The latest title of each unique id, in order; a failure stays with its id (ReadTitlesResponse)."""
        return unary("ReadTitles", sessions_pb2.ReadTitlesRequest, {"sessionIds": session_ids})

    @server.tool()
    def search_sessions(
        query: str,
        session_filters: list[dict[str, Any]] | None = None,
        event_filters: list[dict[str, Any]] | None = None,
        limit: int = 0,
        cursor: str = "",
    ) -> CallToolResult:
        """Sessions ranked by their strongest matching event; the query is text, never syntax
        (SessionSearchRequest -> SessionSearchPage)."""
        fields = {
            "query": query,
            "sessionFilters": session_filters,
            "eventFilters": event_filters,
            "limit": limit,
            "cursor": cursor,
        }
        return unary("SearchSessions", sessions_pb2.SessionSearchRequest, fields)

    @server.tool()
    def search_events(
        session_id: str, query: str, filters: list[dict[str, Any]] | None = None, limit: int = 0, cursor: str = ""
    ) -> CallToolResult:
        """Events of one session ranked by the query; its header comes back even without a hit (EventSearchPage)."""
        fields = {"sessionId": session_id, "query": query, "filters": filters, "limit": limit, "cursor": cursor}
        return unary("SearchEvents", sessions_pb2.EventSearchRequest, fields)
