"""gRPC face of the query node (QueryService and EmbeddingService)."""

from __future__ import annotations

from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.query.embedding import EmbeddingOps
from quarry.query.root import Coordinator
from quarry.query.topology import Topology
from quarry.v1 import assertions_pb2, embedding_pb2, embedding_pb2_grpc, query_pb2, query_pb2_grpc, refs_pb2


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


class EmbeddingServicer(embedding_pb2_grpc.EmbeddingServiceServicer):
    def __init__(self, ops: EmbeddingOps) -> None:
        self.ops = ops

    @typed_errors
    def Status(self, request: embedding_pb2.EmbeddingStatusRequest, context: grpc.ServicerContext):
        return self.ops.status()

    @typed_errors
    def Preflight(self, request: embedding_pb2.EmbeddingWindowRequest, context: grpc.ServicerContext):
        return self.ops.preflight(request.max_sessions, context.time_remaining())

    @typed_errors
    def Backfill(self, request: embedding_pb2.EmbeddingWindowRequest, context: grpc.ServicerContext):
        return self.ops.backfill(request.max_sessions, context.time_remaining())


def serve_query(
    topology: Topology,
    vector_address: str | None,
    ingest_address: str | None,
    host: str,
    port: int,
    run_file: Path | None,
) -> None:
    """Serve QueryService and EmbeddingService over the cluster `topology` describes, until SIGTERM."""
    coordinator = Coordinator(topology, vector_address, ingest_address)
    services = [
        Service(
            query_pb2.DESCRIPTOR.services_by_name["QueryService"],
            query_pb2_grpc.add_QueryServiceServicer_to_server,
            QueryServicer(coordinator),
        ),
        Service(
            embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"],
            embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server,
            EmbeddingServicer(EmbeddingOps(coordinator.cluster, coordinator.vector, vector_address or "")),
        ),
    ]
    serve("query", "query", services, host, port, run_file, workers=32, on_stop=coordinator.cluster.close)
