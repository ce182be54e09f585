"""Small builders for expected QueryPlans, so a test reads like the plan it expects."""

from __future__ import annotations

from quarry.v1 import plan_pb2

P = plan_pb2.Predicate
F = plan_pb2.FtsExpr


def field(name: str, *values: str, scoped: bool = False) -> P:
    return P(field=plan_pb2.FieldClause(field=name, values=values, session_scoped=scoped))


def all_(*items: P) -> P:
    return P(all=plan_pb2.PredicateList(items=items))


def any_(*items: P) -> P:
    return P(any=plan_pb2.PredicateList(items=items))


def neg(item: P) -> P:
    return P(negate=item)


def fts(expr: F) -> P:
    return P(fts=expr)


def semantic(text: str) -> P:
    return P(semantic=text)


def term(text: str) -> F:
    return F(term=text)


def phrase(text: str) -> F:
    return F(phrase=text)


def prefix(text: str) -> F:
    return F(prefix=text)


def fall(*items: F) -> F:
    return F(all=plan_pb2.FtsList(items=items))


def fany(*items: F) -> F:
    return F(any=plan_pb2.FtsList(items=items))


def fneg(item: F) -> F:
    return F(negate=item)


def sort_time(descending: bool = False) -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key="time", descending=descending))


def limit(n: int) -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(limit=n)


def offset(n: int) -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(offset=n)


def plan(
    unit: str,
    where: P | None = None,
    *,
    scope: P | None = None,
    stages: tuple[plan_pb2.PipelineStage, ...] = (),
    ranking: F | None = None,
    semantic_text: str = "",
) -> plan_pb2.QueryPlan:
    out = plan_pb2.QueryPlan(unit=unit, stages=stages, semantic_text=semantic_text)
    if where is not None:
        out.where.CopyFrom(where)
    if scope is not None:
        out.session_scope.CopyFrom(scope)
    if ranking is not None:
        out.ranking_text.CopyFrom(ranking)
    return out
