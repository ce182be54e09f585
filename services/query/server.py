"""gRPC face of the query node (QueryService)."""

from __future__ import annotations

from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.query.root import Coordinator
from quarry.v1 import assertions_pb2, query_pb2, query_pb2_grpc, refs_pb2


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
    def Explain(self, request: query_pb2.ExplainRequest, context: grpc.ServicerContext):
        return self.coordinator.explain(request.query)

    @typed_errors
    def WriteAssertion(self, request: assertions_pb2.WriteAssertionRequest, context: grpc.ServicerContext):
        return self.coordinator.assertions.write(request)

    @typed_errors
    def ListCandidates(self, request: assertions_pb2.ListCandidatesRequest, context: grpc.ServicerContext):
        return self.coordinator.assertions.list_candidates(request)

    @typed_errors
    def JudgeCandidate(self, request: assertions_pb2.JudgeCandidateRequest, context: grpc.ServicerContext):
        return self.coordinator.assertions.judge(request)

    @typed_errors
    def ResolveRef(self, request: refs_pb2.ResolveRefRequest, context: grpc.ServicerContext):
        return self.coordinator.refs.resolve(request)

    @typed_errors
    def Facets(self, request: query_pb2.FacetsRequest, context: grpc.ServicerContext):
        return self.coordinator.facets.facets(request)

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
    service = Service(
        query_pb2.DESCRIPTOR.services_by_name["QueryService"],
        query_pb2_grpc.add_QueryServiceServicer_to_server,
        QueryServicer(coordinator),
    )
    serve("query", "query", [service], host, port, run_file, workers=32)
