"""A real cluster in this process for query-node and CLI tests: lexical partitions (Tantivy + SQLite under a
temporary directory) behind gRPC servers, the coordinator over them, and a QueryService server."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc

from quarry.core import refs
from quarry.core.config import ClusterInfo
from quarry.core.routing import partition_for
from quarry.query import units
from quarry.query.root import Coordinator
from quarry.query.server import QueryServicer
from quarry.query.topology import StaticTopology
from quarry.v1 import index_pb2, plan_pb2, query_pb2, query_pb2_grpc, units_pb2
from tests.index.sessions import BASE_MS, Msg, Tool, session
from tests.partition_servers import PartitionServer, one_partition_each, topology


def corpus() -> list[units_pb2.Session]:
    """Nine sessions of three messages, one action, two file rows and a main run each."""
    out = []
    for n in range(9):
        # three sessions share each start time, so rows tie on time across partitions
        start_ms = BASE_MS + (n // 3) * 1_000
        s = session(
            f"s{n}",
            [
                Msg("user", f"please run the tests number {n}"),
                Msg("assistant", "running", tools=[Tool("Bash", "shell", command=f"pytest -k t{n}")]),
                Msg("assistant", f"done with {n}"),
            ],
            repo=f"repo-{n % 4}",
            start_ms=start_ms,
        )
        for path in ("src/common.py", f"src/only_{n % 3}.py"):
            s.files.add(
                id=refs.file_id(s.id, path), session_id=s.id, path=path, actions=1, categories={"shell": 1},
                first_time_ms=start_ms, last_time_ms=start_ms,
            )  # fmt: skip
        s.runs.add(id=refs.run_id(s.id), session_id=s.id, role="main", status="completed", started_ms=start_ms)
        out.append(s)
    return out


class Cluster:
    """`partitions` real partitions holding corpus(), one per in-process index node behind gRPC (or all on one
    node: `one_node`), a coordinator over them, and a query node serving it."""

    def __init__(self, root: Path, partitions: int, one_node: bool = False) -> None:
        if one_node:
            self.nodes = [PartitionServer(root / "index", list(range(partitions)), partitions)]
            shape = StaticTopology([("index", self.nodes[0].address)] * partitions)
            self.partitions = [self.nodes[0].lexical(i) for i in range(partitions)]
        else:
            self.nodes = one_partition_each(root, partitions)
            shape = topology(self.nodes)
            self.partitions = [node.lexical(i) for i, node in enumerate(self.nodes)]
        self.add(corpus())
        self.servers = []
        self.coordinator = Coordinator(shape, None, None)
        query = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(self.coordinator), query)
        self.query_address = f"127.0.0.1:{query.add_insecure_port('127.0.0.1:0')}"
        query.start()
        self.servers.append(query)

    def add(self, sessions: list[units_pb2.Session]) -> None:
        """Store `sessions`, each in the partition its id routes to."""
        for i, partition in enumerate(self.partitions):
            partition.upsert([s for s in sessions if partition_for(s.id, len(self.partitions)) == i])

    def record(self, home: Path) -> None:
        """Record the cluster under `home`, as `quarry up` does, for the CLI to find."""
        ClusterInfo(home=str(home), ingest="", query=self.query_address, index=[], vector="").save(home)

    def plan_envelope(self, plan: plan_pb2.QueryPlan, limit: int = 50, offset: int = 0) -> query_pb2.QueryUnitEnvelope:
        """A hand-built plan through every partition and the query node's merge (as query_units runs it)."""
        request = index_pb2.PartitionUnitsRequest(plan=plan, limit=units.partition_limit(plan, limit, offset))
        return units.envelope(
            "", plan, [partition.query_units(request) for partition in self.partitions], limit, offset
        )

    def rows(self, query: str, limit: int = 50, offset: int = 0) -> list[str]:
        request = query_pb2.QueryUnitsRequest(query=query, limit=limit, offset=offset)
        return [row.ref for row in self.coordinator.query_units(request).rows]

    def close(self) -> None:
        for server in self.servers:
            server.stop(None)
        for node in self.nodes:
            node.stop()
