"""The AST builder: Lark's callbacks, named after the grammar's rule aliases, each returning a node of
quarry.dsl.ast while the text is parsed (Lark's tree-less mode: no intermediate parse tree).

Besides building, it refuses what the grammar accepts only to explain it: a pipeline stage after a sessions
query (with the unit query that says it, as a correction), a session verb on unit rows, a field and its
value apart, an empty phrase, a number too large to hold."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from lark import Token, Transformer

from quarry.core.errors import QuarryError
from quarry.dsl import ast
from quarry.dsl.errors import BAD_VALUE, INVALID_QUERY, UNSUPPORTED_FORM, query_error

# Limits and offsets must fit the plan's int32; longer digit strings are rejected before int().
_MAX_INT_DIGITS = 10
# Verbs that act on a selected session set: on unit rows they are refused, typed (docs/query-language.md#errors).
SESSION_VERBS = frozenset({"delete", "open", "stats", "read", "export", "tag", "untag", "mark"})
_STAGE_WORDS = ("sort by", "group by", "count", "limit", "offset")


def _span(first: object, last: object | None = None) -> ast.Span | None:
    start = _bounds(first)
    end = _bounds(last if last is not None else first)
    if start is None or end is None:
        return None
    return ast.Span(start[0], end[1])


def _bounds(thing: object) -> tuple[int, int] | None:
    if isinstance(thing, Token):
        return thing.start_pos or 0, thing.end_pos or 0
    span = getattr(thing, "span", None)
    return (span.start, span.end) if span is not None else None


def _unescape(body: str) -> str:
    return re.sub(r"\\([\s\S])", r"\1", body)


def _flatten(kind: type, items: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in items:
        if isinstance(item, kind):
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat


def _fts_group(kind: type[ast.FtsAnd] | type[ast.FtsOr], exprs: list[ast.Fts]) -> ast.Fts:
    flat = _flatten(kind, exprs)
    if len(flat) == 1:
        return flat[0]
    return kind(tuple(flat), _span(flat[0], flat[-1]))


def _merge_text(
    kind: type[ast.And] | type[ast.Or],
    fts_kind: type[ast.FtsAnd] | type[ast.FtsOr],
    children: list[Any],
) -> ast.Predicate:
    """One FreeText per compact AND/OR group, placed where the group's first text was."""
    items = _flatten(kind, children)
    texts = [item for item in items if isinstance(item, ast.FreeText)]
    if len(texts) == len(items):
        return ast.FreeText(_fts_group(fts_kind, [t.expr for t in texts]), _span(items[0], items[-1]))
    if len(texts) > 1:
        merged = ast.FreeText(_fts_group(fts_kind, [t.expr for t in texts]), _span(texts[0], texts[-1]))
        text_ids = {id(text) for text in texts[1:]}
        items = [merged if item is texts[0] else item for item in items if id(item) not in text_ids]
    return kind(tuple(items), _span(items[0], items[-1]))


def _word(token: Token) -> ast.Term | ast.Prefix:
    text = str(token.value)
    span = _span(token)
    if text.endswith("*"):
        stem = text.rstrip("*")
        if not stem:
            raise query_error(INVALID_QUERY, "a prefix needs a word before the `*`", span, token=text)
        return ast.Prefix(stem, span)
    return ast.Term(text, span)


def _phrase(token: Token) -> ast.Phrase:
    text = _unescape(str(token.value)[1:-1])
    if not text.strip():
        raise query_error(INVALID_QUERY, "an empty phrase matches nothing", _span(token), token=token.value)
    return ast.Phrase(text, _span(token))


def _number(token: Token, what: str) -> int:
    if len(token.value) > _MAX_INT_DIGITS:
        raise query_error(BAD_VALUE, f"{what} {token.value} is too large", _span(token), token=token.value)
    return int(token.value)


