"""Builders for the plan messages a query node sends to a partition (what quarry.dsl compiles to)."""

from __future__ import annotations

from quarry.v1 import index_pb2, plan_pb2

FtsExpr = plan_pb2.FtsExpr
Predicate = plan_pb2.Predicate


def term(word: str) -> FtsExpr:
    return FtsExpr(term=word)


def phrase(words: str) -> FtsExpr:
    return FtsExpr(phrase=words)


def prefix(text: str) -> FtsExpr:
    return FtsExpr(prefix=text)


def fts_all(*items: FtsExpr) -> FtsExpr:
    return FtsExpr(all=plan_pb2.FtsList(items=list(items)))


def fts_any(*items: FtsExpr) -> FtsExpr:
    return FtsExpr(any=plan_pb2.FtsList(items=list(items)))


def fts_not(item: FtsExpr) -> FtsExpr:
    return FtsExpr(negate=item)


def text(*words: str) -> Predicate:
    """The compact form of bare words: one fts leaf, AND of terms."""
    return Predicate(fts=fts_all(*(term(w) for w in words)) if len(words) > 1 else term(words[0]))


def fts(expr: FtsExpr) -> Predicate:
    return Predicate(fts=expr)


def field(name: str, *values: str, op: int = 0, session_scoped: bool = False) -> Predicate:
    return Predicate(field=plan_pb2.FieldClause(field=name, values=list(values), op=op, session_scoped=session_scoped))


def all_(*items: Predicate) -> Predicate:
    return Predicate(all=plan_pb2.PredicateList(items=list(items)))


def any_(*items: Predicate) -> Predicate:
    return Predicate(any=plan_pb2.PredicateList(items=list(items)))


def not_(item: Predicate) -> Predicate:
    return Predicate(negate=item)


def ids(*session_ids: str) -> Predicate:
    return Predicate(session_ids=plan_pb2.SessionIdSet(ids=list(session_ids)))


def search(
    where: Predicate | None = None,
    *,
    lane: str = "dialogue",
    limit: int = 10,
    snippets: bool = True,
    ranking: FtsExpr | None = None,
) -> index_pb2.PartitionSearchRequest:
    plan = plan_pb2.QueryPlan(unit="sessions")
    if where is not None:
        plan.where.CopyFrom(where)
    if ranking is not None:
        plan.ranking_text.CopyFrom(ranking)
    return index_pb2.PartitionSearchRequest(plan=plan, lane=lane, limit=limit, with_snippets=snippets)


def units(
    unit: str,
    where: Predicate | None = None,
    *,
    scope: Predicate | None = None,
    descending: bool | None = None,
    limit: int = 50,
) -> index_pb2.PartitionUnitsRequest:
    plan = plan_pb2.QueryPlan(unit=unit)
    if where is not None:
        plan.where.CopyFrom(where)
    if scope is not None:
        plan.session_scope.CopyFrom(scope)
    if descending is not None:
        plan.stages.add(sort=plan_pb2.SortStage(key="time", descending=descending))
    return index_pb2.PartitionUnitsRequest(plan=plan, limit=limit)
