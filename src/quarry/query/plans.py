"""Rewrites of a compiled plan that only the query node can make."""

from __future__ import annotations

from collections.abc import Callable

from quarry.v1 import plan_pb2

TEXT_LEAVES = ("fts", "semantic")


def has_text(predicate: plan_pb2.Predicate) -> bool:
    kind = predicate.WhichOneof("node")
    if kind in TEXT_LEAVES:
        return True
    if kind == "all":
        return any(has_text(p) for p in predicate.all.items)
    if kind == "any":
        return any(has_text(p) for p in predicate.any.items)
    if kind == "negate":
        return has_text(predicate.negate)
    return False


def without_text(predicate: plan_pb2.Predicate) -> plan_pb2.Predicate | None:
    """The structured filter left when text leaves are taken out: what a session must satisfy in
    a lane that scores the text itself (the vector lane). None means no constraint.

    Text is dropped from conjunctions only; a disjunction or negation that involves text cannot be
    split without changing its meaning, so it is dropped whole (a looser, never a narrower, filter)."""
    kind = predicate.WhichOneof("node")
    if kind is None or kind in TEXT_LEAVES:
        return None
    if kind == "all":
        kept = [p for p in (without_text(item) for item in predicate.all.items) if p is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else plan_pb2.Predicate(all=plan_pb2.PredicateList(items=kept))
    if kind in ("any", "negate"):
        return None if has_text(predicate) else predicate
    return predicate


def conjoined(*predicates: plan_pb2.Predicate) -> plan_pb2.Predicate:
    """The AND of `predicates` as one top-level `all` group. A partition reads the text leaves of the
    top group as the search's text (one message matching them, which the request's admission relaxes
    for prose); nested one level down they would be a session-level condition requiring every word."""
    items: list[plan_pb2.Predicate] = []
    for predicate in predicates:
        kind = predicate.WhichOneof("node")
        if kind == "all":
            items.extend(predicate.all.items)
        elif kind is not None:
            items.append(predicate)
    return items[0] if len(items) == 1 else plan_pb2.Predicate(all=plan_pb2.PredicateList(items=items))


Nearest = Callable[[plan_pb2.Predicate], list[str]]


def resolve_semantic_leaves(predicate: plan_pb2.Predicate, nearest_sessions: Nearest) -> plan_pb2.Predicate:
    """Replace each `semantic:` / `near:text:` leaf and each `near:id:` leaf by the allow-list of the
    sessions nearest to it (partitions never embed); returns a rewritten copy. `nearest_sessions` gets
    the leaf itself."""
    rewritten = plan_pb2.Predicate()
    rewritten.CopyFrom(predicate)
    _resolve_in_place(rewritten, nearest_sessions)
    return rewritten


def _resolve_in_place(predicate: plan_pb2.Predicate, nearest_sessions: Nearest) -> None:
    kind = predicate.WhichOneof("node")
    if kind in ("semantic", "near_session"):
        ids = nearest_sessions(predicate)
        predicate.session_ids.CopyFrom(plan_pb2.SessionIdSet(ids=ids))
    elif kind in ("all", "any"):
        for item in getattr(predicate, kind).items:
            _resolve_in_place(item, nearest_sessions)
    elif kind == "negate":
        _resolve_in_place(predicate.negate, nearest_sessions)


def window(plan: plan_pb2.QueryPlan, limit: int, offset: int) -> tuple[int, int, bool]:
    """The effective (limit, offset, descending) of a unit query: a `limit` stage in the query
    narrows the caller's limit, an `offset` stage adds to the caller's offset."""
    descending = False
    for stage in plan.stages:
        which = stage.WhichOneof("stage")
        if which == "limit":
            limit = min(limit, stage.limit)
        elif which == "offset":
            offset += stage.offset
        elif which == "sort":
            descending = stage.sort.descending
    return limit, offset, descending
