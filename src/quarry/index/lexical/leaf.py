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
- Seed 003's lexical admission (`request.admission`, admission.py): m of the group's n text items
  instead of all of them; the items' OR then matches and scores, and for 1 < m < n a term set of the
  sessions holding m items filters it. Unset, nothing here changes.
- The score of a session is the BM25 of its best message for the positive text (`ranking_text` when
  the plan has it). Messages are fetched in growing pages and collapsed to sessions until `limit`
  sessions are known and no unseen session can tie the last one, or the hits run out. Python work
  grows with the hits read, never with the corpus; a page cap bounds it for constant-score queries
  (prefixes), where ties break on session id among the candidates read.
- Ties break on session id (ascending); only the sessions scoring at least the `limit`-th best score
  have their rows read (session summary and best message, one SQL statement). The index stores no
  text: a hit's message text, for its matched terms and its snippet, comes from the message row.
  Snippets mark matches with [ and ]; other text is kept plain.

Unranked lists and `match_session_ids` are SQL over the store, with full-text leaves evaluated in
Tantivy to ordinal sets first. Unit rows: see rows.py.
"""

from __future__ import annotations

import dataclasses
import html
import math
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import tantivy
from tantivy import Occur, Query

from quarry.core.errors import QuarryError
from quarry.index.lexical import admission, analyzer, fts, schema
from quarry.index.lexical.fulltext import FullText, const, role_filters, terms
from quarry.index.lexical.predicates import Lowering, RoleClause, Sql, split_group
from quarry.index.lexical.rows import UnitRows, aggregate
from quarry.index.lexical.store import Store, json_list
from quarry.index.lexical.unit_tables import TABLES, prepare
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, units_pb2

DEFAULT_SESSIONS = 10
DEFAULT_ROWS = 50
SNIPPET_CHARS = 160
_FIRST_PAGE = 32
_MAX_CANDIDATE_HITS = 5_000
_PREFIX_EXPANSIONS = 16
UNITS = tuple(TABLES)
# Session fields every message document carries: filters on them hold per message iff per session.
_DOC_FILTER_FIELDS = {"repo": schema.REPO, "origin": schema.ORIGIN, "scope": schema.SCOPE, "tag": schema.TAG}


def _request_error(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)


class _Candidate(NamedTuple):
    """A session's best hit."""

    score: float
    address: tantivy.DocAddress
    ord: int


