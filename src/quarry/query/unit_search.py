"""QueryService.QueryUnits (docs/search-api.md#query-units): the rows or groups of a unit query
(`messages where …`, `actions where … | group by tool | count`) over every partition, merged (units.py).

A cursor continues a row walk (unit_cursors.py), bound to the page's effective limit: a `| limit` in the
query narrows the caller's, and the envelope echoes it, so the next page's command repeats it. An
aggregate has no cursor. Partitions that do not answer are named in `missing`, or fail the request
PARTITION_UNAVAILABLE when it requires a complete answer.
"""

from __future__ import annotations

from collections.abc import Callable

from quarry.core.errors import QuarryError
from quarry.query import cursors, limits, unit_cursors, units
from quarry.query.cluster_client import ClusterClient
from quarry.query.diagnostics import unread_origin_caveats
from quarry.query.partial import missing_partitions, require
from quarry.query.scatter import Deadline
from quarry.query.scopes import compile_in_scope
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, query_pb2

DEFAULT_UNIT_LIMIT = 50
DEFAULT_DEADLINE_MS = 5000.0

PlanResolver = Callable[[plan_pb2.QueryPlan, Deadline], plan_pb2.QueryPlan]


def query_units(
    cluster: ClusterClient, request: query_pb2.QueryUnitsRequest, clock: Callable[[], int], resolve: PlanResolver
) -> query_pb2.QueryUnitEnvelope:
    """One page of a unit query's rows, or its groups. `clock`: the time relative dates count from on a
    walk's first page; `resolve`: the plan with its semantic leaves resolved."""
    limit, offset = limits.page(request.limit, request.offset, DEFAULT_UNIT_LIMIT)
    limits.check_cursor_offset(request.cursor, offset)
    cursor = unit_cursors.decode(request.cursor) if request.cursor else None
    deadline = Deadline(limits.deadline_ms(request.deadline_ms, DEFAULT_DEADLINE_MS))
    now_ms = cursor.now_ms if cursor else clock()
    compiled = compile_in_scope(request.query, now_ms)
    if compiled.kind != "units":
        raise QuarryError(
            errors_pb2.UNSUPPORTED_FORM,
            "this query selects sessions, not rows: start it with a unit source (`messages where`, "
            "`actions where`, `files where`, `runs where`, …), or use Search",
        )
    page_limit, page_offset, _ = units.page_window(compiled.plan, limit, offset)
    limits.check_offset(page_offset, "offset", f"offset {offset} and the query's `| offset` stages")
    bound = unit_cursors.binding(compiled.plan, page_limit, cluster.partitions)
    if cursor is not None:
        cursors.check(cursor, bound)
        if units.grouped_by(compiled.plan) is not None:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "an aggregate has no cursor", parameter="cursor")
    plan = resolve(compiled.plan, deadline)
    continuing = cursor is not None
    wanted = units.partition_limit(plan, limit, offset, continuing)

    def build(partitions: list[int]) -> index_pb2.PartitionUnitsRequest:
        node_request = index_pb2.PartitionUnitsRequest(plan=plan, limit=wanted, partitions=partitions)
        if cursor is not None:
            node_request.after.CopyFrom(cursor.after)
        return node_request

    def next_cursor(after: index_pb2.UnitAnchor) -> str:
        return unit_cursors.encode(unit_cursors.UnitCursor(bound, now_ms, after))

    fanned = cluster.query_units(build, deadline)
    require(fanned.missing, request.require_complete)
    envelope = units.envelope(request.query, plan, fanned.ordered(), limit, offset, continuing, next_cursor)
    if not envelope.rows and not envelope.groups:
        envelope.caveats.extend(unread_origin_caveats(plan))
    envelope.partial = bool(fanned.missing)
    envelope.missing.extend(missing_partitions(fanned.missing))
    return envelope
