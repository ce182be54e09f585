"""The Python client of the session API (SessionQueryService, docs/sessions.md#python), and the
session API's names of its errors (docs/sessions.md#errors).

Every call raises QuarryError with the server's closed code; `session_query_code` names it as the session
API does (SESSION_QUERY_*), from the code, the parameter it names and the call it failed in. Two of those
names are no call's error: SESSION_QUERY_SOURCE_CONFLICT is the ingest issue `source_conflict`
(`SOURCE_CONFLICT_ISSUE`: a second file's copy of a session contradicts the stored one, which is kept),
and SESSION_QUERY_INVALID_CONFIG a node refusing to start on an invalid configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import grpc

from quarry.client.calls import typed_call
from quarry.core.errors import ACCESS_CODES, QuarryError, from_rpc_error
from quarry.v1 import errors_pb2, sessions_pb2, sessions_pb2_grpc, units_pb2

TIMEOUT_S = 60.0
SOURCE_CONFLICT_ISSUE = "source_conflict"  # the IngestIssue.code the session API calls SESSION_QUERY_SOURCE_CONFLICT
SEARCHES = frozenset({"search_sessions", "search_events"})
_INVALID_BY_PARAMETER = (
    ("filters", "SESSION_QUERY_INVALID_FILTER"),
    ("session_ids", "SESSION_QUERY_INVALID_FILTER"),
    ("limit", "SESSION_QUERY_INVALID_LIMIT"),
    ("before", "SESSION_QUERY_INVALID_WINDOW"),
    ("after", "SESSION_QUERY_INVALID_WINDOW"),
    ("query", "SESSION_QUERY_INVALID_QUERY"),
)
_BY_CODE = {
    errors_pb2.INVALID_QUERY: "SESSION_QUERY_INVALID_QUERY",
    errors_pb2.INVALID_CURSOR: "SESSION_QUERY_INVALID_CURSOR",
    errors_pb2.STALE_CURSOR: "SESSION_QUERY_STALE_CURSOR",
    errors_pb2.INVALID_LINEAGE: "SESSION_QUERY_INVALID_LINEAGE",
    errors_pb2.DEADLINE_EXCEEDED: "SESSION_QUERY_ABORTED",
}


def session_query_code(error: QuarryError, operation: str = "") -> str:
    """The session API's name (SESSION_QUERY_*) of a failure of `operation` (a SessionsClient method name);
    "" for a refusal of the caller (UNAUTHENTICATED, PERMISSION_DENIED), which the code alone names."""
    code = error.code
    if code in ACCESS_CODES:
        return ""  # the caller's token or grants: the session API has no name for it, and it is no storage failure
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code == errors_pb2.NOT_FOUND:
        return "SESSION_QUERY_EVENT_NOT_FOUND" if error.parameter == "seq" else "SESSION_QUERY_SESSION_NOT_FOUND"
    if code == errors_pb2.CORRUPT_SESSION:
        return "SESSION_QUERY_INVALID_SURFACE" if error.token == "surface" else "SESSION_QUERY_CORRUPT_SESSION"
    if code == errors_pb2.INVALID_REQUEST:
        for marker, name in _INVALID_BY_PARAMETER:
            if marker in error.parameter:
                return name
        return "SESSION_QUERY_INVALID_FILTER"
    if code in (errors_pb2.PARTITION_UNAVAILABLE, errors_pb2.NODE_UNAVAILABLE, errors_pb2.NOT_HOSTED):
        return "SESSION_QUERY_INDEX_FAILED" if operation in SEARCHES else "SESSION_QUERY_PERSISTENCE_FAILED"
    if error.message.startswith("CANCELLED"):
        return "SESSION_QUERY_ABORTED"
    return "SESSION_QUERY_PERSISTENCE_FAILED"


def session_filters(
    *,
    ids: Sequence[str] = (),
    cwds: Sequence[str] = (),
    parents: Sequence[str] = (),
    availability: Sequence[str] = (),
    created_min: int | None = None,
    created_max: int | None = None,
) -> list[sessions_pb2.SessionFilter]:
    """The ANDed session filters of the given clauses (a clause's values are ORed)."""
    filters = []
    for kind, values in (("ids", ids), ("cwds", cwds), ("parents", parents), ("availability", availability)):
        if values:
            filters.append(sessions_pb2.SessionFilter(**{kind: sessions_pb2.Strings(values=list(values))}))
    if created_min is not None or created_max is not None:
        filters.append(sessions_pb2.SessionFilter(created_at=sessions_pb2.Range(min=created_min, max=created_max)))
    return filters


def event_filters(
    *,
    seq: tuple[int | None, int | None] | None = None,
    time: tuple[int | None, int | None] | None = None,
    types: Sequence[str] = (),
    surfaces: Sequence[str] = (),
    text: str = "",
) -> list[sessions_pb2.EventFilter]:
    """The ANDed event filters of the given clauses."""
    filters = []
    if seq is not None:
        filters.append(sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=seq[0], max=seq[1])))
    if time is not None:
        filters.append(sessions_pb2.EventFilter(time=sessions_pb2.Range(min=time[0], max=time[1])))
    if types:
        filters.append(sessions_pb2.EventFilter(types=sessions_pb2.Strings(values=list(types))))
    if surfaces:
        filters.append(sessions_pb2.EventFilter(surfaces=sessions_pb2.Strings(values=list(surfaces))))
    if text:
        filters.append(sessions_pb2.EventFilter(text=text))
    return filters


