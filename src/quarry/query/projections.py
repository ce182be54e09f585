"""Projections of a sessions query (`… with messages(id, role, text)[role:user, last:10], files(path)`):
each hit of the page carries, per `with` item, the rows of that unit in its session.

Fetched once the page is known, one fan-out per item to the partitions holding the page's sessions,
the items' fan-outs at once (each on a thread of its own, in the request's trace context): each
partition returns, of every named session it holds, the first (last) N rows passing the item's
filters in time order and how many pass in all (PartitionUnitsRequest.per_session). A row keeps the fields
the item lists, keyed by the names the query wrote (aliases included).
"""

from __future__ import annotations

import contextvars
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from google.protobuf import struct_pb2

from quarry.core import row_fields
from quarry.query.cluster_client import ClusterClient, partitions_of
from quarry.query.scatter import Deadline
from quarry.query.units import query_row
from quarry.v1 import index_pb2, plan_pb2, query_pb2


def attach(
    cluster: ClusterClient,
    projections: Sequence[plan_pb2.Projection],
    page: Sequence[query_pb2.SearchHit],
    deadline: Deadline,
    missing: dict[int, str],
) -> None:
    """Give every hit of `page` its projected rows; partitions that did not answer go into `missing`
    (their sessions' projections are then empty, with total 0)."""
    if not projections or not page:
        return
    held = partitions_of([hit.session.id for hit in page], cluster.partitions)
    with ThreadPoolExecutor(max_workers=len(projections), thread_name_prefix="projection") as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, _fetch, cluster, projection, held, deadline)
            for projection in projections
        ]
        fetched = [future.result() for future in futures]
    for projection, (rows, totals, unanswered) in zip(projections, fetched, strict=True):
        missing.update(unanswered)
        for hit in page:
            _project(hit, projection, rows.get(hit.session.id, []), totals.get(hit.session.id, 0))


def _fetch(
    cluster: ClusterClient, projection: plan_pb2.Projection, held: dict[int, list[str]], deadline: Deadline
) -> tuple[dict[str, list[index_pb2.UnitRow]], dict[str, int], dict[int, str]]:
    """The item's rows and totals by session, and the partitions that did not answer."""
    plan = plan_pb2.QueryPlan(unit=projection.unit)
    if projection.HasField("where"):
        plan.where.CopyFrom(projection.where)

    def build(partitions: list[int]) -> index_pb2.PartitionUnitsRequest:
        named = [session_id for p in partitions for session_id in held.get(p, ())]
        return index_pb2.PartitionUnitsRequest(
            plan=plan,
            limit=projection.rows,
            partitions=partitions,
            per_session=index_pb2.PerSession(session_ids=named, last=projection.last),
        )

    fanned = cluster.query_units(build, deadline, partitions=held)
    rows: dict[str, list[index_pb2.UnitRow]] = defaultdict(list)
    totals: dict[str, int] = {}
    for response in fanned.ordered():
        for row in response.rows:
            rows[row.session_id].append(row)
        totals.update(response.session_rows)
    return rows, totals, fanned.missing


def _project(
    hit: query_pb2.SearchHit, projection: plan_pb2.Projection, rows: list[index_pb2.UnitRow], total: int
) -> None:
    out = hit.projections.add(unit=projection.unit, fields=projection.labels, total=total, cut=total > len(rows))
    for row in rows:
        public = query_row(row)
        values = {
            label: row_fields.value(projection.unit, public, field)
            for label, field in zip(projection.labels, projection.fields, strict=True)
        }
        struct = struct_pb2.Struct()
        struct.update(values)
        out.rows.append(struct)
