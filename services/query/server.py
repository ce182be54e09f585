"""gRPC face of the query node (QueryService)."""

from __future__ import annotations

from pathlib import Path

import grpc

from quarry.core.node import serve, typed_errors
from quarry.query.root import Coordinator
from quarry.v1 import query_pb2, query_pb2_grpc


class QueryServicer(query_pb2_grpc.QueryServiceServicer):
    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator

    @typed_errors
    def Search(self, request: query_pb2.SearchRequest, context: grpc.ServicerContext):
        return self.coordinator.search(request)

    @typed_errors
    def QueryUnits(self, request: query_pb2.QueryUnitsRequest, context: grpc.ServicerContext):
        return self.coordinator.query_units(request)

    @typed_errors
    def ClusterStatus(self, request: query_pb2.ClusterStatusRequest, context: grpc.ServicerContext):
        return self.coordinator.status()


def serve_query(
    index_addresses: list[str],
    vector_address: str | None,
    ingest_address: str | None,
    host: str,
    port: int,
    run_file: Path | None,
) -> None:
    coordinator = Coordinator(index_addresses, vector_address, ingest_address)
    service = query_pb2.DESCRIPTOR.services_by_name["QueryService"]
    add = query_pb2_grpc.add_QueryServiceServicer_to_server
    serve("query", "query", service, add, QueryServicer(coordinator), host, port, run_file, workers=32)