class AstBuilder(Transformer):
    """Callbacks named after the grammar's rule aliases; each returns an AST node. `parse_fts` parses the
    content of a `~"…"` leaf (the grammar's `fts` entry point)."""

    def __init__(self, parse_fts: Callable[[str], ast.Fts]) -> None:
        super().__init__()
        self.parse_fts = parse_fts

    # ------------------------------------------------------------ queries

    def compact_query(self, children: list[Any]) -> ast.CompactQuery:
        projections: tuple[ast.Projection, ...] = ()
        if children and isinstance(children[-1], tuple):
            projections = children.pop()
        predicate = children[0] if children else None
        parts = [part for part in (predicate, *projections) if part is not None]
        span = _span(parts[0], parts[-1]) if parts else None
        return ast.CompactQuery(predicate, span, projections)

    def sessions_query(self, children: list[Any]) -> ast.SessionsQuery:
        projections = children[3] if len(children) > 3 else ()
        end = projections[-1] if projections else children[2]
        return ast.SessionsQuery(children[2], _span(children[0], end), projections)

    # ------------------------------------------------------------ projections

    def projection(self, children: list[Any]) -> tuple[ast.Projection, ...]:
        return tuple(child for child in children if isinstance(child, ast.Projection))

    def projected(self, children: list[Any]) -> ast.Projection:
        unit, rest = children[0], children[1:]
        names: list[Token] = next((c for c in rest if isinstance(c, list) and c and isinstance(c[0], Token)), [])
        filters: tuple[ast.Predicate, ...] = next((c for c in rest if isinstance(c, tuple)), ())
        return ast.Projection(
            str(unit.value),
            tuple(str(n.value) for n in names),
            filters,
            unit_span=_span(unit),
            field_spans=tuple(s for s in (_span(n) for n in names) if s is not None),
            span=_span(unit, rest[-1][-1] if rest else unit),
        )

    def field_list(self, children: list[Token]) -> list[Token]:
        return [token for token in children if token.type == "NAME"]

    def row_filter(self, children: list[Any]) -> tuple[ast.Predicate, ...]:
        return tuple(child for child in children if not isinstance(child, Token))

    def unit_source(self, children: list[Any]) -> tuple[Token, ast.Predicate]:
        return children[0], children[2]

    def unit_query(self, children: list[Any]) -> ast.UnitQuery:
        (unit, predicate), stages = children[0], tuple(children[1:])
        return ast.UnitQuery(
            str(unit.value),
            predicate,
            stages,
            unit_span=_span(unit),
            span=_span(unit, stages[-1] if stages else predicate),
        )

    def sessions_pipeline(self, children: list[Any]) -> ast.SessionsQuery:
        stage, stages = children[3], tuple(children[3:])
        raise query_error(
            UNSUPPORTED_FORM,
            "a sessions query has no pipeline stages: stages shape unit rows, so pipe the sessions into a "
            "unit first (`sessions where … | messages where … | group by role | count`)",
            stage.span,
            _stage_word(stage),
            ("sessions where … | <unit> where …",),
            fix=_as_unit_query(children[2], stages),
        )

    def scoped_unit_query(self, children: list[Any]) -> ast.UnitQuery:
        scope = children[2]
        (unit, predicate), stages = children[4], tuple(children[5:])
        return ast.UnitQuery(
            str(unit.value),
            predicate,
            stages,
            session_scope=scope,
            unit_span=_span(unit),
            span=_span(children[0], stages[-1] if stages else predicate),
        )

    # ------------------------------------------------------------ stages

    def sort_key(self, children: list[Token]) -> Token:
        return children[0]

    def direction(self, children: list[Token]) -> Token:
        return children[0]

    def sort_stage(self, children: list[Token]) -> ast.Sort:
        key = children[3]
        descending = len(children) > 4 and children[4].value == "desc"
        return ast.Sort(str(key.value), descending, _span(children[1], children[-1]))  # type: ignore[arg-type]

    def group_stage(self, children: list[Token]) -> ast.GroupBy:
        return ast.GroupBy(str(children[3].value), _span(children[1], children[3]))

    def count_stage(self, children: list[Token]) -> ast.Count:
        return ast.Count(_span(children[1]))

    def agg_stage(self, children: list[Token]) -> ast.Aggregate:
        items = [token for token in children[2:] if token.type == "AGG_FN"]
        functions = tuple(tuple(str(t.value).partition(":")[::2]) for t in items)
        return ast.Aggregate(functions, _span(children[1], items[-1]))  # type: ignore[arg-type]

    def limit_stage(self, children: list[Token]) -> ast.Limit:
        # the span is the number: that is what a range error points at
        return ast.Limit(_number(children[2], "limit"), _span(children[2]))

    def offset_stage(self, children: list[Token]) -> ast.Offset:
        return ast.Offset(_number(children[2], "offset"), _span(children[2]))

    def verb_stage(self, children: list[Token]) -> ast.Stage:
        word = children[1]
        if word.value in SESSION_VERBS:
            raise query_error(
                UNSUPPORTED_FORM,
                f"`{word.value}` is a session verb: unit rows have no {word.value}; select sessions instead",
                _span(word),
                str(word.value),
                _STAGE_WORDS,
            )
        raise query_error(
            INVALID_QUERY, f"unknown pipeline stage {word.value!r}", _span(word), str(word.value), _STAGE_WORDS
        )

    # ------------------------------------------------------------ boolean structure

    def group(self, children: list[Any]) -> Any:
        return children[1]

    def compact_and(self, children: list[Any]) -> ast.Predicate:
        return _merge_text(ast.And, ast.FtsAnd, children)

    def compact_or(self, children: list[Any]) -> ast.Predicate:
        return _merge_text(ast.Or, ast.FtsOr, children)

    def compact_not(self, children: list[Any]) -> ast.Predicate:
        operator, item = children
        span = _span(operator, item)
        if isinstance(item, ast.FreeText):
            return ast.FreeText(ast.FtsNot(item.expr, span), span)
        return ast.Not(item, span)

    def and_(self, children: list[Any]) -> ast.And:
        items = _flatten(ast.And, children)
        return ast.And(tuple(items), _span(items[0], items[-1]))

    def or_(self, children: list[Any]) -> ast.Or:
        items = _flatten(ast.Or, children)
        return ast.Or(tuple(items), _span(items[0], items[-1]))

    def not_(self, children: list[Any]) -> ast.Not:
        return ast.Not(children[1], _span(children[0], children[1]))

    # ------------------------------------------------------------ compact text

    def bare_word(self, children: list[Token]) -> ast.FreeText:
        return ast.FreeText(_word(children[0]), _span(children[0]))

    def bare_phrase(self, children: list[Token]) -> ast.FreeText:
        return ast.FreeText(_phrase(children[0]), _span(children[0]))

    # ------------------------------------------------------------ leaves

    def bare_value(self, children: list[Token]) -> ast.Value:
        return ast.Value(str(children[0].value), False, _span(children[0]))

    def quoted_value(self, children: list[Token]) -> ast.Value:
        return ast.Value(_unescape(str(children[0].value)[1:-1]), True, _span(children[0]))

    def alternatives(self, children: list[Any]) -> tuple[Token, tuple[ast.Value, ...]]:
        return children[0], tuple(child for child in children if isinstance(child, ast.Value))

    def field_clause(self, children: list[Any]) -> ast.Field | ast.Semantic:
        token, value = children
        if isinstance(value, tuple):
            opener, values = value
        else:
            opener, values = value, (value,)
        _check_adjacent(token, opener)
        name = str(token.value)[:-1]
        scoped = name.startswith("session.")
        if scoped:
            name = name.removeprefix("session.")
        span = _span(token, values[-1])
        if name == "semantic" and not scoped:
            if len(values) != 1:
                raise query_error(UNSUPPORTED_FORM, 'semantic: takes one text: semantic:"…"', _span(token), "semantic")
            return ast.Semantic(values[0].text, "semantic", span)
        if name == "near" and not scoped and len(values) == 1 and values[0].quoted:
            return ast.Semantic(values[0].text, "near", span)  # near:"free text", as near:text:
        return ast.Field(name, values, scoped, span)

    def near_text(self, children: list[Any]) -> ast.Semantic:
        token, value = children
        _check_adjacent(token, value)
        return ast.Semantic(value.text, "near", _span(token, value))

    def near_id(self, children: list[Any]) -> ast.NearSession:
        token, value = children
        _check_adjacent(token, value)
        return ast.NearSession(value.text, _span(token, value))

    def lineage_id(self, children: list[Any]) -> ast.Lineage:
        token, value = children
        _check_adjacent(token, value)
        return ast.Lineage(value.text, _span(token, value))

    def fts_leaf(self, children: list[Token]) -> ast.FtsLeaf:
        token = children[0]
        body = str(token.value)[2:-1]
        content, positions = _unescape_mapped(body, (token.start_pos or 0) + 2)
        positions.append((token.end_pos or 1) - 1)  # the end of the content is the closing quote
        if not content.strip():
            raise query_error(INVALID_QUERY, 'an empty ~"" leaf matches nothing', _span(token), token.value)
        try:
            expr = self.parse_fts(content)
        except QuarryError as error:
            if error.offset is not None:
                error.offset = positions[min(error.offset, len(positions) - 1)]
            raise
        return ast.FtsLeaf(_shift(expr, positions), _span(token))

    def comparison(self, children: list[Token]) -> ast.Comparison:
        field, op, value = children
        name, scoped = _comparison_field(field)
        return ast.Comparison(name, str(op.value), (str(value.value),), scoped, _span(field, value))  # type: ignore[arg-type]

    def between(self, children: list[Token]) -> ast.Comparison:
        field, _, low, _, high = children
        name, scoped = _comparison_field(field)
        return ast.Comparison(name, "between", (str(low.value), str(high.value)), scoped, _span(field, high))

    def exists(self, children: list[Any]) -> ast.Exists:
        return ast.Exists(str(children[1].value), children[3], _span(children[0], children[4]))

    def seq(self, children: list[Any]) -> ast.Seq:
        steps = tuple(child for child in children if not isinstance(child, Token))
        return ast.Seq(steps, _span(children[0], children[-1]))

    # ------------------------------------------------------------ inside ~"…"

    def fts(self, children: list[Any]) -> ast.Fts:
        return children[0]

    def fts_word(self, children: list[Token]) -> ast.Term | ast.Prefix:
        return _word(children[0])

    def fts_phrase(self, children: list[Token]) -> ast.Phrase:
        return _phrase(children[0])

    def fts_and(self, children: list[Any]) -> ast.Fts:
        return _fts_group(ast.FtsAnd, children)

    def fts_or(self, children: list[Any]) -> ast.Fts:
        return _fts_group(ast.FtsOr, children)

    def fts_not(self, children: list[Any]) -> ast.FtsNot:
        return ast.FtsNot(children[1], _span(children[0], children[1]))