class SessionsClient:
    def __init__(self, channel: grpc.Channel) -> None:
        self.stub = sessions_pb2_grpc.SessionQueryServiceStub(channel)

    def list(
        self, filters: Iterable[sessions_pb2.SessionFilter] = (), limit: int = 0, cursor: str = ""
    ) -> sessions_pb2.SessionRecordPage:
        """One page of sessions, newest first."""
        request = sessions_pb2.ListSessionsRequest(filters=list(filters), limit=limit, cursor=cursor)
        return typed_call(self.stub.ListSessions, request)

    def all_ids(self, filters: Iterable[sessions_pb2.SessionFilter] = ()) -> list[str]:
        """The id of every session the caller may read (that the filters admit), newest first, page after
        page (an id listed twice stays twice: nothing is hidden)."""
        ids: list[str] = []
        cursor = ""
        while True:
            page = self.list(filters, limit=100, cursor=cursor)
            ids.extend(record.header.id for record in page.items)
            if not page.next_cursor:
                return ids
            cursor = page.next_cursor

    def read(self, session_id: str) -> tuple[units_pb2.Session, list[units_pb2.SessionEvent]]:
        """The header and the complete event log of one session."""
        header = units_pb2.Session()
        events: list[units_pb2.SessionEvent] = []
        try:
            for chunk in self.stub.ReadSession(sessions_pb2.SessionIdRequest(session_id=session_id), timeout=TIMEOUT_S):
                if chunk.HasField("session"):
                    header = chunk.session
                events.extend(chunk.events)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return header, events

    def surface(self, session_id: str) -> sessions_pb2.SurfaceSnapshot:
        return typed_call(self.stub.ReadSurface, sessions_pb2.SessionIdRequest(session_id=session_id))

    def events(
        self, session_id: str, filters: Iterable[sessions_pb2.EventFilter] = (), with_text: bool = False
    ) -> sessions_pb2.EventPage:
        request = sessions_pb2.ListEventsRequest(session_id=session_id, filters=list(filters), with_text=with_text)
        return typed_call(self.stub.ListEvents, request)

    def event(
        self, session_id: str, seq: int, before: int = 0, after: int = 0, with_messages: bool = False
    ) -> sessions_pb2.EventWindow:
        """One full event and its neighbours; `with_messages`, also the messages they became."""
        request = sessions_pb2.ReadEventRequest(
            session_id=session_id, seq=seq, before=before, after=after, with_messages=with_messages
        )
        return typed_call(self.stub.ReadEvent, request)

    def trace_event(self, session_id: str, seq: int) -> sessions_pb2.EventTrace:
        return typed_call(self.stub.TraceEvent, sessions_pb2.TraceEventRequest(session_id=session_id, seq=seq))

    def lineage(self, session_id: str) -> sessions_pb2.LineageTrace:
        return typed_call(self.stub.TraceSession, sessions_pb2.SessionIdRequest(session_id=session_id))

    def titles(self, session_ids: Iterable[str]) -> sessions_pb2.ReadTitlesResponse:
        return typed_call(self.stub.ReadTitles, sessions_pb2.ReadTitlesRequest(session_ids=list(session_ids)))

    def search_sessions(
        self,
        query: str,
        session_filters: Iterable[sessions_pb2.SessionFilter] = (),
        event_filters: Iterable[sessions_pb2.EventFilter] = (),
        limit: int = 0,
        cursor: str = "",
    ) -> sessions_pb2.SessionSearchPage:
        request = sessions_pb2.SessionSearchRequest(
            query=query,
            session_filters=list(session_filters),
            event_filters=list(event_filters),
            limit=limit,
            cursor=cursor,
        )
        return typed_call(self.stub.SearchSessions, request)

    def search_events(
        self,
        session_id: str,
        query: str,
        filters: Iterable[sessions_pb2.EventFilter] = (),
        limit: int = 0,
        cursor: str = "",
    ) -> sessions_pb2.EventSearchPage:
        request = sessions_pb2.EventSearchRequest(
            session_id=session_id, query=query, filters=list(filters), limit=limit, cursor=cursor
        )
        return typed_call(self.stub.SearchEvents, request)
