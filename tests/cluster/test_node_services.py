"""Every node serves gRPC health checking and server reflection."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

pytestmark = pytest.mark.cluster

SERVICES = {
    "query": "quarry.v1.QueryService",
    "ingest": "quarry.v1.IngestService",
    "index-0": "quarry.v1.IndexService",
    "index-1": "quarry.v1.IndexService",
    "vector": "quarry.v1.VectorService",
}


def reflected_services(channel: grpc.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
    return {s.name for r in responses for s in r.list_services_response.service}


@pytest.mark.parametrize("node", sorted(SERVICES))
def test_node_is_healthy_and_reflects_its_service(cluster, node):
    with grpc.insecure_channel(cluster.node_addresses[node]) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICES[node]):
            response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert response.status == health_pb2.HealthCheckResponse.SERVING
        assert {SERVICES[node], "grpc.health.v1.Health"} <= reflected_services(channel)
