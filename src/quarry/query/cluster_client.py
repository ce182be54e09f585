"""One owner for every call the query node makes to index nodes (the role of Quickwit's ClusterClient):
one typed call per remote call, `cluster.search_sessions(…)` for the IndexService,
`cluster.sessions.…` for the SessionStoreService and `cluster.assertions.…` for the AssertionService.
A call is about many partitions (Fan), about one (One), or about one on each of its replicas (Each);
its request and answer types are its own, and the remote method it makes is selected out of a node's
stubs, never named by a string.

Every call goes through one private engine. It routes by the current ClusterView (topology.py). For
each partition a request needs it picks one replica (placement.py); the partitions picked on one node
go to that node in one call, never one call per partition; the calls run in parallel under the
request's Deadline. A partition that failed (its node did not answer, or answered a PartitionFailure
for it) is tried once more on its next replica within the same deadline, as Quickwit and Elasticsearch
retry a leaf request once elsewhere. What still has no answer comes back per partition with the
reasons, for the caller to return a typed partial result (or PARTITION_UNAVAILABLE when the request
requires a complete one: partial.py).

A node that failed a call is suspected for a few seconds (placement.py). The first attempt gets half
of the time left when a retry is possible, so a hung node (SIGSTOP) still leaves time to ask another
replica.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc

from quarry.core import telemetry
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.fanout import submit_in_context
from quarry.core.in_process import LocalNode
from quarry.core.routing import partition_for
from quarry.query.partial import Fanned, brief, unavailable
from quarry.query.placement import Placement, no_replica
from quarry.query.scatter import POOL, Deadline
from quarry.query.topology import ClusterView, Topology
from quarry.v1 import (
    assertions_pb2,
    assertions_pb2_grpc,
    errors_pb2,
    index_pb2,
    index_pb2_grpc,
    refs_pb2,
    sessions_pb2,
    sessions_pb2_grpc,
    units_pb2,
)

FIRST_ATTEMPT_SHARE = 0.5
# Errors that say something about the node or the partition's copy there, not about the request: the
# partition is worth asking another replica.
RETRYABLE = frozenset(
    (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED, errors_pb2.INTERNAL, errors_pb2.NOT_HOSTED)
)

Q = TypeVar("Q")  # a call's request
R = TypeVar("R")  # its answer (for a call about many partitions: one partition's)
Build = Callable[[list[int]], Q]  # a node's request, given the partitions it is asked for


@dataclass
class _Stubs:
    """One node's stubs, sharing its channel."""

    channel: grpc.Channel
    index: index_pb2_grpc.IndexServiceStub
    assertions: assertions_pb2_grpc.AssertionServiceStub
    sessions: sessions_pb2_grpc.SessionStoreServiceStub


Select = Callable[[_Stubs], Any]  # the remote method a call makes, out of a node's stubs


def _stubs_on(channel: Any) -> _Stubs:
    return _Stubs(
        channel,
        index_pb2_grpc.IndexServiceStub(channel),
        assertions_pb2_grpc.AssertionServiceStub(channel),
        sessions_pb2_grpc.SessionStoreServiceStub(channel),
    )


