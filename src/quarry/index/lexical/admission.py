"""Lexical admission on a partition (docs/search-api.md#admission): m of the query's n text items must
match, not all of them.

Items are the positive top-level parts of the ranked text of the query's top `all` group:
- one text leaf (compact text, or one `~"…"`): its words after analysis, a phrase as one item, an
  explicit OR group as one item; its negated parts stay excluded, per message, as before;
- several text leaves (`~"a b" AND ~"c"`): each leaf is one item (a leaf holds in one message).
n counts distinct items; m = 1 when n <= 2, else max(min_matched_terms, ceil(coverage * n)), at most n.

- m == n: None, the query language's AND stands (nothing changes on the partition);
- m == 1: the items' OR, BM25 ranked;
- 1 < m < n: the items' OR, BM25 ranked, restricted to the sessions holding at least m items (an item
  is held by a session when one of its messages matches it, with the group's role clauses and
  excluded parts): admission is per session, the unit a search returns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from quarry.index.lexical import fts, schema
from quarry.index.lexical.fulltext import all_values, role_filters
from quarry.index.lexical.predicates import RoleClause
from quarry.v1 import index_pb2


@dataclass(frozen=True)
class Relaxed:
    """The admitted form of a group: what matches and scores, and how many items a session needs."""

    group: fts.Fts  # the message-level expression: any of the items, minus the excluded parts
    ranking: fts.Fts  # its positive part: what BM25 scores
    items: tuple[fts.Fts, ...]
    excluded: tuple[fts.Fts, ...]  # `not` nodes
    required: int  # m


def required_matches(n: int, coverage: float, min_matched_terms: int) -> int:
    """m of admission's rule (module docstring) for n distinct items."""
    if n <= 2:
        return min(1, n)
    return min(n, max(min_matched_terms, math.ceil(coverage * n)))


def relax(leaves: Sequence[fts.Fts | None], admission: index_pb2.LexicalAdmission, field: str) -> Relaxed | None:
    """The admitted form of the group's text leaves; None when every item is required (m == n) or
    there is no positive item."""
    compiled = [leaf for leaf in leaves if leaf is not None]
    if len(compiled) == 1:
        only = compiled[0]
        parts = only.children if only.kind == "all" else (only,)
        items = fts.distinct((p for p in parts if p.kind != "not"), field)
        excluded = tuple(p for p in parts if p.kind == "not")
    else:
        items, excluded = fts.distinct(compiled, field), ()
    required = required_matches(len(items), admission.coverage, admission.min_matched_terms)
    if not items or required >= len(items):
        return None
    alternatives = fts.combine("any", items)
    group = fts.combine("all", (alternatives, *excluded))
    ranking = fts.positive(group)
    assert alternatives is not None and group is not None and ranking is not None
    return Relaxed(group, ranking, items, excluded, required)


def admitted_sessions(
    searcher: tantivy.Searcher, sch: tantivy.Schema, field: str, relaxed: Relaxed, roles: Sequence[RoleClause]
) -> list[int] | None:
    """Ordinals of the sessions holding at least `required` items (sorted); None when one item is enough
    (the OR query itself admits exactly those sessions)."""
    if relaxed.required <= 1:
        return None
    held: Counter[int] = Counter()
    excluded = [(Occur.MustNot, fts.to_query(x.children[0], sch, field)) for x in relaxed.excluded]
    for item in relaxed.items:
        clauses = [(Occur.Must, fts.to_query(item, sch, field)), *excluded, *role_filters(sch, roles)]
        held.update(set(all_values(searcher, Query.boolean_query(clauses), schema.SESSION_ORD)))
    return sorted(ords for ords, count in held.items() if count >= relaxed.required)
