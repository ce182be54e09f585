"""The coordinator (Quickwit's root): compile the query, fan out to the partitions (through the
cluster client, cluster_client.py) and the vector node, gather, merge, fuse.

Lanes: dialogue (BM25 over message text, merged across partitions), actions (BM25 over tool_use /
tool_result text, merged the same way; reported by rank, score_kind null), semantic (nearest sessions
on the vector node, filtered by an allow-list the partitions compute), hybrid (fusion of the dialogue,
action and vector lanes: RRF at k=60 by default). `auto` resolves to dialogue, or to semantic when the
query's only text is a semantic leaf, from the query alone: it never asks the vector node first. Semantic and
hybrid fail SEMANTIC_UNAVAILABLE when there are no vectors: no silent fallback to a lexical lane.

Seed 003's controls (controls.py) are validated before any node is asked, then the capability check
(a vector lane needs a vector node with an embedder), so an empty archive bypasses neither. Lexical
admission runs on the partitions; the vector threshold here, on the distance-ordered list (exact); then
fusion (fusion.py); then min_score on the normalized retrieval score, before the page is cut: hits
below it are dropped, never back-filled, and a cursor walk ends there. Every hit's `scores` is
computed whatever the request says (so nothing can depend on include_scores) and dropped from the
page unless it asked for them.

Paging: `offset` (best effort), or a cursor (cursors.py) for a stable walk. On the lexical lanes each
partition pages after its own anchor, so a walk serves every session that matched when it started
exactly once while sessions are being ingested: a new session sorting before a partition's anchor is
never served and never shifts later pages; one sorting after it may appear on a later page. On the
semantic and hybrid lanes the anchor applies after fusion, here, over each lane's top `fusion_depth`: a
cursor walk there ends with the fused list, and ingest between pages can reorder what fusion ranks.

Partial results: a partition none of whose replicas answered is left out and named in the envelope's
`missing` (with `partial`), or fails the request PARTITION_UNAVAILABLE when it requires a complete
answer. A cursor page that missed a partition anchors nothing there: that partition's walk starts on a
later page."""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

from quarry.core import auth, telemetry
from quarry.core.errors import QuarryError
from quarry.core.lanes import LANES
from quarry.core.vocab import ORIGINS
from quarry.dsl import CompiledQuery, compile_query, explain
from quarry.dsl.reading import PROSE, QUERY_LANGUAGE, READINGS, read, without_field_clauses
from quarry.query import controls, cursors, limits, projections, unit_cursors, units
from quarry.query.assertions import AssertionRouter
from quarry.query.cluster_client import ClusterClient, Fanned, missing_partitions, partitions_of, require
from quarry.query.diagnostics import (
    VECTOR_LANES,
    Found,
    empty_result_caveats,
    named_origins,
    unread_origin_caveats,
    what_would_find,
)
from quarry.query.envelope import action_match, channel_scores, lexical_match, vector_match
from quarry.query.facets import FacetCounter
from quarry.query.fusion import (
    FUSION_DEPTH,
    Channels,
    FusedHit,
    FusionSpec,
    bm25_retrieval,
    fuse,
    fused_hit,
    similarity,
    vector_retrieval,
)
from quarry.query.plans import resolve_semantic_leaves, without_text
from quarry.query.refs import RefResolver
from quarry.query.scatter import Deadline, both, call, gather
from quarry.query.scopes import check_named_scopes
from quarry.query.status import cluster_status
from quarry.query.term_stats import GlobalTermStats
from quarry.query.topology import Topology
from quarry.v1 import (
    errors_pb2,
    index_pb2,
    plan_pb2,
    query_pb2,
    units_pb2,
    vector_pb2,
    vector_pb2_grpc,
)

RANKING_POLICY = "mixed-bm25-rrf-vector"
RANKING_POLICY_VERSION = 3  # 2: BM25 with the archive's term statistics in every partition (term_stats.py);
# 3: fusion scales a session's sum to the channels that could rank it (fusion.py)
DEFAULT_LIMIT = 20
VECTOR_STATE_S = 2.0  # how long a look at whether the vector node can rank serves the searches after it
VECTOR_PROBE_S = 0.3  # how long that look may take: a vector node that does not answer costs a search no more
DEFAULT_UNIT_LIMIT = 50
DEFAULT_DEADLINE_MS = 5000.0
SEMANTIC_LEAF_DEPTH = 100  # sessions a `semantic:` leaf admits
LEXICAL_LANES = {"dialogue": lexical_match, "actions": action_match}  # lane -> its hits' evidence

_tracer = telemetry.tracer("quarry.query")
_T = TypeVar("_T")


@dataclass
class LaneHit:
    """One session in one lane's ranking, with what that lane knows about why it matched."""

    session_id: str
    partition_hit: index_pb2.PartitionHit | None = None
    vector_hit: vector_pb2.VectorHit | None = None
    partition: int = cursors.GLOBAL  # the lexical partition it came from
    node: str = ""  # the replica that served it


