"""Small builders for expected QueryPlans, so a test reads like the plan it expects."""

from __future__ import annotations

from quarry.v1 import plan_pb2

P = plan_pb2.Predicate
F = plan_pb2.FtsExpr


def field(name: str, *values: str, scoped: bool = False) -> P:
    return P(field=plan_pb2.FieldClause(field=name, values=values, session_scoped=scoped))


_OPS = {
    ">=": plan_pb2.GE,
    ">": plan_pb2.GT,
    "<=": plan_pb2.LE,
    "<": plan_pb2.LT,
    "=": plan_pb2.COMPARISON_UNSPECIFIED,
    "between": plan_pb2.BETWEEN,
}


def cmp(name: str, op: str, *values: float, scoped: bool = False) -> P:
    """A count / number / date comparison clause; values are integers (dates: epoch ms; costs: decimals)."""
    clause = plan_pb2.FieldClause(field=name, op=_OPS[op], values=[str(v) for v in values], session_scoped=scoped)
    return P(field=clause)


def exists(unit: str, where: P) -> P:
    return P(exists=plan_pb2.ExistsPredicate(unit=unit, where=where))


def seq(*steps: P) -> P:
    return P(seq=plan_pb2.SeqPredicate(steps=steps))


def lineage(session_id: str) -> P:
    return P(lineage=session_id)


def near(session_id: str) -> P:
    return P(near_session=session_id)


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


def sort_by(key: str, descending: bool = False) -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key=key, descending=descending))


def group_by(name: str) -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(group_by=name)


def count() -> plan_pb2.PipelineStage:
    return plan_pb2.PipelineStage(count=True)


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
