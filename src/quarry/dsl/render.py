"""AST -> canonical query text: `parse(render(q)) == q` for every tree the parser can produce.

Canonical spelling: the compact form joins clauses with spaces and negates with `-`; `where`
predicates join with ` AND ` and negate with `NOT`; parentheses only where precedence needs them
(NOT binds tighter than AND, AND tighter than OR). Inside `~"…"` phrases use 'single quotes'.
"""

from __future__ import annotations

import re

from quarry.dsl import ast

_BARE_VALUE = re.compile(r'[^\s()"|]+')
_BARE_FILTER_VALUE = re.compile(r'[^\s()"|,\[\]]+')  # inside a projection's [filters]


def render(query: ast.Query) -> str:
    """The canonical text of `query`."""
    match query:
        case ast.CompactQuery(predicate, _, projections):
            text = "" if predicate is None else _Printer(compact=True).predicate(predicate)
            return " ".join(part for part in (text, _projections(projections)) if part)
        case ast.SessionsQuery(predicate, _, projections):
            text = f"sessions where {_Printer(compact=False).predicate(predicate)}"
            return " ".join(part for part in (text, _projections(projections)) if part)
        case ast.UnitQuery():
            printer = _Printer(compact=False)
            parts = [f"{query.unit} where {printer.predicate(query.predicate)}"]
            parts.extend(_stage(stage) for stage in query.stages)
            if query.session_scope is not None:
                parts.insert(0, f"sessions where {printer.predicate(query.session_scope)}")
            return " | ".join(parts)
    raise TypeError(f"not a query: {query!r}")


def _projections(projections: tuple[ast.Projection, ...]) -> str:
    """`with unit(fields)[filters], …` (the parser gives the compact form's first unit its fields or
    filters, so every tree it builds renders back to a query it parses alike)."""
    if not projections:
        return ""
    return "with " + ", ".join(_projection(p) for p in projections)


def _projection(projection: ast.Projection) -> str:
    text = projection.unit
    if projection.fields:
        text += "(" + ", ".join(projection.fields) + ")"
    if projection.filters:
        text += "[" + ", ".join(_FILTER.predicate(f, _AND) for f in projection.filters) + "]"
    return text


def _stage(stage: ast.Stage) -> str:
    match stage:
        case ast.Sort(key, descending):
            return f"sort by {key} desc" if descending else f"sort by {key}"
        case ast.GroupBy(field):
            return f"group by {field}"
        case ast.Count():
            return "count"
        case ast.Aggregate(functions):
            return "agg " + ", ".join(f"{fn}:{name}" if name else fn for fn, name in functions)
        case ast.Limit(n):
            return f"limit {n}"
        case ast.Offset(n):
            return f"offset {n}"
    raise TypeError(f"not a stage: {stage!r}")


def _quoted(text: str, quote: str = '"') -> str:
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _scalar(text: str) -> str:
    return text if _BARE_VALUE.fullmatch(text) else _quoted(text)


def _value(value: ast.Value, bare: re.Pattern[str] = _BARE_VALUE) -> str:
    if value.quoted or not bare.fullmatch(value.text):
        return _quoted(value.text)
    return value.text


# Precedence levels: an operand is parenthesized when its level is below what its parent needs.
_OR, _AND, _UNARY = 0, 1, 2


class _Printer:
    def __init__(self, compact: bool, bare: re.Pattern[str] = _BARE_VALUE) -> None:
        self.compact = compact
        self.and_sep = " " if compact else " AND "
        self.bare = bare

    def predicate(self, node: ast.Predicate, need: int = _OR) -> str:
        match node:
            case ast.And(items):
                return self._wrap(self.and_sep.join(self.predicate(i, _AND) for i in items), _AND, need)
            case ast.Or(items):
                return self._wrap(" OR ".join(self.predicate(i, _AND) for i in items), _OR, need)
            case ast.Not(item):
                return self._negated(self.predicate(item, _UNARY))
            case ast.FreeText(expr):
                return self.fts(expr, need, sq=False)
            case ast.FtsLeaf(expr):
                return "~" + _quoted(self.fts(expr, _OR, sq=True))
            case ast.Field(name, values, session_scoped):
                prefix = f"session.{name}:" if session_scoped else f"{name}:"
                if len(values) == 1:
                    return prefix + _value(values[0], self.bare)
                return prefix + "(" + "|".join(_value(v, self.bare) for v in values) + ")"
            case ast.Semantic(text, via="semantic"):
                return "semantic:" + _quoted(text)
            case ast.Semantic(text):
                return "near:text:" + _scalar(text)
            case ast.NearSession(session_id):
                return "near:id:" + _scalar(session_id)
            case ast.Lineage(session_id):
                return "lineage:id:" + _scalar(session_id)
            case ast.Comparison(field, op, values, session_scoped):
                name = f"session.{field}" if session_scoped else field
                if op == "between":
                    return f"{name} between {values[0]} and {values[1]}"
                return f"{name} {op} {values[0]}"
            # Their bodies are `where` predicates, joined by AND even inside the compact form.
            case ast.Exists(unit, predicate):
                return f"exists {unit}({_WHERE.predicate(predicate)})"
            case ast.Seq(steps):
                return "seq(" + " -> ".join(_WHERE.predicate(step, _AND) for step in steps) + ")"
        raise TypeError(f"not a predicate: {node!r}")

    def fts(self, expr: ast.Fts, need: int, sq: bool) -> str:
        """Full-text syntax; `sq` spells phrases in single quotes (inside `~"…"`)."""
        match expr:
            case ast.Term(text):
                return text
            case ast.Prefix(text):
                return text + "*"
            case ast.Phrase(text):
                return _quoted(text, "'" if sq else '"')
            case ast.FtsAnd(items):
                return self._wrap(" ".join(self.fts(item, _AND, sq) for item in items), _AND, need)
            case ast.FtsOr(items):
                return self._wrap(" OR ".join(self.fts(item, _AND, sq) for item in items), _OR, need)
            case ast.FtsNot(item):
                return self._negated(self.fts(item, _UNARY, sq))
        raise TypeError(f"not a full-text node: {expr!r}")

    def _negated(self, operand: str) -> str:
        # `-x` reads as exclusion in the compact form; `-` cannot precede another negation.
        if self.compact and not operand.startswith(("-", "NOT ")):
            return "-" + operand
        return "NOT " + operand

    @staticmethod
    def _wrap(text: str, level: int, need: int) -> str:
        return f"({text})" if level < need else text


_WHERE = _Printer(compact=False)
_FILTER = _Printer(compact=False, bare=_BARE_FILTER_VALUE)