@dataclass
class _Run:
    """What one search carries through its lanes: the plan, its budget, and what it reports."""

    plan: plan_pb2.QueryPlan
    compiled: CompiledQuery
    deadline: Deadline
    controls: controls.Effective
    vector_stats: vector_pb2.VectorStats | None = None  # from the capability check, for vector lanes
    timings: dict[str, float] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    missing: dict[int, str] = field(default_factory=dict)  # partitions no replica answered for, and why
    # Hybrid: the lexical lanes answer rank-only; the page's hits are explained afterwards by the lane
    # whose evidence they show (`evidence`: session id -> lane), with the term statistics it ranked by.
    evidence: dict[str, str] = field(default_factory=dict)
    lane_stats: dict[str, index_pb2.GlobalTermStats] = field(default_factory=dict)
    # Hybrid: what each channel found, from which the page's fused hits are built.
    channels: Channels | None = None


class Coordinator:
    def __init__(
        self,
        topology: Topology,
        vector_address: str | None,
        ingest_address: str | None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        """`topology`: the cluster's partitions and replicas (a cluster on the log also carries its NATS
        connection, through which assertion writes go); `clock` gives the time (epoch ms) relative
        dates (`since:7d`, `yesterday`) count from; the wall clock by default."""
        self.clock = clock
        self.vector_address = vector_address
        self.ingest_address = ingest_address
        self.cluster = ClusterClient(topology)
        self.assertions = AssertionRouter(self.cluster, topology.assertion_log(self.cluster))
        self.refs = RefResolver(self.cluster, self.assertions)
        self.facets = FacetCounter(self.cluster, self.compile, self.with_semantic_leaves_resolved)
        self.term_stats = GlobalTermStats(self.cluster)
        self.vector = (
            vector_pb2_grpc.VectorServiceStub(telemetry.traced_channel(vector_address)) if vector_address else None
        )
        self._vector_state = (-math.inf, False)  # (when seen, whether the vector node could rank)

    # ----- search -------------------------------------------------------------------------------

    def search(self, request: query_pb2.SearchRequest, diagnose: bool = True) -> query_pb2.SearchEnvelope:
        """One page of ranked sessions. `diagnose`: an empty first page says what would find something
        (asked by searching again: off for those searches themselves)."""
        started = time.perf_counter()
        limit, offset = limits.page(request.limit, request.offset, DEFAULT_LIMIT)
        requested = request.lane or "auto"
        if requested not in LANES:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"lane {requested!r} is not one of {', '.join(LANES)}",
                parameter="lane",
            )
        if request.cursor and offset:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, "a cursor continues a walk: it takes no offset", parameter="offset"
            )
        cursor = cursors.decode(request.cursor) if request.cursor else None
        deadline = Deadline(limits.deadline_ms(request.deadline_ms, DEFAULT_DEADLINE_MS))
        now_ms = cursor.now_ms if cursor else self._now_or_wall_clock()
        reading = read(request.query, _forced_reading(request.reading))
        with _tracer.start_as_current_span("quarry.parse"):
            compiled = compile_query(reading.query, now_ms=now_ms)
            if reading.written and compiled.semantic_text:
                compiled = dataclasses.replace(compiled, semantic_text=reading.written)
        check_named_scopes(compiled.plan)
        parse_ms = _ms(started)
        if compiled.kind != "sessions":
            raise QuarryError(
                errors_pb2.UNSUPPORTED_FORM,
                f"`{compiled.unit} where …` selects rows, not sessions: ask QueryUnits (HTTP `/api/query-units`; "
                "on the command line, `quarry '…'` without `search`)",
            )
        if compiled.lane:
            if requested not in ("auto", compiled.lane):
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"the query asks for lane:{compiled.lane} and the request for lane {requested}: give one",
                    parameter="lane",
                )
            requested = compiled.lane
        prose = request.query if reading.how == PROSE else None
        lane = _resolve_lane(requested, compiled, prose is not None and self._vectors_usable(deadline))
        supplied = request.controls if request.HasField("controls") else None
        effective = controls.validate(supplied, lane, compiled.has_text, prose)
        bound = cursors.binding(compiled.plan, lane, limit, self.cluster.partitions, effective.digest())
        if cursor is not None:
            cursors.check(cursor, bound)
        vector_stats = self._require_embedder(effective.vector_requirement, deadline)
        anchors = cursor.anchors if cursor else {}
        plan = self.with_semantic_leaves_resolved(compiled.plan, deadline)
        run = _Run(plan, compiled, deadline, effective, vector_stats, timings={"parse": parse_ms})
        depth = offset + limit + 1
        if lane in LEXICAL_LANES:
            lane_hits = self._lexical(run, depth, anchors, lane)
            hits = [_lexical_hit(h, lane) for h in lane_hits]
            hits = _above(hits, effective.min_score, lambda h: h.match.scores.retrieval)
            next_anchors = _partition_anchors(lane_hits[: min(len(hits), offset + limit)], anchors)
            page, more = hits[offset : offset + limit], len(hits) > offset + limit
        else:
            if lane == "semantic":
                semantic_depth = depth if cursor is None else max(FUSION_DEPTH, depth)
                hits = [_vector_hit(h) for h in self._semantic(run, semantic_depth)]
                ordered = [_Ordered(h.session.id, h.match.score, h.match.scores.retrieval, h) for h in hits]
            else:  # the fused order; only the page's hits are built (fused_hit)
                ordered = [
                    _Ordered(f.session_id, f.score, f.retrieval, f) for f in self._hybrid(run, fusion_depth(depth))
                ]
            ordered = _above(ordered, effective.min_score, lambda o: o.retrieval)
            if cursors.GLOBAL in anchors:
                ordered = _after(ordered, anchors[cursors.GLOBAL], lower_is_better=lane == "semantic")
            consumed = ordered[: offset + limit]
            last = consumed[-1] if consumed else None
            next_anchors = {cursors.GLOBAL: cursors.Anchor(last.score, last.session_id)} if last else {}
            page = [o.hit(run.channels) for o in ordered[offset : offset + limit]]
            more = len(ordered) > offset + limit
        served = cursor.served if cursor else 0
        for rank, hit in enumerate(page, start=served + offset + 1):
            hit.match.rank = rank
        next_cursor = ""
        if more:
            next_cursor = cursors.encode(cursors.Cursor(bound, now_ms, served + offset + limit, next_anchors))
        if not effective.include_scores:
            for hit in page:
                hit.match.ClearField("scores")
        self._complete(run, page)
        if plan.projections:
            started_projections = time.perf_counter()
            projections.attach(self.cluster, plan.projections, page, deadline, run.missing)
            run.timings["projections"] = _ms(started_projections)
        require(run.missing, request.require_complete)
        if diagnose and not page and cursor is None and offset == 0 and not run.missing:
            run.caveats.extend(self._why_empty(run.plan, lane, deadline))
            run.caveats.extend(what_would_find(self._found_elsewhere(request, reading.how, lane, compiled, deadline)))
        run.timings["total"] = _ms(started)
        return query_pb2.SearchEnvelope(
            query=request.query,
            requested_lane=requested,
            retrieval_lane=lane,
            ranking_policy=RANKING_POLICY,
            ranking_policy_version=RANKING_POLICY_VERSION,
            hits=page,
            next_cursor=next_cursor,
            caveats=run.caveats,
            limit=limit,
            offset=offset,
            timings_ms=run.timings,
            controls=effective.to_proto(),
            partial=bool(run.missing),
            missing=missing_partitions(run.missing),
            reading=reading.how,
        )

    def _vectors_usable(self, deadline: Deadline) -> bool:
        """Whether the vector node can rank now (an embedder, and vectors to search), as last seen within
        VECTOR_STATE_S: prose goes to the hybrid lane only then. A node that does not answer counts as not
        usable; the search stays lexical."""
        if self.vector is None:
            return False
        now = time.monotonic()
        if now - self._vector_state[0] > VECTOR_STATE_S:
            try:
                request = vector_pb2.VectorStatsRequest(recent_backlog=True)
                timeout = min(VECTOR_PROBE_S, deadline.remaining_s())
                stats: vector_pb2.VectorStats = self.vector.Stats(request, timeout=timeout)
                usable = bool(stats.embedder and stats.ready and stats.vectors > 0)
            except (grpc.RpcError, QuarryError):  # down, slow or out of time: this search stays lexical
                usable = False
            self._vector_state = (now, usable)
        return self._vector_state[1]

    def _require_embedder(self, parameter: str, deadline: Deadline) -> vector_pb2.VectorStats | None:
        """The vector node's stats when `parameter` (a vector lane, a semantic threshold, a vector
        weight) needs vectors; SEMANTIC_UNAVAILABLE, naming it, when no vector node has an embedder.
        Asked before the archive is, so an empty archive cannot answer "nothing" instead."""
        if not parameter:
            return None
        if self.vector is None:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors: this cluster has no vector node",
                parameter=parameter,
            )
        request = vector_pb2.VectorStatsRequest(recent_backlog=True)  # one hop: no partition is asked
        stats: vector_pb2.VectorStats = gather(["vector-0"], [call(self.vector.Stats, request)], deadline)[0]
        if not stats.embedder:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors, and the vector node has no embedder configured (start it with "
                "--embedder minilm or --embedder openai:<base_url>#<model>)",
                parameter=parameter,
            )
        return stats

    def _why_empty(self, plan: plan_pb2.QueryPlan, lane: str, deadline: Deadline) -> list[str]:
        """Seed 000's empty-result diagnostics that apply, from the cluster's state."""
        partitions = self.cluster.fan_out("Stats", lambda ps: index_pb2.PartitionStatsRequest(partitions=ps), deadline)
        vectors = None
        if lane in VECTOR_LANES and self.vector is not None:
            vectors = gather(["vector-0"], [call(self.vector.Stats, vector_pb2.VectorStatsRequest())], deadline)[0]
        stored = self._stored_origins(deadline) if named_origins(plan) else None
        return empty_result_caveats(plan, lane, partitions.ordered(), vectors, stored)

    def _found_elsewhere(
        self, request: query_pb2.SearchRequest, how: str, lane: str, compiled: CompiledQuery, deadline: Deadline
    ) -> Found:
        """What other searches of the text find, where they could (quarry.query.diagnostics.Found): each
        one page of one hit, within what is left of the request's deadline."""

        def finds(query: str, lane: str, reading: str) -> bool:
            probe = query_pb2.SearchRequest(query=query, lane=lane, reading=reading, limit=1, controls=request.controls)
            probe.deadline_ms = max(1.0, deadline.remaining_s() * 1000)
            try:
                return bool(self.search(probe, diagnose=False).hits)
            except QuarryError:  # a probe that cannot run (a control of another lane, no time left) finds nothing
                return False

        if not compiled.has_text:
            return Found()
        words, filters = without_field_clauses(request.query) if how == QUERY_LANGUAGE else ("", ())
        return Found(
            as_prose=finds(request.query, "dialogue", PROSE) if how == QUERY_LANGUAGE else None,
            without_filters=finds(words, lane, QUERY_LANGUAGE) if filters and words else None,
            filters=filters,
            on_actions=finds(request.query, "actions", how) if lane == "dialogue" else None,
            on_meaning=self._vectors_usable(deadline) if lane not in VECTOR_LANES else None,
        )

    def _stored_origins(self, deadline: Deadline) -> set[str]:
        """The origins the archive holds sessions of (each partition asked for one session per origin;
        the query language admits no other origin names)."""
        stored = set()
        for origin in sorted(ORIGINS):
            where = plan_pb2.Predicate(field=plan_pb2.FieldClause(field="origin", values=[origin]))
            plan = plan_pb2.QueryPlan(unit="sessions", where=where)

            def build(partitions: list[int], plan: plan_pb2.QueryPlan = plan) -> index_pb2.PartitionSearchRequest:
                anchors = [index_pb2.PartitionAnchor(partition=p) for p in partitions]
                return index_pb2.PartitionSearchRequest(plan=plan, limit=1, partitions=anchors)

            if any(r.hits for r in self.cluster.fan_out("SearchSessions", build, deadline).ordered()):
                stored.add(origin)
        return stored

    def compile(self, query: str) -> CompiledQuery:
        """The query compiled, and refused when it names a scope the caller may not read."""
        compiled = compile_query(query, now_ms=self._now())
        check_named_scopes(compiled.plan)
        return compiled

    def explain(self, query: str, reading: str = "") -> query_pb2.ExplainResponse:
        """How the query is read and the typed AST and plan it compiles to (dates resolved against this
        node's clock)."""
        how = read(query, _forced_reading(reading))
        explained = explain(how.query, now_ms=self._now())
        explained.query, explained.reading, explained.query_read = query, how.how, how.query
        return explained

    def _now(self) -> int | None:
        return self.clock() if self.clock else None

    def _now_or_wall_clock(self) -> int:
        now = self._now()
        return int(time.time() * 1000) if now is None else now

    def with_semantic_leaves_resolved(self, plan: plan_pb2.QueryPlan, deadline: Deadline) -> plan_pb2.QueryPlan:
        if not plan.HasField("where"):
            return plan
        resolved = plan_pb2.QueryPlan()
        resolved.CopyFrom(plan)

        def nearest(leaf: plan_pb2.Predicate) -> list[str]:
            request = vector_pb2.VectorSearchRequest(limit=SEMANTIC_LEAF_DEPTH)
            if leaf.WhichOneof("node") == "near_session":
                self._require_visible_probe(leaf.near_session, deadline)
                request.near_session_id = leaf.near_session
            else:
                request.text = leaf.semantic
            visible = self._visible_sessions(deadline)
            if visible is not None:
                request.allow_session_ids.extend(visible)
                request.restrict_to_allowed = True
            return [hit.session_id for hit in self._vector_call(request, deadline).hits]

        resolved.where.CopyFrom(resolve_semantic_leaves(plan.where, nearest))
        return resolved

    def _lexical(
        self,
        run: _Run,
        depth: int,
        anchors: dict[int, cursors.Anchor] | None = None,
        lane: str = "dialogue",
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
                node_request.partitions.extend(_anchor(p, anchors.get(p)) for p in partitions)
                return node_request

            affinity = {p: a.node for p, a in anchors.items() if a.node}
            fanned = self.cluster.fan_out("SearchSessions", build, run.deadline, prefer=affinity)
        run.missing.update(fanned.missing)
        return self._merged(run, lane, fanned, depth, started)

    def _both_lexical(self, run: _Run, depth: int) -> tuple[list[LaneHit], list[LaneHit]]:
        """The dialogue and actions lanes' merged top `depth`, rank-only (session ids and scores: see
        `_complete`), both asked of each node in one call (SearchLanes)."""
        started = time.perf_counter()
        with _tracer.start_as_current_span("quarry.lane.lexical"):
            requests = both(
                lambda: self._ranked_request(run, "dialogue", depth, rank_only=True),
                lambda: self._ranked_request(run, "actions", depth, rank_only=True),
            )
            fanned = self.cluster.fan_out(
                "SearchLanes",
                lambda partitions: index_pb2.PartitionLanesRequest(
                    searches=requests, partitions=[_anchor(p, None) for p in partitions]
                ),
                run.deadline,
            )
        run.missing.update(fanned.missing)
        text, action = (
            self._merged(run, lane, _lane_of(fanned, i), depth, started)
            for i, lane in enumerate(("dialogue", "actions"))
        )
        return text, action

    def _ranked_request(
        self, run: _Run, lane: str, depth: int, rank_only: bool = False
    ) -> index_pb2.PartitionSearchRequest:
        """The lane's search without partitions, with the archive's term statistics when it ranks and
        there are several partitions (kept in `run.lane_stats` for `_complete`)."""
        request = self._lexical_request(run, lane, depth)
        request.rank_only = rank_only
        ranked = run.compiled.has_text or run.plan.HasField("ranking_text")
        if ranked and self.cluster.partitions > 1:
            stats = self.term_stats.for_search(request, run.deadline)
            if stats is not None:
                request.global_stats.CopyFrom(stats)
                run.lane_stats[lane] = stats
        return request

    def _merged(self, run: _Run, lane: str, fanned: Fanned, depth: int, started: float) -> list[LaneHit]:
        """The partitions' answers merged into the lane's top `depth`, with the lane's timings."""
        tagged = [
            [LaneHit(h.session.id, partition_hit=h, partition=p, node=fanned.served_by[p]) for h in r.hits]
            for p, r in fanned.results.items()
        ]
        answered = _ms(started)
        merged = heapq.merge(*tagged, key=lambda h: _partition_order(h.partition_hit))
        top = [h for _, h in zip(range(depth), merged, strict=False)]
        timing, slowest, partition = _LEXICAL_TIMINGS[lane]
        run.timings[timing] = answered
        run.timings["merge" if lane == "dialogue" else "actions_merge"] = _ms(started) - answered
        if fanned.results:
            last = max(fanned.results.values(), key=lambda r: r.elapsed_ms)
            run.timings[slowest] = last.elapsed_ms
            run.timings[f"{partition}rank"] = last.rank_ms
            run.timings[f"{partition}hydrate"] = last.hydrate_ms
            run.timings[f"{partition}snippets"] = last.snippets_ms
        return top

    @staticmethod
    def _lexical_request(run: _Run, lane: str, limit: int) -> index_pb2.PartitionSearchRequest:
        request = index_pb2.PartitionSearchRequest(plan=run.plan, lane=lane, limit=limit, with_snippets=True)
        admission = run.controls.partition_admission()
        if admission is not None:
            request.admission.CopyFrom(admission)
        return request

    def _semantic(self, run: _Run, depth: int) -> list[LaneHit]:
        text = run.compiled.semantic_text.strip()
        if not text:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, "the semantic lane needs query text to embed", parameter="query"
            )
        started = time.perf_counter()
        allowed = self._allow_list(run)
        with _tracer.start_as_current_span("quarry.lane.semantic"):
            response = self._vector_search(text, depth, allowed, run.deadline)
        run.timings["embed"] = response.embed_ms
        run.timings["vector"] = _ms(started)
        stats = run.vector_stats
        if stats is not None and stats.pending:
            run.caveats.append(
                f"{stats.pending} messages are still waiting to be embedded: the semantic lane covers the "
                f"{stats.vectors} embedded so far (`quarry status` shows the backlog)"
            )
        threshold = run.controls.min_similarity
        admitted = [h for h in response.hits if threshold is None or similarity(h.distance) >= threshold]
        return [LaneHit(h.session_id, vector_hit=h) for h in admitted]

    def _hybrid(self, run: _Run, depth: int) -> list[FusedHit]:
        """Fusion of the dialogue, action and vector lanes' top `depth`, run concurrently. Without query
        text only the vector lane ranks; a missing vector lane fails the request (SEMANTIC_UNAVAILABLE)."""
        text: list[index_pb2.PartitionHit] | None = None
        action: list[index_pb2.PartitionHit] | None = None
        if run.compiled.has_text:
            (text_hits, action_hits), semantic = both(
                lambda: self._both_lexical(run, depth), lambda: self._semantic(run, depth)
            )
            text = [h.partition_hit for h in text_hits if h.partition_hit is not None]
            action = [h.partition_hit for h in action_hits if h.partition_hit is not None]
            # The dialogue match is the evidence where both lanes found a session (as hybrid_hits says).
            run.evidence.update({h.session.id: "actions" for h in action})
            run.evidence.update({h.session.id: "dialogue" for h in text})
        else:
            semantic = self._semantic(run, depth)
        started = time.perf_counter()
        effective = run.controls
        spec = FusionSpec(effective.method, effective.rank_constant, effective.weights)
        fused, run.channels = fuse(text, action, [h.vector_hit for h in semantic if h.vector_hit is not None], spec)
        run.timings["fuse"] = _ms(started)
        return fused

    def _visible_sessions(self, deadline: Deadline) -> list[str] | None:
        """Every session the caller may read, when a scope limits the call (None: no limit): the allow-list
        the vector node needs, which knows no scopes."""
        if auth.SCOPES.get() is None:
            return None
        fanned = self.cluster.fan_out(
            "MatchSessionIds",
            lambda partitions: index_pb2.MatchSessionIdsRequest(partitions=partitions),
            deadline,
        )
        return sorted(sid for r in fanned.results.values() for sid in r.session_ids)

    def _require_visible_probe(self, session_id: str, deadline: Deadline) -> None:
        """`near:id:` of a session the caller may not read fails exactly as one of an unknown session."""
        if auth.SCOPES.get() is None:
            return
        if not self.cluster.holds_session(session_id, deadline):
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"session {session_id!r} has no embedded messages (unknown, or not embedded yet)",
                parameter="near_session_id",
            )

    def _allow_list(self, run: _Run) -> list[str] | None:
        """Sessions the structured part of the query admits (and the caller may read); None when that is
        every session."""
        where = without_text(run.plan.where) if run.plan.HasField("where") else None
        if where is None:
            return self._visible_sessions(run.deadline)
        fanned = self.cluster.fan_out(
            "MatchSessionIds",
            lambda partitions: index_pb2.MatchSessionIdsRequest(where=where, partitions=partitions),
            run.deadline,
        )
        run.missing.update(fanned.missing)
        return sorted(sid for r in fanned.results.values() for sid in r.session_ids)

    def _vector_search(
        self, text: str, limit: int, allowed: list[str] | None, deadline: Deadline
    ) -> vector_pb2.VectorSearchResponse:
        """The nearest sessions."""
        request = vector_pb2.VectorSearchRequest(
            text=text, limit=limit, allow_session_ids=allowed or [], restrict_to_allowed=allowed is not None
        )
        return self._vector_call(request, deadline)

    def _vector_call(
        self, request: vector_pb2.VectorSearchRequest, deadline: Deadline
    ) -> vector_pb2.VectorSearchResponse:
        response: vector_pb2.VectorSearchResponse = gather(
            ["vector-0"], [call(self._vector_node().Search, request)], deadline
        )[0]
        return response

    def _vector_node(self) -> vector_pb2_grpc.VectorServiceStub:
        if self.vector is None:
            raise QuarryError(errors_pb2.SEMANTIC_UNAVAILABLE, "this cluster has no vector node")
        return self.vector

    def _complete(self, run: _Run, page: list[query_pb2.SearchHit]) -> None:
        """Give the page's hits what the lanes left out, in one call per node (SearchLanes): the evidence
        and summary of hits from rank-only lexical answers (hybrid), their partitions searching again
        with the same request (same term statistics, so the same best message) restricted to these
        sessions; the summary of hits only the vector lane found. A hit whose partition does not answer
        keeps its id alone, and the partition is reported missing."""
        lanes = {lane: [h for h in page if run.evidence.get(h.session.id) == lane] for lane in ("dialogue", "actions")}
        lanes = {lane: hits for lane, hits in lanes.items() if hits}
        bare = [h for h in page if not h.session.origin and h.session.id not in run.evidence]
        if not lanes and not bare:
            return
        started = time.perf_counter()
        count = self.cluster.partitions
        wanted = {lane: partitions_of([h.session.id for h in hits], count) for lane, hits in lanes.items()}
        summaries = partitions_of([h.session.id for h in bare], count)
        requests = {lane: self._restricted(run, lane) for lane in lanes}

        def build(partitions: list[int]) -> index_pb2.PartitionLanesRequest:
            searches = []
            for lane, request in requests.items():
                ids = [sid for p in partitions for sid in wanted[lane].get(p, ())]
                node_request = index_pb2.PartitionSearchRequest()
                node_request.CopyFrom(request)
                named = plan_pb2.Predicate(session_ids=plan_pb2.SessionIdSet(ids=ids))
                where = node_request.plan.where
                if node_request.plan.HasField("where"):
                    named = plan_pb2.Predicate(all=plan_pb2.PredicateList(items=[where, named]))
                where.CopyFrom(named)
                node_request.limit = max(1, len(ids))
                searches.append(node_request)
            return index_pb2.PartitionLanesRequest(
                searches=searches,
                partitions=[_anchor(p, None) for p in partitions],
                summary_session_ids=[sid for p in partitions for sid in summaries.get(p, ())],
            )

        involved = {p for grouped in (*wanted.values(), summaries) for p in grouped}
        fanned = self.cluster.fan_out("SearchLanes", build, run.deadline, partitions=involved)
        run.missing.update(fanned.missing)
        for i, (lane, hits) in enumerate(lanes.items()):
            explained = {h.session.id: h for r in fanned.results.values() for h in r.searches[i].hits}
            for hit in hits:
                if (found := explained.get(hit.session.id)) is not None:
                    _explained(hit, found, lane)
        found_sessions = {s.id: s for r in fanned.results.values() for s in r.summaries}
        for hit in bare:
            if hit.session.id in found_sessions:
                hit.session.CopyFrom(found_sessions[hit.session.id])
        run.timings["complete"] = _ms(started)

    def _restricted(self, run: _Run, lane: str) -> index_pb2.PartitionSearchRequest:
        """The lane's request as it ranked (same term statistics), to explain hits it ranked rank-only."""
        request = self._lexical_request(run, lane, 0)
        if lane in run.lane_stats:
            request.global_stats.CopyFrom(run.lane_stats[lane])
        return request

    # ----- unit rows ----------------------------------------------------------------------------

    def query_units(self, request: query_pb2.QueryUnitsRequest) -> query_pb2.QueryUnitEnvelope:
        limit, offset = limits.page(request.limit, request.offset, DEFAULT_UNIT_LIMIT)
        if request.cursor and offset:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, "a cursor continues a walk: it takes no offset", parameter="offset"
            )
        cursor = unit_cursors.decode(request.cursor) if request.cursor else None
        deadline = Deadline(limits.deadline_ms(request.deadline_ms, DEFAULT_DEADLINE_MS))
        now_ms = cursor.now_ms if cursor else self._now_or_wall_clock()
        compiled = compile_query(request.query, now_ms=now_ms)
        check_named_scopes(compiled.plan)
        if compiled.kind != "units":
            raise QuarryError(
                errors_pb2.UNSUPPORTED_FORM,
                "this query selects sessions, not rows: start it with a unit source (`messages where`, "
                "`actions where`, `files where`, `runs where`, …), or use Search",
            )
        # Bound to the page's effective limit (a `| limit` in the query narrows the caller's), which the
        # envelope echoes: the next page's command repeats it.
        page_limit, page_offset, _ = units.page_window(compiled.plan, limit, offset)
        limits.check_offset(page_offset, "offset", f"offset {offset} and the query's `| offset` stages")
        bound = unit_cursors.binding(compiled.plan, page_limit, self.cluster.partitions)
        if cursor is not None:
            cursors.check(cursor, bound)
            if units.grouped_by(compiled.plan) is not None:
                raise QuarryError(errors_pb2.INVALID_REQUEST, "an aggregate has no cursor", parameter="cursor")
        plan = self.with_semantic_leaves_resolved(compiled.plan, deadline)
        continuing = cursor is not None
        wanted = units.partition_limit(plan, limit, offset, continuing)

        def build(partitions: list[int]) -> index_pb2.PartitionUnitsRequest:
            request = index_pb2.PartitionUnitsRequest(plan=plan, limit=wanted, partitions=partitions)
            if cursor is not None:
                request.after.CopyFrom(cursor.after)
            return request

        def next_cursor(after: index_pb2.UnitAnchor) -> str:
            return unit_cursors.encode(unit_cursors.UnitCursor(bound, now_ms, after))

        fanned = self.cluster.fan_out("QueryUnits", build, deadline)
        require(fanned.missing, request.require_complete)
        envelope = units.envelope(request.query, plan, fanned.ordered(), limit, offset, continuing, next_cursor)
        if not envelope.rows and not envelope.groups:
            envelope.caveats.extend(unread_origin_caveats(plan))
        envelope.partial = bool(fanned.missing)
        envelope.missing.extend(missing_partitions(fanned.missing))
        return envelope

    # ----- status -------------------------------------------------------------------------------

    def status(self) -> query_pb2.ClusterStatusResponse:
        return cluster_status(self.cluster, self.vector, self.vector_address, self.ingest_address)


