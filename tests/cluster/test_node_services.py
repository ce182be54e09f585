"""Every node serves gRPC health checking and server reflection."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from quarry.core.outgoing import CLUSTER_KEY_HEADER, SCOPES_HEADER
from quarry.v1 import index_pb2, index_pb2_grpc

pytestmark = pytest.mark.cluster

SERVICES = {  # the query node holds the partitions: it serves their services too
    "query": ("quarry.v1.QueryService", "quarry.v1.IndexService", "quarry.v1.SessionStoreService"),
    "ingest": ("quarry.v1.IngestService",),
    "vector": ("quarry.v1.VectorService",),
}


def reflected_services(channel: grpc.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
    return {s.name for r in responses for s in r.list_services_response.service}


@pytest.mark.parametrize("node", sorted(SERVICES))
def test_node_is_healthy_and_reflects_its_service(cluster, node):
    with grpc.insecure_channel(cluster.node_addresses[node]) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", *SERVICES[node]):
            response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert response.status == health_pb2.HealthCheckResponse.SERVING
        assert {*SERVICES[node], "grpc.health.v1.Health"} <= reflected_services(channel)


def test_the_partitions_held_by_the_query_node_answer_only_calls_carrying_the_cluster_key(cluster):
    # The query node's port is public; the partitions' services on it are for the other nodes: a caller
    # without the cluster key (or with a forged scope list) neither reads nor writes them.
    stats = index_pb2.PartitionStatsRequest()
    write = index_pb2.UpsertSessionsRequest(partition=0)
    with grpc.insecure_channel(cluster.node_addresses["query"]) as channel:
        index = index_pb2_grpc.IndexServiceStub(channel)
        for call, request, metadata in (
            (index.Stats, stats, ()),
            (index.Stats, stats, ((CLUSTER_KEY_HEADER, "x" * 43), (SCOPES_HEADER, "default"))),
            (index.UpsertSessions, write, ()),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                call(request, timeout=10, metadata=metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with cluster.node_channel("query") as channel:  # as the ingest and vector nodes open it
        answered = index_pb2_grpc.IndexServiceStub(channel).Stats(stats, timeout=10)
        assert sorted(p.partition for p in answered.partitions) == [0, 1]
