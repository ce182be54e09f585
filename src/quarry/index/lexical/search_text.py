"""A session search's text, compiled once per index node for all its partitions (compile_search): the
lane's field, the top `all` group's text leaves and role clauses, the ranking text and the relaxed
admission (admission.py; docs/search-api.md#admission).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from quarry.core.errors import QuarryError
from quarry.core.lanes import DIALOGUE, LEXICAL_LANES
from quarry.index.lexical import admission, fts, schema
from quarry.index.lexical.predicates import RoleClause, split_group
from quarry.v1 import errors_pb2, index_pb2, plan_pb2


def _request_error(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)


class SearchText(NamedTuple):
    """A session search's text, compiled: the top group's fts leaves, its role clauses and the rest, the
    group they form, the ranking text (None: an unranked list) and the relaxed admission, if any."""

    exprs: list[plan_pb2.FtsExpr]
    roles: list[RoleClause]
    rest: list[plan_pb2.Predicate]
    group: fts.Fts | None
    ranking: fts.Fts | None
    relaxed: admission.Relaxed | None


class CompiledSearch(NamedTuple):
    """What a session search's request compiles to, the same in every partition: the lane's field and
    its text (None: text that analyzes to no token, matching nothing)."""

    field: str
    text: SearchText | None


def compile_search(request: index_pb2.PartitionSearchRequest) -> CompiledSearch:
    field = _lane_field(request)
    return CompiledSearch(field, _search_text(request, field))


def _lane_field(request: index_pb2.PartitionSearchRequest) -> str:
    plan = request.plan
    if plan.unit not in ("", "sessions"):
        raise _request_error(f"session search got a plan of unit {plan.unit!r}", "plan.unit")
    lane = request.lane or DIALOGUE
    field = schema.LANE_FIELDS.get(lane)
    if field is None:
        lanes = " and ".join(LEXICAL_LANES)
        raise _request_error(f"a lexical partition serves the {lanes} lanes, not {lane!r}", "lane")
    return field


def _search_text(request: index_pb2.PartitionSearchRequest, field: str) -> SearchText | None:
    """The search's text compiled (the same in every partition); None when text that analyzes to no
    token makes it match nothing."""
    plan = request.plan
    where = plan.where if plan.HasField("where") else None
    exprs, roles, rest = _top_group(where)
    group = fts.combine("all", (fts.compile_fts(e) for e in exprs))
    if exprs and group is None:
        return None
    if plan.HasField("ranking_text"):
        ranking = fts.positive(fts.compile_fts(plan.ranking_text))
    elif exprs:
        ranking = fts.positive(group)
    else:
        ranking = fts.positive(fts.combine("any", (fts.compile_fts(e) for e in _positive_fts(rest))))
    relaxed = None
    if ranking is not None and exprs and request.HasField("admission"):
        relaxed = admission.relax([fts.compile_fts(e) for e in exprs], request.admission, field)
        if relaxed is not None:
            group, ranking = relaxed.group, relaxed.ranking
    return SearchText(exprs, roles, rest, group, ranking, relaxed)


def _top_group(
    where: plan_pb2.Predicate | None,
) -> tuple[list[plan_pb2.FtsExpr], list[RoleClause], list[plan_pb2.Predicate]]:
    if where is None or where.WhichOneof("node") is None:
        return [], [], []
    items = list(where.all.items) if where.WhichOneof("node") == "all" else [where]
    return split_group(items)


def _positive_fts(preds: Sequence[plan_pb2.Predicate]) -> list[plan_pb2.FtsExpr]:
    """fts leaves reachable without passing a negation (the text a ranking can score)."""
    out: list[plan_pb2.FtsExpr] = []
    for pred in preds:
        kind = pred.WhichOneof("node")
        if kind == "fts":
            out.append(pred.fts)
        elif kind in ("all", "any"):
            out.extend(_positive_fts(getattr(pred, kind).items))
    return out


def _leaves(node: fts.Fts | None, kind: str) -> frozenset[fts.Fts]:
    if node is None:
        return frozenset()
    return frozenset(node.children) if node.kind == kind else frozenset((node,))


def scores_alike(positive_group: fts.Fts | None, ranking: fts.Fts) -> bool:
    """Whether scoring the group gives the ranking's BM25 on every message the group matches: the
    same expression, or the OR of the very leaves the group ANDs (as the compiler writes the ranking
    text of several fts leaves), whose scores then all add up either way."""
    if positive_group == ranking:
        return True
    return ranking.kind == "any" and _leaves(positive_group, "all") == _leaves(ranking, "any")


def implied_by(pred: plan_pb2.Predicate, ranking: fts.Fts) -> bool:
    """Whether every message matching the ranking text makes its session satisfy `pred`: an fts leaf,
    or an OR of fts leaves, that are exactly the ranking's alternatives (`~a OR ~b`)."""
    kind = pred.WhichOneof("node")
    if kind == "fts":
        leaves = [pred.fts]
    elif kind == "any" and all(p.WhichOneof("node") == "fts" for p in pred.any.items):
        leaves = [p.fts for p in pred.any.items]
    else:
        return False
    compiled = [fts.compile_fts(e) for e in leaves]
    if any(c is None or fts.positive(c) != c for c in compiled):
        return False
    return frozenset(compiled) == _leaves(ranking, "any")  # type: ignore[arg-type]


def role_predicates(roles: Sequence[RoleClause]) -> list[plan_pb2.Predicate]:
    out = []
    for role in roles:
        pred = plan_pb2.Predicate(field=role.clause)
        out.append(plan_pb2.Predicate(negate=pred) if role.negated else pred)
    return out
