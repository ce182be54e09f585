"""gRPC face of the vector node (VectorService)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.v1 import vector_pb2, vector_pb2_grpc
from quarry.vector.catchup import AUTO
from quarry.vector.node import DEFAULT_APPROXIMATE_ABOVE, VectorNode


class VectorServicer(vector_pb2_grpc.VectorServiceServicer):
    def __init__(self, node: VectorNode) -> None:
        self.node = node

    @typed_errors
    def Search(self, request: vector_pb2.VectorSearchRequest, context: grpc.ServicerContext):
        return self.node.search(request)

    @typed_errors
    def Stats(self, request: vector_pb2.VectorStatsRequest, context: grpc.ServicerContext):
        return self.node.stats(recent_backlog=request.recent_backlog)

    @typed_errors
    def EmbedStatus(self, request: vector_pb2.EmbedStatusRequest, context: grpc.ServicerContext):
        return self.node.embed_status()

    @typed_errors
    def EmbedPreflight(self, request: vector_pb2.EmbedWindowRequest, context: grpc.ServicerContext):
        return self.node.preflight(request.max_sessions)

    @typed_errors
    def EmbedBackfill(self, request: vector_pb2.EmbedWindowRequest, context: grpc.ServicerContext):
        return self.node.backfill(request.max_sessions, active=context.is_active)


def serve_vector(
    data_dir: Path,
    embedder: str | None,
    index_addresses: Sequence[str],
    host: str,
    port: int,
    run_file: Path | None,
    embed_mode: str = AUTO,
    nats: Sequence[str] = (),
    approximate_above: int | None = None,
) -> None:
    """Run the vector node until SIGTERM / SIGINT, following the partitions at `index_addresses` (or
    the log on the NATS servers `nats`). The embedder loads in the background worker; `embed_mode`
    auto | manual (see VectorNode); past `approximate_above` vectors FAISS serves approximately (ann.py)."""
    node = VectorNode(
        data_dir,
        embedder,
        index_addresses=index_addresses,
        embed_mode=embed_mode,
        nats=nats,
        approximate_above=approximate_above or DEFAULT_APPROXIMATE_ABOVE,
    )
    node.start()
    service = Service(
        vector_pb2.DESCRIPTOR.services_by_name["VectorService"],
        vector_pb2_grpc.add_VectorServiceServicer_to_server,
        VectorServicer(node),
    )
    serve("vector-0", "vector", [service], host, port, run_file, on_stop=node.close)
