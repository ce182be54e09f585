"""Typed AST -> QueryPlan: validate every field against the unit's table, then lower.

Predicates are lowered by quarry.dsl.predicates, pipeline stages by quarry.dsl.stages, projections by
quarry.dsl.projections; what the plan ranks by and highlights comes from quarry.dsl.ranking.

Lowering rules (quarry.v1.plan; the language: docs/query-language.md):
- compact form: `QueryPlan(unit="sessions", where=Predicate(all=[…]))`; its bare text (one
  FreeText per AND-group, see quarry.dsl.ast) becomes one `fts` leaf, each field clause a `field`
  leaf; `session:<id>` is `FieldClause(field="session", values=[id])`.
- `text:v` and `~"…"` become `fts` leaves; `semantic:"…"` / `near:text:…` a `semantic` leaf;
  NOT / `-` a `negate`.
- an FtsExpr `negate` only ever sits inside an `all` with a positive sibling; text negation that
  cannot be written that way (`-foo` alone, `a OR -b`) is lifted to Predicate `negate`/`any`.
- counts, numbers and dates (`messages:>=5`, `words between 1 and 9`, `since:7d`) become a
  FieldClause with `op` (quarry.dsl.comparisons: dates resolved to epoch ms at compile time).
- session predicates (`exists <unit>(…)`, `seq(…)`, `lineage:id:`, `near:id:`) are allowed where
  the predicate is over sessions: a sessions query or a `sessions where … |` scope. Inside a unit's
  `where`, an `exists` body or a `seq` step they are UNSUPPORTED_FORM.
- unit queries: `plan.unit` is the unit; `session.<field>` sets `FieldClause.session_scoped`;
  `sessions where P | <unit> where Q` puts Q in `where` and P in `session_scope`; pipeline
  stages are recorded in order (the query node combines `limit`/`offset` with the caller's).
- `plan.ranking_text` is the positive full-text of `where`: its non-negated `fts` leaves, OR-ed
  (`any`) when there are several (text inside `exists` / `seq` is a filter, not ranked text).
  `plan.semantic_text` is the semantic leaf's text, else the words of `ranking_text`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from quarry.core.errors import QuarryError
from quarry.core.lanes import LANES
from quarry.dsl import ast, projections
from quarry.dsl.errors import BAD_VALUE, UNSUPPORTED_FORM, locate, query_error
from quarry.dsl.fields import FIELDS_BY_UNIT
from quarry.dsl.parser import parse
from quarry.dsl.predicates import Context, Lowering, semantic_name
from quarry.dsl.ranking import matched_terms, positive_fragments, positive_fts
from quarry.dsl.stages import lower_stages
from quarry.v1 import plan_pb2

UNIT_SOURCES = tuple(unit for unit in FIELDS_BY_UNIT if unit != "sessions")


@dataclass(frozen=True)
class CompiledQuery:
    kind: Literal["sessions", "units"]
    unit: str  # sessions | one of UNIT_SOURCES
    plan: plan_pb2.QueryPlan
    matched_terms: tuple[str, ...]  # positive text terms, for highlighting (ranking.matched_terms)
    has_text: bool  # whether a ranked lane has text to score
    semantic_text: str  # what the semantic lane embeds
    lane: str = ""  # a compact query's `lane:` (the search lane it asks for), "" when none


MAX_CORRECTIONS = 8  # fixes applied in turn to reach a query that compiles (one per missing AND, …)


def compile_query(text: str, now_ms: int | None = None) -> CompiledQuery:
    """Parse, validate and lower a query. Raises QuarryError pointing into `text`.

    `now_ms` (epoch ms, default: the current time) anchors relative dates (`since:7d`, `today`).
    """
    return parse_and_lower(text, now_ms)[1]


def parse_and_lower(text: str, now_ms: int | None = None) -> tuple[ast.Query, CompiledQuery]:
    """The query's AST and its compiled form. An error's `correction` is offered only when it leads to a
    query that compiles: the error's fix, then the fixes of what that still gets wrong, in turn."""
    try:
        return _parse_and_lower(text, now_ms)
    except QuarryError as error:
        error.correction = _compiling_correction(error.correction, now_ms)
        raise