_LEXICAL_TIMINGS = {  # the lane's fan-out, its slowest partition, that partition's stages
    "dialogue": ("lexical", "slowest_partition", "partition_"),
    "actions": ("actions", "slowest_actions_partition", "actions_partition_"),
}


def _lane_of(fanned: Fanned, search: int) -> Fanned:
    """One search's answers out of a SearchLanes fan-out."""
    results = {p: r.searches[search] for p, r in fanned.results.items()}
    return Fanned(results, dict(fanned.served_by), dict(fanned.missing))


def _explained(hit: query_pb2.SearchHit, found: index_pb2.PartitionHit, lane: str) -> None:
    """The hit given the summary and evidence its lane's explained answer has."""
    hit.session.CopyFrom(found.session)
    evidence = lexical_match(found) if lane == "dialogue" else action_match(found)
    match = hit.match
    match.matched_terms[:] = evidence.matched_terms
    match.snippet, match.match_surface = evidence.snippet, evidence.match_surface
    match.message_id, match.target_ref = evidence.message_id, evidence.target_ref


def _partition_order(hit: index_pb2.PartitionHit) -> tuple[float, int, str]:
    if hit.ranked:
        return (-hit.score, 0, hit.session.id)
    return (0.0, -hit.sort_time_ms, hit.session.id)