class _Engine:
    """The fan-out, retry and partial-result engine behind the typed calls."""

    def __init__(self, topology: Topology, placement: Placement, local: LocalNode | None) -> None:
        self.topology = topology
        self.placement = placement
        self._local = (local.name, _stubs_on(local.services.channel())) if local is not None else None
        self._stubs: dict[str, _Stubs] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            for stubs in self._stubs.values():
                stubs.channel.close()
            self._stubs.clear()

    def fan_out(
        self,
        select: Select,
        build: Build[Any],
        deadline: Deadline,
        partitions: Iterable[int] | None = None,
        prefer: dict[int, str] | None = None,
        split_for_retry: bool = True,
    ) -> Fanned[Any]:
        """Call the selected method on the nodes holding `partitions` (default: all), one call per node
        with the request `build(its partitions)`; the node-level response lists one result per partition
        (`.partitions`, each with `.partition`) and `.failures`. A typed error about the request (a bad
        query, say) fails the whole call as it is. `split_for_retry` False gives the first attempt all
        the time left (a budgeted call: what does not answer in time is reported missing, while a node
        that refuses at once is still retried elsewhere)."""
        view = self.topology.view()
        wanted = sorted(set(range(view.partitions) if partitions is None else partitions))
        outcome: Fanned[Any] = Fanned()
        reasons: dict[int, list[str]] = {p: [] for p in wanted}
        tried: dict[int, set[str]] = {p: set() for p in wanted}
        pending = list(wanted)
        for attempt in range(2):
            plan, unplaced = self.placement.plan(view, pending, tried, prefer)
            for partition in unplaced:
                if not reasons[partition]:
                    reasons[partition].append(no_replica(view, partition))
            if not plan:
                break
            retry_possible = (
                split_for_retry
                and attempt == 0
                and any(self.placement.choose(view, p, {n}, prefer) is not None for n, ps in plan.items() for p in ps)
            )
            answers = self._call_nodes(view, select, build, plan, deadline, retry_possible)
            pending = []
            for node, partitions_on_node in plan.items():
                for partition in partitions_on_node:
                    tried[partition].add(node)
                failed = _record(node, partitions_on_node, answers[node], outcome)
                for partition, why in failed.items():
                    reasons[partition].append(f"{node}: {brief(why)}")
                    pending.append(partition)
            if not pending:
                break
        for partition in wanted:
            if partition not in outcome.results:
                outcome.missing[partition] = "; ".join(reasons[partition]) or no_replica(view, partition)
        return outcome

    def one(self, select: Select, partition: int, request: Any, deadline: Deadline) -> Any:
        """A call about one partition (a write, a ref): on its first live replica, then once on the
        next; PARTITION_UNAVAILABLE naming it when none answers."""
        view = self.topology.view()
        tried: set[str] = set()
        reasons: list[str] = []
        for attempt in range(2):
            node = self.placement.choose(view, partition, tried, None)
            if node is None:
                break
            tried.add(node)
            retry_possible = attempt == 0 and self.placement.choose(view, partition, tried, None) is not None
            answers = self._call_nodes(view, select, lambda _: request, {node: [partition]}, deadline, retry_possible)
            answer = answers[node]
            if not isinstance(answer, QuarryError):
                return answer
            reasons.append(f"{node}: {brief(answer.message)}")
        raise unavailable({partition: "; ".join(reasons) or no_replica(view, partition)})

    def each(self, select: Select, partition: int, request: Any, deadline: Deadline) -> dict[str, Any]:
        """A call about one partition on every replica reads may go to (active or draining, with an
        address), in parallel: each node's answer, or the QuarryError its call failed with."""
        view = self.topology.view()
        plan = {node: [partition] for _, node in self.placement.ranked(view, partition, set(), None)}
        return self._call_nodes(view, select, lambda _: request, plan, deadline, False) if plan else {}

    def on_node(self, select: Select, view: ClusterView, node: str, request: Any, timeout: float) -> Any:
        """A call about the node itself (its status): on that node alone, raising what the call raises;
        no retry, and no suspicion either way."""
        return select(self._stubs_for(view, node))(request, timeout=timeout)

    def _call_nodes(
        self,
        view: ClusterView,
        select: Select,
        build: Build[Any],
        plan: dict[str, list[int]],
        deadline: Deadline,
        retry_possible: bool,
    ) -> dict[str, Any]:
        """Each node's answer to its request, or the QuarryError its call failed with (node errors only:
        a typed error about the request is raised)."""
        timeout = deadline.remaining_s() * (FIRST_ATTEMPT_SHARE if retry_possible else 1.0)
        nodes = list(plan)
        calls = [(select(self._stubs_for(view, node)), build(plan[node])) for node in nodes]
        futures = [submit_in_context(POOL, _invoke, method, request, timeout) for method, request in calls[1:]]
        answers = [_invoke(*calls[0], timeout), *(f.result() for f in futures)] if calls else []
        out: dict[str, Any] = {}
        for node, answer in zip(nodes, answers, strict=True):
            if isinstance(answer, QuarryError):
                if answer.code not in RETRYABLE:
                    raise answer
                if answer.code in (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED):
                    self.placement.suspect(node)
            else:
                self.placement.acquit(node)
            out[node] = answer
        return out

    def _stubs_for(self, view: ClusterView, node: str) -> _Stubs:
        if self._local is not None and node == self._local[0]:
            return self._local[1]
        address = view.address(node)
        if address is None:
            raise QuarryError(errors_pb2.NODE_UNAVAILABLE, f"{node} has no known address")
        with self._lock:
            stubs = self._stubs.get(address)
            if stubs is None:
                stubs = self._stubs[address] = _stubs_on(telemetry.traced_channel(address))
        return stubs


