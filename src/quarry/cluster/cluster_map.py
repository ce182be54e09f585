"""The cluster map and the nodes' heartbeats as every node sees them, kept current from the cluster KV.

`ClusterWatch` holds, on the NATS loop, the latest `assignment` (partition -> replicas, with the key's
revision as the map's generation) and every index node's latest heartbeat. It watches both buckets and
also re-reads them every few seconds, so a watch that stalls (a log server failing over) costs a few
seconds, never a stale map forever. `changed` is called after each change (from the loop thread).

Writes: the map only by `write_map`, a compare-and-set on the revision the writer read (CAS failure
means another controller wrote first: read again and step again); heartbeats by their own node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from nats.aio.client import Client
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NoKeysError, NotFoundError

from quarry.cluster import placement
from quarry.cluster.setup import (
    ASSIGNMENT_KEY,
    MAP_BUCKET,
    NODES_BUCKET,
    ClusterConfig,
    node_key,
    read_config,
    until_ready,
)

HEARTBEAT_S = 1.0
NODE_TTL_MS = 5_000  # a heartbeat older than this: the node is not alive (queries avoid it at once)
REFRESH_S = 3.0
REFRESH_TIMEOUT_S = 10.0
STOP_S = 1.0
_log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Progress:
    """How far a node's replica of a partition is: the last log sequence applied, what is left."""

    applied: int
    pending: int  # records of the partition after `applied` (-1: not known yet)
    caught_up: bool


@dataclass(frozen=True)
class Heartbeat:
    node: str
    address: str
    started_ms: int
    at_ms: int
    partitions: dict[int, Progress] = field(default_factory=dict)
    pid: int = 0
    leaving: bool = False  # its last heartbeat, sent as it stops: not alive from then on

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "node": self.node,
                "address": self.address,
                "started_ms": self.started_ms,
                "at_ms": self.at_ms,
                "pid": self.pid,
                "leaving": self.leaving,
                "partitions": {str(p): [g.applied, g.pending, g.caught_up] for p, g in sorted(self.partitions.items())},
            }
        )

    @classmethod
    def from_json(cls, data: bytes) -> Heartbeat:
        body: dict[str, Any] = orjson.loads(data)
        return cls(
            node=str(body["node"]),
            address=str(body["address"]),
            started_ms=int(body["started_ms"]),
            at_ms=int(body["at_ms"]),
            pid=int(body.get("pid", 0)),
            leaving=bool(body.get("leaving", False)),
            partitions={int(p): Progress(int(a), int(n), bool(c)) for p, (a, n, c) in body["partitions"].items()},
        )

    def alive(self, now: int) -> bool:
        return not self.leaving and now - self.at_ms < NODE_TTL_MS


@dataclass(frozen=True)
class MapState:
    """The assignment as read: its KV revision (the generation) and the placement."""

    revision: int
    placement: placement.Placement

    @classmethod
    def decode(cls, revision: int, data: bytes) -> MapState:
        body: dict[str, Any] = orjson.loads(data)
        return cls(
            revision,
            {
                int(p): tuple(placement.Replica(str(n), str(s), int(t)) for n, s, t in replicas)
                for p, replicas in body["partitions"].items()
            },
        )


def encode_placement(layout: Mapping[int, tuple[placement.Replica, ...]]) -> bytes:
    return orjson.dumps(
        {"partitions": {str(p): [[r.node, r.state, r.since_ms] for r in reps] for p, reps in sorted(layout.items())}}
    )


