"""The coordinator (Quickwit's root): a search (docs/search-api.md#search) as named phases, each in its
own module, over the cluster client (cluster_client.py) and the vector node (vector_client.py).

1. prepare (here): read the text as prose or the query language, compile it, check the lane, the
   controls and the capability, resolve the query's semantic leaves;
2. rank (rank.py): run the lane to the depth the page needs;
3. page (paging.py): min_score, the cursor's anchors, the page cut, the next cursor;
4. complete (complete.py): explain only the page's hits;
5. project (projections.py): the rows of the query's `with` items;
6. diagnose (empty_results.py): what an empty first page says;
7. envelope (here).

Prepare checks in this order, so that an empty archive bypasses none of it: the page and the lane; the
query; the search controls (controls.py, docs/search-api.md#validation), before any node is asked;
then the capability (a vector lane, or a control that needs vectors, needs a vector node with an
embedder: SEMANTIC_UNAVAILABLE otherwise, never a silent fallback to a lexical lane). `auto` resolves to
dialogue, to semantic when the query's only text is a semantic leaf, or to hybrid for prose where the
vector node can rank: from the query alone, and at most a short look at the vector node, never a search.

Partial results (partial.py): a partition none of whose replicas answered is left out and named in the
envelope's `missing` (with `partial`), or fails the request PARTITION_UNAVAILABLE when it requires a
complete answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from quarry.core import telemetry
from quarry.core.errors import QuarryError
from quarry.core.in_process import LocalNode
from quarry.core.lanes import AUTO, DIALOGUE, HYBRID, LANES, SEMANTIC
from quarry.dsl import CompiledQuery, compile_query, explain
from quarry.dsl.reading import PROSE, READINGS, Reading, read
from quarry.query import controls, cursors, limits, paging, projections
from quarry.query.allow_lists import AllowLists
from quarry.query.assertions import AssertionRouter
from quarry.query.cluster_client import ClusterClient
from quarry.query.complete import complete
from quarry.query.empty_results import EmptyResults
from quarry.query.facets import FacetCounter
from quarry.query.partial import missing_partitions, require
from quarry.query.rank import Lanes
from quarry.query.refs import RefResolver
from quarry.query.run import Prepared, Run, ms
from quarry.query.scatter import Deadline
from quarry.query.scopes import check_named_scopes, compile_in_scope
from quarry.query.status import cluster_status
from quarry.query.term_stats import GlobalTermStats
from quarry.query.topology import Topology
from quarry.query.unit_search import query_units
from quarry.query.vector_client import VectorClient
from quarry.v1 import errors_pb2, query_pb2

RANKING_POLICY = "mixed-bm25-rrf-vector"
RANKING_POLICY_VERSION = 3  # 2: BM25 with the archive's term statistics in every partition (term_stats.py);
# 3: fusion scales a session's sum to the channels that could rank it (fusion.py)
DEFAULT_LIMIT = 20
DEFAULT_DEADLINE_MS = 5000.0

_tracer = telemetry.tracer("quarry.query")


class Coordinator:
    def __init__(
        self,
        topology: Topology,
        vector_address: str | None,
        ingest_address: str | None,
        clock: Callable[[], int] | None = None,
        local: LocalNode | None = None,
    ) -> None:
        """`topology`: the cluster's partitions and replicas (a cluster on the log also carries its NATS
        connection, through which assertion writes go); `clock` gives the time (epoch ms) relative
        dates (`since:7d`, `yesterday`) count from; the wall clock by default. `local`: the node of the
        topology this process is (holding the partitions itself), called in-process."""
        self.clock = clock
        self.ingest_address = ingest_address
        self.cluster = ClusterClient(topology, local)
        self.vector = VectorClient(vector_address)
        self.allow_lists = AllowLists(self.cluster, self.vector)
        self.assertions = AssertionRouter(self.cluster, topology.assertion_log(self.cluster))
        self.refs = RefResolver(self.cluster, self.assertions)
        self.facets = FacetCounter(self.cluster, self.compile, self.allow_lists.resolve_semantic_leaves)
        self.lanes = Lanes(self.cluster, GlobalTermStats(self.cluster), self.vector, self.allow_lists)
        self.empty_results = EmptyResults(self.cluster, self.vector, lambda probe: self.search(probe, diagnose=False))

    # ----- search -------------------------------------------------------------------------------

    def search(self, request: query_pb2.SearchRequest, diagnose: bool = True) -> query_pb2.SearchEnvelope:
        """One page of ranked sessions, in the module's phases. `diagnose`: an empty first page says what
        would find something (asked by searching again: off for those searches themselves)."""
        started = time.perf_counter()
        prepared = self._prepare(request, started)
        run = prepared.run
        page = paging.page(prepared, self.lanes.rank(prepared))
        complete(self.cluster, run, page.hits)
        self._project(run, page.hits)
        require(run.missing, request.require_complete)
        if diagnose and not page.hits and prepared.first_page and not run.missing:
            run.caveats.extend(self.empty_results.caveats(prepared))
        run.timings["total"] = ms(started)
        return _envelope(prepared, page)

    def _prepare(self, request: query_pb2.SearchRequest, started: float) -> Prepared:
        """The search checked and compiled, in the order the module says; `started`: when the search
        began (the `parse` timing runs from it)."""
        limit, offset = limits.page(request.limit, request.offset, DEFAULT_LIMIT)
        requested = _requested_lane(request.lane)
        limits.check_cursor_offset(request.cursor, offset)
        cursor = cursors.decode(request.cursor) if request.cursor else None
        deadline = Deadline(limits.deadline_ms(request.deadline_ms, DEFAULT_DEADLINE_MS))
        now_ms = cursor.now_ms if cursor else self._now_or_wall_clock()
        reading = read(request.query, _forced_reading(request.reading))
        compiled = _compiled(reading, now_ms)
        parse_ms = ms(started)
        requested = _lane_of_query(requested, compiled)
        prose = request.query if reading.how == PROSE else None
        lane = _resolve_lane(requested, compiled, prose is not None and self.vector.usable(deadline))
        supplied = request.controls if request.HasField("controls") else None
        effective = controls.validate(supplied, lane, compiled.has_text, prose)
        bound = cursors.binding(compiled.plan, lane, limit, self.cluster.partitions, effective.digest())
        if cursor is not None:
            cursors.check(cursor, bound)
        vector_stats = self.vector.require_embedder(effective.vector_requirement, deadline)
        plan = self.allow_lists.resolve_semantic_leaves(compiled.plan, deadline)
        run = Run(plan, compiled, deadline, effective, vector_stats, timings={"parse": parse_ms})
        return Prepared(request, reading.how, requested, lane, limit, offset, cursor, bound, now_ms, run)

    def _project(self, run: Run, page: list[query_pb2.SearchHit]) -> None:
        """The rows of the query's `with` items, for each hit of the page."""
        if run.plan.projections:
            started = time.perf_counter()
            projections.attach(self.cluster, run.plan.projections, page, run.deadline, run.missing)
            run.timings["projections"] = ms(started)

    # ----- queries ------------------------------------------------------------------------------

    def compile(self, query: str) -> CompiledQuery:
        """The query compiled, and refused when it names a scope the caller may not read."""
        return compile_in_scope(query, self._now())

    def explain(self, query: str, reading: str = "") -> query_pb2.ExplainResponse:
        """How the query is read and the typed AST and plan it compiles to (dates resolved against this
        node's clock)."""
        how = read(query, _forced_reading(reading))
        explained = explain(how.query, now_ms=self._now())
        explained.query, explained.reading, explained.query_read = query, how.how, how.query
        return explained

    def query_units(self, request: query_pb2.QueryUnitsRequest) -> query_pb2.QueryUnitEnvelope:
        """One page of a unit query's rows or groups (unit_search.py)."""
        return query_units(self.cluster, request, self._now_or_wall_clock, self.allow_lists.resolve_semantic_leaves)

    def status(self) -> query_pb2.ClusterStatusResponse:
        return cluster_status(self.cluster, self.vector.stub, self.vector.address, self.ingest_address)

    def _now(self) -> int | None:
        return self.clock() if self.clock else None

    def _now_or_wall_clock(self) -> int:
        now = self._now()
        return int(time.time() * 1000) if now is None else now


