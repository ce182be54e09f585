"""Seed 002's reads of one partition's store: session lists, event reads, search within one session.

Each read runs in one read transaction, so the header it returns and the events it returns are one
observation of the session (an ingest committing meanwhile is seen whole or not at all).

Events are stored as a head per event (type, time, surface, links: store.py `log_events`) and their
text and raw records in compressed chunks of consecutive events; a read decompresses only the chunks
of the events it returns, and only when it returns their text or raw records. A raw record is stored
with the payloads it holds apart (media data, opaque signatures: quarry.ingest.payloads) replaced by
placeholders, and comes back so (with `held`, where each placeholder is) unless the read asks for the
payloads: then each placeholder is replaced by the payload's bytes, and the record is its source's.

Search within a session ranks its events by BM25 (k1 1.2, b 0.75) over the ranking tokens of their
semantic text (analyzer.stem_tokens: folded, stemmed, no stopwords), among the events its filters
keep; an event must hold every token of the query (Quarry's lexical default). The query is data: its
words are tokens, nothing in it is an operator.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson
import zstandard

from quarry.core import refs
from quarry.core.errors import QuarryError
from quarry.core.event_trace import record_of
from quarry.index.lexical import analyzer, visibility
from quarry.index.lexical.store import EVENT_COLUMNS, Store, json_list
from quarry.index.lexical.unit_tables import literal_pattern
from quarry.index.lexical.visibility import Visible
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2

K1 = 1.2
B = 0.75
SNIPPET_CHARS = 200
PERSISTED = "persisted"
_local = threading.local()


def text_pattern(text: str) -> re.Pattern[str]:
    """Seed 002's text clause (unit_tables.literal_pattern), refused without any text."""
    if not text.split():
        raise QuarryError(errors_pb2.INVALID_REQUEST, "a text filter needs some text", parameter="filters.text")
    return literal_pattern(text)


def list_sessions(
    store: Store,
    filters: Sequence[sessions_pb2.SessionFilter],
    after: sessions_pb2.SessionAnchor | None,
    limit: int,
    visible: Visible = None,
) -> list[units_pb2.Session]:
    """Session summaries matching every filter, newest first (updated time, then id), after `after`."""
    where, params = session_clauses(filters, visible)
    if after is not None:
        where.append("(updated_ms < ? OR (updated_ms = ? AND id > ?))")
        params.extend((after.updated_ms, after.updated_ms, after.session_id))
    sql = "SELECT summary FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    # Ids or parents select few sessions: look them up by their index and sort those (`+` keeps SQLite
    # from walking every session in time order instead); otherwise walk the time index.
    selective = any(clause.WhichOneof("clause") in ("ids", "parents") for clause in filters)
    sql += f" ORDER BY {'+' if selective else ''}updated_ms DESC, id LIMIT ?"
    rows = store.reader().execute(sql, (*params, limit))
    return [units_pb2.Session.FromString(blob) for (blob,) in rows]


def session_clauses(
    filters: Sequence[sessions_pb2.SessionFilter], visible: Visible = None
) -> tuple[list[str], list[object]]:
    """SQL conditions on `sessions` for seed 002's filters, and the visible scopes."""
    limit = visibility.sql(visible, column="scope")
    where: list[str] = [limit.text] if visible is not None else []
    params: list[object] = list(limit.params)
    for clause in filters:
        kind = clause.WhichOneof("clause")
        if kind == "ids":
            where.append("id IN (SELECT value FROM json_each(?))")
            params.append(json_list(clause.ids.values))
        elif kind == "cwds":
            where.append("cwd IN (SELECT value FROM json_each(?))")
            params.append(json_list(clause.cwds.values))
        elif kind == "parents":
            where.append("parent_session_id IN (SELECT value FROM json_each(?))")
            params.append(json_list(clause.parents.values))
        elif kind == "created_at":
            _range(where, params, "created_ms", clause.created_at)
        elif kind == "availability":
            # Every stored session is persisted; none is live in an archive.
            where.append("1" if PERSISTED in clause.availability.values else "0")
    return where, params


def _range(where: list[str], params: list[object], column: str, bounds: sessions_pb2.Range) -> None:
    if bounds.HasField("min"):
        where.append(f"{column} >= ?")
        params.append(bounds.min)
    if bounds.HasField("max"):
        where.append(f"{column} <= ?")
        params.append(bounds.max)


