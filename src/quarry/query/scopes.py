"""The scopes a query names (`scope:team-a`, `session.scope:…`) against the scopes its caller may read.

Index nodes already limit every read to the caller's scopes (quarry.index.lexical.visibility), so a
scope the caller may not read could only ever match nothing. Naming one is refused instead, with
PERMISSION_DENIED and the same words whether or not that scope exists.
"""

from __future__ import annotations

from collections.abc import Iterator

from quarry.core import auth
from quarry.dsl import CompiledQuery, compile_query
from quarry.v1 import plan_pb2


def compile_in_scope(query: str, now_ms: int | None) -> CompiledQuery:
    """The query compiled (relative dates counted from `now_ms`; None: the wall clock), and refused when
    it names a scope the caller may not read."""
    compiled = compile_query(query, now_ms=now_ms)
    check_named_scopes(compiled.plan)
    return compiled


def check_named_scopes(plan: plan_pb2.QueryPlan) -> None:
    visible = auth.SCOPES.get()
    if visible is None:
        return
    for predicate in (plan.where, plan.session_scope):
        for clause in _clauses(predicate):
            if clause.field == "scope":
                for value in clause.values:
                    if value.lower() not in visible:
                        raise auth.denied(f"the token grants no read on scope {value!r}")


def _clauses(predicate: plan_pb2.Predicate) -> Iterator[plan_pb2.FieldClause]:
    kind = predicate.WhichOneof("node")
    if kind in ("all", "any"):
        for item in getattr(predicate, kind).items:
            yield from _clauses(item)
    elif kind == "negate":
        yield from _clauses(predicate.negate)
    elif kind == "field":
        yield predicate.field
    elif kind == "exists":
        yield from _clauses(predicate.exists.where)
    elif kind == "seq":
        for step in predicate.seq.steps:
            yield from _clauses(step)