def _as_unit_query(predicate: ast.Predicate, stages: tuple[ast.Stage, ...]) -> tuple[None, str] | None:
    """`sessions where P | group by F | count` as the terminal unit form, `<unit> where session.P | …`:
    the first unit that groups by F, in the order units are listed (role: messages, tool: actions),
    when every leaf of P has a `session.` form (compile_query keeps the correction only if it
    compiles)."""
    from quarry.dsl.fields import GROUP_FIELDS
    from quarry.dsl.render import render

    fields = {stage.field for stage in stages if isinstance(stage, ast.GroupBy)}
    unit = next((unit for unit, grouped in GROUP_FIELDS.items() if fields and fields <= set(grouped)), None)
    scoped = _session_scoped(predicate)
    if unit is None or scoped is None:
        return None
    return None, render(ast.UnitQuery(unit, scoped, stages))


def _session_scoped(predicate: ast.Predicate) -> ast.Predicate | None:
    match predicate:
        case ast.Field() | ast.Comparison():
            return dataclasses.replace(predicate, session_scoped=True)
        case ast.And(items) | ast.Or(items):
            scoped = [_session_scoped(item) for item in items]
            return None if None in scoped else dataclasses.replace(predicate, items=tuple(scoped))
        case ast.Not(item):
            inner = _session_scoped(item)
            return None if inner is None else ast.Not(inner)
    return None


