"""gRPC face of the session API's reads on an index node (docs/sessions.md#calls): SessionStoreService
over the partitions it holds.

Reads of one session name its partition (PartitionSet.get: NOT_HOSTED when it is not held here, and
the query node asks another replica); lists and searches name several and are answered per partition.
"""

from __future__ import annotations

import grpc

from quarry.core.node import typed_errors
from quarry.index.lexical import visibility
from quarry.index.partition_set import PartitionReplica, PartitionSet
from quarry.v1 import sessions_pb2, sessions_pb2_grpc


class SessionStoreServicer(sessions_pb2_grpc.SessionStoreServiceServicer):
    def __init__(self, partitions: PartitionSet) -> None:
        self.partitions = partitions

    @typed_errors
    def ListSessions(self, request: sessions_pb2.NodeListSessionsRequest, context: grpc.ServicerContext):
        after = request.after if request.HasField("after") else None
        visible = visibility.current()

        def listed(replica: PartitionReplica) -> sessions_pb2.PartitionSessionList:
            sessions = replica.lexical.list_sessions(request.filters, after, request.limit, visible)
            return sessions_pb2.PartitionSessionList(partition=replica.partition, sessions=sessions)

        results, failures = self.partitions.each(list(request.partitions), listed)
        return sessions_pb2.NodeSessionLists(partitions=results, failures=failures)

    @typed_errors
    def ReadEvents(self, request: sessions_pb2.PartitionReadEvents, context: grpc.ServicerContext):
        return self.partitions.get(request.partition).lexical.read_events(request, visibility.current())

    @typed_errors
    def SearchEvents(self, request: sessions_pb2.PartitionSearchEvents, context: grpc.ServicerContext):
        return self.partitions.get(request.partition).lexical.search_events(request, visibility.current())

    @typed_errors
    def SearchSessions(self, request: sessions_pb2.NodeSearchSessions, context: grpc.ServicerContext):
        visible = visibility.current()

        def searched(replica: PartitionReplica) -> sessions_pb2.PartitionSessionHits:
            hits = replica.lexical.search_session_events(request, visible)
            return sessions_pb2.PartitionSessionHits(partition=replica.partition, hits=hits)

        results, failures = self.partitions.each(list(request.partitions), searched)
        return sessions_pb2.NodeSessionHits(partitions=results, failures=failures)
