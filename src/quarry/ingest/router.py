"""The embedded default's write path: route whole sessions to their partition's index node in batches,
and acknowledge after every node has committed what it was sent.

Partition i is on index node i (the addresses come in partition order), the only copy. Nothing else
waits on the acknowledgement: the vector node pulls what to embed from the partitions."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import grpc

from quarry.core import telemetry
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.fanout import submit_in_context
from quarry.core.routing import partition_for
from quarry.ingest.acks import APPLIED, check_ack
from quarry.v1 import index_pb2, index_pb2_grpc, ingest_pb2, units_pb2

BATCH_MESSAGES = 20_000
BATCH_SESSIONS = 1_000
# Serialized bytes of a batch: one UpsertSessions request must stay under gRPC's message limit
# (quarry.core.telemetry.MAX_MESSAGE_BYTES) however large its sessions are (a 30 MB log is ~116 MB).
BATCH_BYTES = 64 * 1024 * 1024
PARTITION_TIMEOUT_S = 300.0
MAX_IN_FLIGHT = 2  # batches per partition whose commit is pending while the next one is built


Upserts = list[Future[index_pb2.UpsertSessionsResponse]]


class DirectRouter:
    """Owns the channels to every partition's node; one instance per ingest node."""

    def __init__(self, index_addresses: list[str]) -> None:
        # the node of each partition, in partition order
        self.nodes = [index_pb2_grpc.IndexServiceStub(telemetry.traced_channel(a)) for a in index_addresses]
        self._partition_pools = [ThreadPoolExecutor(1, thread_name_prefix=f"p{i}") for i in range(len(self.nodes))]

    def close(self) -> None:
        for pool in self._partition_pools:
            pool.shutdown(wait=True)

    def epoch(self) -> str:
        """What the archive is: each partition's store id (its Stats' store_uuid), in partition order (a
        wiped or rebuilt partition has a new one, and files are then read again)."""
        uuids = []
        for partition, node in enumerate(self.nodes):
            try:
                stats = node.Stats(
                    index_pb2.PartitionStatsRequest(partitions=[partition], identity_only=True),
                    timeout=PARTITION_TIMEOUT_S,
                    wait_for_ready=True,
                )
            except grpc.RpcError as error:
                raise from_rpc_error(error) from None
            if stats.failures:
                raise QuarryError.from_detail(stats.failures[0].error)
            uuids.append(stats.partitions[0].store_uuid)
        return "partitions " + " ".join(uuids)

    def delete(self, session_ids: list[str], ack: str) -> ingest_pb2.DeleteReport:
        """Remove the sessions from their partitions; returns once every node has committed it."""
        check_ack(ack, has_log=False)
        report = ingest_pb2.DeleteReport()
        by_partition: dict[int, list[str]] = {}
        for session_id in dict.fromkeys(session_ids):
            by_partition.setdefault(partition_for(session_id, len(self.nodes)), []).append(session_id)
        for partition, ids in sorted(by_partition.items()):
            request = index_pb2.DeleteSessionsRequest(partition=partition, session_ids=ids)
            try:
                response = self.nodes[partition].DeleteSessions(
                    request, timeout=PARTITION_TIMEOUT_S, wait_for_ready=True
                )
            except grpc.RpcError as error:
                raise from_rpc_error(error) from None
            report.deleted.extend(response.deleted)
            report.not_found.extend(response.not_found)
        report.in_log = report.searchable = True
        return report

    def ingest(
        self, sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport, ack: str = APPLIED
    ) -> None:
        """Write the sessions (validated and counted as received by the servicer: quarry.ingest.validate);
        adds what was written and the sessions the partitions refused to `report`.

        Returns only when every partition's node has durably committed what it was sent."""
        check_ack(ack, has_log=False)
        started = time.perf_counter()
        pending: list[Upserts] = []
        batch: list[units_pb2.Session] = []
        batch_messages = batch_bytes = 0
        for session in sessions:
            size = session.ByteSize()
            if batch and batch_bytes + size > BATCH_BYTES:  # the next one would make the request too large
                pending.append(self._send(batch))
                batch, batch_messages, batch_bytes = [], 0, 0
            batch.append(session)
            batch_messages += len(session.messages)
            batch_bytes += size
            if batch_messages >= BATCH_MESSAGES or len(batch) >= BATCH_SESSIONS or batch_bytes >= BATCH_BYTES:
                pending.append(self._send(batch))
                batch, batch_messages, batch_bytes = [], 0, 0
            while len(pending) > MAX_IN_FLIGHT:
                self._collect(pending.pop(0), report)
        if batch:
            pending.append(self._send(batch))
        for item in pending:
            self._collect(item, report)
        report.in_log = report.searchable = True
        report.elapsed_ms += (time.perf_counter() - started) * 1000

    def _send(self, batch: list[units_pb2.Session]) -> Upserts:
        groups: dict[int, list[units_pb2.Session]] = {}
        for session in batch:
            groups.setdefault(partition_for(session.id, len(self.nodes)), []).append(session)
        return [
            submit_in_context(self._partition_pools[partition], self._upsert, partition, group)
            for partition, group in sorted(groups.items())
        ]

    def _upsert(self, partition: int, sessions: list[units_pb2.Session]) -> index_pb2.UpsertSessionsResponse:
        request = index_pb2.UpsertSessionsRequest(sessions=sessions, partition=partition)
        try:
            return self.nodes[partition].UpsertSessions(request, timeout=PARTITION_TIMEOUT_S, wait_for_ready=True)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    @staticmethod
    def _collect(upserts: Upserts, report: ingest_pb2.IngestReport) -> None:
        for upsert in upserts:
            response = upsert.result()  # a failed partition fails the ingest: nothing is acknowledged falsely
            report.sessions_written += response.sessions_written
            report.sessions_unchanged += response.sessions_unchanged
            report.messages_written += response.messages_written
            for conflict in response.source_conflicts:
                report.issues.append(source_conflict_issue(conflict))
            for refused in response.scope_conflicts:
                report.issues.append(scope_conflict_issue(refused.session_id, refused.source_path))


def scope_conflict_issue(session_id: str, source_path: str) -> ingest_pb2.IngestIssue:
    """The ingest issue of a session refused because the archive holds it in another scope (not named)."""
    return ingest_pb2.IngestIssue(
        path=source_path,
        code="scope_conflict",
        reason=f"{session_id}: the archive holds this session in another scope; it was not written",
    )


def source_conflict_issue(conflict: index_pb2.SourceConflict) -> ingest_pb2.IngestIssue:
    """The ingest issue of a version a partition refused: a cut copy of the kept one (`cut_copy`, no
    failure: the complete copy is in), or its events contradict the kept copy's (`source_conflict`)."""
    if conflict.cut:
        return ingest_pb2.IngestIssue(
            path=conflict.source_path,
            code="cut_copy",
            reason=(
                f"{conflict.session_id}: a cut copy of the session read from {conflict.stored_source_path} (its "
                "records are the start of that copy's): the complete copy is kept"
            ),
        )
    return ingest_pb2.IngestIssue(
        path=conflict.source_path,
        code="source_conflict",
        reason=(
            f"{conflict.session_id}: its event {conflict.first_difference} differs from the stored copy read from "
            f"{conflict.stored_source_path} (neither log continues the other); the stored copy is kept "
            "(`quarry delete` it first to take this file's)"
        ),
    )