def _anchor(partition: int, anchor: cursors.Anchor | None) -> index_pb2.PartitionAnchor:
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


def _partition_anchors(consumed: list[LaneHit], previous: dict[int, cursors.Anchor]) -> dict[int, cursors.Anchor]:
    """Each partition's last consumed session (its BM25, or its sort time when unranked) and the replica
    that served it; a partition that served nothing more keeps its previous anchor."""
    anchors = dict(previous)
    for hit in consumed:
        assert hit.partition_hit is not None
        key = hit.partition_hit.score if hit.partition_hit.ranked else float(hit.partition_hit.sort_time_ms)
        anchors[hit.partition] = cursors.Anchor(key, hit.session_id, hit.node)
    return anchors


@dataclass(frozen=True)
class _Ordered:
    """A session in a lane ordered over the whole archive (semantic: distance, lower first; hybrid: fused
    score, higher first), with its retrieval score and what its hit is built from."""

    session_id: str
    score: float
    retrieval: float
    found: query_pb2.SearchHit | FusedHit

    def after(self, anchor: cursors.Anchor, lower_is_better: bool) -> bool:
        """Whether it sorts after a cursor's anchor (ties on the score: by session id)."""
        if self.score == anchor.key:
            return self.session_id > anchor.session_id
        return self.score > anchor.key if lower_is_better else self.score < anchor.key

    def hit(self, channels: Channels | None) -> query_pb2.SearchHit:
        if isinstance(self.found, FusedHit):
            assert channels is not None
            return fused_hit(self.found, channels)
        return self.found


