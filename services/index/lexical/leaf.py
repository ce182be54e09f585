"""Shard-local execution of a QueryPlan over one Tantivy searcher snapshot and the SQLite store.

Ranked session search (`search` with text)
- The `all` group at the top of `where` is message-level: its fts leaves and role clauses become one
  Tantivy query, so the words and the role hold in the same message. Roles are const-score (0.0)
  filters, which leave BM25 unchanged.
- Session-level clauses of that group on fields every message document carries (repo, origin, tag,
  session id, allow-lists, and any/all/not of those) are const-score filters in the same query; other
  session clauses are evaluated in SQL to a set of session ordinals and filter by term set.
- The score of a session is the BM25 of its best message for the positive text (`ranking_text` when
  the plan has it). Messages are fetched in growing pages and collapsed to sessions until `limit`
  sessions are known and no unseen session can tie the last one, or the hits run out. Python work
  grows with the hits read, never with the corpus; a page cap bounds it for constant-score queries
  (prefixes), where ties break on session id among the candidates read.
- Ties break on session id (ascending). Snippets mark matches with [ and ]; other text is kept plain.

Everything else (unranked lists, `match_session_ids`, unit rows) is SQL over the store, with
full-text leaves evaluated in Tantivy to ordinal sets first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from quarry.core.errors import QuarryError
from quarry.index.lexical import analyzer, fts, schema
from quarry.index.lexical.predicates import Lowering, RoleClause, Sql, split_group
from quarry.index.lexical.store import ACTION_COLUMNS, Store, action_from_row, json_list
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, units_pb2

DEFAULT_SESSIONS = 10
DEFAULT_ROWS = 50
SNIPPET_CHARS = 160
_FIRST_PAGE = 32
_MAX_CANDIDATE_HITS = 5_000
_PREFIX_EXPANSIONS = 16
_UNIT_TABLES = {"messages": "messages", "actions": "actions", "blocks": "blocks"}
_DOC_FILTER_FIELDS = {
    "repo": schema.REPO,
    "origin": schema.ORIGIN,
    "tag": schema.TAG,
    "tags": schema.TAG,
    "session": schema.SESSION_ID,
    "id": schema.SESSION_ID,
}


def _request_error(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)


def _const(query: Query) -> Query:
    return Query.const_score_query(query, 0.0)


def _all_values(searcher: tantivy.Searcher, query: Query, fast_field: str) -> list[int]:
    """The fast-field value of every document matching the query (one Rust call)."""
    if searcher.num_docs == 0:
        return []
    hits = searcher.search(query, limit=searcher.num_docs, count=False, order_by_field=fast_field).hits
    return [value for value, _ in hits]


def _terms(sch: tantivy.Schema, field: str, values: Sequence[object]) -> Query:
    """Any of the values: a plain term query for one (cheaper than a term set)."""
    if len(values) == 1:
        return Query.term_query(sch, field, values[0])
    return Query.term_set_query(sch, field, list(values))


def _role_filters(sch: tantivy.Schema, roles: Sequence[RoleClause]) -> list[tuple[Occur, Query]]:
    clauses = []
    for role in roles:
        terms = _terms(sch, schema.ROLE, [v.lower() for v in role.clause.values])
        clauses.append((Occur.MustNot, terms) if role.negated else (Occur.Must, _const(terms)))
    return clauses


class _FullText:
    """Full-text leaves of predicates, evaluated on one searcher snapshot (see predicates.FullText)."""

    def __init__(self, searcher: tantivy.Searcher, sch: tantivy.Schema, field: str, store: Store) -> None:
        self.searcher = searcher
        self.schema = sch
        self.field = field
        self.store = store

    def message_query(self, exprs: Sequence[plan_pb2.FtsExpr], roles: Sequence[RoleClause]) -> Query | None:
        node = fts.combine("all", (fts.compile_fts(e) for e in exprs))
        if node is None:
            return None
        clauses = [(Occur.Must, fts.to_query(node, self.schema, self.field))]
        clauses.extend(_role_filters(self.schema, roles))
        return Query.boolean_query(clauses)

    def sessions(self, exprs: Sequence[plan_pb2.FtsExpr], roles: Sequence[RoleClause]) -> Collection[int]:
        query = self.message_query(exprs, roles)
        return set() if query is None else set(_all_values(self.searcher, query, schema.SESSION_ORD))

    def units(self, unit: str, expr: plan_pb2.FtsExpr) -> Collection[int]:
        node = fts.compile_fts(expr)
        if node is None:
            return []
        if unit == "messages":
            return _all_values(self.searcher, fts.to_query(node, self.schema, schema.TEXT), schema.MESSAGE_ORD)
        return self._blocks(node)

    def _blocks(self, node: fts.Fts) -> list[int]:
        """Blocks whose own text matches: candidate messages from Tantivy (either text field, positive
        part only), then each candidate block checked against the full expression."""
        candidate = fts.positive(node)
        if candidate is None:
            return []
        query = Query.boolean_query(
            [(Occur.Should, fts.to_query(candidate, self.schema, f)) for f in (schema.TEXT, schema.ACTIONS)]
        )
        message_ords = _all_values(self.searcher, query, schema.MESSAGE_ORD)
        rows = self.store.reader().execute(
            "SELECT b.ord, b.id, m.ord, m.proto FROM blocks b JOIN messages m ON m.ord = b.message_ord "
            "WHERE b.message_ord IN (SELECT value FROM json_each(?)) ORDER BY m.ord",
            (json_list(message_ords),),
        )
        matched: list[int] = []
        texts: dict[str, str] = {}
        current = -1
        for block_ord, block_id, message_ord, proto in rows:
            if message_ord != current:
                current = message_ord
                texts = {b.id: b.text for b in units_pb2.Message.FromString(proto).blocks}
            tokens = analyzer.tokens(texts.get(block_id, ""))
            if tokens and fts.matches(node, tokens, set(tokens)):
                matched.append(block_ord)
        return matched


@dataclass
class _Candidate:
    score: float
    address: tantivy.DocAddress
    ord: int
    session_id: str


class Leaf:
    """Executes plans against one shard. Stateless apart from the handles; safe to share across threads."""

    def __init__(self, index: tantivy.Index, store: Store) -> None:
        self.index = index
        self.schema = index.schema
        self.store = store

    # ---- sessions --------------------------------------------------------------------------------

    def search(self, request: index_pb2.ShardSearchRequest, shard: int) -> index_pb2.ShardSearchResponse:
        plan = request.plan
        if plan.unit not in ("", "sessions"):
            raise _request_error(f"session search got a plan of unit {plan.unit!r}", "plan.unit")
        lane = request.lane or "dialogue"
        field = schema.LANE_FIELDS.get(lane)
        if field is None:
            raise _request_error(f"a lexical shard serves the dialogue and actions lanes, not {lane!r}", "lane")
        limit = request.limit if request.limit > 0 else DEFAULT_SESSIONS
        searcher = self.index.searcher()
        full_text = _FullText(searcher, self.schema, field, self.store)
        lowering = Lowering(full_text)
        where = plan.where if plan.HasField("where") else None

        exprs, roles, rest = self._top_group(where)
        group = fts.combine("all", (fts.compile_fts(e) for e in exprs))
        response = index_pb2.ShardSearchResponse(shard=shard)
        if exprs and group is None:
            return response  # text that analyzes to no token matches nothing
        if plan.HasField("ranking_text"):
            ranking = fts.positive(fts.compile_fts(plan.ranking_text))
        elif exprs:
            ranking = fts.positive(group)
        else:
            ranking = fts.positive(fts.combine("any", (fts.compile_fts(e) for e in _positive_fts(rest))))
        if ranking is None:
            return self._unranked(lowering, where, limit, response)
        if not exprs and roles:  # no text in the group: a role clause is "has a message with the role"
            rest = [*rest, plan_pb2.Predicate(all=plan_pb2.PredicateList(items=_role_predicates(roles)))]
            roles = []
        clauses = self._scored(searcher, ranking, group, field)
        clauses.extend(_role_filters(self.schema, roles))
        sql_rest: list[plan_pb2.Predicate] = []
        for pred in rest:
            if _implied_by(pred, ranking):
                continue
            doc_filter = self._doc_filter(pred)
            if doc_filter is None:
                sql_rest.append(pred)
            else:
                clauses.append((Occur.Must, _const(doc_filter)))
        session_filter = None
        if sql_rest:
            session_filter = lowering.session(plan_pb2.Predicate(all=plan_pb2.PredicateList(items=sql_rest)))
        query = clauses[0][1] if len(clauses) == 1 else Query.boolean_query(clauses)
        top, response.matched_sessions = self._top_sessions(searcher, query, limit, session_filter)
        self._fill_hits(response, searcher, top, ranking, field, lane, request.with_snippets)
        return response

    @staticmethod
    def _top_group(
        where: plan_pb2.Predicate | None,
    ) -> tuple[list[plan_pb2.FtsExpr], list[RoleClause], list[plan_pb2.Predicate]]:
        if where is None or where.WhichOneof("node") is None:
            return [], [], []
        items = list(where.all.items) if where.WhichOneof("node") == "all" else [where]
        return split_group(items)

    def _scored(
        self, searcher: tantivy.Searcher, ranking: fts.Fts, group: fts.Fts | None, field: str
    ) -> list[tuple[Occur, Query]]:
        """The scoring clause: the group itself when its positive text is the ranking text, else the
        ranking text scored and the group as a const-score filter."""
        expansions = {
            p: [term for term, _ in searcher.terms_with_prefix(field, p, limit=_PREFIX_EXPANSIONS)]
            for p in fts.prefixes(ranking)
        }
        if group is not None and _scores_alike(fts.positive(group), ranking):
            return [(Occur.Must, fts.to_query(group, self.schema, field, expansions))]
        clauses = [(Occur.Must, fts.to_query(ranking, self.schema, field, expansions))]
        if group is not None:
            clauses.append((Occur.Must, _const(fts.to_query(group, self.schema, field))))
        return clauses

    def _doc_filter(self, pred: plan_pb2.Predicate) -> Query | None:
        """The predicate as a filter on message documents, when every document carries what it tests
        (session-constant fields), so message-level and session-level evaluation agree."""
        kind = pred.WhichOneof("node")
        if kind == "field":
            clause = pred.field
            name = _DOC_FILTER_FIELDS.get(clause.field)
            if name is None or clause.op != plan_pb2.COMPARISON_UNSPECIFIED or not clause.values:
                return None
            values = list(clause.values) if name == schema.SESSION_ID else [v.lower() for v in clause.values]
            return _terms(self.schema, name, values)
        if kind == "session_ids":
            return _terms(self.schema, schema.SESSION_ID, list(pred.session_ids.ids))
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

    def _session_ords(self, sql: Sql) -> list[int]:
        rows = self.store.reader().execute(f"SELECT s.ord FROM sessions s WHERE {sql.text}", sql.params)
        return [r[0] for r in rows]

    def _session_ids(self, session_ords: Sequence[int], session_filter: Sql | None) -> dict[int, str]:
        """Ids of the sessions among `session_ords` that pass the filter (all of them without one)."""
        condition = f"AND {session_filter.text}" if session_filter is not None else ""
        rows = self.store.reader().execute(
            f"SELECT s.ord, s.id FROM sessions s WHERE s.ord IN (SELECT value FROM json_each(?)) {condition}",
            [json_list(session_ords), *(session_filter.params if session_filter is not None else ())],
        )
        return dict(rows.fetchall())

    def _top_sessions(
        self, searcher: tantivy.Searcher, query: Query, limit: int, session_filter: Sql | None
    ) -> tuple[list[_Candidate], int]:
        """The best `limit` sessions by (score desc, session id asc) and the number of distinct sessions
        seen (exact when the hits ran out, a lower bound otherwise).

        A session filter that Tantivy cannot evaluate is checked in SQL on the candidate sessions of
        each page. When it rejects so much that pages keep coming, it is evaluated once for the whole
        shard instead and applied inside Tantivy as a term set of session ordinals.
        """
        best: dict[int, _Candidate] = {}
        rejected: set[int] = set()
        offset = 0
        page = max(_FIRST_PAGE, 4 * limit)
        while True:
            hits = searcher.search(query, limit=page, offset=offset, count=False).hits
            ords = searcher.fast_field_values(schema.SESSION_ORD, [a for _, a in hits])
            fresh = [o for o in dict.fromkeys(ords) if o not in best and o not in rejected]
            ids = self._session_ids(fresh, session_filter) if fresh else {}
            rejected.update(o for o in fresh if o not in ids)
            for (score, address), session_ord in zip(hits, ords, strict=True):
                if session_ord in ids and session_ord not in best:
                    best[session_ord] = _Candidate(score, address, session_ord, ids[session_ord])
            offset += len(hits)
            if len(hits) < page:
                break
            if len(best) >= limit:
                kth = sorted((c.score for c in best.values()), reverse=True)[limit - 1]
                if hits[-1][0] < kth:
                    break
            if offset >= _MAX_CANDIDATE_HITS:
                if session_filter is not None and len(best) < limit:
                    allowed = self._session_ords(session_filter)
                    if not allowed:
                        return [], 0
                    in_tantivy = Query.term_set_query(self.schema, schema.SESSION_ORD, allowed)
                    narrowed = Query.boolean_query([(Occur.Must, query), (Occur.Must, _const(in_tantivy))])
                    return self._top_sessions(searcher, narrowed, limit, None)
                break
            page = min(page * 4, _MAX_CANDIDATE_HITS - offset)
        ranked = sorted(best.values(), key=lambda c: (-c.score, c.session_id))
        return ranked[:limit], len(best)

    def _fill_hits(
        self,
        response: index_pb2.ShardSearchResponse,
        searcher: tantivy.Searcher,
        top: list[_Candidate],
        ranking: fts.Fts,
        field: str,
        lane: str,
        with_snippets: bool,
    ) -> None:
        summaries = self.store.summaries(c.ord for c in top)
        need_tokens = fts.needs_tokens(ranking)
        fixed_terms = [] if need_tokens else fts.query_terms(ranking)
        prefix_snippets = bool(fts.prefixes(ranking))
        generator = None
        if with_snippets and not prefix_snippets:
            generator = tantivy.SnippetGenerator.create(
                searcher, fts.to_query(ranking, self.schema, field), self.schema, field
            )
            generator.set_max_num_chars(SNIPPET_CHARS)
        surface = "action" if lane == "actions" else "message"
        for candidate in top:
            doc = searcher.doc(candidate.address)
            text = doc.get_first(field) or ""
            terms = fts.matched_terms(ranking, analyzer.tokens(text)) if need_tokens else fixed_terms
            hit = response.hits.add(
                score=candidate.score,
                ranked=True,
                message_id=doc.get_first(schema.MESSAGE_ID) or "",
                matched_terms=terms,
                match_surface=surface,
            )
            summary = summaries.get(candidate.ord)
            if summary is not None:
                hit.session.CopyFrom(summary)
                hit.sort_time_ms = summary.updated_ms
            if with_snippets:
                snippet_generator = generator or self._terms_generator(searcher, terms, field)
                hit.snippet = _snippet(snippet_generator, doc, text)

    def _terms_generator(self, searcher: tantivy.Searcher, terms: list[str], field: str) -> tantivy.SnippetGenerator:
        query = Query.boolean_query([(Occur.Should, Query.term_query(self.schema, field, t)) for t in terms])
        generator = tantivy.SnippetGenerator.create(searcher, query, self.schema, field)
        generator.set_max_num_chars(SNIPPET_CHARS)
        return generator

    def _unranked(
        self, lowering: Lowering, where: plan_pb2.Predicate | None, limit: int, response: index_pb2.ShardSearchResponse
    ) -> index_pb2.ShardSearchResponse:
        sql = lowering.session(where)
        conn = self.store.reader()
        rows = conn.execute(
            f"SELECT s.summary, s.updated_ms FROM sessions s WHERE {sql.text} ORDER BY s.updated_ms DESC, s.id ASC "
            "LIMIT ?",
            [*sql.params, limit],
        )
        for blob, updated_ms in rows:
            response.hits.add(session=units_pb2.Session.FromString(blob), ranked=False, sort_time_ms=updated_ms)
        (response.matched_sessions,) = conn.execute(
            f"SELECT COUNT(*) FROM sessions s WHERE {sql.text}", sql.params
        ).fetchone()
        return response

    def match_session_ids(self, where: plan_pb2.Predicate | None) -> list[str]:
        lowering = Lowering(_FullText(self.index.searcher(), self.schema, schema.TEXT, self.store))
        sql = lowering.session(where)
        rows = self.store.reader().execute(f"SELECT s.id FROM sessions s WHERE {sql.text} ORDER BY s.id", sql.params)
        return [r[0] for r in rows]

    # ---- unit rows -------------------------------------------------------------------------------

    def query_units(self, request: index_pb2.ShardUnitsRequest, shard: int) -> index_pb2.ShardUnitsResponse:
        plan = request.plan
        table = _UNIT_TABLES.get(plan.unit)
        if table is None:
            raise _request_error(f"unit rows are messages, actions or blocks, not {plan.unit!r}", "plan.unit")
        limit = request.limit if request.limit > 0 else DEFAULT_ROWS
        lowering = Lowering(_FullText(self.index.searcher(), self.schema, schema.TEXT, self.store))
        parts = [lowering.unit(plan.unit, plan.where if plan.HasField("where") else None)]
        if plan.HasField("session_scope"):
            parts.append(lowering.owning_session(plan.session_scope))
        where = " AND ".join(p.text for p in parts)
        params = [x for p in parts for x in p.params]
        direction = "DESC" if _descending(plan) else "ASC"
        order = f"ORDER BY u.time_ms {direction}, u.id ASC LIMIT ?"
        response = index_pb2.ShardUnitsResponse(shard=shard)
        conn = self.store.reader()
        if plan.unit == "messages":
            for proto, time_ms in conn.execute(
                f"SELECT u.proto, u.time_ms FROM messages u WHERE {where} {order}", [*params, limit]
            ):
                message = units_pb2.Message.FromString(proto)
                response.rows.add(
                    message=message, session_id=message.session_id, sort_time_ms=time_ms, sort_id=message.id
                )
        elif plan.unit == "actions":
            columns = ", ".join(f"u.{c.strip()}" for c in ACTION_COLUMNS.split(","))
            for row in conn.execute(
                f"SELECT {columns}, s.id FROM actions u JOIN sessions s ON s.ord = u.session_ord WHERE {where} {order}",
                [*params, limit],
            ):
                action = _action(row)
                response.rows.add(
                    action=action, session_id=action.session_id, sort_time_ms=action.time_ms, sort_id=action.id
                )
        else:
            for block_id, time_ms, proto in conn.execute(
                f"SELECT u.id, u.time_ms, m.proto FROM blocks u JOIN messages m ON m.ord = u.message_ord "
                f"WHERE {where} {order}",
                [*params, limit],
            ):
                message = units_pb2.Message.FromString(proto)
                block = next((b for b in message.blocks if b.id == block_id), units_pb2.Block(id=block_id))
                response.rows.add(block=block, session_id=message.session_id, sort_time_ms=time_ms, sort_id=block_id)
        return response


def _action(row: Sequence[object]) -> units_pb2.Action:
    return action_from_row(row[:-1], str(row[-1]))


def _descending(plan: plan_pb2.QueryPlan) -> bool:
    descending = False
    for stage in plan.stages:
        if stage.WhichOneof("stage") == "sort":
            descending = stage.sort.descending
    return descending


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


def _snippet(generator: tantivy.SnippetGenerator, doc: tantivy.Document, text: str) -> str:
    """The best fragment with matches wrapped in [ and ]; the text's start when nothing is highlighted."""
    snippet = generator.snippet_from_doc(doc)
    fragment = snippet.fragment()
    if not fragment:
        head = text[:SNIPPET_CHARS]
        return head if len(text) <= SNIPPET_CHARS else head.rsplit(" ", 1)[0] + "…"
    raw = fragment.encode()
    pieces: list[bytes] = []
    last = 0
    for highlight in sorted(snippet.highlighted(), key=lambda r: r.start):
        pieces += [raw[last : highlight.start], b"[", raw[highlight.start : highlight.end], b"]"]
        last = highlight.end
    pieces.append(raw[last:])
    return b"".join(pieces).decode(errors="replace")
