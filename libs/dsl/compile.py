"""Typed AST -> QueryPlan: validate every field against the unit's table, then lower.

Lowering rules (quarry.v1.plan):
- compact form: `QueryPlan(unit="sessions", where=Predicate(all=[…]))`; its bare text (one
  FreeText per AND-group, see quarry.dsl.ast) becomes one `fts` leaf, each field clause a `field`
  leaf; `session:<id>` is `FieldClause(field="session", values=[id])`.
- `text:v` and `~"…"` become `fts` leaves; `semantic:"…"` / `near:text:…` a `semantic` leaf;
  NOT / `-` a `negate`.
- an FtsExpr `negate` only ever sits inside an `all` with a positive sibling; text negation that
  cannot be written that way (`-foo` alone, `a OR -b`) is lifted to Predicate `negate`/`any`.
- unit queries: `plan.unit` is the unit; `session.<field>` sets `FieldClause.session_scoped`;
  `sessions where P | <unit> where Q` puts Q in `where` and P in `session_scope`; pipeline
  stages are recorded in order (the query node combines `limit`/`offset` with the caller's).
- `plan.ranking_text` is the positive full-text of `where`: its non-negated `fts` leaves, OR-ed
  (`any`) when there are several. `plan.semantic_text` is the semantic leaf's text, else the
  words of `ranking_text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from quarry.core.errors import QuarryError
from quarry.core.vocab import ORIGINS
from quarry.dsl import ast
from quarry.dsl.errors import (
    BAD_VALUE,
    UNKNOWN_FIELD,
    UNSUPPORTED_FORM,
    UNSUPPORTED_NEGATION,
    locate,
    query_error,
)
from quarry.dsl.fields import (
    PLANNED_FIELDS,
    SESSION_FIELDS,
    SESSION_SCOPE_NAMES,
    FieldKind,
    FieldSpec,
    canonical_value,
    unit_fields,
)
from quarry.dsl.parser import parse
from quarry.v1 import plan_pb2

UNIT_SOURCES = ("messages", "actions", "blocks")
_INT32_MAX = 2**31 - 1
_FTS_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
# Predicate forms the grammar reads but the compiler does not lower yet.
_NOT_YET: dict[type, str] = {
    ast.Comparison: "count, numeric and date comparisons are",
    ast.Exists: "exists <unit>(…) is",
    ast.Seq: "seq(… -> …) is",
}


@dataclass(frozen=True)
class CompiledQuery:
    kind: Literal["sessions", "units"]
    unit: str  # sessions | messages | actions | blocks
    plan: plan_pb2.QueryPlan
    matched_terms: tuple[str, ...]  # positive text terms, for highlighting (seed 000's rule)
    has_text: bool  # whether a ranked lane has text to score
    semantic_text: str  # what the semantic lane embeds


def compile_query(text: str) -> CompiledQuery:
    """Parse, validate and lower a query. Raises QuarryError pointing into `text`."""
    query = parse(text)
    try:
        return _compile(query)
    except QuarryError as error:
        raise locate(error, text) from None


def _compile(query: ast.Query) -> CompiledQuery:
    plan = plan_pb2.QueryPlan()
    semantic: list[ast.Semantic] = []
    match query:
        case ast.CompactQuery(predicate):
            kind, plan.unit = "sessions", "sessions"
            if predicate is not None:
                lowered = _Lowering("sessions", semantic).predicate(predicate)
                items = lowered.all.items if lowered.WhichOneof("node") == "all" else [lowered]
                plan.where.all.items.extend(items)
        case ast.SessionsQuery(predicate):
            kind, plan.unit = "sessions", "sessions"
            plan.where.CopyFrom(_Lowering("sessions", semantic).predicate(predicate))
        case ast.UnitQuery():
            kind, plan.unit = "units", _unit_source(query)
            if query.session_scope is not None:
                scope = _Lowering("sessions", semantic, in_session_scope=True)
                plan.session_scope.CopyFrom(scope.predicate(query.session_scope))
            plan.where.CopyFrom(_Lowering(query.unit, semantic).predicate(query.predicate))
            plan.stages.extend(_stage(stage) for stage in query.stages)
    if len(semantic) > 1:
        raise query_error(
            UNSUPPORTED_FORM, "a query may hold one semantic leaf", semantic[1].span, _written(semantic[1])
        )
    ranking = _positive_fts(plan.where) if plan.HasField("where") else []
    if len(ranking) == 1:
        plan.ranking_text.CopyFrom(ranking[0])
    elif ranking:
        plan.ranking_text.any.items.extend(ranking)
    fragments = _positive_fragments(plan.ranking_text) if ranking else []
    plan.semantic_text = semantic[0].text if semantic else " ".join(fragments)
    return CompiledQuery(
        kind=kind,
        unit=plan.unit,
        plan=plan,
        matched_terms=_matched_terms(fragments),
        has_text=bool(ranking),
        semantic_text=plan.semantic_text,
    )


def _unit_source(query: ast.UnitQuery) -> str:
    if query.unit not in UNIT_SOURCES:
        raise query_error(
            UNSUPPORTED_FORM,
            f"`{query.unit} where …` is not supported yet (units: {', '.join(UNIT_SOURCES)})",
            query.unit_span,
            query.unit,
            UNIT_SOURCES,
        )
    return query.unit


def _stage(stage: ast.Stage) -> plan_pb2.PipelineStage:
    match stage:
        case ast.Sort(key="time", descending=descending):
            return plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key="time", descending=descending))
        case ast.Limit(n):
            if not 1 <= n <= _INT32_MAX:
                raise query_error(BAD_VALUE, f"limit must be between 1 and {_INT32_MAX}", stage.span, str(n))
            return plan_pb2.PipelineStage(limit=n)
        case ast.Offset(n):
            if n > _INT32_MAX:
                raise query_error(BAD_VALUE, f"offset must be at most {_INT32_MAX}", stage.span, str(n))
            return plan_pb2.PipelineStage(offset=n)
    raise query_error(
        UNSUPPORTED_FORM,
        "aggregate stages (group by, count, sort by count|key) are not supported yet",
        stage.span,
        expected=("sort by time", "limit", "offset"),
    )


class _Lowering:
    """Lowers one predicate over one unit, validating fields as it goes."""

    def __init__(self, unit: str, semantic: list[ast.Semantic], in_session_scope: bool = False) -> None:
        self.unit = unit
        self.fields = unit_fields(unit)
        self.semantic = semantic
        self.in_session_scope = in_session_scope

    def predicate(self, node: ast.Predicate, negated: bool = False) -> plan_pb2.Predicate:
        match node:
            case ast.And(items):
                return _joined("all", [self.predicate(item, negated) for item in items])
            case ast.Or(items):
                return _joined("any", [self.predicate(item, negated) for item in items])
            case ast.Not(item):
                return plan_pb2.Predicate(negate=self.predicate(item, not negated))
            case ast.FreeText(expr) | ast.FtsLeaf(expr):
                return _fts_predicate(expr)
            case ast.Field():
                return self.field(node, negated)
            case ast.Semantic():
                return self.semantic_leaf(node, negated)
        raise query_error(UNSUPPORTED_FORM, f"{_NOT_YET[type(node)]} not supported yet", node.span)

    def semantic_leaf(self, node: ast.Semantic, negated: bool) -> plan_pb2.Predicate:
        if negated:
            raise query_error(UNSUPPORTED_NEGATION, "a semantic leaf cannot be negated", node.span, _written(node))
        if self.in_session_scope:
            raise query_error(
                UNSUPPORTED_FORM,
                "semantic leaves are not supported in a `sessions where … |` scope stage",
                node.span,
                _written(node),
            )
        if not node.text.strip():
            raise query_error(BAD_VALUE, "a semantic leaf needs text", node.span, _written(node))
        self.semantic.append(node)
        return plan_pb2.Predicate(semantic=node.text)

    def field(self, node: ast.Field, negated: bool) -> plan_pb2.Predicate:
        spec = self.spec(node)
        if negated and not spec.negatable:
            raise query_error(
                UNSUPPORTED_NEGATION,
                f"{_name(node)} cannot be negated (negatable: {', '.join(_negatable(self.fields))})",
                node.span,
                _name(node),
                _negatable(self.fields),
            )
        for value in node.values:
            if not value.text.strip():
                raise query_error(BAD_VALUE, f"{_name(node)} needs a value", value.span, _name(node))
        if spec.kind is FieldKind.FTS:
            expr = [_text_value(value) for value in node.values]
            return _fts_predicate(expr[0] if len(expr) == 1 else ast.FtsOr(tuple(expr)))
        values = [_checked_value(spec, node, value) for value in node.values]
        clause = plan_pb2.FieldClause(field=spec.name, values=values, session_scoped=node.session_scoped)
        return plan_pb2.Predicate(field=clause)

    def spec(self, node: ast.Field) -> FieldSpec:
        if not node.session_scoped:
            spec = self.fields.get(node.name)
            if spec is not None:
                return spec
            if node.name in PLANNED_FIELDS:
                raise _planned(node)
            scoped = "id" if node.name == "session" else node.name
            hint = f"; for the owning session write session.{scoped}:" if node.name in SESSION_FIELDS else ""
            names = sorted(self.fields)
            raise query_error(
                UNKNOWN_FIELD,
                f"{self.unit} have no field {node.name!r} (fields: {', '.join(names)}){hint}",
                node.span,
                node.name,
                names,
            )
        if self.unit == "sessions":
            raise query_error(
                UNSUPPORTED_FORM,
                f"session.<field> qualifies fields of a unit query; in a sessions query write {node.name}:",
                node.span,
                _name(node),
            )
        target = SESSION_SCOPE_NAMES.get(node.name)
        if target is not None:
            return SESSION_FIELDS[target]
        if node.name in PLANNED_FIELDS:
            raise _planned(node)
        if node.name == "text":
            raise query_error(
                UNSUPPORTED_FORM,
                'session.text is not supported: scope by session text with `sessions where ~"…" | <unit> where …`',
                node.span,
                _name(node),
            )
        names = sorted(f"session.{name}" for name in SESSION_SCOPE_NAMES)
        raise query_error(
            UNKNOWN_FIELD,
            f"sessions have no field session.{node.name} here (fields: {', '.join(names)})",
            node.span,
            _name(node),
            names,
        )


def _checked_value(spec: FieldSpec, node: ast.Field, value: ast.Value) -> str:
    canonical = canonical_value(spec, value.text)
    if canonical is None:
        raise query_error(
            BAD_VALUE,
            f"{_name(node)}:{value.text} is not a known {spec.name} (one of: {', '.join(spec.allowed)})",
            value.span,
            value.text,
            spec.allowed,
        )
    if spec.kind is FieldKind.SESSION_ID:
        origin, _, native = canonical.partition(":")
        if origin not in ORIGINS or not native:
            raise query_error(
                BAD_VALUE,
                f"a session id is <origin>:<native id>, with origin one of: {', '.join(ORIGINS)}",
                value.span,
                value.text,
                ORIGINS,
            )
    return canonical


def _text_value(value: ast.Value) -> ast.Fts:
    if value.quoted:
        return ast.Phrase(value.text)
    if value.text.endswith("*"):
        stem = value.text.rstrip("*")
        if not stem:
            raise query_error(BAD_VALUE, "a prefix needs a word before the `*`", value.span, value.text)
        return ast.Prefix(stem)
    return ast.Term(value.text)


def _planned(node: ast.Field) -> QuarryError:
    return query_error(UNSUPPORTED_FORM, f"{PLANNED_FIELDS[node.name]} are not supported yet", node.span, _name(node))


def _name(node: ast.Field) -> str:
    return f"session.{node.name}" if node.session_scoped else node.name


def _written(node: ast.Semantic) -> str:
    return "semantic" if node.via == "semantic" else "near:text"


def _negatable(fields: dict[str, FieldSpec]) -> list[str]:
    return sorted(name for name, spec in fields.items() if spec.negatable)


def _joined(kind: Literal["all", "any"], items: list[plan_pb2.Predicate]) -> plan_pb2.Predicate:
    """`all` / `any` of `items`, absorbing children of the same kind."""
    out = plan_pb2.Predicate()
    target = getattr(out, kind).items
    for item in items:
        target.extend(getattr(item, kind).items if item.WhichOneof("node") == kind else [item])
    return out


# ---------------------------------------------------------------- full text


def _fts_ok(expr: ast.Fts, negation_allowed: bool = False) -> bool:
    """Whether `expr` is a valid FtsExpr: every negation inside an AND with a positive sibling."""
    match expr:
        case ast.FtsNot(item):
            return negation_allowed and _fts_ok(item)
        case ast.FtsAnd(items):
            has_positive = any(not isinstance(item, ast.FtsNot) for item in items)
            return has_positive and all(_fts_ok(item, negation_allowed=True) for item in items)
        case ast.FtsOr(items):
            return all(_fts_ok(item) for item in items)
    return True


def _fts_predicate(expr: ast.Fts) -> plan_pb2.Predicate:
    if _fts_ok(expr):
        return plan_pb2.Predicate(fts=_fts_expr(expr))
    match expr:
        case ast.FtsNot(item):
            return plan_pb2.Predicate(negate=_fts_predicate(item))
        case ast.FtsAnd(items) if all(isinstance(item, ast.FtsNot) for item in items):
            # `-a -b` is NOT (a OR b): one full-text leaf instead of one per word.
            either = ast.FtsOr(tuple(item.item for item in items))  # type: ignore[union-attr]
            return plan_pb2.Predicate(negate=_fts_predicate(either))
        case ast.FtsAnd(items):
            return _joined("all", [_fts_predicate(item) for item in items])
        case ast.FtsOr(items):
            return _joined("any", [_fts_predicate(item) for item in items])
    raise AssertionError(f"a leaf is always valid: {expr!r}")


def _fts_expr(expr: ast.Fts) -> plan_pb2.FtsExpr:
    match expr:
        case ast.Term(text):
            return plan_pb2.FtsExpr(term=text)
        case ast.Phrase(text):
            return plan_pb2.FtsExpr(phrase=text)
        case ast.Prefix(text):
            return plan_pb2.FtsExpr(prefix=text)
        case ast.FtsAnd(items):
            return plan_pb2.FtsExpr(all=plan_pb2.FtsList(items=[_fts_expr(item) for item in items]))
        case ast.FtsOr(items):
            return plan_pb2.FtsExpr(any=plan_pb2.FtsList(items=[_fts_expr(item) for item in items]))
        case ast.FtsNot(item):
            return plan_pb2.FtsExpr(negate=_fts_expr(item))
    raise TypeError(f"not a full-text node: {expr!r}")


def _positive_fts(predicate: plan_pb2.Predicate, negated: bool = False) -> list[plan_pb2.FtsExpr]:
    """The `fts` leaves of `predicate` that are not under a negation, in order."""
    node = predicate.WhichOneof("node")
    if node in ("all", "any"):
        items = getattr(predicate, node).items
        return [leaf for item in items for leaf in _positive_fts(item, negated)]
    if node == "negate":
        return _positive_fts(predicate.negate, not negated)
    if node == "fts" and not negated:
        return [predicate.fts]
    return []


def _positive_fragments(expr: plan_pb2.FtsExpr) -> list[str]:
    """The raw text of the non-negated terms, phrases and prefixes of `expr`, in order."""
    node = expr.WhichOneof("node")
    if node in ("all", "any"):
        return [text for item in getattr(expr, node).items for text in _positive_fragments(item)]
    if node in ("term", "phrase", "prefix"):
        return [getattr(expr, node)]
    return []


def _matched_terms(fragments: list[str]) -> tuple[str, ...]:
    """Seed 000: strip operators, quote/colon/paren punctuation and trailing `*`; dedupe by case."""
    seen: set[str] = set()
    terms: list[str] = []
    for fragment in fragments:
        for word in re.sub(r"[\"'():]", " ", fragment).split():
            word = word.rstrip("*")
            if not word or word in _FTS_OPERATORS or word.casefold() in seen:
                continue
            seen.add(word.casefold())
            terms.append(word)
    return tuple(terms)
