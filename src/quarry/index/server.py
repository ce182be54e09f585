"""gRPC face of an index node: IndexService over the partition replicas it holds, and AssertionService
over their assertions (kept in their own files, which re-ingest and rebuilds never touch).

The servicers are thin adapters: every read names its partitions and is answered per partition
(PartitionSet.each; a session search's node-level cut is PartitionSet.search), within the scopes the
calling node sent (lexical.visibility: plans get a scope clause, reads by id check the session's
scope, so another scope's sessions look absent). Writes name one partition; a node that follows the
log (cluster mode) refuses them: its replicas change only by applying the log, so that every replica
of a partition applies the same records in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import grpc

from quarry.core.errors import QuarryError
from quarry.core.node import Service, serve, typed_errors
from quarry.core.public_refs import bare_assertion_id
from quarry.core.routing import partition_for
from quarry.index.lexical import visibility
from quarry.index.lexical.partition import WRITER_HEAP_BYTES
from quarry.index.lexical.search_text import compile_search
from quarry.index.partition_set import PartitionReplica, PartitionSet
from quarry.index.sessions import SessionStoreServicer
from quarry.v1 import (
    assertions_pb2,
    assertions_pb2_grpc,
    errors_pb2,
    index_pb2,
    index_pb2_grpc,
    sessions_pb2,
    sessions_pb2_grpc,
    units_pb2,
)

WRITE_FROM_LOG = (
    "this index node applies the cluster's log: writes reach it through the log (sessions from the ingest "
    "node, assertions from the query node), not directly"
)


class _PartitionServicer:
    """What the services of the node's partitions share: the partitions, and whether they take writes."""

    def __init__(self, partitions: PartitionSet, writable: bool = True) -> None:
        """`writable` False on a node that follows the log."""
        self.partitions = partitions
        self.writable = writable

    def _writable(self, partition: int) -> PartitionReplica:
        """The replica a direct write names; refused on a node that follows the log."""
        if not self.writable:
            raise QuarryError(errors_pb2.INVALID_REQUEST, WRITE_FROM_LOG)
        return self.partitions.get(partition)