def _envelope(prepared: Prepared, page: paging.Page) -> query_pb2.SearchEnvelope:
    run = prepared.run
    return query_pb2.SearchEnvelope(
        query=prepared.request.query,
        requested_lane=prepared.requested,
        retrieval_lane=prepared.lane,
        ranking_policy=RANKING_POLICY,
        ranking_policy_version=RANKING_POLICY_VERSION,
        hits=page.hits,
        next_cursor=page.next_cursor,
        caveats=run.caveats,
        limit=prepared.limit,
        offset=prepared.offset,
        timings_ms=run.timings,
        controls=run.controls.to_proto(),
        partial=bool(run.missing),
        missing=missing_partitions(run.missing),
        reading=prepared.reading,
    )


def _requested_lane(value: str) -> str:
    """SearchRequest.lane: one of the lanes, `auto` when empty; INVALID_REQUEST otherwise."""
    requested = value or AUTO
    if requested not in LANES:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"lane {requested!r} is not one of {', '.join(LANES)}",
            parameter="lane",
        )
    return requested


def _compiled(reading: Reading, now_ms: int) -> CompiledQuery:
    """The text compiled as it was read, within the caller's scopes; prose embeds as written."""
    with _tracer.start_as_current_span("quarry.parse"):
        compiled = compile_query(reading.query, now_ms=now_ms)
        if reading.written and compiled.semantic_text:
            compiled = dataclasses.replace(compiled, semantic_text=reading.written)
    check_named_scopes(compiled.plan)
    return compiled


def _lane_of_query(requested: str, compiled: CompiledQuery) -> str:
    """The lane a `lane:` directive of the query asks for, when the request leaves it to `auto` (or names
    the same); UNSUPPORTED_FORM for a unit query, which selects rows, not sessions."""
    if compiled.kind != "sessions":
        raise QuarryError(
            errors_pb2.UNSUPPORTED_FORM,
            f"`{compiled.unit} where …` selects rows, not sessions: ask QueryUnits (HTTP `/api/query-units`; "
            "on the command line, `quarry '…'` without `search`)",
        )
    if not compiled.lane:
        return requested
    if requested not in (AUTO, compiled.lane):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"the query asks for lane:{compiled.lane} and the request for lane {requested}: give one",
            parameter="lane",
        )
    return compiled.lane


def _resolve_lane(requested: str, compiled: CompiledQuery, prose_on_vectors: bool) -> str:
    """The lane `auto` runs: semantic for a query of meaning alone, hybrid for prose where vectors can
    rank (`prose_on_vectors`), dialogue otherwise."""
    if requested != AUTO:
        return requested
    if not compiled.has_text and compiled.semantic_text:
        return SEMANTIC
    return HYBRID if prose_on_vectors and compiled.has_text else DIALOGUE


def _forced_reading(value: str) -> str:
    """SearchRequest.reading: "" (the text decides), prose or query; INVALID_REQUEST otherwise."""
    if value and value not in READINGS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"reading {value!r} is not one of {', '.join(READINGS)} (or empty: decided from the text)",
            parameter="reading",
        )
    return value
