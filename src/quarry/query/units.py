"""Unit queries across partitions: merge every partition's rows, or sum every partition's group counts.

Rows: each partition returns its first `offset + limit` rows in (sort_time_ms, sort_id) order, time
descending under `sort by time desc`, ties on the row id ascending in both directions (the partition's
contract, quarry.index.lexical.rows); the merge keeps that order across partitions and only then cuts the
window, so a page never depends on how sessions are partitioned.

Aggregates (`… | group by FIELD | count`, or `… | count`: one group keyed ""): each partition returns every
group it holds, unsorted and unlimited; the counts (and `agg sessions`' distinct sessions, which add up
because a session lives in one partition) are summed by key and ordered count desc then key asc, unless
a `sort by count|key [asc|desc]` stage after the group by says otherwise, before the window is cut."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence

from quarry.core import id_order
from quarry.query.plans import window
from quarry.v1 import index_pb2, plan_pb2, query_pb2

# UnitRow / QueryUnitRow oneof name -> public ref kind (docs/search-api.md#public-refs)
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


def page_window(
    plan: plan_pb2.QueryPlan, caller_limit: int, caller_offset: int, continuing: bool = False
) -> tuple[int, int, bool]:
    """(limit, offset, descending) of one page: the query's `| limit` narrows the caller's limit and
    its `| offset` adds to the caller's (plans.window); a cursor's page (`continuing`) starts right
    after its anchor, every offset behind it."""
    limit, offset, descending = window(plan, caller_limit, caller_offset)
    return limit, (0 if continuing else offset), descending


def partition_limit(plan: plan_pb2.QueryPlan, caller_limit: int, caller_offset: int, continuing: bool = False) -> int:
    """How many rows each partition returns for the merged window to be exact, and to tell whether more
    rows follow it (one more)."""
    limit, offset, _ = page_window(plan, caller_limit, caller_offset, continuing)
    return offset + limit + 1


def envelope(
    query: str,
    plan: plan_pb2.QueryPlan,
    responses: Sequence[index_pb2.PartitionUnitsResponse],
    caller_limit: int,
    caller_offset: int,
    continuing: bool = False,
    next_cursor: Callable[[index_pb2.UnitAnchor], str] | None = None,
) -> query_pb2.QueryUnitEnvelope:
    """The QueryUnitEnvelope of a unit plan from every partition's response: rows, or aggregate groups,
    and whether the window cut them (`has_more`; `next_cursor(after)` mints the next page's cursor;
    `groups_total`)."""
    limit, offset, descending = page_window(plan, caller_limit, caller_offset, continuing)
    out = query_pb2.QueryUnitEnvelope(query=query, unit=plan.unit, limit=limit, offset=offset)
    group_by = grouped_by(plan)
    if group_by is None:
        rows, after = merge_rows([r.rows for r in responses], limit, offset, descending)
        out.rows.extend(rows)
        out.has_more = after is not None
        if after is not None and next_cursor is not None:
            out.next_cursor = next_cursor(after)
    else:
        out.aggregate, out.group_by = True, group_by
        key, desc = group_order(plan)
        partitions = [r.groups for r in responses]
        if not group_by:  # `count` alone: one group, counted even when no row matched
            partitions.append([index_pb2.AggregateRow(key="", count=0)])
        groups, out.groups_total = merge_groups(partitions, limit, offset, key, desc, functions_of(plan))
        out.groups.extend(groups)
        out.has_more = out.groups_total > offset + len(groups)
    return out


def merge_rows(
    partitions: Sequence[Sequence[index_pb2.UnitRow]], limit: int, offset: int, descending: bool
) -> tuple[list[query_pb2.QueryUnitRow], index_pb2.UnitAnchor | None]:
    """The window [offset, offset + limit) of the rows of every partition, each already in sort order, and
    when a row follows it, the listing key of the window's last row (where the next page starts)."""
    sign = -1 if descending else 1
    merged = heapq.merge(*partitions, key=lambda r: (sign * r.sort_time_ms, id_order.key(r.sort_id)))
    kept = [row for _, row in zip(range(offset + limit + 1), merged, strict=False)]
    page = kept[offset : offset + limit]
    more = len(kept) > offset + limit and bool(page)
    after = index_pb2.UnitAnchor(time_ms=page[-1].sort_time_ms, id=page[-1].sort_id) if more else None
    return [query_row(row) for row in page], after


