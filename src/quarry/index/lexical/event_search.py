"""The session API's search across sessions on one partition (docs/sessions.md#search): sessions ranked
by their strongest matching event.

The ranking runs in Tantivy over the message documents (a message is what most text events became):
the query's words are data (each its ranking token in `text_stem`, or the exact token in `actions`,
which holds tool calls and their results), every word required, BM25 scored. Session filters become an
allow-list of session ordinals inside the Tantivy query. Event filters (seq, time, type, surface) are
evaluated in SQL on the events of each candidate message, page by page in score order: a message
counts only through an event that passes them, so the result is the ranking of the filtered events.
A session's best hit is its first passing message; its best event the message's passing event whose
text holds the most query words (the first on a tie). A session's title is searched beside its messages
(title_search.py): when the title holds every word and scores above the session's best message, the
title is the session's best hit. Sessions tied on the score sort by id, and a cursor's anchor (score,
session id) keeps only those after it.

Term statistics are the partition's own (documents and document frequencies of this partition):
scores of two partitions compare as BM25 does over partitions, without the dialogue lane's global IDF
round trip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tantivy
from tantivy import Occur, Query

from quarry.core.event_trace import record_of
from quarry.index.lexical import analyzer, schema
from quarry.index.lexical.fulltext import const
from quarry.index.lexical.session_reads import query_tokens, snippet
from quarry.index.lexical.store import Store
from quarry.index.lexical.title_search import TitleMatch, title_event, title_matches
from quarry.index.lexical.visibility import Visible
from quarry.v1 import sessions_pb2, units_pb2

FIRST_PAGE = 64
MAX_CANDIDATE_HITS = 20_000


def search_sessions(
    index: tantivy.Index, store: Store, request: sessions_pb2.NodeSearchSessions, visible: Visible = None
) -> list[sessions_pb2.SessionSearchHit]:
    search = request.request
    tokens = query_tokens(search.query)
    searcher = index.searcher()
    sch = index.schema
    allowed = None
    if search.session_filters:
        allowed = store.session_ords_matching(search.session_filters)
        if not allowed:
            return []
    after = request.after if request.HasField("after") else None
    titles = title_matches(searcher, sch, store, tokens, search.event_filters, visible, allowed)
    # A session an earlier page served by its title is no candidate here (nor by its messages).
    excluded = {o for o, t in titles.items() if after is not None and not _after(t.score, t.session_id, after)}
    best: dict[int, tuple[float, int]] = {}
    if searcher.num_docs:
        clauses = [(Occur.Must, _word(sch, word)) for word in _words(search.query)]
        if visible is not None:
            in_scope = [(Occur.Should, Query.term_query(sch, schema.SCOPE, scope)) for scope in sorted(visible)]
            clauses.append(
                (Occur.Must, const(Query.boolean_query(in_scope))) if in_scope else (Occur.MustNot, Query.all_query())
            )
        if allowed is not None:
            clauses.append((Occur.Must, const(Query.term_set_query(sch, schema.SESSION_ORD, allowed))))
        query = Query.boolean_query(clauses)
        best = _best_messages(searcher, store, query, search.event_filters, request.limit, after, excluded)
    titles = {o: t for o, t in titles.items() if o not in excluded}
    return _hits(store, best, titles, search.event_filters, tokens, request.limit, after)


def _words(query: str) -> list[str]:
    """The exact tokens of the query that rank (not stopwords), each once."""
    return list(dict.fromkeys(t for t in analyzer.tokens(query) if analyzer.stem(t)))


def _word(sch: tantivy.Schema, word: str) -> Query:
    """One query word: its ranking token in the dialogue text, or itself in the tool traffic."""
    stemmed = analyzer.stem(word)
    return Query.boolean_query(
        [
            (Occur.Should, Query.term_query(sch, schema.TEXT_STEM, stemmed)),
            (Occur.Should, Query.term_query(sch, schema.ACTIONS, word)),
        ]
    )


def _best_messages(
    searcher: tantivy.Searcher,
    store: Store,
    query: Query,
    event_filters: Sequence[sessions_pb2.EventFilter],
    limit: int,
    after: sessions_pb2.SessionHitAnchor | None,
    excluded: set[int],
) -> dict[int, tuple[float, int]]:
    """Session ordinal -> (score, message ordinal) of its best passing message, for at least the best
    `limit` sessions after the anchor (and every session tied with the last), but the `excluded`, to which
    the sessions an earlier page served are added. Without event filters every message passes (each holds
    at least one event): no SQL runs until the hits are shown."""
    best: dict[int, tuple[float, int]] = {}
    offset = 0
    page = max(FIRST_PAGE, 4 * limit)
    while offset < MAX_CANDIDATE_HITS:
        hits = searcher.search(query, limit=page, offset=offset, count=False).hits
        if not hits:
            break
        addresses = [address for _, address in hits]
        session_ords = searcher.fast_field_values(schema.SESSION_ORD, addresses)
        message_ords = searcher.fast_field_values(schema.MESSAGE_ORD, addresses)
        fresh = [
            (score, s, m)
            for (score, _), s, m in zip(hits, session_ords, message_ords, strict=True)
            if s not in best and s not in excluded
        ]
        if after is not None:
            _exclude_before(store, fresh, after, excluded)
        passing = None
        if event_filters:
            passing = store.messages_with_events([m for _, s, m in fresh if s not in excluded], event_filters)
        for score, session_ord, message_ord in fresh:
            if session_ord not in best and session_ord not in excluded and (passing is None or message_ord in passing):
                best[session_ord] = (score, message_ord)
        offset += len(hits)
        if len(hits) < page:
            break
        if len(best) >= limit:
            kth = sorted((score for score, _ in best.values()), reverse=True)[limit - 1]
            if hits[-1][0] < kth:
                break
        page = min(page * 4, MAX_CANDIDATE_HITS - offset)
    return best


def _exclude_before(
    store: Store, fresh: list[tuple[float, int, int]], after: sessions_pb2.SessionHitAnchor, excluded: set[int]
) -> None:
    """Sessions an earlier page returned: scored above the anchor, or tied with it and not after its id."""
    tied = [s for score, s, _ in fresh if math.isclose(score, after.score, rel_tol=1e-9)]
    ids = store.session_ids(tied) if tied else {}
    for score, session_ord, _ in fresh:
        if not _after(score, ids.get(session_ord, "\uffff"), after):
            excluded.add(session_ord)


def _hits(
    store: Store,
    best: dict[int, tuple[float, int]],
    titles: dict[int, TitleMatch],
    filters: Sequence[sessions_pb2.EventFilter],
    tokens: Sequence[str],
    limit: int,
    after: sessions_pb2.SessionHitAnchor | None,
) -> list[sessions_pb2.SessionSearchHit]:
    """The best `limit` sessions (score desc, id asc) as hits with their best event and its snippet: a
    message's, or the title's when it scores higher."""
    scores = {session_ord: score for session_ord, (score, _) in best.items()}
    by_title = {o for o, match in titles.items() if match.score > scores.get(o, -math.inf)}
    scores.update((o, titles[o].score) for o in by_title)
    if not scores:
        return []
    ranked = sorted(store.session_summaries(list(scores)), key=lambda row: (-scores[row[0]], row[1]))
    if after is not None:
        ranked = [row for row in ranked if _after(scores[row[0]], row[1], after)]
    kept = ranked[:limit]
    by_message = store.message_events(
        {best[session_ord][1]: session_id for session_ord, session_id, _ in kept if session_ord not in by_title},
        filters,
    )
    events_of = {o: by_message[best[o][1]] for o, _, _ in kept if o not in by_title}
    store.fill_texts(events_of)
    hits = []
    for session_ord, session_id, summary in kept:
        if session_ord in by_title:
            match = titles[session_ord]
            event, text = title_event(store, session_ord, match), match.title
        else:
            events = events_of[session_ord]
            # A message read from several records (a streamed reply): the record holding most query words.
            event = events[0] if len(events) == 1 else max(events, key=lambda e: (_words_held(e.text, tokens), -e.seq))
            text = event.text
        hits.append(
            sessions_pb2.SessionSearchHit(
                record=sessions_pb2.SessionRecord(header=units_pb2.Session.FromString(summary), persisted=True),
                best_match=sessions_pb2.EventSearchHit(
                    record=record_of(session_id, event), snippet=snippet(text, tokens), score=scores[session_ord]
                ),
            )
        )
    return hits


def _after(score: float, session_id: str, anchor: sessions_pb2.SessionHitAnchor) -> bool:
    """Whether a session sorts after the anchor (score desc, id asc)."""
    if math.isclose(score, anchor.score, rel_tol=1e-9):
        return session_id > anchor.session_id
    return score < anchor.score


def _words_held(text: str, tokens: Sequence[str]) -> int:
    held = set(analyzer.stem_tokens(text))
    return sum(token in held for token in tokens)