def _after(ordered: list[_Ordered], anchor: cursors.Anchor, lower_is_better: bool) -> list[_Ordered]:
    """The sessions after a cursor's anchor: those after the anchor's session where the order still
    holds it with its score (fused ties are ordered by more than the score and the id), else by the
    score and the id."""
    for position, one in enumerate(ordered):
        if one.session_id == anchor.session_id and one.score == anchor.key:
            return ordered[position + 1 :]
    return [o for o in ordered if o.after(anchor, lower_is_better)]


def fusion_depth(wanted: int) -> int:
    """How many sessions each hybrid channel contributes to fill `wanted` fused hits: FUSION_DEPTH, or
    twice what is wanted when more are, because a fused list draws on the union of the channels, and a
    session low in one channel but present in another must still be there to be fused. On SciFact
    (bench/RESULTS.md), fusing each channel's top 200 for 100 hits raised recall@100 of RRF from 0.950
    to 0.965 with the same nDCG@10."""
    return max(FUSION_DEPTH, 2 * wanted)


def _resolve_lane(requested: str, compiled: CompiledQuery, prose_on_vectors: bool) -> str:
    """The lane `auto` runs: semantic for a query of meaning alone, hybrid for prose where vectors can
    rank (`prose_on_vectors`), dialogue otherwise."""
    if requested != "auto":
        return requested
    if not compiled.has_text and compiled.semantic_text:
        return "semantic"
    return "hybrid" if prose_on_vectors and compiled.has_text else "dialogue"


