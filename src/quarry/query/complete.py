"""The complete phase (Quickwit's fetch-docs): explaining only the page's hits.

The hybrid lane ranks rank-only (session ids and scores); once the page is cut, its hits get what the
lanes left out, in one call per node (SearchLanes): the evidence and summary of hits from rank-only
lexical answers, their partitions searching again with the same request (same term statistics, so the
same best message) restricted to these sessions; the summary of hits only the vector lane found. A hit
whose partition does not answer keeps its id alone, and the partition is reported missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from quarry.core.lanes import LEXICAL_LANES
from quarry.query.cluster_client import ClusterClient, partitions_of
from quarry.query.hits import explained
from quarry.query.plans import conjoined
from quarry.query.rank import lexical_request, partition_anchor
from quarry.query.run import Run, ms
from quarry.v1 import index_pb2, plan_pb2, query_pb2


def complete(cluster: ClusterClient, run: Run, page: list[query_pb2.SearchHit]) -> None:
    """Give the page's hits their evidence and summaries (the module's rule)."""
    lanes = {lane: [h for h in page if run.evidence.get(h.session.id) == lane] for lane in LEXICAL_LANES}
    lanes = {lane: hits for lane, hits in lanes.items() if hits}
    bare = [h for h in page if not h.session.origin and h.session.id not in run.evidence]
    if not lanes and not bare:
        return
    started = time.perf_counter()
    count = cluster.partitions
    wanted = {lane: partitions_of([h.session.id for h in hits], count) for lane, hits in lanes.items()}
    summaries = partitions_of([h.session.id for h in bare], count)
    requests = {lane: _restricted(run, lane) for lane in lanes}
    involved = {p for grouped in (*wanted.values(), summaries) for p in grouped}
    fanned = cluster.search_lanes(_explaining(requests, wanted, summaries), run.deadline, partitions=involved)
    run.missing.update(fanned.missing)
    for i, (lane, hits) in enumerate(lanes.items()):
        found = {h.session.id: h for r in fanned.results.values() for h in r.searches[i].hits}
        for hit in hits:
            if hit.session.id in found:
                explained(hit, found[hit.session.id], lane)
    found_sessions = {s.id: s for r in fanned.results.values() for s in r.summaries}
    for hit in bare:
        if hit.session.id in found_sessions:
            hit.session.CopyFrom(found_sessions[hit.session.id])
    run.timings["complete"] = ms(started)


def _restricted(run: Run, lane: str) -> index_pb2.PartitionSearchRequest:
    """The lane's request as it ranked (same term statistics), to explain hits it ranked rank-only."""
    request = lexical_request(run, lane, 0)
    if lane in run.lane_stats:
        request.global_stats.CopyFrom(run.lane_stats[lane])
    return request


def _explaining(
    requests: dict[str, index_pb2.PartitionSearchRequest],
    wanted: dict[str, dict[int, list[str]]],
    summaries: dict[int, list[str]],
) -> Callable[[list[int]], index_pb2.PartitionLanesRequest]:
    """A node's SearchLanes request, given its partitions: each lane's search restricted to the sessions
    it explains there, and the sessions whose summaries it reads."""

    def build(partitions: list[int]) -> index_pb2.PartitionLanesRequest:
        searches = []
        for lane, request in requests.items():
            ids = [sid for p in partitions for sid in wanted[lane].get(p, ())]
            node_request = index_pb2.PartitionSearchRequest()
            node_request.CopyFrom(request)
            named = plan_pb2.Predicate(session_ids=plan_pb2.SessionIdSet(ids=ids))
            node_request.plan.where.CopyFrom(conjoined(node_request.plan.where, named))
            node_request.limit = max(1, len(ids))
            searches.append(node_request)
        return index_pb2.PartitionLanesRequest(
            searches=searches,
            partitions=[partition_anchor(p, None) for p in partitions],
            summary_session_ids=[sid for p in partitions for sid in summaries.get(p, ())],
        )

    return build
