"""Unit queries across shards: merge every shard's rows, or sum every shard's group counts.

Rows: each shard returns its first `offset + limit` rows in (sort_time_ms, sort_id) order, time
descending under `sort by time desc`, ties on the row id ascending in both directions (the shard's
contract, quarry.index.lexical.rows); the merge keeps that order across shards and only then cuts the
window, so a page never depends on how sessions are sharded.

Aggregates (`… | group by FIELD | count`): each shard returns every group it holds, unsorted and
unlimited; the counts are summed by key and ordered count desc then key asc, unless a `sort by
count|key [asc|desc]` stage after the group by says otherwise, before the window is cut."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from quarry.query.plans import window
from quarry.v1 import index_pb2, plan_pb2, query_pb2

# UnitRow / QueryUnitRow oneof name -> public ref kind (seed 000's names)
REF_KINDS = {
    "message": "message",
    "action": "action",
    "block": "block",
    "file": "file",
    "assertion": "assertion",
    "run": "run",
    "observed_event": "observed-event",
    "context_snapshot": "context-snapshot",
    "delegation": "delegation",
}


def shard_limit(plan: plan_pb2.QueryPlan, caller_limit: int, caller_offset: int) -> int:
    """How many rows each shard must return for the merged window to be exact."""
    limit, offset, _ = window(plan, caller_limit, caller_offset)
    return offset + limit


def envelope(
    query: str,
    plan: plan_pb2.QueryPlan,
    responses: Sequence[index_pb2.ShardUnitsResponse],
    caller_limit: int,
    caller_offset: int,
) -> query_pb2.QueryUnitEnvelope:
    """The QueryUnitEnvelope of a unit plan from every shard's response: rows, or aggregate groups."""
    limit, offset, descending = window(plan, caller_limit, caller_offset)
    out = query_pb2.QueryUnitEnvelope(query=query, unit=plan.unit, limit=limit, offset=offset)
    group_by = grouped_by(plan)
    if group_by is None:
        out.rows.extend(merge_rows([r.rows for r in responses], limit, offset, descending))
    else:
        out.aggregate, out.group_by = True, group_by
        key, desc = group_order(plan)
        out.groups.extend(merge_groups([r.groups for r in responses], limit, offset, key, desc))
    return out


def merge_rows(
    shards: Sequence[Sequence[index_pb2.UnitRow]], limit: int, offset: int, descending: bool
) -> list[query_pb2.QueryUnitRow]:
    """The window [offset, offset + limit) of the rows of every shard, each already in sort order."""
    sign = -1 if descending else 1
    merged = heapq.merge(*shards, key=lambda r: (sign * r.sort_time_ms, r.sort_id))
    kept = [row for _, row in zip(range(offset + limit), merged, strict=False)][offset:]
    return [query_row(row) for row in kept]


def query_row(row: index_pb2.UnitRow) -> query_pb2.QueryUnitRow:
    """The public row: the shard's payload, its owning session and its ref (`<kind>:<id>`)."""
    kind = row.WhichOneof("row")
    out = query_pb2.QueryUnitRow(session_id=row.session_id, ref=f"{REF_KINDS[kind]}:{row.sort_id}")
    getattr(out, kind).CopyFrom(getattr(row, kind))
    return out


def grouped_by(plan: plan_pb2.QueryPlan) -> str | None:
    """The field of the plan's `group by` stage, None for a row query."""
    for stage in plan.stages:
        if stage.WhichOneof("stage") == "group_by":
            return stage.group_by
    return None


def group_order(plan: plan_pb2.QueryPlan) -> tuple[str, bool]:
    """(key, descending) of the aggregate rows: the last `sort by count|key` after the group by,
    else count descending."""
    order = ("count", True)
    grouped = False
    for stage in plan.stages:
        which = stage.WhichOneof("stage")
        grouped = grouped or which == "group_by"
        if grouped and which == "sort" and stage.sort.key in ("count", "key"):
            order = (stage.sort.key, stage.sort.descending)
    return order


def merge_groups(
    shards: Sequence[Sequence[index_pb2.AggregateRow]], limit: int, offset: int, key: str, descending: bool
) -> list[query_pb2.AggregateCount]:
    """Counts summed by key over every shard, ordered by `key` ("count" | "key"), windowed.
    Equal counts always break on the key ascending, so the order is total and stable."""
    totals: dict[str, int] = {}
    for groups in shards:
        for group in groups:
            totals[group.key] = totals.get(group.key, 0) + group.count
    if key == "key":
        ordered = sorted(totals.items(), reverse=descending)
    else:
        sign = -1 if descending else 1
        ordered = sorted(totals.items(), key=lambda item: (sign * item[1], item[0]))
    return [query_pb2.AggregateCount(key=k, count=n) for k, n in ordered[offset : offset + limit]]
