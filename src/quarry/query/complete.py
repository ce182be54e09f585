"""The complete phase (Quickwit's fetch-docs): explaining only the page's hits.

The hybrid lane ranks rank-only (session ids, scores, and where each session's best message is); once the
page is cut, its hits get what the lanes left out, in one call per node (SearchLanes): hits from rank-only
lexical answers are explained where they were ranked (the same replica, preferred), from the best
message's place, without searching again; hits only the vector lane found get their summary. A hit whose
partition does not answer keeps its id alone, and the partition is reported missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from quarry.core.lanes import LEXICAL_LANES
from quarry.query.cluster_client import ClusterClient, partitions_of
from quarry.query.hits import explained
from quarry.query.rank import lexical_request, partition_anchor
from quarry.query.run import LaneHit, Run, ms
from quarry.v1 import index_pb2, query_pb2


def complete(cluster: ClusterClient, run: Run, page: list[query_pb2.SearchHit]) -> None:
    """Give the page's hits their evidence and summaries (the module's rule)."""
    lanes = {lane: [h for h in page if run.evidence.get(h.session.id) == lane] for lane in LEXICAL_LANES}
    placed = {lane: _by_partition(run.ranked[lane][h.session.id] for h in hits) for lane, hits in lanes.items() if hits}
    bare = [h for h in page if not h.session.origin and h.session.id not in run.evidence]
    if not placed and not bare:
        return
    started = time.perf_counter()
    summaries = partitions_of([h.session.id for h in bare], cluster.partitions)
    involved = {p for grouped in (*placed.values(), summaries) for p in grouped}
    served_by = {h.partition: h.node for grouped in placed.values() for hs in grouped.values() for h in hs if h.node}
    requests = {lane: lexical_request(run, lane, 0) for lane in placed}
    fanned = cluster.search_lanes(
        _explaining(requests, placed, summaries), run.deadline, partitions=involved, prefer=served_by
    )
    run.missing.update(fanned.missing)
    for i, lane in enumerate(placed):
        found = {h.session.id: h for r in fanned.results.values() for h in r.searches[i].hits}
        for hit in lanes[lane]:
            if hit.session.id in found:
                explained(hit, found[hit.session.id], lane)
    found_sessions = {s.id: s for r in fanned.results.values() for s in r.summaries}
    for hit in bare:
        if hit.session.id in found_sessions:
            hit.session.CopyFrom(found_sessions[hit.session.id])
    run.timings["complete"] = ms(started)


def _by_partition(hits: Iterable[LaneHit]) -> dict[int, list[LaneHit]]:
    grouped: dict[int, list[LaneHit]] = {}
    for hit in hits:
        grouped.setdefault(hit.partition, []).append(hit)
    return grouped


def _explaining(
    requests: dict[str, index_pb2.PartitionSearchRequest],
    placed: dict[str, dict[int, list[LaneHit]]],
    summaries: dict[int, list[str]],
) -> Callable[[list[int]], index_pb2.PartitionLanesRequest]:
    """A node's SearchLanes request, given its partitions: each lane's rank-only hits it explains there,
    and the sessions whose summaries it reads."""

    def build(partitions: list[int]) -> index_pb2.PartitionLanesRequest:
        searches = []
        for lane, request in requests.items():
            node_request = index_pb2.PartitionSearchRequest()
            node_request.CopyFrom(request)
            for p in partitions:
                hits = [h.partition_hit for h in placed[lane].get(p, ()) if h.partition_hit is not None]
                if hits:
                    node_request.explain.add(partition=p, hits=hits)
            searches.append(node_request)
        return index_pb2.PartitionLanesRequest(
            searches=searches,
            partitions=[partition_anchor(p, None) for p in partitions],
            summary_session_ids=[sid for p in partitions for sid in summaries.get(p, ())],
        )

    return build