def _stage_word(stage: ast.Stage) -> str:
    match stage:
        case ast.Sort():
            return "sort"
        case ast.GroupBy():
            return "group"
        case ast.Count():
            return "count"
        case ast.Limit():
            return "limit"
    return "offset"


def _check_adjacent(token: Token, value: object) -> None:
    bounds = _bounds(value)
    if bounds is not None and bounds[0] != token.end_pos:
        raise query_error(
            INVALID_QUERY,
            f"{token.value} must be followed directly by its value (no space); "
            'to search for text with a colon, put it in quotes: "like: this"',
            _span(token),
            token=str(token.value),
            expected=["value"],
        )


def _comparison_field(token: Token) -> tuple[str, bool]:
    name = str(token.value)
    if name.startswith("session."):
        return name.removeprefix("session."), True
    return name, False


def _unescape_mapped(body: str, base: int) -> tuple[str, list[int]]:
    """Unescape `body`, recording for each output character its offset in the query."""
    chars: list[str] = []
    positions: list[int] = []
    index = 0
    while index < len(body):
        if body[index] == "\\" and index + 1 < len(body):
            chars.append(body[index + 1])
            positions.append(base + index)
            index += 2
        else:
            chars.append(body[index])
            positions.append(base + index)
            index += 1
    return "".join(chars), positions


def _shift(expr: ast.Fts, positions: list[int]) -> ast.Fts:
    """Re-anchor spans of a ~"…" content tree from content offsets to query offsets."""

    def moved(span: ast.Span | None) -> ast.Span | None:
        if span is None:
            return None
        last = len(positions) - 1
        return ast.Span(positions[min(span.start, last)], positions[min(span.end, last)])

    match expr:
        case ast.FtsAnd(items):
            return ast.FtsAnd(tuple(_shift(item, positions) for item in items), moved(expr.span))
        case ast.FtsOr(items):
            return ast.FtsOr(tuple(_shift(item, positions) for item in items), moved(expr.span))
        case ast.FtsNot(item):
            return ast.FtsNot(_shift(item, positions), moved(expr.span))
        case ast.Term(text) | ast.Phrase(text) | ast.Prefix(text):
            return type(expr)(text, moved(expr.span))
    raise TypeError(f"not a full-text node: {expr!r}")
