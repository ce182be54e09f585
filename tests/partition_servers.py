"""Index nodes in this process, for tests of the query path over real partitions: a PartitionSet
(Tantivy + SQLite under a temporary directory) behind a real gRPC server on 127.0.0.1."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc

from quarry.core.telemetry import MAX_MESSAGE_BYTES
from quarry.index.lexical.assertions import AssertionStore
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.partition_set import PartitionSet
from quarry.index.server import index_services
from quarry.query.topology import StaticTopology


class PartitionServer:
    """One index node holding `held` of `count` partitions, stoppable and restartable on its port."""

    def __init__(self, data_dir: Path, held: list[int], count: int) -> None:
        self.data_dir = data_dir
        self.held = held
        self.count = count
        self.port = 0
        self.partitions: PartitionSet | None = None
        self.server: grpc.Server | None = None
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.partitions = PartitionSet(self.data_dir, expected_partitions=len(self.held))
        for partition in self.held:
            self.partitions.open(partition)
        limits = [(f"grpc.max_{way}_message_length", MAX_MESSAGE_BYTES) for way in ("send", "receive")]  # as a node's
        self.server = grpc.server(futures.ThreadPoolExecutor(8), options=[("grpc.so_reuseport", 1), *limits])
        for service in index_services(self.partitions, lambda: self.count, writable=True):
            service.add_servicer(service.servicer, self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        self.server.start()

    def lexical(self, partition: int) -> LexicalPartition:
        assert self.partitions is not None
        return self.partitions.get(partition).lexical

    def assertions(self, partition: int) -> AssertionStore:
        assert self.partitions is not None
        return self.partitions.get(partition).assertions

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace=None).wait()
            self.server = None
        if self.partitions is not None:
            self.partitions.close_all()
            self.partitions = None


def one_partition_each(root: Path, count: int) -> list[PartitionServer]:
    """The embedded default's shape: `count` nodes, node i holding partition i."""
    return [PartitionServer(root / f"index-{i}", [i], count) for i in range(count)]


def topology(servers: list[PartitionServer]) -> StaticTopology:
    return StaticTopology.index_nodes([s.address for s in servers])
