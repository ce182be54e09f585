"""The session API (docs/sessions.md) on the query node: validation, routing, merging, lineage, cursors.

A read addressed by session id goes to the partition that holds the session (`partition_for`, the
family's partition) through the cluster client: one replica, then once another. Lists, title batches,
lineage levels and cross-session searches fan out to every partition they need and merge.

Request validation is strict and typed (INVALID_REQUEST with the parameter path): limits and windows
in range, non-empty value lists, closed vocabularies (surfaces, availability), ranges with min <= max,
the text clause only where the session API allows it (ListEvents). Cursors are sealed tokens (cursors.seal)
bound to a digest of the normalized request (everything but the cursor): another request gets
STALE_CURSOR, a damaged token INVALID_CURSOR. A within-session search cursor also binds the session's
content hash: when the session changed between pages, its ranking did too, and the cursor is stale.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from quarry.core import auth, event_trace, vocab
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.query import cursors, limits
from quarry.query.cluster_client import ClusterClient
from quarry.query.partial import require, unavailable
from quarry.query.scatter import Deadline
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2

DEADLINE_MS = 10_000.0
MAX_LIST = 1000
DEFAULT_LIST = 100
MAX_SEARCH = 100
DEFAULT_SEARCH = 20
MAX_WINDOW = 1000
LOG_CHUNK_EVENTS = 256
LOG_CHUNK_BYTES = 2 << 20
LINEAGE_FANOUT = 10_000  # children one level of a lineage reads per partition
AVAILABILITY = ("live", "persisted")
SESSION_CURSOR = "sessions"
EVENTS_CURSOR = "event-list"
MAX_SESSION_ID = 1024  # characters; real ids are under 200


class SessionQueries:
    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster

    # ---- lists and titles ----------------------------------------------------------------------

    def list_sessions(self, request: sessions_pb2.ListSessionsRequest) -> sessions_pb2.SessionRecordPage:
        check_session_filters(request.filters, "filters")
        limit = _limit(request.limit, DEFAULT_LIST, MAX_LIST)
        digest = _digest("list", request, limit)
        after = None
        if request.cursor:
            updated_ms, session_id = _open_cursor(request.cursor, digest, ("updated_ms", int), ("id", str))
            after = sessions_pb2.SessionAnchor(updated_ms=updated_ms, session_id=session_id)
        sessions = self._list(request.filters, after, limit + 1, Deadline(DEADLINE_MS))
        page = sessions_pb2.SessionRecordPage(items=[record(s) for s in sessions[:limit]])
        if len(sessions) > limit:
            last = sessions[limit - 1]
            page.next_cursor = cursors.seal({"d": digest, "updated_ms": last.updated_ms, "id": last.id})
        return page

    def _list(
        self,
        filters: Sequence[sessions_pb2.SessionFilter],
        after: sessions_pb2.SessionAnchor | None,
        limit: int,
        deadline: Deadline,
        partitions: Sequence[int] | None = None,
    ) -> list[units_pb2.Session]:
        """Summaries matching the filters from every partition (or `partitions`), newest first; complete
        or PARTITION_UNAVAILABLE."""
        fanned = self.cluster.sessions.list_sessions(
            lambda ps: sessions_pb2.NodeListSessionsRequest(partitions=ps, filters=filters, after=after, limit=limit),
            deadline,
            partitions,
        )
        require(fanned.missing, complete=True)
        merged = [s for result in fanned.ordered() for s in result.sessions]
        merged.sort(key=lambda s: (-s.updated_ms, s.id))
        return merged[:limit]

    def read_titles(self, request: sessions_pb2.ReadTitlesRequest) -> sessions_pb2.ReadTitlesResponse:
        ids = list(dict.fromkeys(request.session_ids))
        if not ids:
            raise _invalid("session_ids", "name at least one session")
        if len(ids) > MAX_LIST:
            raise _invalid("session_ids", f"at most {MAX_LIST} sessions per call")
        count = self.cluster.partitions
        wanted = {partition_for(i, count) for i in ids if i}
        fanned = self.cluster.sessions.list_sessions(
            lambda ps: sessions_pb2.NodeListSessionsRequest(partitions=ps, filters=[_ids_filter(ids)], limit=len(ids)),
            Deadline(DEADLINE_MS),
            sorted(wanted),
        )
        found = {s.id: s for result in fanned.ordered() for s in result.sessions}
        response = sessions_pb2.ReadTitlesResponse()
        for session_id in ids:
            result = response.results.add(session_id=session_id)
            session = found.get(session_id)
            partition = partition_for(session_id, count) if session_id else -1
            if session is not None:
                result.value.session.CopyFrom(session)
                if session.HasField("title_snapshot"):
                    result.value.title.CopyFrom(session.title_snapshot)
            elif partition in fanned.missing:
                result.reason.CopyFrom(unavailable({partition: fanned.missing[partition]}).to_detail())
            else:
                result.reason.CopyFrom(_not_found(session_id).to_detail())
        return response

    # ---- one session ---------------------------------------------------------------------------

    def _events(
        self,
        session_id: str,
        filters: Sequence[sessions_pb2.EventFilter] = (),
        *,
        full: bool = False,
        with_text: bool = False,
        with_payloads: bool = False,
        with_messages: bool = False,
        deadline: Deadline | None = None,
    ) -> sessions_pb2.StoredEvents:
        check_session_id(session_id)
        partition = partition_for(session_id, self.cluster.partitions)
        request = sessions_pb2.PartitionReadEvents(
            partition=partition,
            session_id=session_id,
            filters=filters,
            full=full,
            with_text=with_text,
            with_payloads=with_payloads,
            with_messages=with_messages,
        )
        return self.cluster.sessions.read_events(partition, request, deadline or Deadline(DEADLINE_MS))

    def read_session(self, request: sessions_pb2.SessionIdRequest) -> Iterator[sessions_pb2.SessionLogChunk]:
        """The header, then the events with their raw records whole (held-apart payloads put back), in
        chunks of at most LOG_CHUNK_EVENTS events and, past its first event, LOG_CHUNK_BYTES of records:
        a log of images stays within what a client with gRPC's default 4 MiB limit receives."""
        stored = self._events(request.session_id, with_payloads=True)
        event_trace.check_log(request.session_id, stored.events)
        chunk = sessions_pb2.SessionLogChunk(session=stored.session)
        size = 0
        for event in stored.events:
            record = len(event.raw_json) + len(event.text)
            if chunk.events and (len(chunk.events) >= LOG_CHUNK_EVENTS or size + record > LOG_CHUNK_BYTES):
                yield chunk
                chunk, size = sessions_pb2.SessionLogChunk(), 0
            chunk.events.append(event)
            size += record
        yield chunk

    def read_surface(self, request: sessions_pb2.SessionIdRequest) -> sessions_pb2.SurfaceSnapshot:
        current = sessions_pb2.EventFilter(surfaces=sessions_pb2.Strings(values=["current"]))
        stored = self._events(request.session_id, [current], full=True)
        snapshot = sessions_pb2.SurfaceSnapshot(session=stored.session, events=stored.events)
        if stored.event_count:
            snapshot.captured_through_seq = stored.event_count - 1
        return snapshot

    def list_events(self, request: sessions_pb2.ListEventsRequest) -> sessions_pb2.EventPage:
        """The matching events in seq order; with a limit, a page of them and a cursor to the next. The
        cursor holds the next seq, which never changes as the log grows, so it binds no limit: a reader
        may take pages of any size."""
        check_event_filters(request.filters, "filters", text_allowed=True)
        if not 0 <= request.limit <= MAX_LIST:
            raise _invalid("limit", f"limit must be 1..{MAX_LIST} (0: every event), not {request.limit}")
        digest = _digest(EVENTS_CURSOR, request, 0)
        filters = list(request.filters)
        if request.cursor:
            (start,) = _open_cursor(request.cursor, digest, ("seq", int))
            filters.append(sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=start)))
        stored = self._events(request.session_id, filters, with_text=request.with_text)
        page = sessions_pb2.EventPage(session=stored.session)
        for event in stored.events[: request.limit or None]:
            page.events.add(record=event_trace.record_of(request.session_id, event), text=event.text)
        if request.limit and len(stored.events) > request.limit:
            page.next_cursor = cursors.seal({"d": digest, "seq": page.events[-1].record.seq + 1})
        return page

    def read_event(self, request: sessions_pb2.ReadEventRequest) -> sessions_pb2.EventWindow:
        for name, value in (("before", request.before), ("after", request.after)):
            if not 0 <= value <= MAX_WINDOW:
                raise _invalid(name, f"{name} must be 0..{MAX_WINDOW} events, not {value}")
        seq = request.seq
        window = sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=seq - request.before, max=seq + request.after))
        stored = self._events(request.session_id, [window], full=True, with_messages=request.with_messages)
        target = next((e for e in stored.events if e.seq == seq), None)
        if target is None:
            raise _event_not_found(request.session_id, seq, stored.event_count)
        return sessions_pb2.EventWindow(
            session=stored.session,
            target=target,
            events=stored.events,
            start_seq=stored.events[0].seq,
            end_seq=stored.events[-1].seq,
            messages=stored.messages,
        )

    def trace_event(self, request: sessions_pb2.TraceEventRequest) -> sessions_pb2.EventTrace:
        stored = self._events(request.session_id)
        if not 0 <= request.seq < len(stored.events):
            raise _event_not_found(request.session_id, request.seq, stored.event_count)
        event_trace.check_log(request.session_id, stored.events)
        result = event_trace.trace(request.session_id, stored.events, request.seq)
        result.session.CopyFrom(stored.session)
        return result

    # ---- lineage -------------------------------------------------------------------------------

    def trace_session(self, request: sessions_pb2.SessionIdRequest) -> sessions_pb2.LineageTrace:
        check_session_id(request.session_id)
        deadline = Deadline(DEADLINE_MS)
        target = self._one_session(request.session_id, deadline)
        if target is None:
            raise _not_found(request.session_id)
        trace = sessions_pb2.LineageTrace(target=record(target))
        seen = {target.id}
        top = target
        parent_id = target.parent_session_id
        while parent_id:
            if parent_id in seen:
                raise QuarryError(
                    errors_pb2.INVALID_LINEAGE,
                    f"the ancestry of {target.id} cycles back to {parent_id}",
                    parameter="session_id",
                )
            seen.add(parent_id)
            parent = self._one_session(parent_id, deadline)
            if parent is None:
                trace.unresolved_parent_id = parent_id
                break
            trace.ancestors.append(record(parent))
            top = parent
            parent_id = parent.parent_session_id
        else:
            trace.root.CopyFrom(record(top))
        trace.descendants.extend(self._descendants(target.id, seen, deadline))
        return trace

    def _one_session(self, session_id: str, deadline: Deadline) -> units_pb2.Session | None:
        partition = partition_for(session_id, self.cluster.partitions)
        found = self._list([_ids_filter([session_id])], None, 1, deadline, [partition])
        return found[0] if found else None

    def _descendants(self, root: str, seen: set[str], deadline: Deadline) -> list[sessions_pb2.LineageNode]:
        """The descendant forest of `root`, one fan-out per level; children in creation order."""
        nodes: dict[str, sessions_pb2.LineageNode] = {}
        children_of: dict[str, list[str]] = {}
        level = [root]
        while level:
            parents = sessions_pb2.SessionFilter(parents=sessions_pb2.Strings(values=level))
            children = self._list([parents], None, LINEAGE_FANOUT, deadline)
            children.sort(key=lambda s: (s.created_ms, s.id))
            level = []
            for child in children:
                if child.id in seen:
                    raise QuarryError(
                        errors_pb2.INVALID_LINEAGE,
                        f"{child.id} is its own descendant: the lineage of {root} cycles",
                        parameter="session_id",
                    )
                seen.add(child.id)
                nodes[child.id] = sessions_pb2.LineageNode(session=record(child))
                children_of.setdefault(child.parent_session_id, []).append(child.id)
                level.append(child.id)

        def build(session_id: str) -> list[sessions_pb2.LineageNode]:
            built = []
            for child_id in children_of.get(session_id, []):
                node = nodes[child_id]
                node.descendants.extend(build(child_id))
                built.append(node)
            return built

        return build(root)

    # ---- search --------------------------------------------------------------------------------

    def search_events(self, request: sessions_pb2.EventSearchRequest) -> sessions_pb2.EventSearchPage:
        check_session_id(request.session_id)
        check_event_filters(request.filters, "filters", text_allowed=False)
        limit = _limit(request.limit, DEFAULT_SEARCH, MAX_SEARCH)
        digest = _digest("events", request, limit)
        offset, content_hash = 0, ""
        if request.cursor:
            offset, content_hash = _open_cursor(request.cursor, digest, ("offset", int), ("hash", str))
        normalized = sessions_pb2.EventSearchRequest()
        normalized.CopyFrom(request)
        normalized.limit = limit
        normalized.ClearField("cursor")
        partition = partition_for(request.session_id, self.cluster.partitions)
        page = self.cluster.sessions.search_events(
            partition,
            sessions_pb2.PartitionSearchEvents(partition=partition, request=normalized, offset=offset),
            Deadline(DEADLINE_MS),
        )
        if content_hash and page.session.content_hash != content_hash:
            raise QuarryError(
                errors_pb2.STALE_CURSOR,
                f"{request.session_id} changed since the cursor's page: search it again from the first page",
                parameter="cursor",
            )
        if len(page.items) > limit:
            del page.items[limit:]
            page.next_cursor = cursors.seal({"d": digest, "offset": offset + limit, "hash": page.session.content_hash})
        return page

    def search_sessions(self, request: sessions_pb2.SessionSearchRequest) -> sessions_pb2.SessionSearchPage:
        check_session_filters(request.session_filters, "session_filters")
        check_event_filters(request.event_filters, "event_filters", text_allowed=False)
        limit = _limit(request.limit, DEFAULT_SEARCH, MAX_SEARCH)
        digest = _digest(SESSION_CURSOR, request, limit)
        after = None
        if request.cursor:
            score, session_id = _open_cursor(request.cursor, digest, ("score", float), ("id", str))
            after = sessions_pb2.SessionHitAnchor(score=score, session_id=session_id)
        normalized = sessions_pb2.SessionSearchRequest()
        normalized.CopyFrom(request)
        normalized.ClearField("cursor")
        fanned = self.cluster.sessions.search_sessions(
            lambda ps: sessions_pb2.NodeSearchSessions(partitions=ps, request=normalized, limit=limit + 1, after=after),
            Deadline(DEADLINE_MS),
        )
        hits = [hit for result in fanned.ordered() for hit in result.hits]
        hits.sort(key=lambda h: (-h.best_match.score, h.record.header.id))
        page = sessions_pb2.SessionSearchPage(items=hits[:limit], missing_partitions=sorted(fanned.missing))
        if len(hits) > limit:
            last = hits[limit - 1]
            page.next_cursor = cursors.seal({"d": digest, "score": last.best_match.score, "id": last.record.header.id})
        return page