def read_events(
    store: Store,
    session_id: str,
    filters: Sequence[sessions_pb2.EventFilter],
    *,
    full: bool = False,
    with_text: bool = False,
    with_payloads: bool = False,
    visible: Visible = None,
) -> sessions_pb2.StoredEvents:
    """The session's header and its events matching every filter, in seq order: heads only, with their
    text (`with_text`), or whole (`full`: text and raw records, with `with_payloads` each the source's
    bytes, its held-apart payloads put back). NOT_FOUND when the session is not here."""
    full = full or with_payloads
    conn = store.reader()
    conn.execute("BEGIN")
    try:
        session_ord, header = _header(conn, session_id, visible)
        where, params = event_clauses(filters)
        pattern = next((text_pattern(f.text) for f in filters if f.WhichOneof("clause") == "text"), None)
        sql = f"SELECT {EVENT_COLUMNS} FROM log_events WHERE session_ord = ?"
        if where:
            sql += " AND " + " AND ".join(where)
        rows = conn.execute(sql + " ORDER BY seq", (session_ord, *params))
        events = [event_from_row(session_id, row) for row in rows]
        if events and (full or with_text or pattern is not None):
            fill_texts(conn, session_ord, events, raw=full)
        if with_payloads:
            put_back_payloads(conn, session_id, events)
        (count,) = conn.execute("SELECT COUNT(*) FROM log_events WHERE session_ord = ?", (session_ord,)).fetchone()
    finally:
        conn.execute("COMMIT")
    if pattern is not None:
        events = [e for e in events if pattern.search(e.text)]
        if not (full or with_text):
            for event in events:
                event.ClearField("text")
    return sessions_pb2.StoredEvents(session=header, events=events, event_count=count)


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


