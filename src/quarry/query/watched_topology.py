"""The query node's topology in a cluster on the log: the map and the heartbeats, watched on NATS.

A view is built from the latest map and heartbeats; a node whose heartbeat is older than the TTL is not
alive, so a view is rebuilt at most every VIEW_MAX_AGE_S even when nothing on NATS changed (time
alone makes a silent node dead). Changes are taken from the loop thread into a snapshot under a lock;
gRPC threads only read snapshots.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from quarry.cluster.cluster_map import ClusterWatch, Heartbeat, MapState, now_ms
from quarry.cluster.loop import LoopThread, connect
from quarry.cluster.setup import STREAM, ClusterConfig
from quarry.query.assertion_log import AssertionLog
from quarry.query.cluster_client import ClusterClient
from quarry.query.topology import ClusterView, NodeView, ReplicaView
from quarry.v1 import query_pb2

VIEW_MAX_AGE_S = 0.25
LOG_STATUS_TIMEOUT_S = 2.0
MODE = "nats"


@dataclass(frozen=True)
class _Snapshot:
    config: ClusterConfig
    map: MapState | None
    heartbeats: dict[str, Heartbeat] = field(default_factory=dict)


class WatchedTopology:
    def __init__(self, urls: list[str], name: str = "quarry-query") -> None:
        self.urls = urls
        self.loop = LoopThread(f"{name}-nats")
        self._lock = threading.Lock()
        self._snapshot: _Snapshot | None = None
        self._view: ClusterView | None = None
        self._built = 0.0
        self.nc = self.loop.run(connect(urls, name))
        self.watch = ClusterWatch(self.nc, changed=self._take)
        self.loop.run(self.watch.start())
        self._take()

    def _take(self) -> None:
        watch = self.watch
        assert watch.config is not None
        snapshot = _Snapshot(watch.config, watch.map, dict(watch.heartbeats))
        with self._lock:
            self._snapshot = snapshot
            self._view = None

    def view(self) -> ClusterView:
        with self._lock:
            snapshot = self._snapshot
            if self._view is not None and time.monotonic() - self._built < VIEW_MAX_AGE_S:
                return self._view
        assert snapshot is not None
        built = build_view(snapshot.config, snapshot.map, snapshot.heartbeats, now_ms())
        with self._lock:
            if self._snapshot is snapshot:
                self._view, self._built = built, time.monotonic()
        return built

    def log_status(self) -> query_pb2.LogStatus:
        status = query_pb2.LogStatus(stream=STREAM)
        try:
            info = self.loop.run(self.nc.jetstream().stream_info(STREAM), timeout=LOG_STATUS_TIMEOUT_S)
        except Exception as error:
            status.detail = f"the log did not answer: {type(error).__name__}: {error}"
            return status
        state = info.state
        status.messages, status.bytes = state.messages, state.bytes
        status.first_seq, status.last_seq = state.first_seq, state.last_seq
        cluster = info.cluster
        if cluster is not None:
            status.leader = cluster.leader or ""
            if cluster.leader:
                status.servers.add(name=cluster.leader, leader=True, current=True)
            for peer in cluster.replicas or []:
                status.servers.add(
                    name=peer.name, current=bool(peer.current), offline=bool(peer.offline), lag=peer.lag or 0
                )
        return status

    def assertion_log(self, cluster: ClusterClient) -> AssertionLog:
        return AssertionLog(self.loop, self.nc, cluster)

    def close(self) -> None:
        try:
            self.loop.run(self.watch.stop(), timeout=5)
            self.loop.run(self.nc.close(), timeout=5)
        except Exception:
            pass
        self.loop.stop()


def build_view(
    config: ClusterConfig, layout: MapState | None, heartbeats: dict[str, Heartbeat], now: int
) -> ClusterView:
    """The routing view: replicas from the map with their progress from the heartbeats, nodes alive
    when their heartbeat is recent."""
    placement = layout.placement if layout is not None else {}
    replicas: dict[int, tuple[ReplicaView, ...]] = {}
    log_seqs: dict[int, int] = {}
    for partition, listed in placement.items():
        views = []
        for replica in listed:
            beat = heartbeats.get(replica.node)
            progress = beat.partitions.get(partition) if beat is not None else None
            applied = progress.applied if progress is not None else 0
            lag = progress.pending if progress is not None else -1
            views.append(ReplicaView(replica.node, replica.state, applied, lag))
            if progress is not None and progress.pending >= 0:
                log_seqs[partition] = max(log_seqs.get(partition, 0), progress.applied + progress.pending)
        replicas[partition] = tuple(views)
    nodes = {
        name: NodeView(name, beat.address, beat.alive(now), tuple(sorted(beat.partitions)))
        for name, beat in heartbeats.items()
    }
    for listed in placement.values():
        for replica in listed:
            nodes.setdefault(replica.node, NodeView(replica.node, "", alive=False))
    return ClusterView(
        mode=MODE,
        generation=layout.revision if layout is not None else 0,
        partitions=config.partitions,
        replicas_wanted=config.replicas,
        replicas=replicas,
        nodes=nodes,
        log_seqs=log_seqs,
    )
