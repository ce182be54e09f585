"""Where partition replicas live: rendezvous placement and the controller step toward it.

Pure functions over plain data, no I/O. The cluster map (cluster_map.py) is written only by
compare-and-set on its KV revision, so any number of controllers may run `step` on what they read:
the first write wins, the others read the new map and step from it. Nothing here elects anyone.

Placement. The replicas a partition should have are the top `replicas` of the eligible nodes by a
rendezvous hash of (partition, node), as Quickwit places splits on searchers: a node that joins
takes only the partitions it now ranks in the top of, a node that leaves gives up only its own, and
every controller computes the same answer from the same inputs.

One step, for every partition (steps 1 and 2 for all of them first, then 3 and 4 in partition order):
1. A replica whose node has been gone longer than `node_left_delay_ms` is dropped (Elasticsearch's
   delayed allocation: a node restarting within the delay keeps its partitions and resumes from its
   own checkpoint instead of every partition moving twice). A node that is briefly gone still counts
   as eligible, so nothing is moved away from it meanwhile.
2. A catching_up replica whose node reports the partition caught up becomes active.
3. A desired node without a replica gets one, catching_up. A partition with no active replica
   (a new cluster, or one whose replicas all died) always does; otherwise a partition starts moving
   (catching up a replica beside an active one) only while fewer than `max_moves` partitions are
   moving after steps 1 and 2, so a join does not replay the whole archive at once.
4. Replicas on nodes no longer desired: once the partition has `replicas` active desired replicas
   on live nodes (a node briefly gone serves nothing meanwhile), an active one becomes draining and
   a catching_up one is dropped; a draining replica is dropped `drain_grace_ms` after it started
   draining (query nodes have moved off it by then, and its node deletes its files only once the
   map no longer names it). A draining replica whose partition lost one of those live active desired
   replicas is active again: it still holds everything.
An active replica is therefore only ever removed through draining, and only once enough others are
active on live nodes: the controller drains a live active replica only while its partition keeps
`replicas` live active ones (all its desired nodes, on a smaller cluster).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

ACTIVE = "active"
CATCHING_UP = "catching_up"
DRAINING = "draining"
STATES = (ACTIVE, CATCHING_UP, DRAINING)


@dataclass(frozen=True)
class Replica:
    node: str
    state: str
    since_ms: int = 0  # when it entered this state (draining replicas are dropped after a grace)


@dataclass(frozen=True)
class NodeView:
    """What a controller knows of an index node from its heartbeats."""

    node: str
    alive: bool
    last_seen_ms: int
    caught_up: frozenset[int] = frozenset()  # partitions it reports applied up to the log's end


@dataclass(frozen=True)
class Policy:
    replicas: int
    max_moves: int = 4
    node_left_delay_ms: int = 60_000
    drain_grace_ms: int = 5_000


Placement = dict[int, tuple[Replica, ...]]


@dataclass(frozen=True)
class Eligibility:
    """The nodes placement may use: those alive and those gone for less than the delay."""

    nodes: tuple[str, ...]
    gone: frozenset[str] = field(default_factory=frozenset)  # gone longer than the delay: their replicas drop


def score(partition: int, node: str) -> int:
    """The rendezvous weight of a node for a partition: stable across processes and versions."""
    digest = hashlib.blake2b(f"{partition}/{node}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def desired_nodes(partition: int, nodes: Iterable[str], replicas: int) -> tuple[str, ...]:
    """The `replicas` nodes with the highest weight for the partition (all of them when fewer)."""
    ranked = sorted(set(nodes), key=lambda n: (-score(partition, n), n))
    return tuple(ranked[:replicas])


def eligibility(nodes: Mapping[str, NodeView], policy: Policy, now_ms: int) -> Eligibility:
    eligible = []
    gone = set()
    for view in nodes.values():
        if view.alive or now_ms - view.last_seen_ms < policy.node_left_delay_ms:
            eligible.append(view.node)
        else:
            gone.add(view.node)
    return Eligibility(tuple(sorted(eligible)), frozenset(gone))


def step(
    partitions: int,
    current: Mapping[int, tuple[Replica, ...]],
    nodes: Mapping[str, NodeView],
    policy: Policy,
    now_ms: int,
) -> Placement:
    """The next placement from the current one (see the module docstring); equal to `current` when
    there is nothing to do. Nodes absent from `nodes` are unknown: their replicas are dropped."""
    allowed = eligibility(nodes, policy, now_ms)
    eligible = set(allowed.nodes)
    live = {view.node for view in nodes.values() if view.alive}
    # Steps 1 and 2 for every partition first: the moves under way are counted on what they leave.
    staged = {
        p: [_promoted(r, p, nodes, now_ms) for r in current.get(p, ()) if r.node in eligible] for p in range(partitions)
    }
    moving = sum(1 for replicas in staged.values() if _moving(tuple(replicas)))
    out: Placement = {}
    for partition in range(partitions):
        desired = desired_nodes(partition, allowed.nodes, policy.replicas)
        replicas = staged[partition]
        held = {r.node for r in replicas}
        was_moving = _moving(tuple(replicas))
        bootstrapping = not any(r.state == ACTIVE for r in replicas)
        for node in desired:
            if node in held:
                continue
            if not bootstrapping and not was_moving and moving >= policy.max_moves:
                continue
            replicas.append(Replica(node, CATCHING_UP, now_ms))
            if not bootstrapping and not was_moving:
                moving += 1
                was_moving = True
        replicas = _retire(replicas, desired, live, policy, now_ms)
        out[partition] = tuple(sorted(replicas, key=lambda r: (r.node not in desired, desired_rank(desired, r.node))))
    return out


def desired_rank(desired: tuple[str, ...], node: str) -> int:
    return desired.index(node) if node in desired else len(desired)


def _promoted(replica: Replica, partition: int, nodes: Mapping[str, NodeView], now_ms: int) -> Replica:
    view = nodes.get(replica.node)
    if replica.state == CATCHING_UP and view is not None and view.alive and partition in view.caught_up:
        return replace(replica, state=ACTIVE, since_ms=now_ms)
    return replica


def _moving(replicas: tuple[Replica, ...]) -> bool:
    """A partition is moving when it catches up a replica while it already has an active one."""
    states = {r.state for r in replicas}
    return CATCHING_UP in states and ACTIVE in states


def _retire(
    replicas: list[Replica], desired: tuple[str, ...], live: set[str], policy: Policy, now_ms: int
) -> list[Replica]:
    wanted = set(desired)
    # A desired replica on a node that is briefly gone keeps its place but serves nothing meanwhile.
    active_desired = sum(1 for r in replicas if r.node in wanted and r.node in live and r.state == ACTIVE)
    enough = active_desired >= min(policy.replicas, len(desired))
    kept = []
    for replica in replicas:
        if replica.node in wanted or not enough:
            kept.append(replica if replica.state != DRAINING else replace(replica, state=ACTIVE, since_ms=now_ms))
        elif replica.state == ACTIVE:
            kept.append(replace(replica, state=DRAINING, since_ms=now_ms))
        elif replica.state == DRAINING and now_ms - replica.since_ms < policy.drain_grace_ms:
            kept.append(replica)
    return kept
