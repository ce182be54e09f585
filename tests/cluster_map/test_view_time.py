"""The controller judges other nodes' heartbeats as of its own view: a view where every heartbeat is
late alike (the log stalled, as in a NATS leader election) takes nobody for gone; a node that alone
stopped beating is still gone."""

from __future__ import annotations

from quarry.cluster import placement
from quarry.cluster.cluster_map import NODE_TTL_MS, ClusterWatch, Heartbeat, MapState

POLICY = placement.Policy(replicas=1, max_moves=4, node_left_delay_ms=1_000)


def watch_with(beats: dict[str, int]) -> ClusterWatch:
    """A watch (no connection: only its view is read) holding these nodes' last heartbeat times, each
    node placed on one partition."""
    watch = ClusterWatch(nc=None)  # type: ignore[arg-type]
    watch.heartbeats = {n: Heartbeat(n, f"127.0.0.1:{i + 1}", 0, at) for i, (n, at) in enumerate(beats.items())}
    layout = {i: (placement.Replica(n, placement.ACTIVE, 0),) for i, n in enumerate(sorted(beats))}
    watch.map = MapState(1, layout)
    return watch


def dropped(watch: ClusterWatch, node: str, now: int) -> set[str]:
    assert watch.map is not None
    at = watch.view_time(node, now)
    following = placement.step(len(watch.map.placement), watch.map.placement, watch.node_views(at, 0), POLICY, at)
    placed = {r.node for replicas in following.values() for r in replicas}
    return {r.node for replicas in watch.map.placement.values() for r in replicas} - placed


def test_a_view_late_for_everyone_takes_nobody_for_gone() -> None:
    beat = 100_000
    watch = watch_with({"index-0": beat, "index-1": beat - 900, "index-2": beat - 600})
    now = beat + NODE_TTL_MS - 100  # the controller's own heartbeat is still "current"
    assert watch.current("index-0", now)
    assert dropped(watch, "index-0", now) == set()


def test_a_node_that_alone_stopped_beating_is_gone() -> None:
    now = 100_000
    watch = watch_with({"index-0": now - 300, "index-1": now - 400, "index-2": now - NODE_TTL_MS - 2_000})
    assert dropped(watch, "index-0", now) == {"index-2"}


def test_a_current_view_speaks_for_now() -> None:
    watch = watch_with({"index-0": 50_000})
    assert watch.view_time("index-0", 50_400) == 50_400
    assert watch.view_time("index-9", 50_400) == 50_400  # no heartbeat of its own yet: now


def test_a_node_this_view_never_saw_keeps_its_partitions_from_its_last_placement() -> None:
    """A node that joined after the controller's watch began, whose heartbeats the view has not read:
    the map placed it (a controller saw it then), so its replicas stay for the delay from that moment,
    and go once the delay has passed with no heartbeat read."""
    now = 100_000
    watch = watch_with({"index-0": now - 300})
    assert watch.map is not None
    joined = placement.Replica("index-3", placement.ACTIVE, now - 500)
    watch.map = MapState(2, {**watch.map.placement, 5: (joined,)})
    assert watch.node_views(now, 0)["index-3"] == placement.NodeView("index-3", False, now - 500)
    assert dropped(watch, "index-0", now) == set()
    later = now - 500 + POLICY.node_left_delay_ms + NODE_TTL_MS
    watch.heartbeats["index-0"] = Heartbeat("index-0", "127.0.0.1:1", 0, later - 300)
    assert dropped(watch, "index-0", later) == {"index-3"}