def _header(conn: sqlite3.Connection, session_id: str, visible: Visible = None) -> tuple[int, units_pb2.Session]:
    """The session's ordinal and summary; NOT_FOUND alike for a session that is not here and one the
    caller may not see."""
    row = conn.execute("SELECT ord, summary, scope FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None or not visibility.admits(visible, row[2]):
        raise QuarryError(errors_pb2.NOT_FOUND, f"no session {session_id} in the archive", parameter="session_id")
    return row[0], units_pb2.Session.FromString(row[1])


def event_clauses(filters: Sequence[sessions_pb2.EventFilter]) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    for clause in filters:
        kind = clause.WhichOneof("clause")
        if kind == "seq":
            _range(where, params, "seq", clause.seq)
        elif kind == "time":
            _range(where, params, "time_ms", clause.time)
        elif kind == "types":
            where.append("type IN (SELECT value FROM json_each(?))")
            params.append(json_list(clause.types.values))
        elif kind == "surfaces":
            where.append("surface IN (SELECT value FROM json_each(?))")
            params.append(json_list(clause.surfaces.values))
    return where, params


def fill_texts(conn: sqlite3.Connection, session_ord: int, events: list[units_pb2.SessionEvent], raw: bool) -> None:
    """Give `events` (seq order) their text, and their raw records with `raw`, from the chunks holding them."""
    fill_texts_of(conn, {session_ord: events}, raw)


def fill_texts_of(
    conn: sqlite3.Connection, events_of: dict[int, list[units_pb2.SessionEvent]], raw: bool = False
) -> None:
    """`fill_texts` for the events (seq order) of several sessions, by session ordinal, in one query."""
    spans = [[session_ord, events[0].seq, events[-1].seq] for session_ord, events in events_of.items() if events]
    if not spans:
        return
    columns = "c.texts, c.raws" if raw else "c.texts"  # texts come first in the row: raws' pages stay unread
    rows = conn.execute(
        f"SELECT c.session_ord, c.first_seq, {columns} FROM json_each(?) j JOIN log_event_chunks c "
        "ON c.session_ord = j.value ->> 0 AND c.first_seq <= j.value ->> 2 AND c.first_seq >= "
        "(SELECT COALESCE(MAX(first_seq), 0) FROM log_event_chunks "
        "WHERE session_ord = j.value ->> 0 AND first_seq <= j.value ->> 1)",
        (orjson.dumps(spans).decode(),),
    )
    decompress = _decompressor().decompress
    for row in rows:
        session_ord, first_seq = row[0], row[1]
        # A chunk holds consecutive seqs from first_seq: an event's entry is found by position.
        texts = units_pb2.SessionEventList.FromString(decompress(row[2])).events
        raws = units_pb2.SessionEventList.FromString(decompress(row[3])).events if raw else None
        for event in events_of[session_ord]:
            position = event.seq - first_seq
            if 0 <= position < len(texts):
                text = texts[position].text
                if text:
                    event.text = text
                if raws is not None:
                    stored = raws[position]
                    event.raw_json = stored.raw_json
                    event.held.extend(stored.held)


def put_back_payloads(conn: sqlite3.Connection, session_id: str, events: Sequence[units_pb2.SessionEvent]) -> None:
    """Give each event's raw record its held-apart payloads back (its `held` then empty): the record's
    source bytes. CORRUPT_SESSION when the store lacks a payload an event holds apart."""
    digests = {place.sha256 for event in events for place in event.held}
    if not digests:
        return
    decompress = _decompressor().decompress
    rows = conn.execute(
        "SELECT sha256, data FROM held_payloads WHERE sha256 IN (SELECT value FROM json_each(?))", (json_list(digests),)
    )
    data_of = {digest: decompress(data) for digest, data in rows}
    for event in events:
        if event.held:
            missing = next((p.sha256 for p in event.held if p.sha256 not in data_of), None)
            if missing is not None:
                raise QuarryError(
                    errors_pb2.CORRUPT_SESSION,
                    f"event {event.seq} of {session_id} holds apart payload sha256:{missing}, which the store lacks",
                    token="seq",
                )
            event.raw_json = put_back(event.raw_json, event.held, data_of)
            event.ClearField("held")


def put_back(raw: bytes, places: Sequence[units_pb2.HeldPlace], data_of: dict[str, bytes]) -> bytes:
    """The raw record with each placeholder (`places`, in byte order) replaced by its payload's JSON string."""
    parts = []
    previous = 0
    for place in places:
        parts += (raw[previous : place.start], b'"', data_of[place.sha256], b'"')
        previous = place.end
    parts.append(raw[previous:])
    return b"".join(parts)


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor (a zstd context is not for concurrent use)."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:
        decompressor = _local.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def search_events(
    store: Store, request: sessions_pb2.EventSearchRequest, offset: int, visible: Visible = None
) -> sessions_pb2.EventSearchPage:
    """Events of one session ranked by the query (module docstring): up to `limit` + 1 hits after the
    first `offset`, so the caller knows whether a next page exists."""
    query = query_tokens(request.query)
    stored = read_events(store, request.session_id, request.filters, with_text=True, visible=visible)
    documents = [(event, analyzer.stem_tokens(event.text)) for event in stored.events if event.text]
    page = sessions_pb2.EventSearchPage(session=stored.session)
    if not documents:
        return page
    average = sum(len(tokens) for _, tokens in documents) / len(documents)
    frequency: Counter[str] = Counter()
    for _, tokens in documents:
        frequency.update(set(tokens))
    wanted = set(query)
    count = len(documents)
    scored: list[tuple[float, int, units_pb2.SessionEvent]] = []
    for event, tokens in documents:
        counts = Counter(token for token in tokens if token in wanted)
        if len(counts) < len(wanted):
            continue
        norm = K1 * (1 - B + B * len(tokens) / average)
        score = sum(_idf(count, frequency[t]) * counts[t] * (K1 + 1) / (counts[t] + norm) for t in wanted)
        scored.append((score, event.seq, event))
    scored.sort(key=lambda hit: (-hit[0], hit[1]))
    for score, _, event in scored[offset : offset + request.limit + 1]:
        page.items.add(record=record_of(request.session_id, event), snippet=snippet(event.text, query), score=score)
    return page


def _idf(documents: int, frequency: int) -> float:
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


def query_tokens(query: str) -> list[str]:
    """The ranking tokens of a search's query text; INVALID_QUERY when it has none to rank by."""
    tokens = list(dict.fromkeys(analyzer.stem_tokens(query)))
    if not tokens:
        raise QuarryError(
            errors_pb2.INVALID_QUERY,
            f"the query {query!r} has no word to search for (only punctuation or stopwords)",
            parameter="query",
        )
    return tokens


def snippet(text: str, query: Sequence[str]) -> str:
    """A plain excerpt of `text` around the first word that starts like a query token (a ranking token
    is its word's stem: `lock` for locking, `databas` for database); from the start when none does."""
    match = re.search(r"\b(?:" + "|".join(re.escape(t) for t in query) + ")", text, re.IGNORECASE)
    start = match.start() if match else 0
    begin = max(0, start - SNIPPET_CHARS // 4)
    excerpt = " ".join(text[begin : begin + SNIPPET_CHARS].split())
    return ("…" if begin else "") + excerpt + ("…" if begin + SNIPPET_CHARS < len(text) else "")
