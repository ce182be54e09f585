"""The partition store's reads for the session API (docs/sessions.md): session lists, events and their
texts, held-apart payloads, and the event filters of a search across sessions.

The session API's filters (`SessionFilter`, `EventFilter`: docs/sessions.md#sessions-and-filters)
become SQL conditions here, on `sessions` and on `log_events`, in the statements of store_schema.py.

Events are stored as a head per event (type, time, surface, links: store_schema.py `log_events`) and
their text and raw records in compressed chunks of consecutive events; `fill_texts` decompresses only
the chunks of the events it is given, and their raw records only when asked.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

import orjson
import zstandard

from quarry.core import refs
from quarry.index.lexical.predicates import scope_condition
from quarry.index.lexical.store_schema import (
    EVENT_CHUNKS,
    EVENT_COUNT,
    EVENTS,
    HELD_PAYLOADS,
    IN_JSON,
    LIST_AFTER,
    LIST_SESSIONS,
    MESSAGE_EVENTS,
    MESSAGES_WITH_EVENTS,
    SESSION_ORDS_MATCHING,
    json_list,
)
from quarry.index.lexical.visibility import Visible
from quarry.v1 import sessions_pb2, units_pb2

PERSISTED = "persisted"
# Filter clauses that keep the rows whose column is one of the clause's values: clause -> column.
_SESSION_VALUE_COLUMNS = {"ids": "id", "cwds": "cwd", "parents": "parent_session_id"}
_EVENT_VALUE_COLUMNS = {"types": "type", "surfaces": "surface"}
_EVENT_RANGE_COLUMNS = {"seq": "seq", "time": "time_ms"}
_local = threading.local()


class EventReads:
    """The session API's reads, on the connection `_reading()` gives (StoreReads)."""

    def _reading(self) -> sqlite3.Connection:
        raise NotImplementedError

    def list_sessions(
        self,
        filters: Sequence[sessions_pb2.SessionFilter],
        limit: int,
        after: sessions_pb2.SessionAnchor | None = None,
        visible: Visible = None,
    ) -> list[units_pb2.Session]:
        """The first `limit` session summaries matching every filter, newest first (updated time, then
        id), after `after` when given, of the `visible` scopes."""
        where, params = session_clauses(filters, visible)
        if after is not None:
            where.append(LIST_AFTER)
            params.extend((after.updated_ms, after.updated_ms, after.session_id))
        # Ids or parents select few sessions: look them up by their index and sort those (`+` keeps SQLite
        # from walking every session in time order instead); otherwise walk the time index.
        selective = any(clause.WhichOneof("clause") in ("ids", "parents") for clause in filters)
        conditions = " WHERE " + " AND ".join(where) if where else ""
        sql = LIST_SESSIONS.format(where=conditions, index="+" if selective else "")
        rows = self._reading().execute(sql, (*params, limit))
        return [units_pb2.Session.FromString(blob) for (blob,) in rows]

    def session_ords_matching(self, filters: Sequence[sessions_pb2.SessionFilter]) -> list[int]:
        """The ordinals of the sessions matching every filter."""
        where, params = session_clauses(filters)
        rows = self._reading().execute(SESSION_ORDS_MATCHING.format(where=" AND ".join(where)), params)
        return [ord_ for (ord_,) in rows]

    def events(
        self, session_id: str, session_ord: int, filters: Sequence[sessions_pb2.EventFilter]
    ) -> list[units_pb2.SessionEvent]:
        """The session's events passing every filter but `text`, in seq order, without text and raw record."""
        where, params = event_clauses(filters)
        rows = self._reading().execute(EVENTS.format(where=_and(where)), (session_ord, *params))
        return [event_from_row(session_id, row) for row in rows]

    def event_count(self, session_ord: int) -> int:
        """How many events the session has."""
        return int(self._reading().execute(EVENT_COUNT, (session_ord,)).fetchone()[0])

    def messages_with_events(
        self, message_ords: Sequence[int], filters: Sequence[sessions_pb2.EventFilter]
    ) -> set[int]:
        """The messages among these that hold an event passing the event filters."""
        if not message_ords:
            return set()
        where, params = event_clauses(filters)
        sql = MESSAGES_WITH_EVENTS.format(where=_and(where))
        return {message_ord for (message_ord,) in self._reading().execute(sql, (json_list(message_ords), *params))}

    def message_events(
        self, session_of: dict[int, str], filters: Sequence[sessions_pb2.EventFilter]
    ) -> dict[int, list[units_pb2.SessionEvent]]:
        """Message ordinal -> its events passing the event filters, in seq order (without text and raw
        record), for the messages of `session_of` (message ordinal -> its session's id)."""
        where, params = event_clauses(filters)
        sql = MESSAGE_EVENTS.format(where=_and(where))
        events: dict[int, list[units_pb2.SessionEvent]] = {}
        for row in self._reading().execute(sql, (json_list(session_of), *params)):
            events.setdefault(row[0], []).append(event_from_row(session_of[row[0]], row[1:]))
        return events

    def fill_texts(self, events_of: dict[int, list[units_pb2.SessionEvent]], raw: bool = False) -> None:
        """Give the events (seq order) of several sessions, by session ordinal, their text, and their raw
        records with `raw`, from the chunks holding them, in one query."""
        spans = [[session_ord, events[0].seq, events[-1].seq] for session_ord, events in events_of.items() if events]
        if not spans:
            return
        columns = "c.texts, c.raws" if raw else "c.texts"  # texts come first in the row: raws' pages stay unread
        rows = self._reading().execute(EVENT_CHUNKS.format(columns=columns), (orjson.dumps(spans).decode(),))
        decompress = _decompressor().decompress
        for row in rows:
            texts = units_pb2.SessionEventList.FromString(decompress(row[2])).events
            raws = units_pb2.SessionEventList.FromString(decompress(row[3])).events if raw else None
            _fill_from_chunk(events_of[row[0]], row[1], texts, raws)

    def held_payloads(self, digests: Sequence[str]) -> dict[str, bytes]:
        """The payloads held apart under these digests (those the store holds), decompressed."""
        decompress = _decompressor().decompress
        rows = self._reading().execute(HELD_PAYLOADS, (json_list(digests),))
        return {digest: decompress(data) for digest, data in rows}


