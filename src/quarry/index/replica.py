"""An index node of a cluster on the log (`quarry node index --join`).

It joins by heartbeating its address and progress into the cluster KV every second, and holds a
replica of every partition the cluster map names it for, in any state:
- Each held partition is followed by its own ephemeral pull consumer on the partition's subjects,
  from the replica's checkpoint + 1. Records are applied in log order in batches (apply.py); the
  checkpoint is stored with the rows, so after a crash or a restart the replica resumes exactly after
  what it holds. NATS keeps no per-replica state (fewer Raft groups on the log servers). After each
  batch the applied sequence is announced on `quarry_applied.<ppp>`, for ingests waiting on `applied`.
  A record whose payload is held in the object store has it read and verified before it is applied
  (quarry.cluster.payloads.resolve: one whose payload a newer version replaced is skipped, one whose
  payload is missing or wrong stops the partition, which retries), HELD_COMMIT_BYTES of them per commit.
- A partition the map no longer names is closed and its files deleted once REMOVE_GRACE_S has passed
  without the map naming it again (query nodes have left it by then).
- Every node also runs the controller (quarry.cluster.placement.step) every CONTROL_S and writes the
  next map by compare-and-set: any number of controllers may run, the first write wins, nothing elects
  a leader.
- gRPC health: the node is SERVING from the start (liveness); the service `quarry.v1.IndexService` is
  SERVING only while every partition it holds is caught up with the log (readiness, for Kubernetes).

Reads are served by the same IndexService as the embedded default's nodes; direct writes are refused
(replicas change only by applying the log). A partition a read asks for that is not open here answers
NOT_HOSTED, and the query node retries it on another replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from grpc_health.v1 import health_pb2
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from quarry.cluster import placement
from quarry.cluster.cluster_map import HEARTBEAT_S, ClusterWatch, Heartbeat, Progress, now_ms
from quarry.cluster.log_records import Record, decode, record_bytes
from quarry.cluster.loop import LoopThread, connect
from quarry.cluster.loop_watch import LoopWatch
from quarry.cluster.payloads import resolve
from quarry.cluster.setup import STREAM, applied_subject, partition_filter
from quarry.core.node import Node
from quarry.index.apply import apply_records
from quarry.index.lexical.partition import WRITER_HEAP_BYTES
from quarry.index.partition_set import PartitionSet
from quarry.index.server import index_services

FETCH_BATCH = 256
FETCH_WAIT_S = 1.0
APPLY_SLOTS = 2  # partitions applying at once on a node (its cores)
# A partition that applied a batch less than BUSY_S ago is in a bulk ingest: its next batch waits
# LINGER_S for more records, so a bulk ingest makes few large commits (each commit of a partition costs
# Tantivy a segment and SQLite an fsync), while a lone write to an idle partition is applied at once.
BUSY_S = 1.0
LINGER_S = 0.1
APPLY_MAX_RECORDS = 2000
APPLY_MAX_BYTES = 48 * 1024 * 1024  # of records and the payloads they hold
HELD_COMMIT_BYTES = 16 * 1024 * 1024  # held payloads (compressed) read for one commit
CONSUMER_CHECK_S = 5.0
CAUGHT_UP_LAG = 64  # records behind the log's end that still count as caught up (promotion, readiness)
CONTROL_S = 1.0
REMOVE_GRACE_S = 10.0
RETRY_S = 0.5
READY_SERVICE = "quarry.v1.IndexService"
# A heartbeat put not answered by then is given up and the next one tried: one stuck put must not
# silence the node until the map takes it for gone (two tries fit in NODE_TTL_MS).
HEARTBEAT_TIMEOUT_S = 2.5

_log = logging.getLogger(__name__)


@dataclass
class _Follower:
    partition: int
    task: asyncio.Task[None]
    applied: int = 0
    pending: int = -1
    caught_up: bool = False
    last_apply: float = 0.0


class ReplicaNode:
    def __init__(
        self,
        node_id: str,
        data_dir: Path,
        urls: list[str],
        writer_budget_bytes: int = WRITER_HEAP_BYTES,
        policy: placement.Policy | None = None,
    ) -> None:
        self.node_id = node_id
        self.data_dir = Path(data_dir)
        self.urls = urls
        self.writer_budget_bytes = writer_budget_bytes
        self.policy_override = policy
        self.loop = LoopThread(f"{node_id}-nats")
        self.nc: Client | None = None
        self.watch: ClusterWatch | None = None
        self.partitions: PartitionSet | None = None
        self.address = ""
        self.started_ms = now_ms()
        self._followers: dict[int, _Follower] = {}
        self._unassigned_since: dict[int, float] = {}
        self._apply_pool = ThreadPoolExecutor(max_workers=APPLY_SLOTS, thread_name_prefix=f"{node_id}-apply")
        self._apply_slots = asyncio.Semaphore(APPLY_SLOTS)
        self._node: Node | None = None
        self._stopping = threading.Event()
        self._beat_attempted = time.monotonic()
        self._loop_watch = LoopWatch(self.loop.loop, node_id, pulse=lambda: self._beat_attempted)

    # ----- lifecycle (blocking) -----------------------------------------------------------------

    def start(self) -> PartitionSet:
        """Connect to the log, read the cluster's config (waiting for `quarry cluster init`), and open
        the partition set; the node is not in the map until `join`."""
        self.nc = self.loop.run(connect(self.urls, self.node_id))
        self.watch = ClusterWatch(self.nc)
        self.loop.run(self.watch.start())
        assert self.watch.config is not None
        self.partitions = PartitionSet(
            self.data_dir, self.writer_budget_bytes, expected_partitions=self.watch.config.partitions, durable=False
        )
        return self.partitions

    def join(self, node: Node, address: str) -> None:
        """Begin heartbeating `address` (the cluster map places partitions here from then on), follow
        the map, and run the controller."""
        self._node = node
        self.address = address
        node.health.set(READY_SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
        self._loop_watch.start()
        with contextlib.suppress(TimeoutError):  # said in the log; the heartbeat loop sends the next
            self.loop.run(self._beat_within(HEARTBEAT_TIMEOUT_S))
        for job in (self._heartbeats(), self._reconcile_forever(), self._control_forever()):
            self.loop.spawn(self._supervised(job))

    def stop(self) -> None:
        """Leave the cluster (heartbeat removed: queries avoid this node at once), stop following, close."""
        self._stopping.set()
        self._loop_watch.stop()

        async def leave() -> None:
            for follower in list(self._followers.values()):
                follower.task.cancel()
            for follower in list(self._followers.values()):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task
            if self.watch is not None:
                await self.watch.leave(self._heartbeat(leaving=True))
                await self.watch.stop()
            if self.nc is not None:
                with contextlib.suppress(Exception):
                    await self.nc.close()

        with contextlib.suppress(Exception):
            self.loop.run(leave(), timeout=10)
        self._apply_pool.shutdown(wait=True)
        if self.partitions is not None:
            self.partitions.close_all()
        self.loop.stop()
        self._loop_watch.finish()

    # ----- background jobs (on the loop) ----------------------------------------------------------

    async def _supervised(self, job: object) -> None:
        try:
            await job  # type: ignore[misc]
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("%s: a background job stopped", self.node_id)

    async def _heartbeats(self) -> None:
        """Beat every HEARTBEAT_S. A node whose heartbeats fail is taken for gone after NODE_TTL_MS, so a
        failure is a warning (once per kind of failure, and when they answer again)."""
        failing = ""
        while not self._stopping.is_set():
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self._beat_within(HEARTBEAT_TIMEOUT_S)
            except Exception as error:
                why = f"{type(error).__name__}: {error}"
                if why != failing:
                    _log.warning("%s: heartbeat failed (%s); retrying every %.0f s", self.node_id, why, HEARTBEAT_S)
                failing = why
                continue
            if failing:
                _log.warning("%s: heartbeats answer again", self.node_id)
                failing = ""

    async def _beat_within(self, timeout: float) -> None:
        """A heartbeat, given up after `timeout` with where it waited logged (the NATS client's stack)."""
        self._beat_attempted = time.monotonic()
        beat = asyncio.ensure_future(self._beat())
        done, _ = await asyncio.wait({beat}, timeout=timeout)
        if beat in done:
            return beat.result()
        stack = io.StringIO()
        beat.print_stack(file=stack)
        beat.cancel()
        _log.warning(
            "%s: a heartbeat did not answer within %.1f s, given up; it waited in:\n%s",
            self.node_id,
            timeout,
            stack.getvalue(),
        )
        raise TimeoutError(f"no answer within {timeout:.1f} s")

    async def _beat(self) -> None:
        assert self.watch is not None
        await self.watch.beat(self._heartbeat())
        self._set_readiness()

    def _heartbeat(self, leaving: bool = False) -> Heartbeat:
        progress = {p: Progress(f.applied, f.pending, f.caught_up) for p, f in sorted(self._followers.items())}
        return Heartbeat(self.node_id, self.address, self.started_ms, now_ms(), progress, os.getpid(), leaving)

    def _set_readiness(self) -> None:
        if self._node is None:
            return
        ready = all(f.caught_up for f in self._followers.values())
        status = health_pb2.HealthCheckResponse.SERVING if ready else health_pb2.HealthCheckResponse.NOT_SERVING
        self._node.health.set(READY_SERVICE, status)

    async def _reconcile_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                await self._reconcile()
            except Exception:
                _log.exception("%s: reconciling with the map failed", self.node_id)
            await asyncio.sleep(0.25)

    async def _reconcile(self) -> None:
        """Follow every partition the map names this node for; drop the others after the grace."""
        assert self.watch is not None and self.partitions is not None
        layout = self.watch.map.placement if self.watch.map is not None else {}
        named = {p for p, replicas in layout.items() if any(r.node == self.node_id for r in replicas)}
        for partition in sorted(named - set(self._followers)):
            self._unassigned_since.pop(partition, None)
            task = asyncio.create_task(self._follow(partition))
            self._followers[partition] = _Follower(partition, task)
        now = time.monotonic()
        for partition in sorted(set(self._followers) - named):
            since = self._unassigned_since.setdefault(partition, now)
            if now - since >= REMOVE_GRACE_S:
                follower = self._followers.pop(partition)
                follower.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task
                await asyncio.get_running_loop().run_in_executor(self._apply_pool, self.partitions.remove, partition)
                self._unassigned_since.pop(partition, None)
                _log.info("%s: partition %d moved away: files removed", self.node_id, partition)
        for partition in set(self._unassigned_since) & named:
            del self._unassigned_since[partition]

    async def _control_forever(self) -> None:
        while not self._stopping.is_set():
            await asyncio.sleep(CONTROL_S)
            try:
                await self._control()
            except Exception as error:
                _log.info("%s: controller step failed (%s)", self.node_id, error)

    async def _control(self) -> None:
        """One controller step: the next map from the current one and the heartbeats, written by CAS."""
        watch = self.watch
        assert watch is not None and watch.config is not None
        config = watch.config
        policy = self.policy_override or placement.Policy(
            replicas=config.replicas, max_moves=config.max_moves, node_left_delay_ms=config.node_left_delay_ms
        )
        now = now_ms()
        if not watch.current(self.node_id, now):
            return  # this node's view is behind (its own heartbeat has not come back): act on nothing
        current = watch.map.placement if watch.map is not None else {}
        revision = watch.map.revision if watch.map is not None else None
        at = watch.view_time(self.node_id, now)  # the others' ages are judged as of this view
        nodes = watch.node_views(at, self.started_ms)
        placed = _nodes_of(current)
        silent = sorted(n for n, view in nodes.items() if not view.alive and n in placed)
        read: dict[str, str] = {}
        if silent:  # gone by this view: read their heartbeats afresh before acting on it (ClusterWatch.confirm)
            read = await watch.confirm(silent)
            nodes = watch.node_views(at, self.started_ms)
        if not any(view.alive for view in nodes.values()):
            return
        following = placement.step(config.partitions, current, nodes, policy, at)
        if _same(following, current):
            return
        if not await watch.write_map(following, revision):
            await watch.refresh()
            return
        for node in sorted(placed - _nodes_of(following)):
            _log.warning(
                "%s: the map no longer places anything on %s (last heartbeat %d ms before, at %d; read afresh: %s)",
                self.node_id,
                node,
                at - nodes[node].last_seen_ms,
                at,
                read.get(node, "not read"),
            )

    # ----- following one partition ----------------------------------------------------------------

    async def _follow(self, partition: int) -> None:
        """Apply the partition's records from the replica's checkpoint on, for as long as it is held."""
        assert self.nc is not None and self.partitions is not None
        loop = asyncio.get_running_loop()
        replica = await loop.run_in_executor(self._apply_pool, self.partitions.open, partition)
        follower = self._followers[partition]
        follower.applied = replica.lexical.applied_seq
        js = self.nc.jetstream()
        while True:
            subscription = None
            try:
                subscription = await js.pull_subscribe(
                    partition_filter(partition),
                    stream=STREAM,
                    config=api.ConsumerConfig(
                        ack_policy=api.AckPolicy.NONE,
                        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                        opt_start_seq=follower.applied + 1,
                        inactive_threshold=30.0,
                        mem_storage=True,
                        num_replicas=1,
                    ),
                )
                checked = 0.0
                while True:
                    try:
                        messages = await subscription.fetch(FETCH_BATCH, timeout=FETCH_WAIT_S)
                    except TimeoutError:  # nats-py raises its own subclass, or asyncio's, when nothing comes
                        if follower.caught_up and time.monotonic() - checked < CONSUMER_CHECK_S:
                            continue  # nothing new, as at the last look
                        # Nothing came: at the log's end, or the consumer is gone with its server (the
                        # question fails, and the consumer is made again).
                        info = await subscription.consumer_info()
                        checked = time.monotonic()
                        follower.pending = info.num_pending
                        follower.caught_up = info.num_pending <= CAUGHT_UP_LAG
                        self._set_readiness()
                        continue
                    if not messages:  # a status instead of records (the records asked for were compacted)
                        continue
                    if time.monotonic() - follower.last_apply < BUSY_S:
                        await asyncio.sleep(LINGER_S)  # a busy partition: let its next records join this commit
                    async with self._apply_slots:
                        messages = await self._drain(subscription, messages)
                        records = [decode(m.subject, m.metadata.sequence.stream, m.headers, m.data) for m in messages]
                        for refused in (r for r in records if r.refused):
                            _log.error("%s: partition %d: %s; not applied", self.node_id, partition, refused.refused)
                        for run in _commits(records):
                            resolved = [await resolve(js, record) for record in run]
                            await loop.run_in_executor(self._apply_pool, apply_records, replica, resolved)
                            follower.applied = resolved[-1].seq
                            await self._announce(partition, follower.applied)
                    follower.last_apply = time.monotonic()
                    follower.pending = messages[-1].metadata.num_pending
                    follower.caught_up = follower.pending <= CAUGHT_UP_LAG
            except asyncio.CancelledError:
                raise
            except Exception as error:
                follower.caught_up = False
                _log.warning(
                    "%s: following partition %d from %d: %r; again in %.1f s",
                    self.node_id,
                    partition,
                    follower.applied + 1,
                    error,
                    RETRY_S,
                )
                await asyncio.sleep(RETRY_S)
            finally:
                if subscription is not None:
                    with contextlib.suppress(Exception):
                        await subscription.unsubscribe()

    @staticmethod
    async def _drain(subscription: Any, messages: list[Msg]) -> list[Msg]:
        """The first fetch's records and every record already waiting after them, up to one apply
        batch. Called once this partition's turn to apply came: what arrived while it waited for the
        turn is applied in the same commit (a bulk ingest becomes few large commits per partition, a
        single new session one small one)."""
        size = sum(record_bytes(m.headers, m.data) for m in messages)
        pending = (await subscription.consumer_info()).num_pending if messages[-1].metadata.num_pending == 0 else 0
        pending = max(pending, messages[-1].metadata.num_pending)
        while pending > 0 and len(messages) < APPLY_MAX_RECORDS and size < APPLY_MAX_BYTES:
            try:
                more = await subscription.fetch(min(FETCH_BATCH, pending), timeout=FETCH_WAIT_S)
            except TimeoutError:  # the pending count was an estimate (records compacted meanwhile)
                break
            if not more:
                break
            messages.extend(more)
            size += sum(record_bytes(m.headers, m.data) for m in more)
            pending = more[-1].metadata.num_pending
        return messages

    async def _announce(self, partition: int, applied: int) -> None:
        assert self.nc is not None
        with contextlib.suppress(Exception):
            await self.nc.publish(applied_subject(partition), orjson.dumps({"node": self.node_id, "seq": applied}))


def _commits(records: list[Record]) -> Iterator[list[Record]]:
    """The records in runs applied one commit each: a run ends after HELD_COMMIT_BYTES of held payloads,
    so a batch of large sessions is not read into memory all at once."""
    run: list[Record] = []
    held = 0
    for record in records:
        run.append(record)
        held += record.held.size if record.held is not None else 0
        if held >= HELD_COMMIT_BYTES:
            yield run
            run, held = [], 0
    if run:
        yield run


def _nodes_of(layout: placement.Placement) -> set[str]:
    return {r.node for replicas in layout.values() for r in replicas}


def _same(a: placement.Placement, b: placement.Placement) -> bool:
    keys = set(a) | set(b)
    return all(a.get(k, ()) == b.get(k, ()) for k in keys)


def serve_replicas(
    node_id: str,
    data_dir: Path,
    urls: list[str],
    host: str,
    port: int,
    run_file: Path | None,
    advertise: str | None,
    writer_budget_bytes: int = WRITER_HEAP_BYTES,
) -> None:
    """Run an index node of a cluster on the log until SIGTERM / SIGINT."""
    replicas = ReplicaNode(node_id, data_dir, urls, writer_budget_bytes)
    partitions = replicas.start()
    assert replicas.watch is not None and replicas.watch.config is not None
    count = replicas.watch.config.partitions
    services = index_services(partitions, lambda: count, writable=False)

    def register(server: object) -> None:
        for service in services:
            service.add_servicer(service.servicer, server)

    node = Node(node_id, [s.descriptor.full_name for s in services], register, host, port)
    replicas.join(node, advertise or node.address)
    node.announce(run_file, "index")
    node.wait(on_stop=replicas.stop)
