"""The session API's reads of one session on a partition (docs/sessions.md#session-reads): its events,
and search within it (docs/sessions.md#search). Session lists are the store's (store_events.py).

Each read runs in one read transaction, so the header it returns and the events it returns are one
observation of the session (an ingest committing meanwhile is seen whole or not at all).

Events are stored as a head per event (type, time, surface, links: store_schema.py `log_events`) and
their text and raw records in compressed chunks of consecutive events; a read decompresses only the
chunks of the events it returns, and only when it returns their text or raw records. A raw record is stored
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
from collections import Counter
from collections.abc import Sequence

from quarry.core import cjk
from quarry.core.errors import QuarryError
from quarry.core.event_trace import record_of
from quarry.index.lexical import analyzer, visibility
from quarry.index.lexical.store import Store
from quarry.index.lexical.store_reads import StoreReads
from quarry.index.lexical.unit_tables import literal_pattern
from quarry.index.lexical.visibility import Visible
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2

K1 = 1.2
B = 0.75
SNIPPET_CHARS = 200


def text_pattern(text: str) -> re.Pattern[str]:
    """An event filter's text clause (unit_tables.literal_pattern), refused without any text."""
    if not text.split():
        raise QuarryError(errors_pb2.INVALID_REQUEST, "a text filter needs some text", parameter="filters.text")
    return literal_pattern(text)


def read_events(
    store: Store,
    session_id: str,
    filters: Sequence[sessions_pb2.EventFilter],
    *,
    full: bool = False,
    with_text: bool = False,
    with_payloads: bool = False,
    with_messages: bool = False,
    visible: Visible = None,
) -> sessions_pb2.StoredEvents:
    """The session's header and its events matching every filter, in seq order: heads only, with their
    text (`with_text`), or whole (`full`: text and raw records, with `with_payloads` each the source's
    bytes, its held-apart payloads put back); `with_messages`, also the messages they became, in the order
    the events first name them. NOT_FOUND when the session is not here."""
    full = full or with_payloads
    with store.snapshot() as reads:
        head = reads.session_head(session_id)
        if head is None or not visibility.admits(visible, head.scope):
            raise QuarryError(errors_pb2.NOT_FOUND, f"no session {session_id} in the archive", parameter="session_id")
        pattern = next((text_pattern(f.text) for f in filters if f.WhichOneof("clause") == "text"), None)
        events = reads.events(session_id, head.ord, filters)
        if events and (full or with_text or pattern is not None):
            reads.fill_texts({head.ord: events}, raw=full)
        if with_payloads:
            put_back_payloads(reads, session_id, events)
        count = reads.event_count(head.ord)
        named = dict.fromkeys(e.message_id for e in events if e.message_id) if with_messages else {}
        messages = [found[1] for message_id in named if (found := reads.message(head.ord, message_id))]
    if pattern is not None:
        events = [e for e in events if pattern.search(e.text)]
        if not (full or with_text):
            for event in events:
                event.ClearField("text")
    return sessions_pb2.StoredEvents(
        session=units_pb2.Session.FromString(head.summary), events=events, event_count=count, messages=messages
    )


def put_back_payloads(reads: StoreReads, session_id: str, events: Sequence[units_pb2.SessionEvent]) -> None:
    """Give each event's raw record its held-apart payloads back (its `held` then empty): the record's
    source bytes. CORRUPT_SESSION when the store lacks a payload an event holds apart."""
    digests = {place.sha256 for event in events for place in event.held}
    if not digests:
        return
    data_of = reads.held_payloads(sorted(digests))
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
        score = sum(bm25_idf(count, frequency[t]) * counts[t] * (K1 + 1) / (counts[t] + norm) for t in wanted)
        scored.append((score, event.seq, event))
    scored.sort(key=lambda hit: (-hit[0], hit[1]))
    for score, _, event in scored[offset : offset + request.limit + 1]:
        page.items.add(record=record_of(request.session_id, event), snippet=snippet(event.text, query), score=score)
    return page


def bm25_idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency of a term in `frequency` of `documents` documents (Tantivy's)."""
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
    is its word's stem: `lock` for locking, `databas` for database; a Chinese word starts anywhere in a
    run of Han characters, which has no spaces); from the start when none does."""
    starts = ("" if cjk.HAN_RUN.match(t) else r"\b" for t in query)
    match = re.search("|".join(b + re.escape(t) for b, t in zip(starts, query, strict=True)), text, re.IGNORECASE)
    start = match.start() if match else 0
    begin = max(0, start - SNIPPET_CHARS // 4)
    excerpt = " ".join(text[begin : begin + SNIPPET_CHARS].split())
    return ("…" if begin else "") + excerpt + ("…" if begin + SNIPPET_CHARS < len(text) else "")