# ---- validation and helpers -----------------------------------------------------------------------


def record(session: units_pb2.Session) -> sessions_pb2.SessionRecord:
    return sessions_pb2.SessionRecord(header=session, live=False, persisted=True)


def check_session_filters(filters: Sequence[sessions_pb2.SessionFilter], name: str) -> None:
    for index, clause in enumerate(filters):
        kind = clause.WhichOneof("clause")
        where = f"{name}[{index}]"
        if kind is None:
            raise _invalid(where, "an empty filter clause")
        if kind == "created_at":
            _check_range(clause.created_at, f"{where}.created_at")
            continue
        values = getattr(clause, kind).values
        if not values:
            raise _invalid(f"{where}.{kind}", "list at least one value")
        if kind == "availability":
            for value in values:
                if value not in AVAILABILITY:
                    raise _invalid(f"{where}.availability", f"{value!r} is not one of {', '.join(AVAILABILITY)}")


def check_event_filters(filters: Sequence[sessions_pb2.EventFilter], name: str, *, text_allowed: bool) -> None:
    for index, clause in enumerate(filters):
        kind = clause.WhichOneof("clause")
        where = f"{name}[{index}]"
        if kind is None:
            raise _invalid(where, "an empty filter clause")
        if kind in ("seq", "time"):
            _check_range(getattr(clause, kind), f"{where}.{kind}")
            if kind == "seq":
                for bound in ("min", "max"):
                    if clause.seq.HasField(bound):
                        limits.check_seq_bound(getattr(clause.seq, bound), f"{where}.seq.{bound}")
        elif kind == "text":
            if not text_allowed:
                raise _invalid(f"{where}.text", "a search takes its text as the query, not as a text filter")
            if not clause.text.split():
                raise _invalid(f"{where}.text", "a text filter needs some text")
        else:
            values = getattr(clause, kind).values
            if not values:
                raise _invalid(f"{where}.{kind}", "list at least one value")
            if kind == "surfaces":
                for value in values:
                    if value not in vocab.SURFACES:
                        raise _invalid(f"{where}.surfaces", f"{value!r} is not one of {', '.join(vocab.SURFACES)}")


