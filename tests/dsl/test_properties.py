"""Properties: no input crashes the parser or compiler; every tree renders to text that parses back.

The tree strategies build trees in the parser's canonical shape (quarry.dsl.ast): AND/OR groups
of two or more items that do not nest their own kind, and in the compact form at most one
FreeText per group.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.core.errors import QuarryError
from quarry.core.lanes import LANES
from quarry.core.vocab import ORIGINS
from quarry.dsl import UNIT_SOURCES, ast, compile_query, parse, render
from quarry.dsl.fields import AGGREGATE_FUNCTIONS, EXISTS_UNITS, FEATURES, GROUP_FIELDS, aggregable_fields

_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- arbitrary text

_SOUP = st.sampled_from(
    [
        "sessions", "messages", "actions", "blocks", "files", "where", "AND", "OR", "NOT", "-", "(", ")",
        "|", '"', "'", "~", '~"', "*", ":", "repo:", "role:", "text:", "session.", "session.repo:",
        "semantic:", "near:text:", "near:id:", "origin:(", "exists", "message(", "seq(", "->", ">=", "=",
        "between", "and", "sort", "by", "time", "desc", "limit", "offset", "group", "count", "10",
        "lineage:id:", "codex-session:a", "observed-events", "runs", "run(", "date", "since:", "7d",
        "2026-01-02", "messages:>=", "words", "key", "delete", "session.date:", "with", "[", "]", ",",
        "first:", "last:3",
        "x", "pool", "\\", "\n", " ", "{", "}", "\u00a0", "é",
    ]
)  # fmt: skip


def _compile_or_typed_error(text: str) -> None:
    try:
        compile_query(text)
    except QuarryError as error:
        assert error.offset is not None and 0 <= error.offset <= len(text)
        assert error.line is not None and error.column is not None


@_SETTINGS
@given(st.text(max_size=200))
def test_arbitrary_text_raises_nothing_but_quarry_error(text: str) -> None:
    _compile_or_typed_error(text)


@_SETTINGS
@given(st.lists(_SOUP, max_size=30).flatmap(lambda parts: st.sampled_from(["", " "]).map(lambda sep: sep.join(parts))))
def test_syntax_soup_raises_nothing_but_quarry_error(text: str) -> None:
    _compile_or_typed_error(text)


# ---------------------------------------------------------------- canonical trees

_RESERVED = {
    "sessions", "messages", "actions", "blocks", "files", "assertions", "runs", "delegations",
    "where", "exists", "seq", "words", "date", "between",
}  # fmt: skip
_words = st.from_regex(r"[a-z][a-z0-9_.]{0,7}", fullmatch=True).filter(lambda w: w not in _RESERVED)
_phrase_text = st.text(min_size=1, max_size=12).filter(str.strip)
_bare_value = st.from_regex(r"[^\s()\"|]{1,10}", fullmatch=True)
_field_names = st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True).filter(lambda n: n not in {"semantic", "near"})


def _group(kind: type, items: list[Any]) -> Any:
    flat: list[Any] = []
    for item in items:
        flat.extend(item.items if isinstance(item, kind) else [item])
    return kind(tuple(flat))


_fts_leaves = st.one_of(
    _words.map(ast.Term),
    _words.map(ast.Prefix),
    _phrase_text.map(ast.Phrase),
)
_fts = st.recursive(
    _fts_leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.FtsAnd, xs)),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.FtsOr, xs)),
        inner.map(ast.FtsNot),
    ),
    max_leaves=6,
)

_values = st.one_of(
    _bare_value.map(ast.Value),
    st.text(max_size=10).map(lambda text: ast.Value(text, quoted=True)),
)
_fields = st.builds(
    ast.Field,
    _field_names,
    st.lists(_values, min_size=1, max_size=3).map(tuple),
    st.booleans(),
)
_dates = st.one_of(
    st.dates().map(lambda d: d.isoformat()).filter(lambda text: len(text) == 10),
    st.sampled_from(["today", "yesterday", "7d", "24h", "2w", "2026-01-02T10:30Z"]),
)
_comparisons = st.one_of(
    st.builds(
        ast.Comparison,
        st.sampled_from(["messages", "words", "duration_ms", "date"]),
        st.sampled_from([">=", "<=", ">", "<", "="]),
        st.from_regex(r"[0-9][0-9-]{0,9}", fullmatch=True).map(lambda v: (v,)),
        st.booleans(),
    ),
    st.builds(
        lambda op, value, scoped: ast.Comparison("date", op, (value,), scoped),
        st.sampled_from([">=", "<=", ">", "<", "="]),
        _dates,
        st.booleans(),
    ),
    st.builds(
        lambda field, low, high: ast.Comparison(field, "between", (low, high)),
        st.sampled_from(["words", "user_messages"]),
        st.integers(0, 999).map(str),
        st.integers(0, 999).map(str),
    ),
)
_session_ids = st.one_of(
    st.tuples(st.sampled_from(ORIGINS), st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True)).map(":".join),
    _phrase_text,
)
_where_leaves = st.one_of(
    _fields,
    _session_ids.map(ast.NearSession),
    _session_ids.map(ast.Lineage),
    _fts.map(ast.FtsLeaf),
    _phrase_text.map(ast.Semantic),
    _phrase_text.map(lambda text: ast.Semantic(text, via="near")),
    _comparisons,
)


_unit_names = st.from_regex(r"[a-z][a-z-]{0,8}", fullmatch=True)


def _where_extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.And, xs)),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.Or, xs)),
        inner.map(ast.Not),
        st.builds(ast.Exists, st.one_of(st.sampled_from(sorted(EXISTS_UNITS)), _unit_names), inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda steps: ast.Seq(tuple(steps))),
    )


_where = st.recursive(_where_leaves, _where_extend, max_leaves=8)


def _compact_group(kind: type, fts_kind: type, items: list[Any]) -> Any:
    """An AND/OR group in the compact form: its FreeTexts merged into the first one's place."""
    flat: list[Any] = []
    for item in items:
        flat.extend(item.items if isinstance(item, kind) else [item])
    texts = [item for item in flat if isinstance(item, ast.FreeText)]
    if len(texts) == len(flat):
        return ast.FreeText(_group(fts_kind, [t.expr for t in texts]))
    if len(texts) > 1:
        merged = ast.FreeText(_group(fts_kind, [t.expr for t in texts]))
        later = {id(t) for t in texts[1:]}
        flat = [merged if item is texts[0] else item for item in flat if id(item) not in later]
    return kind(tuple(flat))