def _fill_from_chunk(
    events: list[units_pb2.SessionEvent],
    first_seq: int,
    texts: Sequence[units_pb2.SessionEvent],
    raws: Sequence[units_pb2.SessionEvent] | None,
) -> None:
    """Give the events a chunk holds (consecutive seqs from `first_seq`: an event's entry is found by
    position) their text, and their raw records when `raws` is given."""
    for event in events:
        position = event.seq - first_seq
        if 0 <= position < len(texts):
            text = texts[position].text
            if text:
                event.text = text
            if raws is not None:
                stored = raws[position]
                event.raw_json = stored.raw_json
                event.held.extend(stored.held)


def event_from_row(session_id: str, row: Sequence[Any]) -> units_pb2.SessionEvent:
    """A SessionEvent (without text and raw record) from the `EVENT_COLUMNS` of a log_events row."""
    seq, kind, time_ms, surface, message_seq, links = row
    event = units_pb2.SessionEvent.FromString(links)
    event.seq = seq
    event.type = kind
    event.time_ms = time_ms
    event.surface = surface
    if message_seq >= 0:
        event.message_id = refs.message_id(session_id, message_seq)
    return event


def session_clauses(
    filters: Sequence[sessions_pb2.SessionFilter], visible: Visible = None
) -> tuple[list[str], list[object]]:
    """SQL conditions on `sessions` for the session API's filters, and the visible scopes."""
    limit = scope_condition(visible, column="scope")
    where: list[str] = [limit.text] if visible is not None else []
    params: list[object] = list(limit.params)
    for clause in filters:
        kind = clause.WhichOneof("clause")
        if kind in _SESSION_VALUE_COLUMNS:
            _one_of(where, params, _SESSION_VALUE_COLUMNS[kind], getattr(clause, kind).values)
        elif kind == "created_at":
            _range(where, params, "created_ms", clause.created_at)
        elif kind == "availability":
            # Every stored session is persisted; none is live in an archive.
            where.append("1" if PERSISTED in clause.availability.values else "0")
    return where, params


def event_clauses(filters: Sequence[sessions_pb2.EventFilter]) -> tuple[list[str], list[object]]:
    """SQL conditions on `log_events` for the event filters (a `text` filter is not SQL: the caller
    tests it on the events' texts)."""
    where: list[str] = []
    params: list[object] = []
    for clause in filters:
        kind = clause.WhichOneof("clause")
        if kind in _EVENT_RANGE_COLUMNS:
            _range(where, params, _EVENT_RANGE_COLUMNS[kind], getattr(clause, kind))
        elif kind in _EVENT_VALUE_COLUMNS:
            _one_of(where, params, _EVENT_VALUE_COLUMNS[kind], getattr(clause, kind).values)
    return where, params


def _and(where: Sequence[str]) -> str:
    """The conditions ANDed to a statement's own ("" when there are none)."""
    return "".join(f" AND {condition}" for condition in where)


def _one_of(where: list[str], params: list[object], column: str, values: Sequence[str]) -> None:
    where.append(f"{column} {IN_JSON}")
    params.append(json_list(values))


def _range(where: list[str], params: list[object], column: str, bounds: sessions_pb2.Range) -> None:
    if bounds.HasField("min"):
        where.append(f"{column} >= ?")
        params.append(bounds.min)
    if bounds.HasField("max"):
        where.append(f"{column} <= ?")
        params.append(bounds.max)


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor (a zstd context is not for concurrent use)."""
    found: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found
