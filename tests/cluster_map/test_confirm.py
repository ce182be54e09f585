"""Before the controller takes a node for gone, it reads that node's heartbeat afresh: a view that lags
one node (a watch stalled through a log failover) drops nobody who is still beating, while a node that
really stopped is dropped once its delay has passed."""

from __future__ import annotations

from dataclasses import dataclass

from quarry.cluster import placement
from quarry.cluster.cluster_map import NODE_TTL_MS, ClusterWatch, Heartbeat, MapState, now_ms
from quarry.cluster.setup import ClusterConfig
from quarry.index.replica import ReplicaNode

POLICY = placement.Policy(replicas=1, max_moves=4, node_left_delay_ms=1_000)


@dataclass
class Entry:
    key: str
    value: bytes
    revision: int = 1
    operation: str | None = None


class NodesBucket:
    """The heartbeats bucket as a fresh read finds it."""

    def __init__(self, beats: dict[str, Heartbeat]) -> None:
        self.beats = beats
        self.reads: list[str] = []

    async def get(self, key: str) -> Entry:
        self.reads.append(key)
        return Entry(key, self.beats[key.removeprefix("node.")].to_json())


class MapBucket:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    async def update(self, key: str, data: bytes, last: int) -> int:
        self.written.append(data)
        return last + 1


PARTITIONS = 8


def controller(view: dict[str, int], bucket: dict[str, int], tmp_path) -> tuple[ReplicaNode, NodesBucket, MapBucket]:
    """index-0's controller, its view holding `view` (node -> last heartbeat time), the bucket `bucket`;
    the map as placement wants it with every node alive (each node holds some partitions)."""
    watch = ClusterWatch(nc=None)  # type: ignore[arg-type]
    watch.config = ClusterConfig(partitions=PARTITIONS, replicas=1)
    watch.heartbeats = {n: Heartbeat(n, f"127.0.0.1:{i + 1}", 0, at) for i, (n, at) in enumerate(view.items())}
    layout = {
        p: (placement.Replica(placement.desired_nodes(p, view, 1)[0], placement.ACTIVE, 0),) for p in range(PARTITIONS)
    }
    assert {r.node for replicas in layout.values() for r in replicas} == set(view)
    watch.map = MapState(1, layout)
    nodes = NodesBucket({n: Heartbeat(n, f"127.0.0.1:{i + 1}", 0, at) for i, (n, at) in enumerate(bucket.items())})
    maps = MapBucket()
    watch._nodes_kv, watch._map_kv = nodes, maps
    node = ReplicaNode("index-0", tmp_path, urls=[], policy=POLICY)
    node.watch = watch
    return node, nodes, maps


def test_a_node_beating_but_late_in_this_view_is_read_afresh_and_kept(tmp_path) -> None:
    now = now_ms()
    stale = now - NODE_TTL_MS - POLICY.node_left_delay_ms - 2_000
    node, nodes, maps = controller({"index-0": now, "index-3": stale}, {"index-0": now, "index-3": now - 200}, tmp_path)
    try:
        node.loop.run(node._control(), timeout=10)
    finally:
        node.loop.stop()
    assert nodes.reads == ["node.index-3"]
    assert maps.written == []  # nothing moved: index-3 keeps its partition
    assert node.watch is not None and node.watch.heartbeats["index-3"].at_ms == now - 200


def test_a_node_that_stopped_beating_is_still_dropped_after_the_fresh_read(tmp_path) -> None:
    now = now_ms()
    stale = now - NODE_TTL_MS - POLICY.node_left_delay_ms - 2_000
    node, nodes, maps = controller({"index-0": now, "index-3": stale}, {"index-0": now, "index-3": stale}, tmp_path)
    try:
        node.loop.run(node._control(), timeout=10)
    finally:
        node.loop.stop()
    assert nodes.reads == ["node.index-3"]
    assert len(maps.written) == 1 and b"index-3" not in maps.written[0]