def _compact_not(item: Any) -> Any:
    return ast.FreeText(ast.FtsNot(item.expr)) if isinstance(item, ast.FreeText) else ast.Not(item)


_compact = st.recursive(
    st.one_of(_where_leaves, _fts.map(ast.FreeText)),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _compact_group(ast.And, ast.FtsAnd, xs)),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _compact_group(ast.Or, ast.FtsOr, xs)),
        inner.map(_compact_not),
        st.builds(ast.Exists, st.from_regex(r"[a-z]{1,8}", fullmatch=True), _where),
    ),
    max_leaves=8,
)

_stages = st.one_of(
    st.builds(ast.Sort, st.sampled_from(["time", "count", "key"]), st.booleans()),
    st.builds(ast.GroupBy, st.from_regex(r"[a-z][a-z_.]{0,8}", fullmatch=True)),
    st.builds(ast.GroupBy, st.sampled_from(sorted({f for fields in GROUP_FIELDS.values() for f in fields}))),
    st.just(ast.Count()),
    st.builds(ast.Limit, st.integers(0, 2**31 - 1)),
    st.builds(ast.Offset, st.integers(0, 2**31 - 1)),
)

_filter_values = st.one_of(  # `,` `[` `]` end a bare value inside [filters]
    st.from_regex(r"[^\s()\"|,\[\]]{1,10}", fullmatch=True).map(ast.Value),
    st.text(max_size=10).map(lambda text: ast.Value(text, quoted=True)),
)
_filter_fields = st.builds(
    ast.Field, _field_names, st.lists(_filter_values, min_size=1, max_size=3).map(tuple), st.booleans()
)
_filter_leaves = st.one_of(_filter_fields, _comparisons, _fts.map(ast.FtsLeaf))
_filters = st.one_of(_filter_leaves, _filter_leaves.map(ast.Not))
_projections = st.lists(
    st.builds(
        ast.Projection,
        st.sampled_from(UNIT_SOURCES),
        st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True), max_size=3).map(tuple),
        st.lists(_filters, max_size=3).map(tuple),
    ),
    max_size=3,
).map(tuple)


def _compact_projections(projections: tuple[ast.Projection, ...]) -> tuple[ast.Projection, ...]:
    """The compact form's first unit takes a field list or a filter (a bare one there is text)."""
    if projections and not projections[0].fields and not projections[0].filters:
        first = projections[0]
        return (ast.Projection(first.unit, ("ref",)), *projections[1:])
    return projections


_queries = st.one_of(
    st.builds(
        lambda predicate, projections: ast.CompactQuery(predicate, None, _compact_projections(projections)),
        st.one_of(st.none(), _compact),
        _projections,
    ),
    st.builds(lambda predicate, projections: ast.SessionsQuery(predicate, None, projections), _where, _projections),
    st.builds(
        ast.UnitQuery,
        st.sampled_from(UNIT_SOURCES),
        _where,
        st.lists(_stages, max_size=3).map(tuple),
        st.one_of(st.none(), _where),
    ),
)


@_SETTINGS
@given(_queries)
def test_rendered_trees_parse_back_to_the_same_tree(query: ast.Query) -> None:
    text = render(query)
    assert parse(text) == query, text


@_SETTINGS
@given(_queries)
def test_rendered_trees_compile_or_fail_typed(query: ast.Query) -> None:
    _compile_or_typed_error(render(query))


# ---------------------------------------------------------------- valid queries compile

