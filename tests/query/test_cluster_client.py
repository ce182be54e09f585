"""How the query node's cluster client picks the replica it asks for each partition: one per partition,
on as few nodes as cover them, a cursor's replica kept, a dead or suspected node avoided, a catching-up
replica never read."""

from __future__ import annotations

import time

from quarry.query.cluster_client import ClusterClient
from quarry.query.topology import ACTIVE, CATCHING_UP, DRAINING, ClusterView, NodeView, ReplicaView


class Fixed:
    def __init__(self, view: ClusterView) -> None:
        self._view = view

    def view(self) -> ClusterView:
        return self._view

    def log_status(self) -> None:
        return None

    def assertion_log(self, cluster: object) -> None:
        return None

    def close(self) -> None:
        return None


def view(layout: dict[int, list[tuple[str, str]]], down: tuple[str, ...] = ()) -> ClusterView:
    names = sorted({n for replicas in layout.values() for n, _ in replicas})
    return ClusterView(
        mode="nats",
        generation=1,
        partitions=len(layout),
        replicas_wanted=2,
        replicas={p: tuple(ReplicaView(n, state) for n, state in replicas) for p, replicas in layout.items()},
        nodes={n: NodeView(n, f"127.0.0.1:{9000 + i}", n not in down) for i, n in enumerate(names)},
    )


def three_nodes_two_replicas(partitions: int = 16) -> dict[int, list[tuple[str, str]]]:
    pairs = [("a", "b"), ("b", "c"), ("c", "a")]
    return {p: [(n, ACTIVE) for n in pairs[p % 3]] for p in range(partitions)}


def plan_of(cluster: ClusterClient, prefer: dict[int, str] | None = None) -> dict[str, list[int]]:
    current = cluster.view()
    pending = list(range(current.partitions))
    plan, unplaced = cluster.placement.plan(current, pending, {p: set() for p in pending}, prefer)
    assert unplaced == []
    return plan


def test_two_replicas_on_three_nodes_are_read_from_two_nodes_each_partition_once() -> None:
    cluster = ClusterClient(Fixed(view(three_nodes_two_replicas())))
    for _ in range(3):
        plan = plan_of(cluster)
        assert len(plan) == 2
        assert sorted(p for ps in plan.values() for p in ps) == list(range(16))
    used = {frozenset(plan_of(cluster)) for _ in range(6)}
    assert len(used) > 1  # the covering pair changes from one request to the next: the load is shared


def test_a_cursors_replica_is_kept_for_its_partition() -> None:
    cluster = ClusterClient(Fixed(view(three_nodes_two_replicas())))
    for _ in range(4):
        plan = plan_of(cluster, prefer={0: "b", 1: "c"})
        assert 0 in plan["b"] and 1 in plan["c"]


def test_dead_suspected_and_catching_up_replicas_are_not_read_while_a_good_one_is_there() -> None:
    layout = three_nodes_two_replicas()
    layout[5] = [("c", CATCHING_UP), ("a", DRAINING)]
    cluster = ClusterClient(Fixed(view(layout, down=("b",))))
    plan = plan_of(cluster)
    assert "b" not in plan
    assert 5 in plan["a"]  # the draining copy is complete: read when it is all there is
    cluster.placement.suspects["c"] = time.monotonic() + 60
    again = plan_of(cluster)
    assert all("a" in dict(layout[p]) for p in again.get("a", []))
    assert set(again.get("c", [])) == {p for p in range(16) if dict(layout[p]).keys() == {"b", "c"}}


def test_the_covering_nodes_share_the_partitions_evenly() -> None:
    """A node's search costs more with every partition it answers for, and the slowest node sets the
    latency: with 16 partitions on two covering nodes, each answers for 8."""
    cluster = ClusterClient(Fixed(view(three_nodes_two_replicas())))
    for _ in range(6):
        plan = plan_of(cluster)
        assert sorted(len(ps) for ps in plan.values()) == [8, 8]
