"""Partition-local execution of a QueryPlan over one Tantivy searcher snapshot and the SQLite store.

Ranked session search (`search` with text)
- The `all` group at the top of `where`: one fts leaf and the group's role clauses become one Tantivy
  query, so the words and the role hold in the same message (compact text is one leaf: `sqlite
  locking` is a message with both words). Several fts leaves (`~"a" AND ~"b"`) each hold in some
  message of the session (so `X AND NOT Y` and `X AND Y` split X): their sessions are intersected
  and applied as a filter, and the messages that score are those the leaves' OR matches. Roles are
  const-score (0.0) filters, which leave BM25 unchanged.
- Session-level clauses of that group on fields every message document carries (repo, origin, tag;
  session ids and allow-lists as the sessions' ordinals; any/all/not of those) are const-score filters
  in the same query. Other
  session clauses (title, tool, path, counts, ...) are checked in SQL on each page's candidate
  sessions; when they reject so much that pages keep coming, they are evaluated once for the partition
  and applied in Tantivy as a term set of session ordinals.
- Lexical admission (`request.admission`, admission.py; docs/search-api.md#admission): m of the group's n text items
  instead of all of them; the items' OR then matches and scores, and for 1 < m < n a term set of the
  sessions holding m items filters it. Unset, nothing here changes.
- The score of a session is the BM25 of its best message for the positive text (`ranking_text` when
  the plan has it). Messages are fetched in growing pages and collapsed to sessions until `limit`
  sessions are known and no unseen session can tie the last one, or the hits run out. Python work
  grows with the hits read, never with the corpus; a page cap bounds it for constant-score queries
  (prefixes), where ties break on session id among the candidates read.
- Ties break on session id (ascending); only the sessions scoring at least the `limit`-th best score
  have their rows read (session summary and best message, one SQL statement), and only the hits kept
  are explained (hits.py).

The search's text is compiled once per node (search_text.py). Unranked lists and `match_session_ids`
are SQL over the store, with full-text leaves evaluated in Tantivy to ordinal sets first. Unit rows:
see rows.py.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import tantivy
from tantivy import Occur, Query

from quarry.core.errors import QuarryError
from quarry.core.lanes import DIALOGUE
from quarry.index.lexical import admission, fts, schema
from quarry.index.lexical.fulltext import FullText, const, role_filters, terms
from quarry.index.lexical.hits import Candidate, HitWriter, Ranked
from quarry.index.lexical.predicates import Lowering, Sql
from quarry.index.lexical.rows import UnitRows, aggregate
from quarry.index.lexical.search_text import (
    CompiledSearch,
    compile_search,
    implied_by,
    role_predicates,
    scores_alike,
)
from quarry.index.lexical.store import Store
from quarry.index.lexical.unit_tables import TABLES
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, units_pb2

DEFAULT_SESSIONS = 10
DEFAULT_ROWS = 50
_FIRST_PAGE = 32
_MAX_CANDIDATE_HITS = 5_000
_PREFIX_EXPANSIONS = 16
UNITS = tuple(TABLES)
# Session fields every message document carries: filters on them hold per message iff per session.
_DOC_FILTER_FIELDS = {"repo": schema.REPO, "origin": schema.ORIGIN, "scope": schema.SCOPE, "tag": schema.TAG}


@dataclasses.dataclass
class PreparedSearch:
    """A partition's search, ranked by score: `scores` are its contenders' best first, `keys(at_least)`
    orders the contenders scoring at least that with the query node's order key ((-score, 0, session
    id) when ranked, (0, -time, session id) when listed by time), reading the ids of those only, and
    `finish(n)` gives the response with its first n of them as hits, explained (message, matched
    terms, snippet) only then. A listed (unranked) search's hits are complete already. An index node
    holding several partitions cuts their merged scores at its own `limit`-th first, so a partition
    reads the ids of the few contenders that can make the node's top, not all of its own."""

    response: index_pb2.PartitionSearchResponse
    scores: list[float] = dataclasses.field(default_factory=list)
    rank: Callable[[float], list[Ranked]] | None = None
    explain: Callable[[Sequence[Ranked]], None] | None = None
    ranked: list[Ranked] = dataclasses.field(default_factory=list)

    def keys(self, at_least: float = -math.inf) -> list[tuple[float, int, str]]:
        if self.rank is None:
            return [(0.0, -h.sort_time_ms, h.session.id) for h in self.response.hits]
        self.ranked = self.rank(at_least)
        return [(-r.candidate.score, 0, r.session_id) for r in self.ranked]

    def finish(self, keep: int | None = None) -> index_pb2.PartitionSearchResponse:
        if self.rank is not None and self.explain is not None:
            if keep is None:
                self.ranked = self.rank(-math.inf)
            self.explain(self.ranked if keep is None else self.ranked[:keep])
        elif keep is not None:
            del self.response.hits[keep:]
        return self.response