_NOW = 1_767_312_000_000
_sid = st.tuples(st.sampled_from(ORIGINS), st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)).map(":".join)
_negatable_session_leaves = st.one_of(
    _words.map(lambda w: ast.Field("repo", (ast.Value(w),))),
    _words.map(lambda w: ast.Field("tag", (ast.Value(w),))),
    st.sampled_from(ORIGINS).map(lambda o: ast.Field("origin", (ast.Value(o),))),
    st.builds(
        lambda name, op, n: ast.Comparison(name, op, (str(n),)),
        st.sampled_from(["messages", "words", "user_messages", "paste_messages", "duration_ms"]),
        st.sampled_from([">=", "<=", ">", "<", "="]),
        st.integers(0, 10**6),
    ),
    st.builds(lambda op, d: ast.Comparison("date", op, (d,)), st.sampled_from([">=", "<", "="]), _dates),
    _sid.map(ast.Lineage),
    st.builds(
        lambda unit, value: ast.Exists(unit, ast.Field("id", (ast.Value(value),), session_scoped=True)),
        st.sampled_from(sorted(EXISTS_UNITS)),
        _sid,
    ),
    st.lists(st.sampled_from(["file_edit", "shell", "search"]), min_size=2, max_size=4).map(
        lambda cats: ast.Seq(tuple(ast.Field("action", (ast.Value(c),)) for c in cats))
    ),
    # feature filters, and origins Quarry does not read (valid, matching nothing)
    st.lists(st.sampled_from(sorted(FEATURES)), min_size=1, max_size=3, unique=True).map(
        lambda names: ast.Field("has", tuple(ast.Value(n) for n in names))
    ),
    st.from_regex(r"[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,4}){0,2}", fullmatch=True).map(
        lambda o: ast.Field("origin", (ast.Value(o),))
    ),
)
_valid_session_predicates = st.recursive(
    st.one_of(_negatable_session_leaves, _fts.map(ast.FtsLeaf)),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.And, xs)),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: _group(ast.Or, xs)),
        inner.map(ast.Not),
    ),
    max_leaves=6,
)
_row_stages = st.lists(
    st.one_of(st.builds(ast.Sort, st.just("time"), st.booleans()), st.builds(ast.Limit, st.integers(1, 99))),
    max_size=3,
).map(tuple)


def _aggregate_stages(unit: str) -> st.SearchStrategy[tuple[ast.Stage, ...]]:
    """`group by F | count` or `| agg …` (F a field the unit groups by; the functions of fields it
    aggregates), or either alone, then an optional order and window: the aggregate pipelines every
    unit runs."""
    functions = st.lists(
        st.one_of(
            st.just(("count", "")),
            st.tuples(st.sampled_from(AGGREGATE_FUNCTIONS), st.sampled_from(aggregable_fields(unit) or ("",))),
        ).filter(lambda fn: fn[0] == "count" or bool(fn[1])),
        min_size=1,
        max_size=3,
        unique=True,
    ).map(lambda fns: ast.Aggregate(tuple(fns)))
    ending = st.one_of(st.just(ast.Count()), functions)
    head = st.one_of(
        st.builds(lambda name, end: (ast.GroupBy(name), end), st.sampled_from(GROUP_FIELDS[unit]), ending),
        ending.map(lambda end: (end,)),
    )
    tail = st.lists(
        st.one_of(
            st.builds(ast.Sort, st.sampled_from(["count", "key"]), st.booleans()),
            st.builds(ast.Limit, st.integers(1, 99)),
        ),
        max_size=2,
    ).map(tuple)
    return st.builds(lambda h, t: h + t, head, tail)


_valid_unit_queries = st.sampled_from(UNIT_SOURCES).flatmap(
    lambda unit: st.builds(
        lambda scope, stages: ast.UnitQuery(
            unit, ast.Field("origin", (ast.Value("codex-session"),), True), stages, scope
        ),
        st.one_of(st.none(), _valid_session_predicates),
        st.one_of(_row_stages, _aggregate_stages(unit)),
    )
)


@_SETTINGS
@given(st.one_of(st.builds(ast.SessionsQuery, _valid_session_predicates), _valid_unit_queries))
def test_valid_trees_render_parse_back_and_compile(query: ast.Query) -> None:
    text = render(query)
    assert parse(text) == query, text
    compiled = compile_query(text, now_ms=_NOW)
    assert compiled.unit == ("sessions" if isinstance(query, ast.SessionsQuery) else query.unit)


@_SETTINGS
@given(_valid_session_predicates, st.sampled_from(LANES))
def test_a_lane_at_the_top_of_a_compact_query_chooses_the_lane_and_leaves_the_plan(
    predicate: ast.Predicate, lane: str
) -> None:
    text = render(ast.CompactQuery(predicate))
    plain = compile_query(text, now_ms=_NOW)
    directed = compile_query(f"lane:{lane} ({text})", now_ms=_NOW)  # AND binds tighter than OR: the group
    assert (directed.lane, directed.plan) == (lane, plain.plan)