def _record(node: str, asked: list[int], answer: Any, outcome: Fanned[Any]) -> dict[int, str]:
    """A node's answer for the partitions it was asked for, kept in `outcome`; the partitions it did not
    answer for, with why."""
    if isinstance(answer, QuarryError):
        return dict.fromkeys(asked, answer.message)
    failed = {f.partition: f.error for f in answer.failures}
    for result in answer.partitions:
        if result.partition in failed or result.partition not in asked:
            continue
        outcome.results[result.partition] = result
        outcome.served_by[result.partition] = node
    unanswered = {}
    for partition in asked:
        if partition not in outcome.results:
            detail = failed.get(partition)
            unanswered[partition] = detail.message if detail is not None else "no answer for the partition"
    return unanswered


def _invoke(method: Any, request: Any, timeout: float) -> Any:
    """A unary call that fails at once on a node that is down (no wait_for_ready: the cluster client
    retries elsewhere instead of waiting), returning the typed error rather than raising it."""
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as error:
        return from_rpc_error(error)


class Fan(Generic[Q, R]):
    """A remote call about many partitions (default: all): one call per node holding some, with the
    request `build(its partitions)`; every partition's answer, or why it has none (partial.py).
    `prefer`: the replica a cursor walk read a partition from, asked again while it lives."""

    def __init__(self, engine: _Engine, select: Select, split_for_retry: bool = True) -> None:
        self._engine = engine
        self._select = select
        self._split_for_retry = split_for_retry

    def __call__(
        self,
        build: Build[Q],
        deadline: Deadline,
        partitions: Iterable[int] | None = None,
        prefer: dict[int, str] | None = None,
    ) -> Fanned[R]:
        return self._engine.fan_out(self._select, build, deadline, partitions, prefer, self._split_for_retry)


class One(Generic[Q, R]):
    """A remote call about one partition: on its first live replica, then once on the next;
    PARTITION_UNAVAILABLE naming it when none answers."""

    def __init__(self, engine: _Engine, select: Select) -> None:
        self._engine = engine
        self._select = select

    def __call__(self, partition: int, request: Q, deadline: Deadline) -> R:
        answer: R = self._engine.one(self._select, partition, request, deadline)
        return answer


class Each(Generic[Q, R]):
    """A remote call about one partition on every replica reads may go to: each node's answer, or the
    QuarryError its call failed with."""

    def __init__(self, engine: _Engine, select: Select) -> None:
        self._engine = engine
        self._select = select

    def __call__(self, partition: int, request: Q, deadline: Deadline) -> dict[str, R | QuarryError]:
        return self._engine.each(self._select, partition, request, deadline)