def query_row(row: index_pb2.UnitRow) -> query_pb2.QueryUnitRow:
    """The public row: the partition's payload, its owning session and its ref (`<kind>:<id>`)."""
    kind = row.WhichOneof("row")
    out = query_pb2.QueryUnitRow(session_id=row.session_id, ref=f"{REF_KINDS[kind]}:{row.sort_id}")
    getattr(out, kind).CopyFrom(getattr(row, kind))
    return out


def grouped_by(plan: plan_pb2.QueryPlan) -> str | None:
    """The field of the plan's `group by` stage ("" for `count` alone: every row one group), None for
    a row listing."""
    for stage in plan.stages:
        if stage.WhichOneof("stage") == "group_by":
            return stage.group_by
    return "" if any(stage.WhichOneof("stage") in ("count", "agg") for stage in plan.stages) else None


def functions_of(plan: plan_pb2.QueryPlan) -> list[plan_pb2.AggregateFunction]:
    """The functions of the plan's `agg` stage (none for `| count`)."""
    return [f for stage in plan.stages if stage.WhichOneof("stage") == "agg" for f in stage.agg.functions]


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
    partitions: Sequence[Sequence[index_pb2.AggregateRow]],
    limit: int,
    offset: int,
    key: str,
    descending: bool,
    functions: Sequence[plan_pb2.AggregateFunction] = (),
) -> tuple[list[query_pb2.AggregateCount], int]:
    """Counts summed by key over every partition, ordered by `key` ("count" | "key"), windowed, and how many
    groups there are in all; with the `agg` functions' values from the partitions' partials merged. Equal
    counts always break on the key ascending, so the order is total."""
    totals: dict[str, int] = {}
    sessions: dict[str, int] = {}  # `agg sessions`: a session lives in one partition, so these add up
    partials: dict[str, dict[str, index_pb2.FieldAggregate]] = {}
    for groups in partitions:
        for group in groups:
            totals[group.key] = totals.get(group.key, 0) + group.count
            sessions[group.key] = sessions.get(group.key, 0) + group.sessions
            for part in group.fields:
                _merge_partial(partials.setdefault(group.key, {}), part)
    if key == "key":
        ordered = sorted(totals.items(), reverse=descending)
    else:
        sign = -1 if descending else 1
        ordered = sorted(totals.items(), key=lambda item: (sign * item[1], item[0]))
    out = []
    for k, n in ordered[offset : offset + limit]:
        group = query_pb2.AggregateCount(key=k, count=n)
        group.values.extend(_value(f, n, partials.get(k, {}).get(f.field), sessions.get(k, 0)) for f in functions)
        out.append(group)
    return out, len(ordered)


def _merge_partial(into: dict[str, index_pb2.FieldAggregate], part: index_pb2.FieldAggregate) -> None:
    known = into.get(part.field)
    if known is None:
        into[part.field] = index_pb2.FieldAggregate()
        into[part.field].CopyFrom(part)
        return
    if part.count:
        known.min = min(known.min, part.min) if known.count else part.min
        known.max = max(known.max, part.max) if known.count else part.max
    known.count += part.count
    known.sum += part.sum
    known.values.extend(part.values)


def _value(
    function: plan_pb2.AggregateFunction, rows: int, part: index_pb2.FieldAggregate | None, sessions: int = 0
) -> query_pb2.AggregateValue:
    """One function's value for a group: `count` its rows, `sessions` their distinct sessions; the others
    of the field's values, empty when no row has one. Percentiles are nearest-rank: the smallest value
    with at least p% at or below it."""
    name = f"{function.function}:{function.field}" if function.field else function.function
    if function.function == "count":
        return query_pb2.AggregateValue(name=name, value=rows)
    if function.function == "sessions":
        return query_pb2.AggregateValue(name=name, value=sessions)
    if part is None or not part.count:
        return query_pb2.AggregateValue(name=name, empty=True)
    if function.function == "sum":
        value = part.sum
    elif function.function == "avg":
        value = part.sum / part.count
    elif function.function == "min":
        value = part.min
    elif function.function == "max":
        value = part.max
    else:
        ordered = sorted(part.values)
        share = int(function.function[1:]) / 100
        value = ordered[max(0, math.ceil(share * len(ordered)) - 1)]
    return query_pb2.AggregateValue(name=name, value=value)
