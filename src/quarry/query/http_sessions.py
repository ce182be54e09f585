"""The session API (SessionQueryService, docs/sessions.md#http) as routes of the HTTP JSON API: each is the
gRPC method's request read from the path and the query, answered with its response message.

    GET /api/session-records?filters=…&limit=…&cursor=…                    ListSessions -> SessionRecordPage
    GET /api/session-search?query=…&session_filters=…&event_filters=…      SearchSessions -> SessionSearchPage
    GET /api/titles?session_ids=…&session_ids=…                            ReadTitles -> ReadTitlesResponse
    GET /api/sessions/{session_id}                                         the session's SessionRecord
    GET /api/sessions/{session_id}/events?filters=…&with_text=…&limit=…    ListEvents -> EventPage
    GET /api/sessions/{session_id}/events/{seq}?before=…&after=…           ReadEvent -> EventWindow
    GET /api/sessions/{session_id}/events/{seq}/trace                      TraceEvent -> EventTrace
    GET /api/sessions/{session_id}/search?query=…                          SearchEvents -> EventSearchPage
    GET /api/sessions/{session_id}/surface                                 ReadSurface -> SurfaceSnapshot
    GET /api/sessions/{session_id}/lineage                                 TraceSession -> LineageTrace
    GET /api/sessions/{session_id}/log                                     ReadSession: NDJSON of SessionLogChunk

`GET /api/sessions?query=…` stays the ranked search (QueryService.Search): the list and the session search
have paths of their own. A session id may hold `/` (a child's: `…/agent-a1b2`), as is or as `%2F`; the
routes under one session come first, so the record's route takes only what none of them does. Another
scope's session answers exactly as an unknown id does: the calls run within the caller's scopes, as on gRPC.
"""

from __future__ import annotations

import re

from quarry.core.errors import QuarryError
from quarry.query.http_contract import Operation
from quarry.query.sessions import SessionQueries, check_session_id, record
from quarry.v1 import sessions_pb2

SERVICE = sessions_pb2.DESCRIPTOR.services_by_name["SessionQueryService"]
ONE = "/api/sessions/{session_id}"
# (the method, its path, a summary): the routes under one session before the session's own record. Each
# calls the SessionQueries method of its name (ListEvents: list_events), as the gRPC servicer does.
ROUTES = (
    ("ListSessions", "/api/session-records", "Sessions newest first, filtered, paged"),
    ("SearchSessions", "/api/session-search", "Sessions ranked by their strongest matching event (text, never syntax)"),
    ("ReadTitles", "/api/titles", "The latest title of each session; a failure stays with its id"),
    ("TraceEvent", ONE + "/events/{seq}/trace", "An event's replacements and its source and derived links"),
    ("ReadEvent", ONE + "/events/{seq}", "One full event and its raw neighbours"),
    ("ListEvents", ONE + "/events", "Event records (or documents, with_text) matching filters, paged by cursor"),
    ("SearchEvents", ONE + "/search", "Events of one session ranked by the query; the session even without a hit"),
    ("ReadSurface", ONE + "/surface", "What the model currently sees: the current surface in model-history order"),
    ("TraceSession", ONE + "/lineage", "A session's known ancestors and descendant tree"),
    ("ReadSession", ONE + "/log", "The complete event log, raw records whole: NDJSON, one SessionLogChunk a line"),
)


def session_operations(queries: SessionQueries) -> list[Operation]:
    """The session API's routes over `queries`, the session's own record last."""

    def session_record(request: sessions_pb2.SessionIdRequest) -> sessions_pb2.SessionRecord:
        """The session's record, read from its own partition (a title batch of one id)."""
        check_session_id(request.session_id)
        (result,) = queries.read_titles(sessions_pb2.ReadTitlesRequest(session_ids=[request.session_id])).results
        if result.HasField("reason"):
            raise QuarryError.from_detail(result.reason)
        return record(result.value.session)

    operations = [
        Operation.of_method(SERVICE.methods_by_name[name], path, getattr(queries, _snake(name)), summary)
        for name, path, summary in ROUTES
    ]
    own = "The session's record: its summary header, as ListSessions lists it"
    record_route = Operation(
        "ReadSessionRecord", ONE, sessions_pb2.SessionIdRequest, sessions_pb2.SessionRecord, session_record, own
    )
    return [*operations, record_route]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
