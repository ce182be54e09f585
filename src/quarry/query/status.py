"""QueryService.ClusterStatus: every node as the query node reaches it, and the cluster's map and log.

Index nodes are asked for their partitions' stats in parallel (a node that does not answer within
STATUS_TIMEOUT_S is shown down, with why); the vector and ingest nodes are asked for theirs. The map
comes from the topology: the embedded default's fixed one, or in cluster mode the one in the cluster
KV with each replica's state, applied sequence and lag, and the log's servers.
"""

from __future__ import annotations

from concurrent.futures import Future

from grpc_health.v1 import health_pb2, health_pb2_grpc

from quarry.core import telemetry
from quarry.core.config import QUERY_NODE
from quarry.core.errors import from_rpc_error
from quarry.core.fanout import submit_in_context
from quarry.query.cluster_client import ClusterClient
from quarry.query.scatter import POOL
from quarry.query.topology import ClusterView
from quarry.query.vector_client import NODE
from quarry.v1 import index_pb2, query_pb2, vector_pb2, vector_pb2_grpc

STATUS_TIMEOUT_S = 2.0


def cluster_status(
    cluster: ClusterClient,
    vector: vector_pb2_grpc.VectorServiceStub | None,
    vector_address: str | None,
    ingest_address: str | None,
) -> query_pb2.ClusterStatusResponse:
    view = cluster.view()
    asked: list[tuple[query_pb2.NodeStatus, Future[index_pb2.NodeStats]]] = []
    for name, node in sorted(view.nodes.items(), key=lambda item: _node_order(item[0])):
        status = query_pb2.NodeStatus(name=name, role="index", address=node.address, partitions=node.partitions)
        if len(node.partitions) == 1:
            status.partition = node.partitions[0]
        asked.append((status, submit_in_context(POOL, cluster.node_stats, view, name, STATUS_TIMEOUT_S)))
    nodes: list[query_pb2.NodeStatus] = []
    for status, future in asked:
        try:
            stats = future.result()
            status.up = True
            status.sessions = sum(p.sessions for p in stats.partitions)
            status.documents = sum(p.documents for p in stats.partitions)
            del status.partitions[:]
            status.partitions.extend(p.partition for p in stats.partitions)
        except Exception as error:
            status.detail = _short(error)
        nodes.append(status)
    if vector is not None:
        nodes.append(_vector(vector, vector_address or ""))
    if ingest_address:
        nodes.append(_health("ingest", "ingest", ingest_address))
    query = query_pb2.NodeStatus(name=QUERY_NODE, role="query", up=True)
    held = next((n for n in nodes if cluster.local is not None and n.name == cluster.local.name), None)
    if held is not None:  # this node holds the partitions: one entry, with theirs
        nodes.remove(held)
        query.partitions.extend(held.partitions)
        query.sessions, query.documents = held.sessions, held.documents
    nodes.append(query)
    response = query_pb2.ClusterStatusResponse(nodes=nodes, map=_map(view))
    log = cluster.topology.log_status()
    if log is not None:
        response.log.CopyFrom(log)
    return response


def _map(view: ClusterView) -> query_pb2.ClusterMap:
    out = query_pb2.ClusterMap(
        mode=view.mode, generation=view.generation, partitions=view.partitions, replicas=view.replicas_wanted
    )
    for partition in range(view.partitions):
        entry = out.partition_replicas.add(partition=partition, log_seq=view.log_seqs.get(partition, 0))
        for replica in view.replicas.get(partition, ()):
            node = view.nodes.get(replica.node)
            entry.replicas.add(
                node=replica.node,
                state=replica.state,
                alive=node is not None and node.alive,
                applied_seq=replica.applied_seq,
                lag=replica.lag,
            )
    return out


def _vector(stub: vector_pb2_grpc.VectorServiceStub, address: str) -> query_pb2.NodeStatus:
    node = query_pb2.NodeStatus(name=NODE, role="vector", address=address)
    try:
        stats = stub.Stats(vector_pb2.VectorStatsRequest(), timeout=STATUS_TIMEOUT_S)
        node.up, node.vectors, node.vectors_pending = True, stats.vectors, stats.pending
        node.detail = (
            f"embedder {stats.embedder}: {stats.model} ({stats.dimension}d)"
            if stats.embedder
            else "no embedder configured: the semantic lane is unavailable"
        )
        if stats.last_error:
            node.detail += f"; last error: {stats.last_error}"
    except Exception as error:
        node.detail = _short(error)
    return node


def _health(name: str, role: str, address: str) -> query_pb2.NodeStatus:
    node = query_pb2.NodeStatus(name=name, role=role, address=address)
    try:
        stub = health_pb2_grpc.HealthStub(telemetry.traced_channel(address))
        response = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=STATUS_TIMEOUT_S)
        node.up = response.status == health_pb2.HealthCheckResponse.SERVING
    except Exception as error:
        node.detail = _short(error)
    return node


def _node_order(name: str) -> tuple[str, int, str]:
    """index-2 before index-10."""
    head, _, tail = name.rpartition("-")
    return (head, int(tail), "") if tail.isdigit() else (name, 0, name)


def _short(error: Exception) -> str:
    if hasattr(error, "code") and hasattr(error, "details"):
        return from_rpc_error(error).message.splitlines()[0][:200]  # type: ignore[arg-type]
    text = str(error)
    return text.splitlines()[0][:200] if text else type(error).__name__
