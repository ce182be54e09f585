"""gRPC face of the query node (QueryService and EmbeddingService)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc

from quarry.core import admission, auth
from quarry.core.in_process import HeldServices
from quarry.core.node import Service, serve, typed_errors
from quarry.query import cursor_seal
from quarry.query.embedding import EmbeddingOps
from quarry.query.http_api import serve_http
from quarry.query.root import Coordinator
from quarry.query.sessions import SessionQueries
from quarry.query.topology import Topology
from quarry.query.usage import usage_report
from quarry.v1 import (
    assertions_pb2,
    embedding_pb2,
    embedding_pb2_grpc,
    query_pb2,
    query_pb2_grpc,
    refs_pb2,
    sessions_pb2,
    sessions_pb2_grpc,
)


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
        return self.coordinator.explain(request.query, request.reading)

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

    @typed_errors
    def Usage(self, request: query_pb2.UsageRequest, context: grpc.ServicerContext):
        return usage_report(self.coordinator, request)


class SessionQueryServicer(sessions_pb2_grpc.SessionQueryServiceServicer):
    """The session API (docs/sessions.md; quarry.query.sessions)."""

    def __init__(self, queries: SessionQueries) -> None:
        self.queries = queries

    @typed_errors
    def ListSessions(self, request: sessions_pb2.ListSessionsRequest, context: grpc.ServicerContext):
        return self.queries.list_sessions(request)

    @typed_errors
    def ReadSession(self, request: sessions_pb2.SessionIdRequest, context: grpc.ServicerContext):
        yield from self.queries.read_session(request)

    @typed_errors
    def ReadSurface(self, request: sessions_pb2.SessionIdRequest, context: grpc.ServicerContext):
        return self.queries.read_surface(request)

    @typed_errors
    def ListEvents(self, request: sessions_pb2.ListEventsRequest, context: grpc.ServicerContext):
        return self.queries.list_events(request)

    @typed_errors
    def ReadEvent(self, request: sessions_pb2.ReadEventRequest, context: grpc.ServicerContext):
        return self.queries.read_event(request)

    @typed_errors
    def TraceEvent(self, request: sessions_pb2.TraceEventRequest, context: grpc.ServicerContext):
        return self.queries.trace_event(request)

    @typed_errors
    def TraceSession(self, request: sessions_pb2.SessionIdRequest, context: grpc.ServicerContext):
        return self.queries.trace_session(request)

    @typed_errors
    def SearchSessions(self, request: sessions_pb2.SessionSearchRequest, context: grpc.ServicerContext):
        return self.queries.search_sessions(request)

    @typed_errors
    def SearchEvents(self, request: sessions_pb2.EventSearchRequest, context: grpc.ServicerContext):
        return self.queries.search_events(request)

    @typed_errors
    def ReadTitles(self, request: sessions_pb2.ReadTitlesRequest, context: grpc.ServicerContext):
        return self.queries.read_titles(request)


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
    http: tuple[str, int] | None = None,
    http_allowed_hosts: Sequence[str] = (),
    held: HeldServices | None = None,
) -> None:
    """Serve QueryService, SessionQueryService and EmbeddingService over the cluster `topology` describes,
    and with `http` (host, port) the HTTP JSON API beside them (answering the loopback names, its host
    and `http_allowed_hosts`), until SIGTERM. Cursors are sealed with the node's cluster key. `held`: the
    services of the partitions this node holds itself, served beside its own to the other nodes and
    called in-process by its own searches."""
    cursor_seal.configure(auth.security().cluster_key)
    local = held.local_node() if held is not None else None
    if held is not None:  # a search's Python work all in this process: admission.py
        admission.limit_to_cpus()
    coordinator = Coordinator(topology, vector_address, ingest_address, local=local)
    embedding = EmbeddingOps(coordinator.cluster, coordinator.vector.stub, vector_address or "")
    sessions = SessionQueries(coordinator.cluster)
    if http is not None:
        serve_http(coordinator, embedding, sessions, *http, http_allowed_hosts)
    services = [
        Service(
            query_pb2.DESCRIPTOR.services_by_name["QueryService"],
            query_pb2_grpc.add_QueryServiceServicer_to_server,
            QueryServicer(coordinator),
        ),
        Service(
            sessions_pb2.DESCRIPTOR.services_by_name["SessionQueryService"],
            sessions_pb2_grpc.add_SessionQueryServiceServicer_to_server,
            SessionQueryServicer(sessions),
        ),
        Service(
            embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"],
            embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server,
            EmbeddingServicer(embedding),
        ),
        *(held.services if held is not None else ()),
    ]

    def stop() -> None:
        coordinator.cluster.close()
        if held is not None:
            held.close()

    serve("query", "query", services, host, port, run_file, workers=32, on_stop=stop)