class IndexServicer(_PartitionServicer, index_pb2_grpc.IndexServiceServicer):
    def __init__(self, partitions: PartitionSet, partition_count: Callable[[], int], writable: bool = True) -> None:
        """`partition_count` gives the cluster's number of partitions (to check that an upsert routes
        to the partition it names); `writable` False on a node that follows the log."""
        super().__init__(partitions, writable)
        self.partition_count = partition_count

    @typed_errors
    def UpsertSessions(self, request: index_pb2.UpsertSessionsRequest, context: grpc.ServicerContext):
        replica = self._writable(request.partition)
        count = self.partition_count()
        for session in request.sessions:
            if partition_for(session.id, count) != request.partition:
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"session {session.id} routes to partition {partition_for(session.id, count)}, "
                    f"not {request.partition}",
                    parameter="sessions.id",
                )
        return replica.lexical.upsert(request.sessions)

    @typed_errors
    def DeleteSessions(self, request: index_pb2.DeleteSessionsRequest, context: grpc.ServicerContext):
        replica = self._writable(request.partition)
        deleted = replica.lexical.delete(request.session_ids, visible=visibility.current())
        replica.assertions.delete_sessions(deleted)
        gone = set(deleted)
        return index_pb2.DeleteSessionsResponse(
            deleted=deleted, not_found=[s for s in dict.fromkeys(request.session_ids) if s not in gone]
        )

    @typed_errors
    def SearchSessions(self, request: index_pb2.PartitionSearchRequest, context: grpc.ServicerContext):
        return self._search(request)

    @typed_errors
    def SearchLanes(self, request: index_pb2.PartitionLanesRequest, context: grpc.ServicerContext):
        """Each search on the request's partitions, then the summaries; per partition, every answer it
        gave, or its first failure."""
        answers: dict[int, index_pb2.PartitionLanes] = {
            a.partition: index_pb2.PartitionLanes(partition=a.partition) for a in request.partitions
        }
        failed: dict[int, index_pb2.PartitionFailure] = {}
        for search in request.searches:
            one = index_pb2.PartitionSearchRequest()
            one.CopyFrom(search)
            one.ClearField("partitions")
            one.partitions.extend(request.partitions)
            node = self._search(one)
            for result in node.partitions:
                answers[result.partition].searches.append(result)
            failed.update((f.partition, f) for f in node.failures if f.partition not in failed)
        if request.summary_session_ids:
            summaries, failures = self._sessions(request.summary_session_ids, list(answers))
            for result in summaries:
                answers[result.partition].summaries.extend(result.sessions)
            failed.update((f.partition, f) for f in failures if f.partition not in failed)
        return index_pb2.NodeLanesResponse(
            partitions=[answer for partition, answer in answers.items() if partition not in failed],
            failures=list(failed.values()),
        )

    def _search(self, request: index_pb2.PartitionSearchRequest) -> index_pb2.NodeSearchResponse:
        """The node's best sessions over its partitions (PartitionSet.search), within the visible scopes."""
        visibility.restrict(request.plan.where, visibility.current())
        return self.partitions.search(request)

    @typed_errors
    def TermStats(self, request: index_pb2.PartitionSearchRequest, context: grpc.ServicerContext):
        partitions = [a.partition for a in request.partitions]
        visibility.restrict(request.plan.where, visibility.current())
        compiled = compile_search(request)
        results, failures = self.partitions.each(
            partitions, lambda r: r.lexical.term_stats(request, compiled), concurrent=False
        )
        return index_pb2.NodeTermStats(partitions=results, failures=failures)

    @typed_errors
    def MatchSessionIds(self, request: index_pb2.MatchSessionIdsRequest, context: grpc.ServicerContext):
        visibility.restrict(request.where, visibility.current())

        def match(replica: PartitionReplica) -> index_pb2.PartitionSessionIds:
            ids = replica.lexical.match_session_ids(request.where)
            return index_pb2.PartitionSessionIds(partition=replica.partition, session_ids=ids)

        results, failures = self.partitions.each(request.partitions, match)
        return index_pb2.MatchSessionIdsResponse(partitions=results, failures=failures)

    @typed_errors
    def GetSessions(self, request: index_pb2.GetSessionsRequest, context: grpc.ServicerContext):
        results, failures = self._sessions(request.session_ids, request.partitions)
        return index_pb2.GetSessionsResponse(partitions=results, failures=failures)

    def _sessions(
        self, session_ids: Sequence[str], partitions: Sequence[int]
    ) -> tuple[list[index_pb2.PartitionSessions], list[index_pb2.PartitionFailure]]:
        visible = visibility.current()

        def get(replica: PartitionReplica) -> index_pb2.PartitionSessions:
            sessions = replica.lexical.get_sessions(session_ids, visible)
            return index_pb2.PartitionSessions(partition=replica.partition, sessions=sessions)

        return self.partitions.each(partitions, get)

    @typed_errors
    def QueryUnits(self, request: index_pb2.PartitionUnitsRequest, context: grpc.ServicerContext):
        visibility.restrict(request.plan.session_scope, visibility.current())
        results, failures = self.partitions.each(request.partitions, lambda r: r.lexical.query_units(request))
        return index_pb2.NodeUnitsResponse(partitions=results, failures=failures)

    @typed_errors
    def Stats(self, request: index_pb2.PartitionStatsRequest, context: grpc.ServicerContext):
        wanted = list(request.partitions) or self.partitions.held()
        visible = visibility.current()
        results, failures = self.partitions.each(
            wanted, lambda r: r.lexical.stats(request.content_digest, visible, request.identity_only)
        )
        return index_pb2.NodeStats(partitions=results, failures=failures)

    @typed_errors
    def ResolveRef(self, request: index_pb2.PartitionResolveRefRequest, context: grpc.ServicerContext):
        return self.partitions.get(request.partition).lexical.resolve_ref(request.request, visibility.current())

    @typed_errors
    def EmbedFeed(self, request: index_pb2.EmbedFeedRequest, context: grpc.ServicerContext):
        return self.partitions.get(request.partition).lexical.embed_feed(request.after_seq, request.max_sessions)

    @typed_errors
    def PartitionFacets(self, request: index_pb2.PartitionFacetsRequest, context: grpc.ServicerContext):
        visible = visibility.current()
        results, failures = self.partitions.each(request.partitions, lambda r: r.lexical.facets(request, visible))
        return index_pb2.NodeFacetsResponse(partitions=results, failures=failures)


