"""Which replica the cluster client asks for each partition, and which nodes it suspects.

Replica order for a partition: the replica a cursor walk has read it from so far (a walk stays on one
replica while it lives, as Elasticsearch's `preference` and Qdrant's route affinity keep it), then the
active replicas, then draining ones (complete, on their way out); among the best of a request's
partitions' replicas, the fewest nodes that cover them all (`Placement.plan`). Catching-up replicas are
never read, nor replicas on nodes whose heartbeat stopped. A node that failed a call is suspected for
SUSPECT_S: tried after the others, so a dead node costs one retry, not one per request, until the map
drops it or it answers again.
"""

from __future__ import annotations

import time
from collections import Counter

from quarry.query.topology import ACTIVE, DRAINING, ClusterView

SUSPECT_S = 3.0

Rank = tuple[bool, bool, bool, bool]  # heartbeat late, suspected, not the preferred replica, not active


class Placement:
    """Replica choice for the cluster client: shared by every request, so that the suspicion a failed
    call raises, and the turn that shares the load between covering nodes, carry from one to the next."""

    def __init__(self) -> None:
        self.suspects: dict[str, float] = {}  # node -> when its suspicion ends (time.monotonic)
        self._turn = 0

    def suspect(self, node: str) -> None:
        """The node failed a call: try it after the others for SUSPECT_S."""
        self.suspects[node] = time.monotonic() + SUSPECT_S

    def acquit(self, node: str) -> None:
        """The node answered: it is no longer suspected."""
        self.suspects.pop(node, None)

    def plan(
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
            ranked = self.ranked(view, partition, tried[partition], prefer)
            if not ranked:
                unplaced.append(partition)
            elif prefer and prefer.get(partition) == ranked[0][1]:
                plan.setdefault(ranked[0][1], []).append(partition)
            else:
                best = ranked[0][0]
                choices[partition] = [node for rank, node in ranked if rank == best]
        self._turn += 1
        cover = self._cover(choices)
        # The slowest node sets the latency: each partition goes to the covering node with the fewest
        # so far (those with the fewest choices placed first), not all to the first node that holds it.
        load = Counter({node: len(plan.get(node, ())) for node in cover})
        for partition, nodes in sorted(choices.items(), key=lambda item: (sum(n in cover for n in item[1]), item[0])):
            node = min((n for n in nodes if n in cover), key=lambda n: (load[n], cover.index(n)))
            plan.setdefault(node, []).append(partition)
            load[node] += 1
        return plan, unplaced

    def _cover(self, choices: dict[int, list[str]]) -> list[str]:
        """Nodes that together hold a choice of every partition, greedily the one covering most first;
        ties taken in turn."""
        cover: list[str] = []
        uncovered = dict(choices)
        while uncovered:
            coverage = Counter(node for nodes in uncovered.values() for node in nodes)
            most = max(coverage.values())
            tied = sorted(node for node, count in coverage.items() if count == most)
            node = tied[self._turn % len(tied)]
            cover.append(node)
            uncovered = {p: nodes for p, nodes in uncovered.items() if node not in nodes}
        return cover

    def choose(self, view: ClusterView, partition: int, tried: set[str], prefer: dict[int, str] | None) -> str | None:
        """The next replica to read the partition from, or None when no untried readable one is left."""
        ranked = self.ranked(view, partition, tried, prefer)
        return ranked[0][1] if ranked else None

    def ranked(
        self, view: ClusterView, partition: int, tried: set[str], prefer: dict[int, str] | None
    ) -> list[tuple[Rank, str]]:
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
            ((not alive, self.suspects.get(r.node, 0.0) > now, r.node != preferred, r.state != ACTIVE), index, r.node)
            for index, (r, alive) in enumerate(readable)  # the map lists replicas in rendezvous order
        ]
        return [(rank, node) for rank, _, node in sorted(ranked)]


def no_replica(view: ClusterView, partition: int) -> str:
    """Why no replica of the partition can be asked: none assigned, or each one's state."""
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