def check_session_id(session_id: str) -> None:
    """A session id to look up: named, and short enough that an answer echoing it stays within gRPC's
    metadata limit (an unknown id's NOT_FOUND names it)."""
    if not session_id:
        raise _invalid("session_id", "name the session")
    if len(session_id) > MAX_SESSION_ID:
        raise _invalid("session_id", f"a session id is at most {MAX_SESSION_ID} characters, not {len(session_id)}")


def _check_range(bounds: sessions_pb2.Range, where: str) -> None:
    if bounds.HasField("min") and bounds.HasField("max") and bounds.min > bounds.max:
        raise _invalid(where, f"min {bounds.min} is above max {bounds.max}")


def _limit(limit: int, default: int, maximum: int) -> int:
    if limit == 0:
        return default
    if not 1 <= limit <= maximum:
        raise _invalid("limit", f"limit must be 1..{maximum}, not {limit}")
    return limit


def _digest(kind: str, request: object, limit: int) -> str:
    """A digest of the normalized request: everything but its cursor, with the limit it resolved to,
    and the scopes it ran within (a cursor replayed by a caller of other scopes is stale)."""
    normalized = type(request)()  # type: ignore[operator]
    normalized.CopyFrom(request)
    normalized.ClearField("cursor")
    normalized.limit = limit
    payload = kind.encode() + b"\0" + normalized.SerializeToString(deterministic=True) + auth.scopes_key()
    return hashlib.sha256(payload).hexdigest()[:32]