class AssertionServicer(_PartitionServicer, assertions_pb2_grpc.AssertionServiceServicer):
    @typed_errors
    def WriteAssertion(
        self, request: assertions_pb2.PartitionWriteAssertion, context: grpc.ServicerContext
    ) -> units_pb2.Assertion:
        return self._writable(request.partition).assertions.write(request.request.assertion)

    @typed_errors
    def GetAssertion(
        self, request: assertions_pb2.NodeGetAssertion, context: grpc.ServicerContext
    ) -> assertions_pb2.NodeAssertions:
        assertion_id = bare_assertion_id(request.id)
        visible = visibility.current()

        def get(replica: PartitionReplica) -> assertions_pb2.PartitionAssertion:
            found = replica.assertions.get(assertion_id)
            if found is not None and not _seen(replica, [found], visible):
                found = None
            return assertions_pb2.PartitionAssertion(
                partition=replica.partition, found=found is not None, assertion=found
            )

        results, failures = self.partitions.each(request.partitions, get)
        return assertions_pb2.NodeAssertions(partitions=results, failures=failures)

    @typed_errors
    def ListCandidates(
        self, request: assertions_pb2.NodeListCandidates, context: grpc.ServicerContext
    ) -> assertions_pb2.NodeCandidateLists:
        wanted = request.request

        visible = visibility.current()

        def candidates(replica: PartitionReplica) -> assertions_pb2.PartitionCandidates:
            entries = replica.assertions.list_candidates(wanted.target_ref, wanted.review, wanted.limit)
            if visible is not None:
                shown = {a.id for a in _seen(replica, [e.assertion for e in entries], visible)}
                entries = [e for e in entries if e.assertion.id in shown]
            return assertions_pb2.PartitionCandidates(partition=replica.partition, entries=entries)

        results, failures = self.partitions.each(request.partitions, candidates)
        return assertions_pb2.NodeCandidateLists(partitions=results, failures=failures)

    @typed_errors
    def JudgeCandidate(
        self, request: assertions_pb2.PartitionJudgeCandidate, context: grpc.ServicerContext
    ) -> assertions_pb2.JudgeCandidateResponse:
        judged = request.request
        return self._writable(request.partition).assertions.judge(
            judged.id, judged.judgment, judged.reason, judged.kind, judged.body
        )

    @typed_errors
    def OpOutcome(
        self, request: assertions_pb2.PartitionOpOutcomeRequest, context: grpc.ServicerContext
    ) -> assertions_pb2.OperationOutcome:
        outcome = self.partitions.get(request.partition).assertions.outcome(request.op_id)
        return outcome if outcome is not None else assertions_pb2.OperationOutcome(applied=False)


def _seen(
    replica: PartitionReplica, assertions: Sequence[units_pb2.Assertion], visible: visibility.Visible
) -> list[units_pb2.Assertion]:
    """The assertions about sessions of the visible scopes (all of them when nothing limits the call)."""
    if visible is None:
        return list(assertions)
    ids = sorted({a.session_id for a in assertions if a.session_id})
    shown = {s.id for s in replica.lexical.get_sessions(ids, visible)}
    return [a for a in assertions if a.session_id in shown]


def index_services(partitions: PartitionSet, partition_count: Callable[[], int], writable: bool) -> list[Service]:
    """The services an index node serves over its partitions."""
    return [
        Service(
            index_pb2.DESCRIPTOR.services_by_name["IndexService"],
            index_pb2_grpc.add_IndexServiceServicer_to_server,
            IndexServicer(partitions, partition_count, writable),
        ),
        Service(
            assertions_pb2.DESCRIPTOR.services_by_name["AssertionService"],
            assertions_pb2_grpc.add_AssertionServiceServicer_to_server,
            AssertionServicer(partitions, writable),
        ),
        Service(
            sessions_pb2.DESCRIPTOR.services_by_name["SessionStoreService"],
            sessions_pb2_grpc.add_SessionStoreServiceServicer_to_server,
            SessionStoreServicer(partitions),
        ),
    ]


def serve_direct(
    name: str,
    data_dir: Path,
    held: Sequence[int],
    partition_count: int,
    host: str,
    port: int,
    run_file: Path | None,
    writer_budget_bytes: int = WRITER_HEAP_BYTES,
) -> None:
    """Run an index node of the embedded default, holding the partitions `held` of `partition_count`,
    written by the ingest node's pushes, until SIGTERM / SIGINT."""
    for partition in held:
        if not 0 <= partition < partition_count:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"partition {partition} is not one of the cluster's {partition_count}",
                parameter="--partition",
            )
    partitions = PartitionSet(data_dir, writer_budget_bytes, expected_partitions=len(held))
    for partition in held:
        partitions.open(partition)
    services = index_services(partitions, lambda: partition_count, writable=True)
    serve(name, "index", services, host, port, run_file, on_stop=partitions.close_all)