class Leaf:
    """Executes plans against one partition. Stateless apart from the handles; safe to share across threads."""

    def __init__(self, index: tantivy.Index, store: Store) -> None:
        self.index = index
        self.schema = index.schema
        self.store = store

    # ---- sessions --------------------------------------------------------------------------------

    def search(
        self, request: index_pb2.PartitionSearchRequest, partition: int, anchor: index_pb2.PartitionAnchor | None = None
    ) -> index_pb2.PartitionSearchResponse:
        """The partition's best `request.limit` sessions; with an anchor, those sorting after it."""
        return self.prepare(request, partition, anchor).finish()

    def prepare(
        self,
        request: index_pb2.PartitionSearchRequest,
        partition: int,
        anchor: index_pb2.PartitionAnchor | None = None,
        compiled: CompiledSearch | None = None,
    ) -> PreparedSearch:
        """The search ranked but its hits not yet explained (PreparedSearch): an index node holding
        several partitions merges their rankings and explains only the hits that made its own top.
        `compiled`: the request's text compiled once for all of them (`compile_search`)."""
        began = time.perf_counter()
        compiled = compiled or compile_search(request)
        field = compiled.field
        limit = request.limit if request.limit > 0 else DEFAULT_SESSIONS
        searcher = self.index.searcher()
        full_text = FullText(searcher, self.schema, self.store, field)
        plan = request.plan
        where = plan.where if plan.HasField("where") else None
        response = index_pb2.PartitionSearchResponse(partition=partition)
        text = compiled.text
        if text is None:
            return PreparedSearch(response)  # text that analyzes to no token matches nothing
        exprs, roles, rest, group, ranking, relaxed = text
        if ranking is None:
            lowering = self._lowering(full_text)
            return PreparedSearch(self._unranked(lowering, where, limit, response, anchor))
        if not exprs and roles:  # no text in the group: a role clause is "has a message with the role"
            rest = [*rest, plan_pb2.Predicate(all=plan_pb2.PredicateList(items=role_predicates(roles)))]
            roles = []
        session_filter_ords = None
        if relaxed is not None:
            admitted = admission.admitted_sessions(searcher, self.schema, field, relaxed, roles)
            if admitted is not None:
                if not admitted:
                    return PreparedSearch(response)
                session_filter_ords = set(admitted)
        elif len(exprs) > 1:  # separate leaves hold each in some message of the session, not all in one
            session_filter_ords = set.intersection(*(set(full_text.sessions([e], roles)) for e in exprs))
            if not session_filter_ords:
                return PreparedSearch(response)
            group = None  # the messages that score are those the ranking text (the leaves' OR) matches
        idfs = _idfs(searcher, request.global_stats) if request.HasField("global_stats") else None
        clauses = self._scored(searcher, ranking, group, field, idfs)
        clauses.extend(role_filters(self.schema, roles))
        if session_filter_ords is not None:
            clauses.append((Occur.Must, const(terms(self.schema, schema.SESSION_ORD, sorted(session_filter_ords)))))
        doc_filters, sql_rest = self._split_rest(rest, ranking)
        clauses.extend(doc_filters)
        session_filter = None
        if sql_rest:
            session_filter = self._lowering(full_text).session(
                plan_pb2.Predicate(all=plan_pb2.PredicateList(items=sql_rest))
            )
        query = clauses[0][1] if len(clauses) == 1 else Query.boolean_query(clauses)
        after = self._anchor(searcher, query, anchor) if anchor is not None else None
        contenders, response.matched_sessions = self._top_sessions(searcher, query, limit, session_filter, after)
        response.rank_ms = _ms_since(began)

        def rank(at_least: float) -> list[Ranked]:
            started = time.perf_counter()
            ranked = self._ranked([c for c in contenders if c.score >= at_least], limit)
            response.rank_ms += _ms_since(started)
            return ranked

        def explain(kept: Sequence[Ranked]) -> None:
            if request.rank_only:
                message_ords = searcher.fast_field_values(schema.MESSAGE_ORD, [r.candidate.address for r in kept])
                for ranked, message_ord in zip(kept, message_ords, strict=True):
                    hit = response.hits.add(score=ranked.candidate.score, ranked=True)
                    hit.session.id, hit.without_tool_calls = ranked.session_id, ranked.tool_uses == 0
                    hit.best.session_ord, hit.best.message_ord = ranked.candidate.ord, message_ord
                return
            writer = HitWriter(searcher, self.schema, self.store)
            writer.fill(response, kept, ranking, field, request.lane or DIALOGUE, request.with_snippets)

        return PreparedSearch(response, [c.score for c in contenders], rank, explain)

    def explain(
        self,
        request: index_pb2.PartitionSearchRequest,
        partition: int,
        hits: Sequence[index_pb2.PartitionHit],
        compiled: CompiledSearch | None = None,
    ) -> index_pb2.PartitionSearchResponse:
        """Hits a rank-only answer of this search gave (each with its best message's place, `best`),
        explained as the search explains its hits (summary, best message, matched terms, snippet) without
        searching again. A hit whose place no longer holds its session (replaced since) is left out."""
        field, text = compiled or compile_search(request)
        response = index_pb2.PartitionSearchResponse(partition=partition)
        located = [h for h in hits if h.HasField("best")]
        if text is None or text.ranking is None or not located:
            return response
        began = time.perf_counter()
        kept = [
            Ranked(Candidate(h.score, None, h.best.session_ord), h.session.id, 0 if h.without_tool_calls else 1)
            for h in located
        ]
        writer = HitWriter(self.index.searcher(), self.schema, self.store)
        message_ords = [h.best.message_ord for h in located]
        writer.fill(response, kept, text.ranking, field, request.lane or DIALOGUE, request.with_snippets, message_ords)
        response.elapsed_ms = _ms_since(began)
        return response

    def term_stats(
        self, request: index_pb2.PartitionSearchRequest, partition: int, compiled: CompiledSearch | None = None
    ) -> index_pb2.PartitionTermStats:
        """The statistics this partition would score the search with: its documents, and the document
        frequency of every scored term, for the query node to sum over the archive (global IDF).
        `compiled`: the request compiled once for every partition of a node (`compile_search`)."""
        field, text = compiled or compile_search(request)
        searcher = self.index.searcher()
        stats = index_pb2.PartitionTermStats(partition=partition, num_docs=searcher.num_docs)
        if text is None or text.ranking is None:
            return stats
        scored, expansions = self._scoring(searcher, text.ranking, text.group, field)
        for term_field, term in fts.scored_terms(scored, field, expansions):
            stats.terms.add(field=term_field, term=term, doc_freq=searcher.doc_freq(term_field, term))
        return stats

    def _scoring(
        self, searcher: tantivy.Searcher, ranking: fts.Fts, group: fts.Fts | None, field: str
    ) -> tuple[fts.Fts, dict[str, list[str]]]:
        """The expression a search scores (the group itself when its positive text is the ranking text,
        else the ranking text), and the completions its prefixes score with."""
        expansions = {
            p: [term for term, _ in searcher.terms_with_prefix(field, p, limit=_PREFIX_EXPANSIONS)]
            for p in fts.prefixes(ranking)
        }
        if group is not None and scores_alike(fts.positive(group), ranking):
            return group, expansions
        return ranking, expansions

    def _scored(
        self,
        searcher: tantivy.Searcher,
        ranking: fts.Fts,
        group: fts.Fts | None,
        field: str,
        idfs: fts.Idfs | None = None,
    ) -> list[tuple[Occur, Query]]:
        """The scoring clause (`_scoring`), and the group as a const-score filter when it is not the one
        scored; with `idfs`, scored with the archive's term statistics."""
        scored, expansions = self._scoring(searcher, ranking, group, field)
        clauses = [(Occur.Must, fts.to_query(scored, self.schema, field, expansions, idfs))]
        if group is not None and scored is not group:
            clauses.append((Occur.Must, const(fts.to_query(group, self.schema, field))))
        return clauses

    def _split_rest(
        self, rest: Sequence[plan_pb2.Predicate], ranking: fts.Fts
    ) -> tuple[list[tuple[Occur, Query]], list[plan_pb2.Predicate]]:
        """The group's session-level clauses: as const-score filters those every message document
        carries (`_doc_filter`), and the others, left to SQL; those the ranking text implies are dropped."""
        filters: list[tuple[Occur, Query]] = []
        sql_rest: list[plan_pb2.Predicate] = []
        for pred in rest:
            if implied_by(pred, ranking):
                continue
            doc_filter = self._doc_filter(pred)
            if doc_filter is None:
                sql_rest.append(pred)
            else:
                filters.append((Occur.Must, const(doc_filter)))
        return filters, sql_rest

    def _doc_filter(self, pred: plan_pb2.Predicate) -> Query | None:
        """The predicate as a filter on message documents, when every document carries what it tests
        (session-constant fields), so message-level and session-level evaluation agree."""
        kind = pred.WhichOneof("node")
        if kind == "field":
            clause = pred.field
            if clause.op != plan_pb2.COMPARISON_UNSPECIFIED or not clause.values:
                return None
            if clause.field == "session":
                return self._named_sessions(list(clause.values))
            name = _DOC_FILTER_FIELDS.get(clause.field)
            return None if name is None else terms(self.schema, name, [v.lower() for v in clause.values])
        if kind == "session_ids":
            return self._named_sessions(list(pred.session_ids.ids))
        if kind == "negate":
            inner = self._doc_filter(pred.negate)
            if inner is None:
                return None
            return Query.boolean_query([(Occur.Must, Query.all_query()), (Occur.MustNot, inner)])
        if kind in ("all", "any"):
            items = getattr(pred, kind).items
            filters = [self._doc_filter(p) for p in items]
            if not filters or any(f is None for f in filters):
                return None
            occur = Occur.Must if kind == "all" else Occur.Should
            return Query.boolean_query([(occur, f) for f in filters])
        return None

    def _named_sessions(self, session_ids: list[str]) -> Query:
        """Sessions named by id, as a term set of their ordinals: an id this partition does not hold matches
        nothing (an empty set matches no document)."""
        return terms(self.schema, schema.SESSION_ORD, self.store.session_ords_of(session_ids))

    def _anchor(self, searcher: tantivy.Searcher, query: Query, anchor: index_pb2.PartitionAnchor) -> tuple[float, str]:
        """The cursor's anchor as (score, session id), the score re-read from this searcher: BM25 moves
        with the corpus statistics (new sessions change IDF and average length), so the anchor session is
        scored now, like every session it is compared with. The score it was served with stands in when
        it no longer matches."""
        session_ord = self.store.session_ord(anchor.after_session_id)
        if session_ord is not None:
            only = Query.boolean_query(
                [(Occur.Must, query), (Occur.Must, const(terms(self.schema, schema.SESSION_ORD, [session_ord])))]
            )
            hits = searcher.search(only, limit=1, count=False).hits
            if hits:
                return hits[0][0], anchor.after_session_id
        return anchor.after_score, anchor.after_session_id

    def _skip_to_anchor(
        self,
        hits: Sequence[tuple[float, tantivy.DocAddress]],
        ords: Sequence[int],
        after: tuple[float, str],
        best: dict[int, tuple[float, tantivy.DocAddress]],
        rejected: set[int],
    ) -> int:
        """Reject the sessions of this page that sort at or before the anchor: a better best score, or
        the anchor's score and an id not greater than its id (hits come best first, so a session's first
        hit is its best). Returns how many of the hits score above the anchor."""
        score, session_id = after
        tied = []
        above = sum(1 for hit_score, _ in hits if hit_score > score)
        for (hit_score, _), session_ord in zip(hits, ords, strict=True):
            if session_ord in best or session_ord in rejected:
                continue
            if hit_score > score:
                rejected.add(session_ord)
            elif hit_score == score:
                tied.append(session_ord)
        if tied:
            rejected.update(self.store.ords_up_to(tied, session_id))
        return above

    def _top_sessions(
        self,
        searcher: tantivy.Searcher,
        query: Query,
        limit: int,
        session_filter: Sql | None,
        after: tuple[float, str] | None = None,
    ) -> tuple[list[Candidate], int]:
        """The sessions that can make the best `limit` by (score desc, session id asc): every session
        scoring at least the `limit`-th best score (ties on it are broken on ids later, by the caller,
        which reads the ids of these few only), and the number of distinct sessions seen (exact when the
        hits ran out, a lower bound otherwise).

        A session filter that Tantivy cannot evaluate is checked in SQL on the candidate sessions of
        each page. When it rejects so much that pages keep coming, it is evaluated once for the whole
        partition instead and applied inside Tantivy as a term set of session ordinals.

        With an anchor (score, session id), only sessions sorting strictly after it count: the pages
        are still read from the top (Tantivy has no search-after), but the sessions before the anchor
        are skipped on fast fields alone, and only those tied with it have their ids read.
        """
        best: dict[int, tuple[float, tantivy.DocAddress]] = {}  # in score order: hits come best first
        rejected: set[int] = set()
        offset = 0
        skipped = 0  # hits above an anchor: the candidate cap counts from the anchor on
        page = max(_FIRST_PAGE, 4 * limit)
        while True:
            hits = searcher.search(query, limit=page, offset=offset, count=False).hits
            ords = searcher.fast_field_values(schema.SESSION_ORD, [a for _, a in hits])
            if after is not None:
                skipped += self._skip_to_anchor(hits, ords, after, best, rejected)
            if session_filter is not None:
                fresh = [o for o in dict.fromkeys(ords) if o not in best and o not in rejected]
                passing = (
                    set(self.store.session_ords_where(session_filter.text, session_filter.params, among=fresh))
                    if fresh
                    else set()
                )
                rejected.update(o for o in fresh if o not in passing)
            for hit, session_ord in zip(hits, ords, strict=True):
                if session_ord not in best and session_ord not in rejected:
                    best[session_ord] = hit  # (score, address): a plain tuple, most never become candidates
            offset += len(hits)
            if len(hits) < page:
                break
            if len(best) >= limit:
                kth = list(best.values())[limit - 1][0]
                if hits[-1][0] < kth:
                    break
            if offset - skipped >= _MAX_CANDIDATE_HITS:
                if session_filter is not None and len(best) < limit:
                    allowed = self.store.session_ords_where(session_filter.text, session_filter.params)
                    if not allowed:
                        return [], 0
                    in_tantivy = Query.term_set_query(self.schema, schema.SESSION_ORD, allowed)
                    narrowed = Query.boolean_query([(Occur.Must, query), (Occur.Must, const(in_tantivy))])
                    return self._top_sessions(searcher, narrowed, limit, None, after)
                break
            page = min(page * 4, _MAX_CANDIDATE_HITS - (offset - skipped))
        seen = len(best)
        kth = list(best.values())[limit - 1][0] if seen > limit else -math.inf
        return [Candidate(score, address, o) for o, (score, address) in best.items() if score >= kth], seen

    def _ranked(self, contenders: list[Candidate], limit: int) -> list[Ranked]:
        """The best `limit` contenders in order (score desc, session id asc): only their ids are read here,
        their rows once they are kept (hits.HitWriter)."""
        if not contenders:
            return []
        stored = self.store.ids_and_tool_uses([c.ord for c in contenders])
        top = sorted((c for c in contenders if c.ord in stored), key=lambda c: (-c.score, stored[c.ord][0]))
        return [Ranked(c, *stored[c.ord]) for c in top[:limit]]

    def _unranked(
        self,
        lowering: Lowering,
        where: plan_pb2.Predicate | None,
        limit: int,
        response: index_pb2.PartitionSearchResponse,
        anchor: index_pb2.PartitionAnchor | None,
    ) -> index_pb2.PartitionSearchResponse:
        sql = lowering.session(where)
        after = (anchor.after_time_ms, anchor.after_session_id) if anchor is not None else None
        for blob, updated_ms in self.store.newest_sessions(sql.text, sql.params, after, limit):
            response.hits.add(session=units_pb2.Session.FromString(blob), ranked=False, sort_time_ms=updated_ms)
        response.matched_sessions = self.store.count_sessions(sql.text, sql.params)
        return response

    def match_session_ids(self, where: plan_pb2.Predicate | None) -> list[str]:
        lowering = self._lowering(FullText(self.index.searcher(), self.schema, self.store))
        sql = lowering.session(where)
        return self.store.session_ids_where(sql.text, sql.params)

    # ---- unit rows -------------------------------------------------------------------------------

    def query_units(self, request: index_pb2.PartitionUnitsRequest, partition: int) -> index_pb2.PartitionUnitsResponse:
        plan = request.plan
        if plan.unit not in UNITS:
            message = f"unit rows are one of {', '.join(UNITS)}, not {plan.unit!r}"
            raise QuarryError(errors_pb2.INVALID_REQUEST, message, parameter="plan.unit")
        units = UnitRows(self.index.searcher(), self.schema, self.store)
        if aggregate(plan):
            return index_pb2.PartitionUnitsResponse(groups=units.groups(plan), partition=partition)
        limit = request.limit if request.limit > 0 else DEFAULT_ROWS
        if request.HasField("per_session"):
            return units.per_session(plan, request.per_session, limit, partition)
        after = request.after if request.HasField("after") else None
        return index_pb2.PartitionUnitsResponse(rows=units.run(plan, limit, after), partition=partition)

    def _lowering(self, full_text: FullText) -> Lowering:
        """A lowering on this thread's reader, prepared for unit predicates (exists, assertions)."""
        return Lowering(full_text, assertions=self.store.ready_for_units())


def _idfs(searcher: tantivy.Searcher, archive: index_pb2.GlobalTermStats) -> dict[fts.FieldTerm, tuple[float, float]]:
    """(the archive's IDF, this partition's) of every term the query node summed statistics for; a
    term this partition does not hold is left out (it scores nothing here)."""
    local_docs = searcher.num_docs
    out = {}
    for term in archive.terms:
        local_freq = searcher.doc_freq(term.field, term.term)
        if local_freq:
            out[(term.field, term.term)] = (_idf(archive.num_docs, term.doc_freq), _idf(local_docs, local_freq))
    return out


def _idf(docs: int, doc_freq: int) -> float:
    """Tantivy's BM25 IDF: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (docs - doc_freq + 0.5) / (doc_freq + 0.5))


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
