"""Full-text leaves evaluated in Tantivy on one searcher snapshot, for the SQL lowering and unit rows.

Sets produced here grow with the matches (one Rust call collects them); callers use them where a
predicate shape leaves no bounded alternative (full-text under OR / NOT, allow-lists for SQL).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import tantivy
from tantivy import Occur, Query

from quarry.core.vocab import DIALOGUE_BLOCK_TYPES
from quarry.index.lexical import fts, schema
from quarry.index.lexical.predicates import RoleClause, Sql
from quarry.index.lexical.store import Store
from quarry.v1 import plan_pb2, units_pb2


def const(query: Query) -> Query:
    """A filter that adds nothing to the score (BM25 of the other clauses is unchanged)."""
    return Query.const_score_query(query, 0.0)


def terms(sch: tantivy.Schema, field: str, values: Sequence[object]) -> Query:
    """Any of the values: a plain term query for one (cheaper than a term set)."""
    if len(values) == 1:
        return Query.term_query(sch, field, values[0])
    return Query.term_set_query(sch, field, list(values))


def role_filters(sch: tantivy.Schema, roles: Sequence[RoleClause]) -> list[tuple[Occur, Query]]:
    clauses = []
    for role in roles:
        role_terms = terms(sch, schema.ROLE, [v.lower() for v in role.clause.values])
        clauses.append((Occur.MustNot, role_terms) if role.negated else (Occur.Must, const(role_terms)))
    return clauses


def all_values(searcher: tantivy.Searcher, query: Query, fast_field: str) -> list[int]:
    """The fast-field value of every document matching the query (one Rust call)."""
    if searcher.num_docs == 0:
        return []
    hits = searcher.search(query, limit=searcher.num_docs, count=False, order_by_field=fast_field).hits
    return [value for value, _ in hits]


def block_candidates(sch: tantivy.Schema, node: fts.Fts) -> Query | None:
    """Messages that may hold a block matching `node`: its positive part in either text field (a
    block's text is in the dialogue or the action text of its message)."""
    candidate = fts.positive(node)
    if candidate is None:
        return None
    return Query.boolean_query(
        [(Occur.Should, fts.to_query(candidate, sch, field)) for field in (schema.TEXT, schema.ACTIONS)]
    )


def matching_blocks(
    store: Store, node: fts.Fts, message_ords: Sequence[int], condition: Sql | None = None
) -> dict[int, tuple[int, str]]:
    """(time, id) by ordinal of the blocks of these messages that pass the SQL condition (alias `u`)
    and whose own text matches the full expression, as the text field of the block's kind would
    (fts.matches). The cheap SQL condition runs first, so only its survivors are tokenized."""
    if condition is None:
        rows = store.blocks_of_messages(message_ords)
    else:
        rows = store.blocks_of_messages(message_ords, condition.text, condition.params)
    matched: dict[int, tuple[int, str]] = {}
    blocks: dict[str, units_pb2.Block] = {}
    current = -1
    for block_ord, time_ms, block_id, message_ord, proto in rows:
        if message_ord != current:
            current = message_ord
            blocks = {b.id: b for b in units_pb2.Message.FromString(proto).blocks}
        block = blocks.get(block_id)
        if block is None or not block.text:
            continue
        text = fts.Analyzed.of(block.text)
        # dialogue blocks are in `text` (stemmed twin: unquoted words match by stem), the others in `actions`
        if text.tokens and fts.matches(node, text, stemmed=block.type in DIALOGUE_BLOCK_TYPES):
            matched[block_ord] = (time_ms, block_id)
    return matched


class FullText:
    """Implements predicates.FullText: session and unit ordinal sets for fts leaves."""

    def __init__(self, searcher: tantivy.Searcher, sch: tantivy.Schema, store: Store, field: str = schema.TEXT) -> None:
        self.searcher = searcher
        self.schema = sch
        self.store = store
        self.field = field

    def sessions(self, exprs: Sequence[plan_pb2.FtsExpr], roles: Sequence[RoleClause]) -> Collection[int]:
        node = fts.combine("all", (fts.compile_fts(e) for e in exprs))
        if node is None:
            return set()
        clauses = [(Occur.Must, fts.to_query(node, self.schema, self.field)), *role_filters(self.schema, roles)]
        return set(all_values(self.searcher, Query.boolean_query(clauses), schema.SESSION_ORD))

    def units(self, unit: str, expr: plan_pb2.FtsExpr) -> Collection[int]:
        node = fts.compile_fts(expr)
        if node is None:
            return []
        if unit == "messages":
            return all_values(self.searcher, fts.to_query(node, self.schema, schema.TEXT), schema.MESSAGE_ORD)
        candidates = block_candidates(self.schema, node)
        if candidates is None:
            return []
        return list(matching_blocks(self.store, node, all_values(self.searcher, candidates, schema.MESSAGE_ORD)))
