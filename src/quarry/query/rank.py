"""The rank phase: a search's lane run over the partitions and the vector node (docs/search-api.md#lanes).

- dialogue: BM25 over message text in every partition, merged; with several partitions each scores
  with the archive's term statistics (term_stats.py).
- actions: BM25 over tool_use / tool_result text, merged the same way; reported by rank, score_kind null.
- semantic: the nearest sessions on the vector node, restricted to an allow-list the partitions compute
  (allow_lists.py); its similarity threshold applies here, on the distance-ordered list (exact).
- hybrid: fusion (fusion.py) of the dialogue, actions and vector channels, RRF at k = RRF_K by default
  (docs/search-api.md#fusion), the three asked concurrently and the lexical two rank-only, in one call
  per node: the page's hits are explained afterwards (complete.py).

Lexical admission (docs/search-api.md#admission) runs on the partitions. A partition none of whose
replicas answered is left out and reported missing.
"""

from __future__ import annotations

import heapq
import time

from quarry.core import telemetry
from quarry.core.errors import QuarryError
from quarry.core.lanes import ACTIONS, DIALOGUE, LEXICAL_LANES, SEMANTIC
from quarry.query.allow_lists import AllowLists
from quarry.query.cluster_client import ClusterClient
from quarry.query.cursors import Anchor
from quarry.query.fusion import FUSION_DEPTH, FusedHit, FusionSpec, fuse, similarity
from quarry.query.paging import PartitionRanking, Ranking, by_distance, by_fusion, fusion_depth
from quarry.query.partial import Fanned
from quarry.query.run import LaneHit, Prepared, Run, ms
from quarry.query.scatter import both
from quarry.query.term_stats import GlobalTermStats
from quarry.query.vector_client import VectorClient
from quarry.v1 import errors_pb2, index_pb2, vector_pb2

_tracer = telemetry.tracer("quarry.query")

_LEXICAL_TIMINGS = {  # the lane's fan-out, its merge, its slowest partition, that partition's stages
    DIALOGUE: ("lexical", "merge", "slowest_partition", "partition_"),
    ACTIONS: ("actions", "actions_merge", "slowest_actions_partition", "actions_partition_"),
}


