"""What the query node knows of the cluster's shape: the partitions, their replicas, and the nodes.

A `Topology` gives the current `ClusterView`, a snapshot the cluster client routes one request by.
`StaticTopology` is the embedded default's: partition i on index node i, one copy each, fixed at
start. A cluster on the log watches its map and the nodes' heartbeats in the cluster KV
(watched_topology.py) and gives a new view whenever either changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from quarry.v1 import query_pb2

if TYPE_CHECKING:
    from quarry.query.assertion_log import AssertionLog
    from quarry.query.cluster_client import ClusterClient

ACTIVE = "active"
CATCHING_UP = "catching_up"
DRAINING = "draining"
DIRECT = "direct"
IN_PROCESS = "in-process"  # the address of a node that is the query node's own process


@dataclass(frozen=True)
class ReplicaView:
    node: str
    state: str  # active | catching_up | draining
    applied_seq: int = 0
    lag: int = 0


@dataclass(frozen=True)
class NodeView:
    node: str
    address: str
    alive: bool
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True)
class ClusterView:
    mode: str  # direct | nats
    generation: int
    partitions: int
    replicas_wanted: int
    replicas: dict[int, tuple[ReplicaView, ...]]
    nodes: dict[str, NodeView]
    log_seqs: dict[int, int] = field(default_factory=dict)  # partition -> last log sequence (cluster mode)

    def address(self, node: str) -> str | None:
        view = self.nodes.get(node)
        return view.address if view is not None else None

    def one_node_holds_all(self) -> bool:
        """Whether one node holds a replica of every partition and no other node holds any (the embedded
        default, a cluster of one index node): every fan-out then asks that node alone."""
        holders = {r.node for replicas in self.replicas.values() for r in replicas}
        return len(holders) == 1 and all(self.replicas.get(p) for p in range(self.partitions))


class Topology(Protocol):
    def view(self) -> ClusterView: ...

    def log_status(self) -> query_pb2.LogStatus | None:
        """The replicated log's state (cluster mode), None without a log."""
        ...

    def assertion_log(self, cluster: ClusterClient) -> AssertionLog | None:
        """Where assertion writes go in a cluster on the log; None: straight to the partition's node."""
        ...

    def close(self) -> None: ...


class StaticTopology:
    """The embedded default, one copy of each partition, fixed at start: `holders[i]` is the (node, address)
    holding partition i. Index node i holds partition i (`index_nodes`), or one node holds them all
    (`held_by`: the query node itself)."""

    def __init__(self, holders: Sequence[tuple[str, str]]) -> None:
        addresses = dict(holders)
        self._view = ClusterView(
            mode=DIRECT,
            generation=0,
            partitions=len(holders),
            replicas_wanted=1,
            replicas={i: (ReplicaView(node, ACTIVE),) for i, (node, _) in enumerate(holders)},
            nodes={
                node: NodeView(
                    node, address, alive=True, partitions=tuple(i for i, h in enumerate(holders) if h[0] == node)
                )
                for node, address in addresses.items()
            },
        )

    @classmethod
    def index_nodes(cls, addresses: Sequence[str]) -> StaticTopology:
        """Partition i on index node i, at `addresses[i]`."""
        return cls([(f"index-{i}", address) for i, address in enumerate(addresses)])

    @classmethod
    def held_by(cls, node: str, partitions: int) -> StaticTopology:
        """Every partition on `node`, this very process (its address says so: it is called in-process)."""
        return cls([(node, IN_PROCESS)] * partitions)

    def view(self) -> ClusterView:
        return self._view

    def log_status(self) -> query_pb2.LogStatus | None:
        return None

    def assertion_log(self, cluster: ClusterClient) -> AssertionLog | None:
        return None

    def close(self) -> None:
        return None
