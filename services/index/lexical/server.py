"""gRPC face of a lexical shard: IndexService over the archive rows, AssertionService over the
assertions written about them (kept in their own file, which re-ingest and rebuilds never touch)."""

from __future__ import annotations

import time
from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.index.lexical.assertion_service import AssertionServicer
from quarry.index.lexical.assertions import AssertionStore
from quarry.index.lexical.shard import LexicalShard
from quarry.index.lexical.unit_tables import ASSERTIONS_FILE
from quarry.v1 import assertions_pb2, assertions_pb2_grpc, index_pb2, index_pb2_grpc, refs_pb2


class IndexServicer(index_pb2_grpc.IndexServiceServicer):
    def __init__(self, shard: LexicalShard) -> None:
        self.shard = shard

    @typed_errors
    def UpsertSessions(self, request: index_pb2.UpsertSessionsRequest, context: grpc.ServicerContext):
        return self.shard.upsert(request.sessions)

    @typed_errors
    def SearchSessions(self, request: index_pb2.ShardSearchRequest, context: grpc.ServicerContext):
        started = time.perf_counter()
        response = self.shard.search(request)
        response.elapsed_ms = (time.perf_counter() - started) * 1000.0
        return response

    @typed_errors
    def MatchSessionIds(self, request: index_pb2.MatchSessionIdsRequest, context: grpc.ServicerContext):
        return index_pb2.MatchSessionIdsResponse(session_ids=self.shard.match_session_ids(request.where))

    @typed_errors
    def ShardFacets(self, request: index_pb2.ShardFacetsRequest, context: grpc.ServicerContext):
        return self.shard.facets(request)

    @typed_errors
    def GetSessions(self, request: index_pb2.GetSessionsRequest, context: grpc.ServicerContext):
        return index_pb2.GetSessionsResponse(sessions=self.shard.get_sessions(request.session_ids))

    @typed_errors
    def QueryUnits(self, request: index_pb2.ShardUnitsRequest, context: grpc.ServicerContext):
        return self.shard.query_units(request)

    @typed_errors
    def Stats(self, request: index_pb2.ShardStatsRequest, context: grpc.ServicerContext):
        return self.shard.stats()

    @typed_errors
    def ResolveRef(self, request: refs_pb2.ResolveRefRequest, context: grpc.ServicerContext):
        return self.shard.resolve_ref(request)

    @typed_errors
    def EmbedFeed(self, request: index_pb2.EmbedFeedRequest, context: grpc.ServicerContext):
        return self.shard.embed_feed(request.after_seq, request.max_sessions)


def serve_index(data_dir: Path, shard: int, host: str, port: int, run_file: Path | None) -> None:
    """Run one lexical shard until SIGTERM / SIGINT."""
    lexical = LexicalShard(data_dir, shard)
    assertions = AssertionStore(lexical.directory / ASSERTIONS_FILE)
    services = [
        Service(
            index_pb2.DESCRIPTOR.services_by_name["IndexService"],
            index_pb2_grpc.add_IndexServiceServicer_to_server,
            IndexServicer(lexical),
        ),
        Service(
            assertions_pb2.DESCRIPTOR.services_by_name["AssertionService"],
            assertions_pb2_grpc.add_AssertionServiceServicer_to_server,
            AssertionServicer(assertions),
        ),
    ]

    def close() -> None:
        lexical.close()
        assertions.close()

    serve(f"index-{shard}", "index", services, host, port, run_file, on_stop=close)