def _open_cursor(token: str, digest: str, *fields: tuple[str, type]) -> list[Any]:
    """The values of `fields` a cursor carries, checked against the request's digest."""
    body = cursors.unseal(token)
    if body.get("d") != digest:
        raise QuarryError(
            errors_pb2.STALE_CURSOR,
            "the cursor was minted for another request (query, filters, session or limit changed)",
            parameter="cursor",
        )
    try:
        return [kind(body[name]) for name, kind in fields]
    except (KeyError, TypeError, ValueError):
        raise QuarryError(errors_pb2.INVALID_CURSOR, "the cursor lacks its position", parameter="cursor") from None


def _ids_filter(ids: Sequence[str]) -> sessions_pb2.SessionFilter:
    return sessions_pb2.SessionFilter(ids=sessions_pb2.Strings(values=ids))


def _invalid(parameter: str, message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)


def _not_found(session_id: str) -> QuarryError:
    return QuarryError(errors_pb2.NOT_FOUND, f"no session {session_id} in the archive", parameter="session_id")


def _event_not_found(session_id: str, seq: int, count: int) -> QuarryError:
    return QuarryError(
        errors_pb2.NOT_FOUND,
        f"{session_id} has no event {seq}: its events are 0..{count - 1}" if count else f"{session_id} has no events",
        parameter="seq",
    )