class ClusterClient:
    """The index nodes' IndexService, one typed call per remote call, and their other services as
    `sessions` (SessionStoreCalls) and `assertions` (AssertionCalls)."""

    def __init__(self, topology: Topology, local: LocalNode | None = None) -> None:
        """`local`: the node of the topology that is this process (a query node holding the partitions),
        called in-process."""
        self.topology = topology
        self.placement = Placement()
        self.local = local
        self._engine = engine = _Engine(topology, self.placement, local)
        self.sessions = SessionStoreCalls(engine)
        self.assertions = AssertionCalls(engine)
        # Rankings: a lexical search; several of the same partitions at once (and sessions' summaries);
        # the statistics a search would score with; the ids of the sessions a structured filter admits.
        self.search_sessions = Fan[index_pb2.PartitionSearchRequest, index_pb2.PartitionSearchResponse](
            engine, lambda s: s.index.SearchSessions
        )
        self.search_lanes = Fan[index_pb2.PartitionLanesRequest, index_pb2.PartitionLanes](
            engine, lambda s: s.index.SearchLanes
        )
        self.term_stats = Fan[index_pb2.PartitionSearchRequest, index_pb2.PartitionTermStats](
            engine, lambda s: s.index.TermStats
        )
        self.match_session_ids = Fan[index_pb2.MatchSessionIdsRequest, index_pb2.PartitionSessionIds](
            engine, lambda s: s.index.MatchSessionIds
        )
        # Rows, counts and objects: a unit query; sessions, documents and messages; facet counts within a
        # budget (the first attempt may take all the time left); a public ref; sessions by id.
        self.query_units = Fan[index_pb2.PartitionUnitsRequest, index_pb2.PartitionUnitsResponse](
            engine, lambda s: s.index.QueryUnits
        )
        self.stats = Fan[index_pb2.PartitionStatsRequest, index_pb2.PartitionStats](engine, lambda s: s.index.Stats)
        self.partition_facets = Fan[index_pb2.PartitionFacetsRequest, index_pb2.PartitionFacetsResponse](
            engine, lambda s: s.index.PartitionFacets, split_for_retry=False
        )
        self.resolve_ref = One[index_pb2.PartitionResolveRefRequest, refs_pb2.ResolvedRef](
            engine, lambda s: s.index.ResolveRef
        )
        self.get_sessions = One[index_pb2.GetSessionsRequest, index_pb2.GetSessionsResponse](
            engine, lambda s: s.index.GetSessions
        )

    @property
    def partitions(self) -> int:
        return self.topology.view().partitions

    def view(self) -> ClusterView:
        return self.topology.view()

    def close(self) -> None:
        self.topology.close()
        self._engine.close()

    def holds_session(self, session_id: str, deadline: Deadline) -> bool:
        """Whether the archive holds the session within the scopes the call may touch (its partition's
        index node answers within them)."""
        partition = partition_for(session_id, self.partitions)
        request = index_pb2.GetSessionsRequest(session_ids=[session_id], partitions=[partition])
        return any(p.sessions for p in self.get_sessions(partition, request, deadline).partitions)

    def node_stats(self, view: ClusterView, node: str, timeout: float) -> index_pb2.NodeStats:
        """The stats of every partition one node holds, asked of that node alone (its status)."""
        stats: index_pb2.NodeStats = self._engine.on_node(
            lambda s: s.index.Stats, view, node, index_pb2.PartitionStatsRequest(), timeout
        )
        return stats


class SessionStoreCalls:
    """The index nodes' SessionStoreService: the session API's reads (docs/sessions.md)."""

    def __init__(self, engine: _Engine) -> None:
        # Session summaries matching filters; a cross-session search; one session's events; a search
        # within one session.
        self.list_sessions = Fan[sessions_pb2.NodeListSessionsRequest, sessions_pb2.PartitionSessionList](
            engine, lambda s: s.sessions.ListSessions
        )
        self.search_sessions = Fan[sessions_pb2.NodeSearchSessions, sessions_pb2.PartitionSessionHits](
            engine, lambda s: s.sessions.SearchSessions
        )
        self.read_events = One[sessions_pb2.PartitionReadEvents, sessions_pb2.StoredEvents](
            engine, lambda s: s.sessions.ReadEvents
        )
        self.search_events = One[sessions_pb2.PartitionSearchEvents, sessions_pb2.EventSearchPage](
            engine, lambda s: s.sessions.SearchEvents
        )


class AssertionCalls:
    """The index nodes' AssertionService."""

    def __init__(self, engine: _Engine) -> None:
        # Which partition holds an assertion (at most one does); candidates; a write and a judgment on a
        # partition's only copy (the embedded default); a logged operation's outcome on every replica.
        self.get_assertion = Fan[assertions_pb2.NodeGetAssertion, assertions_pb2.PartitionAssertion](
            engine, lambda s: s.assertions.GetAssertion
        )
        self.list_candidates = Fan[assertions_pb2.NodeListCandidates, assertions_pb2.PartitionCandidates](
            engine, lambda s: s.assertions.ListCandidates
        )
        self.write_assertion = One[assertions_pb2.PartitionWriteAssertion, units_pb2.Assertion](
            engine, lambda s: s.assertions.WriteAssertion
        )
        self.judge_candidate = One[assertions_pb2.PartitionJudgeCandidate, assertions_pb2.JudgeCandidateResponse](
            engine, lambda s: s.assertions.JudgeCandidate
        )
        self.op_outcome = Each[assertions_pb2.PartitionOpOutcomeRequest, assertions_pb2.OperationOutcome](
            engine, lambda s: s.assertions.OpOutcome
        )


def partitions_of(ids: Sequence[str], count: int) -> dict[int, list[str]]:
    """Session ids grouped by their partition."""
    grouped: dict[int, list[str]] = {}
    for session_id in ids:
        grouped.setdefault(partition_for(session_id, count), []).append(session_id)
    return grouped