class Lanes:
    def __init__(
        self, cluster: ClusterClient, term_stats: GlobalTermStats, vector: VectorClient, allow_lists: AllowLists
    ) -> None:
        self.cluster = cluster
        self.term_stats = term_stats
        self.vector = vector
        self.allow_lists = allow_lists

    def rank(self, prepared: Prepared) -> Ranking:
        """The lane's order, as deep as the page needs (and, on the hybrid lane, as fusion needs)."""
        run, lane, depth = prepared.run, prepared.lane, prepared.depth
        if lane in LEXICAL_LANES:
            return PartitionRanking(lane, self.lexical(run, depth, prepared.anchors, lane))
        if lane == SEMANTIC:
            semantic_depth = depth if prepared.cursor is None else max(FUSION_DEPTH, depth)
            return by_distance(self.semantic(run, semantic_depth))
        fused = self.hybrid(run, fusion_depth(depth))
        return by_fusion(fused, run.channels)

    def lexical(
        self, run: Run, depth: int, anchors: dict[int, Anchor] | None = None, lane: str = DIALOGUE
    ) -> list[LaneHit]:
        """The merged top `depth` of every partition in a lexical lane (dialogue or actions); with
        `anchors`, each partition's sessions after its anchor, read on the replica that served it."""
        started = time.perf_counter()
        anchors = anchors or {}
        with _tracer.start_as_current_span(f"quarry.lane.{lane}"):
            request = self._ranked_request(run, lane, depth)

            def build(partitions: list[int]) -> index_pb2.PartitionSearchRequest:
                node_request = index_pb2.PartitionSearchRequest()
                node_request.CopyFrom(request)
                node_request.partitions.extend(partition_anchor(p, anchors.get(p)) for p in partitions)
                return node_request

            affinity = {p: a.node for p, a in anchors.items() if a.node}
            fanned = self.cluster.search_sessions(build, run.deadline, prefer=affinity)
        run.missing.update(fanned.missing)
        return _merged(run, lane, fanned, depth, started, self._one_copy())

    def semantic(self, run: Run, depth: int) -> list[LaneHit]:
        """The nearest `depth` sessions the allow-list admits, above the similarity threshold."""
        text = run.compiled.semantic_text.strip()
        if not text:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, "the semantic lane needs query text to embed", parameter="query"
            )
        started = time.perf_counter()
        allowed = self.allow_lists.for_semantic_lane(run)
        with _tracer.start_as_current_span("quarry.lane.semantic"):
            request = vector_pb2.VectorSearchRequest(
                text=text, limit=depth, allow_session_ids=allowed or [], restrict_to_allowed=allowed is not None
            )
            response = self.vector.search(request, run.deadline)
        run.timings["embed"] = response.embed_ms
        run.timings["vector"] = ms(started)
        stats = run.vector_stats
        if stats is not None and stats.pending:
            run.caveats.append(
                f"{stats.pending} messages are still waiting to be embedded: the semantic lane covers the "
                f"{stats.vectors} embedded so far (`quarry status` shows the backlog)"
            )
        threshold = run.controls.min_similarity
        admitted = [h for h in response.hits if threshold is None or similarity(h.distance) >= threshold]
        return [LaneHit(h.session_id, vector_hit=h) for h in admitted]

    def hybrid(self, run: Run, depth: int) -> list[FusedHit]:
        """Fusion of the dialogue, action and vector lanes' top `depth`, run concurrently. Without query
        text only the vector lane ranks; a missing vector lane fails the request (SEMANTIC_UNAVAILABLE)."""
        text: list[index_pb2.PartitionHit] | None = None
        action: list[index_pb2.PartitionHit] | None = None
        if run.compiled.has_text:
            (text_hits, action_hits), semantic = both(
                lambda: self._both_lexical(run, depth), lambda: self.semantic(run, depth)
            )
            text = [h.partition_hit for h in text_hits if h.partition_hit is not None]
            action = [h.partition_hit for h in action_hits if h.partition_hit is not None]
            # The dialogue match is the evidence where both lanes found a session (as fused_hit says).
            run.evidence.update({h.session.id: ACTIONS for h in action})
            run.evidence.update({h.session.id: DIALOGUE for h in text})
            run.ranked = {
                DIALOGUE: {h.session_id: h for h in text_hits},
                ACTIONS: {h.session_id: h for h in action_hits},
            }
        else:
            semantic = self.semantic(run, depth)
        started = time.perf_counter()
        effective = run.controls
        spec = FusionSpec(effective.method, effective.rank_constant, effective.weights)
        fused, run.channels = fuse(text, action, [h.vector_hit for h in semantic if h.vector_hit is not None], spec)
        run.timings["fuse"] = ms(started)
        return fused

    def _both_lexical(self, run: Run, depth: int) -> tuple[list[LaneHit], list[LaneHit]]:
        """The dialogue and actions lanes' merged top `depth`, rank-only (session ids and scores: see
        complete.py), both asked of each node in one call (SearchLanes)."""
        started = time.perf_counter()
        with _tracer.start_as_current_span("quarry.lane.lexical"):
            requests = both(
                lambda: self._ranked_request(run, DIALOGUE, depth, rank_only=True),
                lambda: self._ranked_request(run, ACTIONS, depth, rank_only=True),
            )
            fanned = self.cluster.search_lanes(
                lambda partitions: index_pb2.PartitionLanesRequest(
                    searches=requests, partitions=[partition_anchor(p, None) for p in partitions]
                ),
                run.deadline,
            )
        run.missing.update(fanned.missing)
        lanes = {lane: _lane_of(fanned, i) for i, lane in enumerate((DIALOGUE, ACTIONS))}
        one_copy = self._one_copy()
        text, action = (_merged(run, lane, answers, depth, started, one_copy) for lane, answers in lanes.items())
        return text, action

    def _one_copy(self) -> bool:
        """Whether each partition has a single copy (the embedded default): then no replica is remembered
        for a cursor walk to ask again, and every query node of the cluster writes the same cursor."""
        return self.cluster.view().replicas_wanted == 1

    def _ranked_request(
        self, run: Run, lane: str, depth: int, rank_only: bool = False
    ) -> index_pb2.PartitionSearchRequest:
        """The lane's search without partitions, with the archive's term statistics when it ranks and
        there are several partitions: summed by the node itself when one node holds them all, else asked
        of the partitions first (term_stats.py)."""
        request = lexical_request(run, lane, depth)
        request.rank_only = rank_only
        ranked = run.compiled.has_text or run.plan.HasField("ranking_text")
        if ranked and self.cluster.partitions > 1:
            if self.cluster.view().one_node_holds_all():
                request.node_term_stats = True
                return request
            stats = self.term_stats.for_search(request, run.deadline)
            if stats is not None:
                request.global_stats.CopyFrom(stats)
        return request


