"""One owner for every call the query node makes to index nodes (the role of Quickwit's ClusterClient).

It routes by the current ClusterView (topology.py). For each partition a request needs it picks one
replica; the partitions picked on one node go to that node in one call, never one call per partition;
the calls run in parallel under the request's Deadline. A partition that failed (its node did not
answer, or answered a PartitionFailure for it) is tried once more on its next replica within the same
deadline, as Quickwit and Elasticsearch retry a leaf request once elsewhere. What still has no answer
comes back per partition with the reasons, for the caller to return a typed partial result (or
PARTITION_UNAVAILABLE when the request requires a complete one).

Replica order for a partition: the replica a cursor walk has read it from so far (a walk stays on one
replica while it lives, as Elasticsearch's `preference` and Qdrant's route affinity keep it), then the
active replicas, then draining ones (complete, on their way out); among the best of a request's
partitions' replicas, the fewest nodes that cover them all (`_plan`). Catching-up replicas are
never read, nor replicas on nodes whose heartbeat stopped. A node that failed a call is suspected for a
few seconds: tried after the others, so a dead node costs one retry, not one per request, until the
map drops it or it answers again. The first attempt gets half of the time left when a retry is
possible, so a hung node (SIGSTOP) still leaves time to ask another replica.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from quarry.core import telemetry
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.fanout import submit_in_context
from quarry.core.routing import partition_for
from quarry.query.scatter import POOL, Deadline
from quarry.query.topology import ACTIVE, DRAINING, ClusterView, Topology
from quarry.v1 import assertions_pb2_grpc, errors_pb2, index_pb2, index_pb2_grpc, query_pb2, sessions_pb2_grpc

SUSPECT_S = 3.0
BRIEF_CHARS = 160
MAX_MESSAGE_CHARS = 2000
FIRST_ATTEMPT_SHARE = 0.5
# Errors that say something about the node or the partition's copy there, not about the request: the
# partition is worth asking another replica.
RETRYABLE = frozenset(
    (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED, errors_pb2.INTERNAL, errors_pb2.NOT_HOSTED)
)
INDEX = "index"
ASSERTIONS = "assertions"
SESSIONS = "sessions"

Build = Callable[[list[int]], Any]


@dataclass
class Fanned:
    """Per-partition results of a fan-out: what answered, by whom, and what did not and why."""

    results: dict[int, Any] = field(default_factory=dict)
    served_by: dict[int, str] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)

    def ordered(self) -> list[Any]:
        return [self.results[p] for p in sorted(self.results)]


@dataclass
class _Stubs:
    channel: grpc.Channel
    index: index_pb2_grpc.IndexServiceStub
    assertions: assertions_pb2_grpc.AssertionServiceStub
    sessions: sessions_pb2_grpc.SessionStoreServiceStub


class ClusterClient:
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._stubs: dict[str, _Stubs] = {}
        self._suspects: dict[str, float] = {}
        self._lock = threading.Lock()
        self._turn = 0

    @property
    def partitions(self) -> int:
        return self.topology.view().partitions

    def view(self) -> ClusterView:
        return self.topology.view()

    def close(self) -> None:
        self.topology.close()
        with self._lock:
            for stubs in self._stubs.values():
                stubs.channel.close()
            self._stubs.clear()

    # ----- calls --------------------------------------------------------------------------------

    def fan_out(
        self,
        rpc: str,
        build: Build,
        deadline: Deadline,
        partitions: Iterable[int] | None = None,
        prefer: dict[int, str] | None = None,
        service: str = INDEX,
        split_for_retry: bool = True,
    ) -> Fanned:
        """Call `rpc` on the nodes holding `partitions` (default: all), one call per node with the
        request `build(its partitions)`; the node-level response lists one result per partition
        (`.partitions`, each with `.partition`) and `.failures`. A typed error about the request
        (a bad query, say) fails the whole call as it is. `split_for_retry` False gives the first
        attempt all the time left (a budgeted call: what does not answer in time is reported missing,
        while a node that refuses at once is still retried elsewhere)."""
        view = self.topology.view()
        wanted = sorted(set(range(view.partitions) if partitions is None else partitions))
        outcome = Fanned()
        reasons: dict[int, list[str]] = {p: [] for p in wanted}
        tried: dict[int, set[str]] = {p: set() for p in wanted}
        pending = list(wanted)
        for attempt in range(2):
            plan, unplaced = self._plan(view, pending, tried, prefer)
            for partition in unplaced:
                if not reasons[partition]:
                    reasons[partition].append(_no_replica(view, partition))
            if not plan:
                break
            retry_possible = (
                split_for_retry
                and attempt == 0
                and any(self._choose(view, p, {n}, prefer) is not None for n, ps in plan.items() for p in ps)
            )
            answers = self._call_nodes(view, rpc, build, plan, deadline, retry_possible, service)
            pending = []
            for node, partitions_on_node in plan.items():
                answer = answers[node]
                for partition in partitions_on_node:
                    tried[partition].add(node)
                if isinstance(answer, QuarryError):
                    for partition in partitions_on_node:
                        reasons[partition].append(f"{node}: {brief(answer.message)}")
                        pending.append(partition)
                    continue
                failed = {f.partition: f.error for f in answer.failures}
                asked = set(partitions_on_node)
                for result in answer.partitions:
                    if result.partition in failed or result.partition not in asked:
                        continue
                    outcome.results[result.partition] = result
                    outcome.served_by[result.partition] = node
                for partition in partitions_on_node:
                    if partition in outcome.results:
                        continue
                    detail = failed.get(partition)
                    message = detail.message if detail is not None else "no answer for the partition"
                    reasons[partition].append(f"{node}: {brief(message)}")
                    pending.append(partition)
            if not pending:
                break
        for partition in wanted:
            if partition not in outcome.results:
                outcome.missing[partition] = "; ".join(reasons[partition]) or _no_replica(view, partition)
        return outcome

    def one(self, partition: int, rpc: str, request: Any, deadline: Deadline, service: str = INDEX) -> Any:
        """A call about one partition (a write, a ref): on its first live replica, then once on the
        next; PARTITION_UNAVAILABLE naming it when none answers."""
        view = self.topology.view()
        tried: set[str] = set()
        reasons: list[str] = []
        for attempt in range(2):
            node = self._choose(view, partition, tried, None)
            if node is None:
                break
            tried.add(node)
            retry_possible = attempt == 0 and self._choose(view, partition, tried, None) is not None
            answer = self._call_nodes(
                view, rpc, lambda _: request, {node: [partition]}, deadline, retry_possible, service
            )[node]
            if not isinstance(answer, QuarryError):
                return answer
            reasons.append(f"{node}: {brief(answer.message)}")
        raise unavailable({partition: "; ".join(reasons) or _no_replica(view, partition)})

    def each(self, partition: int, rpc: str, request: Any, deadline: Deadline, service: str = INDEX) -> dict[str, Any]:
        """A call about one partition on every replica reads may go to (active or draining, with an
        address), in parallel: each node's answer, or the QuarryError its call failed with."""
        view = self.topology.view()
        plan = {node: [partition] for _, node in self._ranked(view, partition, set(), None)}
        return self._call_nodes(view, rpc, lambda _: request, plan, deadline, False, service) if plan else {}

    def holds_session(self, session_id: str, deadline: Deadline) -> bool:
        """Whether the archive holds the session within the scopes the call may touch (its partition's
        index node answers within them)."""
        partition = partition_for(session_id, self.partitions)
        request = index_pb2.GetSessionsRequest(session_ids=[session_id], partitions=[partition])
        answer = self.one(partition, "GetSessions", request, deadline)
        return any(p.sessions for p in answer.partitions)

    # ----- internals ----------------------------------------------------------------------------

    def _plan(
        self, view: ClusterView, pending: list[int], tried: dict[int, set[str]], prefer: dict[int, str] | None
    ) -> tuple[dict[str, list[int]], list[int]]:
        """Which node to ask for each partition (and those no replica is left for). A partition a cursor
        walk reads from a replica stays there; the others go to as few nodes as cover them, among each
        partition's best replicas (an unsuspected active one before any other): with two replicas on
        three nodes, two calls instead of three, each merging and explaining only its own best hits.
        Nodes that cover as many are taken in turn from one request to the next, to share the load, and
        the partitions are spread evenly over the covering nodes."""
        plan: dict[str, list[int]] = {}
        unplaced: list[int] = []
        choices: dict[int, list[str]] = {}
        for partition in pending:
            ranked = self._ranked(view, partition, tried[partition], prefer)
            if not ranked:
                unplaced.append(partition)
            elif prefer and prefer.get(partition) == ranked[0][1]:
                plan.setdefault(ranked[0][1], []).append(partition)
            else:
                best = ranked[0][0]
                choices[partition] = [node for rank, node in ranked if rank == best]
        self._turn += 1
        cover: list[str] = []
        uncovered = dict(choices)
        while uncovered:
            coverage = Counter(node for nodes in uncovered.values() for node in nodes)
            most = max(coverage.values())
            tied = sorted(node for node, count in coverage.items() if count == most)
            node = tied[self._turn % len(tied)]
            cover.append(node)
            uncovered = {p: nodes for p, nodes in uncovered.items() if node not in nodes}
        # The slowest node sets the latency: each partition goes to the covering node with the fewest
        # so far (those with the fewest choices placed first), not all to the first node that holds it.
        load = Counter({node: len(plan.get(node, ())) for node in cover})
        for partition, nodes in sorted(choices.items(), key=lambda item: (sum(n in cover for n in item[1]), item[0])):
            node = min((n for n in nodes if n in cover), key=lambda n: (load[n], cover.index(n)))
            plan.setdefault(node, []).append(partition)
            load[node] += 1
        return plan, unplaced

    def _choose(self, view: ClusterView, partition: int, tried: set[str], prefer: dict[int, str] | None) -> str | None:
        """The next replica to read the partition from, or None when no untried readable one is left."""
        ranked = self._ranked(view, partition, tried, prefer)
        return ranked[0][1] if ranked else None

    def _ranked(
        self, view: ClusterView, partition: int, tried: set[str], prefer: dict[int, str] | None
    ) -> list[tuple[tuple[bool, bool, bool, bool], str]]:
        """The untried readable replicas of a partition, best first, each with its rank (heartbeat late,
        suspected, not the preferred one, not active); within a rank, in the map's (rendezvous) order."""
        readable = [
            (r, node.alive)
            for r in view.replicas.get(partition, ())
            if r.state in (ACTIVE, DRAINING)
            and r.node not in tried
            and (node := view.nodes.get(r.node)) is not None
            and node.address
        ]
        preferred = prefer.get(partition) if prefer else None
        now = time.monotonic()
        # A node whose heartbeat is late is asked last, not never: a busy node may beat late, and a dead
        # one refuses at once.
        ranked = [
            ((not alive, self._suspects.get(r.node, 0.0) > now, r.node != preferred, r.state != ACTIVE), index, r.node)
            for index, (r, alive) in enumerate(readable)  # the map lists replicas in rendezvous order
        ]
        return [(rank, node) for rank, _, node in sorted(ranked)]

    def _call_nodes(
        self,
        view: ClusterView,
        rpc: str,
        build: Build,
        plan: dict[str, list[int]],
        deadline: Deadline,
        retry_possible: bool,
        service: str,
    ) -> dict[str, Any]:
        """Each node's answer to its request, or the QuarryError its call failed with (node errors only:
        a typed error about the request is raised)."""
        timeout = deadline.remaining_s() * (FIRST_ATTEMPT_SHARE if retry_possible else 1.0)
        nodes = list(plan)
        calls = []
        for node in nodes:
            method = getattr(self._stubs_for(view, node, service), rpc)
            calls.append((method, build(plan[node])))
        futures = [submit_in_context(POOL, _invoke, method, request, timeout) for method, request in calls[1:]]
        answers = [_invoke(*calls[0], timeout), *(f.result() for f in futures)] if calls else []
        out: dict[str, Any] = {}
        for node, answer in zip(nodes, answers, strict=True):
            if isinstance(answer, QuarryError):
                if answer.code not in RETRYABLE:
                    raise answer
                if answer.code in (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED):
                    self._suspects[node] = time.monotonic() + SUSPECT_S
            else:
                self._suspects.pop(node, None)
            out[node] = answer
        return out

    def index_stub(self, view: ClusterView, node: str) -> index_pb2_grpc.IndexServiceStub:
        """The IndexService stub of a node of the view (for calls about the node itself: its status)."""
        stub: index_pb2_grpc.IndexServiceStub = self._stubs_for(view, node, INDEX)
        return stub

    def _stubs_for(self, view: ClusterView, node: str, service: str) -> Any:
        address = view.address(node)
        if address is None:
            raise QuarryError(errors_pb2.NODE_UNAVAILABLE, f"{node} has no known address")
        with self._lock:
            stubs = self._stubs.get(address)
            if stubs is None:
                channel = telemetry.traced_channel(address)
                stubs = _Stubs(
                    channel,
                    index_pb2_grpc.IndexServiceStub(channel),
                    assertions_pb2_grpc.AssertionServiceStub(channel),
                    sessions_pb2_grpc.SessionStoreServiceStub(channel),
                )
                self._stubs[address] = stubs
        return {ASSERTIONS: stubs.assertions, SESSIONS: stubs.sessions}.get(service, stubs.index)