class ClusterWatch:
    def __init__(self, nc: Client, changed: Callable[[], None] | None = None) -> None:
        self.nc = nc
        self.config: ClusterConfig | None = None
        self.map: MapState | None = None
        self.heartbeats: dict[str, Heartbeat] = {}
        self._changed = changed
        self._tasks: list[asyncio.Task[None]] = []
        self._map_kv: Any = None
        self._nodes_kv: Any = None

    async def start(self, wait_config: bool = True) -> None:
        """Read the config (waiting for `quarry cluster init` when `wait_config`), then follow both
        buckets in the background."""
        while self.config is None:
            self.config = await until_ready(lambda: read_config(self.nc))
            if self.config is None:
                if not wait_config:
                    return
                await asyncio.sleep(0.5)
        js = self.nc.jetstream()
        self._map_kv = await until_ready(lambda: js.key_value(MAP_BUCKET))
        self._nodes_kv = await until_ready(lambda: js.key_value(NODES_BUCKET))
        while True:
            try:
                await until_ready(self.refresh)
                break
            except TimeoutError as error:  # a read that never answered (refresh's bound): read again
                _log.warning("reading the cluster map failed (%s); again", error)
        self._tasks = [
            asyncio.create_task(self._follow(self._map_kv, ASSIGNMENT_KEY, self._on_map)),
            asyncio.create_task(self._follow(self._nodes_kv, "node.>", self._on_node)),
            asyncio.create_task(self._refresh_forever()),
        ]

    async def stop(self) -> None:
        """Stop watching (a watch whose unsubscribe does not answer is not waited for past STOP_S)."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_S)

    async def refresh(self) -> None:
        """Read the map and every heartbeat now, within REFRESH_TIMEOUT_S (TimeoutError past it): the
        key listing is a KV watch that waits for its end-of-initial-values marker, which a log server
        restarting under it has been seen never to send, and an unbounded wait here held a joining node
        before its first heartbeat with nothing in its log."""
        async with asyncio.timeout(REFRESH_TIMEOUT_S):
            await self._read_all()

    async def _read_all(self) -> None:
        changed = False
        try:
            entry = await self._map_kv.get(ASSIGNMENT_KEY)
            changed |= self._on_map(entry)
        except (KeyNotFoundError, NotFoundError):
            pass
        try:
            keys = await self._nodes_kv.keys()
        except NoKeysError:
            keys = []
        # A listing taken under load may miss keys: it only adds or updates heartbeats, and a heartbeat
        # leaves the view only by the deletion the watch delivers (or by growing old: `alive`).
        for key in keys:
            try:
                changed |= self._on_node(await self._nodes_kv.get(key))
            except (KeyNotFoundError, NotFoundError):
                continue
        if changed:
            self._notify()

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            try:
                await self.refresh()
            except Exception as error:  # the log failing over: the next round reads again
                _log.info("cluster map refresh failed: %r", error)

    async def _follow(self, kv: Any, keys: str, apply: Callable[[Any], bool]) -> None:
        """Watch keys, re-creating the watch when it errs or stays silent past a refresh period."""
        while True:
            watcher = None
            try:
                watcher = await kv.watch(keys)
                while True:
                    try:
                        entry = await watcher.updates(timeout=10 * REFRESH_S)
                    except TimeoutError:  # nats-py raises its own subclass, or asyncio's, when nothing comes
                        break  # silent too long: watch again
                    if entry is not None and apply(entry):
                        self._notify()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                _log.info("watching %s: %s; watching again", keys, error)
                await asyncio.sleep(0.5)
            finally:
                if watcher is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(watcher.stop(), STOP_S)

    def _on_map(self, entry: Any) -> bool:
        if entry.value is None or entry.operation in ("DEL", "PURGE"):
            return False
        if self.map is not None and entry.revision <= self.map.revision:
            return False
        self.map = MapState.decode(entry.revision, entry.value)
        return True

    def _on_node(self, entry: Any) -> bool:
        name = entry.key.removeprefix("node.")
        if entry.operation in ("DEL", "PURGE") or not entry.value:
            return self.heartbeats.pop(name, None) is not None
        beat = Heartbeat.from_json(entry.value)
        known = self.heartbeats.get(name)
        if known is not None and known.at_ms >= beat.at_ms:
            return False
        self.heartbeats[name] = beat
        return True

    def _notify(self) -> None:
        if self._changed is not None:
            try:
                self._changed()
            except Exception:
                _log.exception("cluster map listener failed")

    # ----- views -----------------------------------------------------------------------------

    def node_views(self, now: int, watching_since_ms: int) -> dict[str, placement.NodeView]:
        """The controller's view of every node with a heartbeat in the bucket, and of every node the map
        names without one (its heartbeat expired, or this watch has not read it yet): not alive, last seen
        when this watch began (`watching_since_ms`) or when the map last changed one of its replicas,
        whichever is later. A replica changes state only by a controller that saw its node (placed while
        eligible, promoted while alive), so the map is evidence of the node that this view may lack: a
        node that joined after this watch began, whose heartbeats this view has not read, keeps its
        partitions for the cluster's delay, and is not taken for gone since the watch began."""
        views = {
            name: placement.NodeView(
                name,
                beat.alive(now),
                beat.at_ms,
                frozenset(p for p, progress in beat.partitions.items() if progress.caught_up),
            )
            for name, beat in self.heartbeats.items()
        }
        placed = self.map.placement if self.map is not None else {}
        unseen: dict[str, int] = {}
        for replicas in placed.values():
            for replica in replicas:
                if replica.node not in views:
                    unseen[replica.node] = max(unseen.get(replica.node, watching_since_ms), replica.since_ms)
        views.update({node: placement.NodeView(node, False, seen) for node, seen in unseen.items()})
        return views

    # ----- writes ----------------------------------------------------------------------------

    async def write_map(self, layout: placement.Placement, read_revision: int | None) -> bool:
        """Compare-and-set the assignment against the revision it was computed from (None: create it);
        False when another writer came first."""
        data = encode_placement(layout)
        try:
            if read_revision is None:
                revision = await self._map_kv.create(ASSIGNMENT_KEY, data)
            else:
                revision = await self._map_kv.update(ASSIGNMENT_KEY, data, last=read_revision)
        except KeyWrongLastSequenceError:
            return False
        if self.map is None or revision > self.map.revision:
            self.map = MapState.decode(revision, data)
            self._notify()
        return True

    async def confirm(self, nodes: list[str]) -> dict[str, str]:
        """Read these nodes' heartbeats afresh from the bucket (a read on the stream's leader), into this
        view; returns what each read found, for the log. A view can lag one node's heartbeats while it
        holds its own (a watch stalled through a log failover, then kept current only in part): before a
        node is taken for gone, its heartbeat is read, not remembered."""
        changed = False
        found: dict[str, str] = {}
        for node in nodes:
            try:
                entry = await self._nodes_kv.get(node_key(node))
            except (KeyNotFoundError, NotFoundError):
                found[node] = "no heartbeat in the bucket"
                continue
            changed |= self._on_node(entry)
            beat = Heartbeat.from_json(entry.value) if entry.value else None
            found[node] = f"revision {entry.revision}" + (f", written at {beat.at_ms}" if beat else ", deleted")
        if changed:
            self._notify()
        return found

    async def beat(self, heartbeat: Heartbeat) -> None:
        """Put the node's heartbeat. It is not taken into this view here: it comes back through the
        watch like everyone else's, so a node seeing its own heartbeat recent knows its view is current
        (`current`)."""
        await self._nodes_kv.put(node_key(heartbeat.node), heartbeat.to_json())

    def current(self, node: str, now: int) -> bool:
        """Whether this view is up to date: the node's own last heartbeat came back through it recently.
        A controller whose watch stalled sees every other node's heartbeat age too, and must not take
        them for gone."""
        own = self.heartbeats.get(node)
        return own is not None and now - own.at_ms < NODE_TTL_MS

    def view_time(self, node: str, now: int) -> int:
        """The time this view speaks for: now, or earlier when the node's own heartbeat is late coming
        back (its last one plus one interval). When the log stalls (a NATS leader election) every
        heartbeat in the view is late alike; judged from this time, a controller whose own heartbeat is
        still "current" takes nobody for gone for a lateness that is the view's, not theirs."""
        own = self.heartbeats.get(node)
        return now if own is None else min(now, own.at_ms + int(HEARTBEAT_S * 1000))

    async def leave(self, last: Heartbeat) -> None:
        """A clean stop: a last heartbeat that says so. The node is not alive from then on (queries leave
        it at once), and its partitions stay placed on it for the cluster's delay, so a node restarted
        meanwhile (a rolling update) resumes them from its own checkpoints instead of moving them."""
        with contextlib.suppress(Exception):
            await self._nodes_kv.put(node_key(last.node), last.to_json())
        self.heartbeats[last.node] = last