def lexical_request(run: Run, lane: str, limit: int) -> index_pb2.PartitionSearchRequest:
    """A lexical lane's search of the run's plan, without partitions, with the request's admission."""
    request = index_pb2.PartitionSearchRequest(plan=run.plan, lane=lane, limit=limit, with_snippets=True)
    admission = run.controls.partition_admission()
    if admission is not None:
        request.admission.CopyFrom(admission)
    return request


def partition_anchor(partition: int, anchor: Anchor | None) -> index_pb2.PartitionAnchor:
    """The partition to search, paging after its cursor anchor when it has one."""
    if anchor is None:
        return index_pb2.PartitionAnchor(partition=partition)
    return index_pb2.PartitionAnchor(
        partition=partition,
        has_after=True,
        after_score=anchor.key,
        after_time_ms=int(anchor.key),
        after_session_id=anchor.session_id,
    )


def _merged(
    run: Run,
    lane: str,
    fanned: Fanned[index_pb2.PartitionSearchResponse],
    depth: int,
    started: float,
    one_copy: bool,
) -> list[LaneHit]:
    """The partitions' answers merged into the lane's top `depth`, with the lane's timings; each hit with
    the replica that served it where there is a choice of replicas (not `one_copy`)."""
    tagged = [
        [
            LaneHit(h.session.id, partition_hit=h, partition=p, node="" if one_copy else fanned.served_by[p])
            for h in r.hits
        ]
        for p, r in fanned.results.items()
    ]
    answered = ms(started)
    merged = heapq.merge(*tagged, key=lambda h: _partition_order(h.partition_hit))
    top = [h for _, h in zip(range(depth), merged, strict=False)]
    timing, merge, slowest, partition = _LEXICAL_TIMINGS[lane]
    run.timings[timing] = answered
    run.timings[merge] = ms(started) - answered
    if fanned.results:
        last = max(fanned.results.values(), key=lambda r: r.elapsed_ms)
        run.timings[slowest] = last.elapsed_ms
        run.timings[f"{partition}rank"] = last.rank_ms
        run.timings[f"{partition}hydrate"] = last.hydrate_ms
        run.timings[f"{partition}snippets"] = last.snippets_ms
    return top


def _lane_of(fanned: Fanned[index_pb2.PartitionLanes], search: int) -> Fanned[index_pb2.PartitionSearchResponse]:
    """One search's answers out of a SearchLanes fan-out."""
    results = {p: r.searches[search] for p, r in fanned.results.items()}
    return Fanned(results, dict(fanned.served_by), dict(fanned.missing))


def _partition_order(hit: index_pb2.PartitionHit) -> tuple[float, int, str]:
    if hit.ranked:
        return (-hit.score, 0, hit.session.id)
    return (0.0, -hit.sort_time_ms, hit.session.id)