def _forced_reading(value: str) -> str:
    """SearchRequest.reading: "" (the text decides), prose or query; INVALID_REQUEST otherwise."""
    if value and value not in READINGS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"reading {value!r} is not one of {', '.join(READINGS)} (or empty: decided from the text)",
            parameter="reading",
        )
    return value


def _lexical_hit(lane_hit: LaneHit, lane: str) -> query_pb2.SearchHit:
    """A dialogue or actions hit: its evidence, and (ranked) its BM25 as scores."""
    partition_hit = lane_hit.partition_hit
    assert partition_hit is not None
    hit = _hit(lane_hit, LEXICAL_LANES[lane](partition_hit))
    if partition_hit.ranked:
        channel = {"text": partition_hit} if lane == "dialogue" else {"action": partition_hit}
        hit.match.scores.CopyFrom(channel_scores(bm25_retrieval(partition_hit.score), **channel))
    return hit


def _vector_hit(lane_hit: LaneHit) -> query_pb2.SearchHit:
    vector_hit = lane_hit.vector_hit
    assert vector_hit is not None
    hit = _hit(lane_hit, vector_match(vector_hit))
    hit.match.scores.CopyFrom(channel_scores(vector_retrieval(vector_hit.distance), vector=vector_hit))
    return hit


def _above(hits: list[_T], min_score: float | None, retrieval: Callable[[_T], float]) -> list[_T]:
    """The hits before the first whose retrieval score is below min_score: every lane's order is
    descending in it, so this drops exactly the hits below it, and nothing after them is served."""
    if min_score is None:
        return hits
    for i, hit in enumerate(hits):
        if retrieval(hit) < min_score:
            return hits[:i]
    return hits


def _hit(lane_hit: LaneHit, match: query_pb2.SessionSearchMatch) -> query_pb2.SearchHit:
    if lane_hit.partition_hit is not None:
        return query_pb2.SearchHit(session=lane_hit.partition_hit.session, match=match)
    return query_pb2.SearchHit(session=units_pb2.Session(id=lane_hit.session_id), match=match)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
