"""Which sessions a call may touch on an index node: those of the scopes the query or ingest node sent
(quarry.core.auth.SCOPES, from the `quarry-scopes` metadata), or every session when it sent none.

Plan-based reads get the limit as one more clause of their plan (`restrict`), so the lowering that runs
every other clause runs it too: a Tantivy filter on the search path, SQL elsewhere. Reads by id check the
session's scope (`admits`; in SQL, predicates.scope_condition). An empty set admits nothing: a scope
name is never empty, so the clause `scope:""` matches no session.
"""

from __future__ import annotations

from quarry.core import auth
from quarry.v1 import plan_pb2

Visible = frozenset[str] | None


def current() -> Visible:
    return auth.SCOPES.get()


def admits(visible: Visible, scope: str) -> bool:
    return visible is None or scope in visible


def clause(visible: frozenset[str]) -> plan_pb2.Predicate:
    """The plan clause `scope:(a|b)` of the visible scopes."""
    return plan_pb2.Predicate(field=plan_pb2.FieldClause(field="scope", values=sorted(visible) or [""]))


def restrict(where: plan_pb2.Predicate, visible: Visible) -> None:
    """AND the visible scopes into `where` in place: into its top `all` group when it has one, where the
    search path reads session filters, else as a new group around it."""
    if visible is None:
        return
    limit = clause(visible)
    kind = where.WhichOneof("node")
    if kind is None:
        where.CopyFrom(limit)
    elif kind == "all":
        where.all.items.append(limit)
    else:
        inner = plan_pb2.Predicate()
        inner.CopyFrom(where)
        where.Clear()
        where.all.items.extend([inner, limit])