class _Ranked(NamedTuple):
    candidate: _Candidate
    session_id: str
    tool_uses: int  # the session's messages carrying a tool use


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
    rank: Callable[[float], list[_Ranked]] | None = None
    explain: Callable[[Sequence[_Ranked]], None] | None = None
    ranked: list[_Ranked] = dataclasses.field(default_factory=list)

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
            rest = [*rest, plan_pb2.Predicate(all=plan_pb2.PredicateList(items=_role_predicates(roles)))]
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
        sql_rest: list[plan_pb2.Predicate] = []
        for pred in rest:
            if _implied_by(pred, ranking):
                continue
            doc_filter = self._doc_filter(pred)
            if doc_filter is None:
                sql_rest.append(pred)
            else:
                clauses.append((Occur.Must, const(doc_filter)))
        session_filter = None
        if sql_rest:
            session_filter = self._lowering(full_text).session(
                plan_pb2.Predicate(all=plan_pb2.PredicateList(items=sql_rest))
            )
        query = clauses[0][1] if len(clauses) == 1 else Query.boolean_query(clauses)
        after = self._anchor(searcher, query, anchor) if anchor is not None else None
        contenders, response.matched_sessions = self._top_sessions(searcher, query, limit, session_filter, after)
        response.rank_ms = _ms_since(began)

        def rank(at_least: float) -> list[_Ranked]:
            started = time.perf_counter()
            ranked = self._ranked([c for c in contenders if c.score >= at_least], limit)
            response.rank_ms += _ms_since(started)
            return ranked

        def explain(kept: Sequence[_Ranked]) -> None:
            if request.rank_only:
                for ranked in kept:
                    hit = response.hits.add(score=ranked.candidate.score, ranked=True)
                    hit.session.id, hit.without_tool_calls = ranked.session_id, ranked.tool_uses == 0
                return
            self._fill_hits(response, searcher, kept, ranking, field, request.lane or "dialogue", request.with_snippets)

        return PreparedSearch(response, [c.score for c in contenders], rank, explain)

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
        if group is not None and _scores_alike(fts.positive(group), ranking):
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
        rows = self.store.reader().execute(
            "SELECT ord FROM sessions WHERE id IN (SELECT value FROM json_each(?))", (json_list(session_ids),)
        )
        return terms(self.schema, schema.SESSION_ORD, [r[0] for r in rows])

    def _session_ords(self, sql: Sql) -> list[int]:
        rows = self.store.reader().execute(f"SELECT s.ord FROM sessions s WHERE {sql.text}", sql.params)
        return [r[0] for r in rows]

    def _passing(self, session_ords: Sequence[int], session_filter: Sql) -> set[int]:
        """The sessions among `session_ords` that pass the filter."""
        rows = self.store.reader().execute(
            f"SELECT s.ord FROM sessions s WHERE s.ord IN (SELECT value FROM json_each(?)) AND {session_filter.text}",
            [json_list(session_ords), *session_filter.params],
        )
        return {r[0] for r in rows}

    def _anchor(self, searcher: tantivy.Searcher, query: Query, anchor: index_pb2.PartitionAnchor) -> tuple[float, str]:
        """The cursor's anchor as (score, session id), the score re-read from this searcher: BM25 moves
        with the corpus statistics (new sessions change IDF and average length), so the anchor session is
        scored now, like every session it is compared with. The score it was served with stands in when
        it no longer matches."""
        row = (
            self.store.reader().execute("SELECT ord FROM sessions WHERE id = ?", (anchor.after_session_id,)).fetchone()
        )
        if row is not None:
            only = Query.boolean_query(
                [(Occur.Must, query), (Occur.Must, const(terms(self.schema, schema.SESSION_ORD, [row[0]])))]
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
            rows = self.store.reader().execute(
                "SELECT ord FROM sessions WHERE ord IN (SELECT value FROM json_each(?)) AND id <= ?",
                (json_list(tied), session_id),
            )
            rejected.update(r[0] for r in rows)
        return above

    def _top_sessions(
        self,
        searcher: tantivy.Searcher,
        query: Query,
        limit: int,
        session_filter: Sql | None,
        after: tuple[float, str] | None = None,
    ) -> tuple[list[_Candidate], int]:
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
                passing = self._passing(fresh, session_filter) if fresh else set()
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
                    allowed = self._session_ords(session_filter)
                    if not allowed:
                        return [], 0
                    in_tantivy = Query.term_set_query(self.schema, schema.SESSION_ORD, allowed)
                    narrowed = Query.boolean_query([(Occur.Must, query), (Occur.Must, const(in_tantivy))])
                    return self._top_sessions(searcher, narrowed, limit, None, after)
                break
            page = min(page * 4, _MAX_CANDIDATE_HITS - (offset - skipped))
        seen = len(best)
        kth = list(best.values())[limit - 1][0] if seen > limit else -math.inf
        return [_Candidate(score, address, o) for o, (score, address) in best.items() if score >= kth], seen

    def _ranked(self, contenders: list[_Candidate], limit: int) -> list[_Ranked]:
        """The best `limit` contenders in order (score desc, session id asc): only their ids are read here,
        their rows once they are kept (`_fill_hits`)."""
        if not contenders:
            return []
        stored = self.store.ids_and_tool_uses([c.ord for c in contenders])
        top = sorted((c for c in contenders if c.ord in stored), key=lambda c: (-c.score, stored[c.ord][0]))
        return [_Ranked(c, *stored[c.ord]) for c in top[:limit]]

    def _fill_hits(
        self,
        response: index_pb2.PartitionSearchResponse,
        searcher: tantivy.Searcher,
        top: Sequence[_Ranked],
        ranking: fts.Fts,
        field: str,
        lane: str,
        with_snippets: bool,
    ) -> None:
        """The ranked sessions as hits: session summary, best message, matched terms, snippet."""
        if not top:
            return
        began = time.perf_counter()
        snippets_s = 0.0
        message_ords = searcher.fast_field_values(schema.MESSAGE_ORD, [r.candidate.address for r in top])
        rows = self.store.hit_rows([(r.candidate.ord, m) for r, m in zip(top, message_ords, strict=True)])
        top = [r for r in top if r.candidate.ord in rows]  # a session replaced since the snapshot is gone
        messages = {r.candidate.ord: units_pb2.Message.FromString(rows[r.candidate.ord].message) for r in top}
        if lane == "actions":
            texts = self._action_texts(messages)
        else:
            texts = {o: schema.dialogue_text(m) for o, m in messages.items()}
        need_tokens = fts.needs_tokens(ranking)
        fixed_terms = [] if need_tokens else fts.query_terms(ranking)
        stemmed = field in schema.STEMMED
        generator = None  # one for all hits, unless what a snippet marks differs per hit (prefixes, stems)
        if with_snippets and not fts.prefixes(ranking) and not (stemmed and fts.stemmed_leaves(ranking)):
            generator = tantivy.SnippetGenerator.create(
                searcher, fts.to_query(ranking, self.schema, field), self.schema, field
            )
            generator.set_max_num_chars(SNIPPET_CHARS)
        surface = "action" if lane == "actions" else "message"
        highlight = fts.Highlighter(ranking, field)
        per_words: dict[tuple[str, ...], tantivy.SnippetGenerator] = {}  # hits marking the same words share one
        add = response.hits.add
        for ranked in top:
            candidate, row = ranked.candidate, rows[ranked.candidate.ord]
            text = texts[candidate.ord]
            tokens = analyzer.tokens(text) if need_tokens or (with_snippets and generator is None) else []
            hit_terms = fts.matched_terms(ranking, tokens, stemmed) if need_tokens else fixed_terms
            snippet = ""
            if with_snippets:
                started = time.perf_counter()
                marks = generator
                if marks is None:
                    words = tuple(sorted(highlight(tokens)))
                    marks = per_words.get(words)
                    if marks is None:
                        marks = per_words[words] = self._terms_generator(searcher, list(words), field)
                snippet = _snippet(marks, field, text)
                snippets_s += time.perf_counter() - started
            hit = add(
                score=candidate.score,
                ranked=True,
                message_id=messages[candidate.ord].id,
                matched_terms=hit_terms,
                match_surface=surface,
                sort_time_ms=row.updated_ms,
                snippet=snippet,
                without_tool_calls=ranked.tool_uses == 0,
            )
            hit.session.ParseFromString(row.summary)
        response.snippets_ms = snippets_s * 1000.0
        response.hydrate_ms = _ms_since(began) - response.snippets_ms

    def _action_texts(self, messages: dict[int, units_pb2.Message]) -> dict[int, str]:
        """The action text of each message (by session ordinal), with the commands of its tool calls."""
        tool_uses = [b.id for m in messages.values() for b in m.blocks if b.type == "tool_use"]
        commands = self.store.commands(list(messages), tool_uses) if tool_uses else {}
        return {o: schema.action_text(m, commands) for o, m in messages.items()}

    def _terms_generator(self, searcher: tantivy.Searcher, words: list[str], field: str) -> tantivy.SnippetGenerator:
        """Highlights exactly these words (a prefix query has no terms of its own to highlight, a stemmed
        word's are in another field)."""
        query = Query.boolean_query([(Occur.Should, Query.term_query(self.schema, field, w)) for w in words])
        generator = tantivy.SnippetGenerator.create(searcher, query, self.schema, field)
        generator.set_max_num_chars(SNIPPET_CHARS)
        return generator

    def _unranked(
        self,
        lowering: Lowering,
        where: plan_pb2.Predicate | None,
        limit: int,
        response: index_pb2.PartitionSearchResponse,
        anchor: index_pb2.PartitionAnchor | None,
    ) -> index_pb2.PartitionSearchResponse:
        sql = lowering.session(where)
        conn = self.store.reader()
        keyset, keyset_params = "", []
        if anchor is not None:  # strictly after the anchor in (updated_ms desc, id asc)
            keyset = " AND (s.updated_ms < ? OR (s.updated_ms = ? AND s.id > ?))"
            keyset_params = [anchor.after_time_ms, anchor.after_time_ms, anchor.after_session_id]
        rows = conn.execute(
            f"SELECT s.summary, s.updated_ms FROM sessions s WHERE {sql.text}{keyset} "
            "ORDER BY s.updated_ms DESC, s.id ASC LIMIT ?",
            [*sql.params, *keyset_params, limit],
        )
        for blob, updated_ms in rows:
            response.hits.add(session=units_pb2.Session.FromString(blob), ranked=False, sort_time_ms=updated_ms)
        (response.matched_sessions,) = conn.execute(
            f"SELECT COUNT(*) FROM sessions s WHERE {sql.text}", sql.params
        ).fetchone()
        return response

    def match_session_ids(self, where: plan_pb2.Predicate | None) -> list[str]:
        lowering = self._lowering(FullText(self.index.searcher(), self.schema, self.store))
        sql = lowering.session(where)
        rows = self.store.reader().execute(f"SELECT s.id FROM sessions s WHERE {sql.text} ORDER BY s.id", sql.params)
        return [r[0] for r in rows]

    # ---- unit rows -------------------------------------------------------------------------------

    def query_units(self, request: index_pb2.PartitionUnitsRequest, partition: int) -> index_pb2.PartitionUnitsResponse:
        plan = request.plan
        if plan.unit not in UNITS:
            raise _request_error(f"unit rows are one of {', '.join(UNITS)}, not {plan.unit!r}", "plan.unit")
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
        return Lowering(full_text, assertions=prepare(self.store.reader(), self.store.path.parent))


class _Text(NamedTuple):
    """A session search's text, compiled: the top group's fts leaves, its role clauses and the rest, the
    group they form, the ranking text (None: an unranked list) and the relaxed admission, if any."""

    exprs: list[plan_pb2.FtsExpr]
    roles: list[RoleClause]
    rest: list[plan_pb2.Predicate]
    group: fts.Fts | None
    ranking: fts.Fts | None
    relaxed: admission.Relaxed | None


class CompiledSearch(NamedTuple):
    """What a session search's request compiles to, the same in every partition: the lane's field and
    its text (None: text that analyzes to no token, matching nothing)."""

    field: str
    text: _Text | None


def compile_search(request: index_pb2.PartitionSearchRequest) -> CompiledSearch:
    field = _lane_field(request)
    return CompiledSearch(field, _search_text(request, field))


def _lane_field(request: index_pb2.PartitionSearchRequest) -> str:
    plan = request.plan
    if plan.unit not in ("", "sessions"):
        raise _request_error(f"session search got a plan of unit {plan.unit!r}", "plan.unit")
    lane = request.lane or "dialogue"
    field = schema.LANE_FIELDS.get(lane)
    if field is None:
        raise _request_error(f"a lexical partition serves the dialogue and actions lanes, not {lane!r}", "lane")
    return field


def _search_text(request: index_pb2.PartitionSearchRequest, field: str) -> _Text | None:
    """The search's text compiled (the same in every partition); None when text that analyzes to no
    token makes it match nothing."""
    plan = request.plan
    where = plan.where if plan.HasField("where") else None
    exprs, roles, rest = _top_group(where)
    group = fts.combine("all", (fts.compile_fts(e) for e in exprs))
    if exprs and group is None:
        return None
    if plan.HasField("ranking_text"):
        ranking = fts.positive(fts.compile_fts(plan.ranking_text))
    elif exprs:
        ranking = fts.positive(group)
    else:
        ranking = fts.positive(fts.combine("any", (fts.compile_fts(e) for e in _positive_fts(rest))))
    relaxed = None
    if ranking is not None and exprs and request.HasField("admission"):
        relaxed = admission.relax([fts.compile_fts(e) for e in exprs], request.admission, field)
        if relaxed is not None:
            group, ranking = relaxed.group, relaxed.ranking
    return _Text(exprs, roles, rest, group, ranking, relaxed)


def _top_group(
    where: plan_pb2.Predicate | None,
) -> tuple[list[plan_pb2.FtsExpr], list[RoleClause], list[plan_pb2.Predicate]]:
    if where is None or where.WhichOneof("node") is None:
        return [], [], []
    items = list(where.all.items) if where.WhichOneof("node") == "all" else [where]
    return split_group(items)


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


def _positive_fts(preds: Sequence[plan_pb2.Predicate]) -> list[plan_pb2.FtsExpr]:
    """fts leaves reachable without passing a negation (the text a ranking can score)."""
    out: list[plan_pb2.FtsExpr] = []
    for pred in preds:
        kind = pred.WhichOneof("node")
        if kind == "fts":
            out.append(pred.fts)
        elif kind in ("all", "any"):
            out.extend(_positive_fts(getattr(pred, kind).items))
    return out


def _leaves(node: fts.Fts | None, kind: str) -> frozenset[fts.Fts]:
    if node is None:
        return frozenset()
    return frozenset(node.children) if node.kind == kind else frozenset((node,))


def _scores_alike(positive_group: fts.Fts | None, ranking: fts.Fts) -> bool:
    """Whether scoring the group gives the ranking's BM25 on every message the group matches: the
    same expression, or the OR of the very leaves the group ANDs (as the compiler writes the ranking
    text of several fts leaves), whose scores then all add up either way."""
    if positive_group == ranking:
        return True
    return ranking.kind == "any" and _leaves(positive_group, "all") == _leaves(ranking, "any")


def _implied_by(pred: plan_pb2.Predicate, ranking: fts.Fts) -> bool:
    """Whether every message matching the ranking text makes its session satisfy `pred`: an fts leaf,
    or an OR of fts leaves, that are exactly the ranking's alternatives (`~a OR ~b`)."""
    kind = pred.WhichOneof("node")
    if kind == "fts":
        leaves = [pred.fts]
    elif kind == "any" and all(p.WhichOneof("node") == "fts" for p in pred.any.items):
        leaves = [p.fts for p in pred.any.items]
    else:
        return False
    compiled = [fts.compile_fts(e) for e in leaves]
    if any(c is None or fts.positive(c) != c for c in compiled):
        return False
    return frozenset(compiled) == _leaves(ranking, "any")  # type: ignore[arg-type]


def _role_predicates(roles: Sequence[RoleClause]) -> list[plan_pb2.Predicate]:
    out = []
    for role in roles:
        pred = plan_pb2.Predicate(field=role.clause)
        out.append(plan_pb2.Predicate(negate=pred) if role.negated else pred)
    return out


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _snippet(generator: tantivy.SnippetGenerator, field: str, text: str) -> str:
    """The best fragment with matches wrapped in [ and ]; the text's start when nothing is highlighted.

    Tantivy renders the fragment as HTML (every `&`, `<`, `>` and quote of the text escaped, matches in
    `<b>`), so its only tags are the highlights and unescaping restores the text exactly. The text is
    segmented as it was indexed (Chinese words marked one by one), and the separators removed again."""
    doc = tantivy.Document()
    doc.add_text(field, analyzer.segment(text))
    marked = generator.snippet_from_doc(doc).to_html()
    if not marked:
        head = text[:SNIPPET_CHARS]
        return head if len(text) <= SNIPPET_CHARS else head.rsplit(" ", 1)[0] + "…"
    return html.unescape(marked.replace("<b>", "[").replace("</b>", "]")).replace(analyzer.SEPARATOR, "")
