"""The search page's facet sidebar: session counts per facet value (QueryService.Facets) whose values are
links that narrow the search by adding the value's field filter to the query text.

The counts are those of the query's sessions (the facets' scoped view; the whole archive for an empty
query). Facets count the sessions a query selects as the query language reads it, so prose is counted
as its words, every one required (docs/searching.md): the number beside a value is then exactly what
the narrowed query, which is the query language, finds. A value already filtered on links to the query
without it.

Narrowing edits the query's tree (quarry.dsl) and writes it back in its canonical spelling: the filter
is ANDed with the whole predicate (`a OR b` narrowed by origin is `(a OR b) origin:x`, never
`a OR b origin:x`), `with` items and a `lane:` directive stay where they were.
"""

from __future__ import annotations

from dataclasses import dataclass

from quarry.core.errors import QuarryError
from quarry.dsl import ast, parse, render
from quarry.dsl.reading import PROSE, read
from quarry.v1 import query_pb2

# facet family -> the session field a value of it filters on (docs/query-language.md#session-fields)
FIELD_OF_FAMILY = {
    "origins": "origin",
    "tags": "tag",
    "repos": "repo",
    "action_types": "action",
}
BUCKET_FAMILY = "count_buckets"  # sessions by message count: "0", "1-9", …, "200+"
FAMILIES = ("origins", "repos", "tags", "action_types", "count_buckets")  # asked for, and shown in this order
TITLES = {"action_types": "actions", "count_buckets": "messages"}


@dataclass(frozen=True)
class FacetLink:
    value: str
    count: int
    query: str  # the query with the value's filter added (or removed, when `active`)
    active: bool


@dataclass(frozen=True)
class FacetGroup:
    family: str
    title: str
    links: list[FacetLink]


@dataclass(frozen=True)
class Sidebar:
    total: int  # the sessions the counts are of
    scoped: bool  # counted for the query (False: the whole archive, for an empty query)
    prose: bool  # the query was read as prose (its words counted as every word required)
    groups: list[FacetGroup]
    caveats: list[str]


def facets_query(text: str) -> str:
    """The query the facets are counted for: the query language as written, prose as its words."""
    return read(text).query


def sidebar(response: query_pb2.FacetsResponse, text: str) -> Sidebar:
    """The sidebar of a FacetsResponse counted for `facets_query(text)`."""
    view = response.scoped if response.scoped_to_query else getattr(response, "global")
    counted = {family.family: family for family in view.families}
    base = facets_query(text)
    groups = []
    for family in FAMILIES:
        if family not in counted:
            continue
        links = [link for value in counted[family].values if (link := _link(base, family, value)) is not None]
        if links:
            groups.append(FacetGroup(family, TITLES.get(family, family), links))
    prose = read(text).how == PROSE
    return Sidebar(view.total_sessions, response.scoped_to_query, prose, groups, list(response.caveats))


def _link(base: str, family: str, value: query_pb2.FacetValue) -> FacetLink | None:
    if not value.value or value.count <= 0:
        return None
    clause = _clause(family, value.value)
    if clause is None:
        return None
    try:
        toggled = toggle(base, clause)
    except QuarryError:
        return None
    return None if toggled is None else FacetLink(value.value, value.count, *toggled)


def _clause(family: str, value: str) -> ast.Predicate | None:
    """The filter a facet value stands for: `origin:x`, …; a message-count bucket as a comparison."""
    if family == BUCKET_FAMILY:
        low, dash, high = value.rstrip("+").partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        if value.endswith("+"):
            return ast.Comparison("messages", ">=", (low,))
        return ast.Comparison("messages", "between", (low, high)) if dash else ast.Comparison("messages", "=", (low,))
    field = FIELD_OF_FAMILY.get(family)
    return None if field is None else ast.Field(field, (ast.Value(value),))


def toggle(text: str, clause: ast.Predicate) -> tuple[str, bool] | None:
    """The query `text` with `clause` ANDed to its predicate, or without it when it is already one of
    the predicate's top-level terms (then True); None for a query that selects rows, not sessions.
    QuarryError when `text` does not parse."""
    query = parse(text)
    if not isinstance(query, ast.CompactQuery | ast.SessionsQuery):
        return None
    items = _terms(query.predicate)
    active = clause in items
    kept = [item for item in items if item != clause] if active else [*items, clause]
    predicate = None if not kept else kept[0] if len(kept) == 1 else ast.And(tuple(kept))
    if isinstance(query, ast.SessionsQuery) and predicate is not None:
        return render(ast.SessionsQuery(predicate, projections=query.projections)), active
    return render(ast.CompactQuery(predicate, projections=query.projections)), active


def _terms(predicate: ast.Predicate | None) -> list[ast.Predicate]:
    if predicate is None:
        return []
    return list(predicate.items) if isinstance(predicate, ast.And) else [predicate]
