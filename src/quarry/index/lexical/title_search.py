"""The titles a session search matches (docs/sessions.md#search): a session's title is searched beside
its messages, so a word only its title holds still finds it.

A title matches when it holds every ranking token of the query (folded, stemmed, stopwords dropped, as
the messages are searched). The candidates come from the store by the same substring test `title:`
runs (the plan compiler's lowering of `title:` clauses, each on the start of a token's stem, so that
`happy` is found by `happiness`'s stem `happi`), and are then checked token by token. A title is scored as
a message holding its words would be: BM25 (k1 1.2, b 0.75) with the partition's document frequencies
of the words in the messages' ranking text, its length against the mean length of the titles matched.

A title's event is the title record (TitleSnapshot.seq), or for a title the session's header carries
(no seq: a conversation's name in an export) the session's first event, where such a header is recorded.
Event filters apply to a title as to a message: it matches only through an event that passes them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import tantivy

from quarry.index.lexical import analyzer, schema
from quarry.index.lexical.fulltext import FullText
from quarry.index.lexical.predicates import Lowering
from quarry.index.lexical.session_reads import K1, B, bm25_idf
from quarry.index.lexical.store import Store
from quarry.index.lexical.visibility import Visible
from quarry.v1 import plan_pb2, sessions_pb2, units_pb2


@dataclass(frozen=True)
class TitleMatch:
    session_id: str
    score: float
    seq: int  # the title's event
    title: str


def title_matches(
    searcher: tantivy.Searcher,
    sch: tantivy.Schema,
    store: Store,
    tokens: Sequence[str],
    filters: Sequence[sessions_pb2.EventFilter],
    visible: Visible = None,
    allowed: Collection[int] | None = None,
) -> dict[int, TitleMatch]:
    """Session ordinal -> its title match, for the sessions (of the `visible` scopes, among `allowed`
    when given) whose title holds every token and whose title event passes the event filters."""
    if visible is not None and not visible:
        return {}
    clauses = [_title_clause(token) for token in tokens]
    if visible is not None:
        clauses.append(plan_pb2.Predicate(field=plan_pb2.FieldClause(field="scope", values=sorted(visible))))
    lowering = Lowering(FullText(searcher, sch, store))
    condition = lowering.session(plan_pb2.Predicate(all=plan_pb2.PredicateList(items=clauses)))
    candidates = store.session_ords_where(condition.text, condition.params, None if allowed is None else list(allowed))
    wanted = set(tokens)
    held: dict[int, tuple[str, units_pb2.Session, list[str]]] = {}
    for session_ord, session_id, summary in store.session_summaries(candidates) if candidates else []:
        header = units_pb2.Session.FromString(summary)
        title_tokens = analyzer.stem_tokens(header.title)
        if wanted <= set(title_tokens):
            held[session_ord] = (session_id, header, title_tokens)
    if filters:
        held = {o: h for o, h in held.items() if store.events(h[0], o, [_at(_title_seq(h[1])), *filters])}
    if not held:
        return {}
    idf = {token: bm25_idf(searcher.num_docs, searcher.doc_freq(schema.TEXT_STEM, token)) for token in wanted}
    average = sum(len(title_tokens) for _, _, title_tokens in held.values()) / len(held)
    return {
        session_ord: TitleMatch(session_id, _bm25(title_tokens, idf, average), _title_seq(header), header.title)
        for session_ord, (session_id, header, title_tokens) in held.items()
    }


def title_event(store: Store, session_ord: int, match: TitleMatch) -> units_pb2.SessionEvent:
    """The event a title match points at (its head: seq, type, time, surface)."""
    found = store.events(match.session_id, session_ord, [_at(match.seq)])
    return found[0] if found else units_pb2.SessionEvent(seq=match.seq)


def _title_clause(token: str) -> plan_pb2.Predicate:
    """`title:` on the start of the token's stem: every word with that stem holds it (a stem's last letter
    may be one its words do not have: `happi`, `happy`)."""
    start = token[:-1] if len(token) > 3 else token
    return plan_pb2.Predicate(field=plan_pb2.FieldClause(field="title", values=[start]))


def _title_seq(header: units_pb2.Session) -> int:
    snapshot = header.title_snapshot
    return snapshot.seq if header.HasField("title_snapshot") and snapshot.HasField("seq") else 0


def _at(seq: int) -> sessions_pb2.EventFilter:
    return sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=seq, max=seq))


def _bm25(title_tokens: Sequence[str], idf: dict[str, float], average: float) -> float:
    norm = K1 * (1 - B + B * len(title_tokens) / average)
    return sum(weight * (count := title_tokens.count(t)) * (K1 + 1) / (count + norm) for t, weight in idf.items())