def _invoke(method: Any, request: Any, timeout: float) -> Any:
    """A unary call that fails at once on a node that is down (no wait_for_ready: the cluster client
    retries elsewhere instead of waiting), returning the typed error rather than raising it."""
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as error:
        return from_rpc_error(error)


def _no_replica(view: ClusterView, partition: int) -> str:
    replicas = view.replicas.get(partition, ())
    if not replicas:
        return "no replica is assigned"
    described = []
    for replica in replicas:
        node = view.nodes.get(replica.node)
        if node is None or not node.alive:
            described.append(f"{replica.node}: down")
        else:
            described.append(f"{replica.node}: {replica.state}")
    return "no live replica (" + ", ".join(described) + ")"


def unavailable(missing: dict[int, str]) -> QuarryError:
    """PARTITION_UNAVAILABLE naming each missing partition and why (partitions failing alike together;
    the message stays short enough for gRPC's trailers, the detail lists every partition)."""
    by_reason: dict[str, list[int]] = {}
    for partition, why in sorted(missing.items()):
        by_reason.setdefault(why, []).append(partition)
    named = "; ".join(
        f"{'partition' if len(ps) == 1 else 'partitions'} {', '.join(map(str, ps))} ({why})"
        for why, ps in by_reason.items()
    )
    if len(named) > MAX_MESSAGE_CHARS:
        named = named[: MAX_MESSAGE_CHARS - 1] + "…"
    return QuarryError(
        errors_pb2.PARTITION_UNAVAILABLE,
        f"no replica answered for {len(missing)} partition(s): {named}",
        partitions=sorted(missing),
    )


def brief(message: str) -> str:
    """A node's failure in a few words: gRPC's connection errors are long and say little more."""
    first = message.splitlines()[0] if message else ""
    for marker, said in (("Connection refused", "connection refused"), ("Deadline Exceeded", "deadline exceeded")):
        if marker in first:
            return said
    return first[:BRIEF_CHARS]


def missing_partitions(missing: dict[int, str]) -> list[query_pb2.MissingPartition]:
    """The envelopes' MissingPartition entries, in partition order."""
    return [query_pb2.MissingPartition(partition=p, reason=why) for p, why in sorted(missing.items())]


def require(missing: dict[int, str], complete: bool) -> None:
    """PARTITION_UNAVAILABLE when a complete answer is required and partitions are missing."""
    if complete and missing:
        raise unavailable(missing)


def partitions_of(ids: Sequence[str], count: int) -> dict[int, list[str]]:
    """Session ids grouped by their partition."""
    grouped: dict[int, list[str]] = {}
    for session_id in ids:
        grouped.setdefault(partition_for(session_id, count), []).append(session_id)
    return grouped