def _parse_and_lower(text: str, now_ms: int | None) -> tuple[ast.Query, CompiledQuery]:
    query = parse(text)
    try:
        return query, lower(query, now_ms)
    except QuarryError as error:
        raise locate(error, text) from None


def _compiling_correction(fixed: str, now_ms: int | None) -> str:
    for _ in range(MAX_CORRECTIONS):
        if not fixed:
            return ""
        try:
            _parse_and_lower(fixed, now_ms)
        except QuarryError as error:
            fixed = error.correction
            continue
        return fixed
    return ""


def lower(query: ast.Query, now_ms: int | None = None) -> CompiledQuery:
    """Validate and lower a parsed query (errors carry offsets but no line / column yet)."""
    context = Context(now_ms if now_ms is not None else int(time.time() * 1000))
    plan = plan_pb2.QueryPlan()
    match query:
        case ast.CompactQuery(predicate):
            kind, plan.unit = "sessions", "sessions"
            predicate, lane = _lane_directive(predicate)
            if predicate is not None:
                lowered = Lowering("sessions", context).predicate(predicate)
                items = lowered.all.items if lowered.WhichOneof("node") == "all" else [lowered]
                plan.where.all.items.extend(items)
        case ast.SessionsQuery(predicate):
            kind, plan.unit = "sessions", "sessions"
            plan.where.CopyFrom(Lowering("sessions", context).predicate(predicate))
        case ast.UnitQuery():
            kind, plan.unit = "units", query.unit
            if query.session_scope is not None:
                scope = Lowering("sessions", context, in_session_scope=True)
                plan.session_scope.CopyFrom(scope.predicate(query.session_scope))
            plan.where.CopyFrom(Lowering(query.unit, context).predicate(query.predicate))
            plan.stages.extend(lower_stages(query.unit, query.stages))
    if isinstance(query, ast.CompactQuery | ast.SessionsQuery):
        lower_filter = lambda unit, node: Lowering(unit, context).predicate(node)  # noqa: E731
        plan.projections.extend(projections.lower(query.projections, lower_filter))
    semantic = context.semantic
    if len(semantic) > 1:
        raise query_error(
            UNSUPPORTED_FORM, "a query may hold one semantic leaf", semantic[1].span, semantic_name(semantic[1])
        )
    ranking = positive_fts(plan.where) if plan.HasField("where") else []
    if len(ranking) == 1:
        plan.ranking_text.CopyFrom(ranking[0])
    elif ranking:
        plan.ranking_text.any.items.extend(ranking)
    fragments = positive_fragments(plan.ranking_text) if ranking else []
    plan.semantic_text = semantic[0].text if semantic else " ".join(fragments)
    return CompiledQuery(
        kind=kind,
        unit=plan.unit,
        plan=plan,
        matched_terms=matched_terms(fragments),
        has_text=bool(ranking),
        semantic_text=plan.semantic_text,
        lane=lane if kind == "sessions" and isinstance(query, ast.CompactQuery) else "",
    )


def _lane_directive(predicate: ast.Predicate | None) -> tuple[ast.Predicate | None, str]:
    """A compact query's `lane:X` at its top level (alone, or AND-joined with the rest): the rest of
    the query, and the lane ("" when it names none)."""
    items = list(predicate.items) if isinstance(predicate, ast.And) else [predicate] if predicate else []
    lanes = [item for item in items if isinstance(item, ast.Field) and item.name == "lane" and not item.session_scoped]
    if not lanes:
        return predicate, ""
    if len(lanes) > 1 or len(lanes[0].values) != 1:
        extra = lanes[1] if len(lanes) > 1 else lanes[0]
        raise query_error(UNSUPPORTED_FORM, "a query asks for one lane: lane:X once", extra.span, "lane")
    value = lanes[0].values[0]
    if value.text not in LANES:
        raise query_error(
            BAD_VALUE, f"lane:{value.text} is not a lane (one of: {', '.join(LANES)})", value.span, value.text, LANES
        )
    rest = [item for item in items if item is not lanes[0]]
    if not rest:
        return None, value.text
    return (rest[0] if len(rest) == 1 else ast.And(tuple(rest), predicate.span)), value.text
