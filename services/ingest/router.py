"""Route whole sessions to their shards in batches, acknowledge after every shard has committed,
then queue the dialogue text for embedding on the vector node."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import grpc

from quarry.core import telemetry
from quarry.core.errors import from_rpc_error
from quarry.core.fanout import submit_in_context
from quarry.core.shards import shard_for
from quarry.ingest.dialogue import dialogue_items
from quarry.ingest.validate import session_problems
from quarry.v1 import (
    index_pb2,
    index_pb2_grpc,
    ingest_pb2,
    units_pb2,
    vector_pb2,
    vector_pb2_grpc,
)

BATCH_MESSAGES = 20_000
BATCH_SESSIONS = 1_000
SHARD_TIMEOUT_S = 300.0
MAX_IN_FLIGHT = 2  # batches per shard whose commit is pending while the next one is built


class ShardRouter:
    """Owns the channels to every shard and the vector node; one instance per ingest node."""

    def __init__(self, index_addresses: list[str], vector_address: str | None) -> None:
        self.shards = [index_pb2_grpc.IndexServiceStub(telemetry.traced_channel(a)) for a in index_addresses]
        self.vector = (
            vector_pb2_grpc.VectorServiceStub(telemetry.traced_channel(vector_address)) if vector_address else None
        )
        self._shard_pools = [ThreadPoolExecutor(1, thread_name_prefix=f"shard-{i}") for i in range(len(self.shards))]
        self._vector_pool = ThreadPoolExecutor(1, thread_name_prefix="vector")

    def close(self) -> None:
        for pool in [*self._shard_pools, self._vector_pool]:
            pool.shutdown(wait=True)

    def ingest(self, sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport) -> None:
        """Write every valid session; adds counts, rejected sessions and caveats to `report`.

        Returns only when every shard has durably committed what it was sent (the lexical
        acknowledgement) and the vector node has stored the texts to embed."""
        started = time.perf_counter()
        pending: list[tuple[list[Future[index_pb2.UpsertSessionsResponse]], Future[int]]] = []
        batch: list[units_pb2.Session] = []
        batch_messages = 0
        for session in sessions:
            report.sessions_received += 1
            problems = session_problems(session)
            if problems:
                report.issues.add(
                    path=session.source_path,
                    code="invalid_record",
                    reason=f"{session.id}: {'; '.join(problems)}",
                )
                continue
            batch.append(session)
            batch_messages += len(session.messages)
            if batch_messages >= BATCH_MESSAGES or len(batch) >= BATCH_SESSIONS:
                pending.append(self._send(batch))
                batch, batch_messages = [], 0
                while len(pending) > MAX_IN_FLIGHT:
                    self._collect(pending.pop(0), report)
        if batch:
            pending.append(self._send(batch))
        for item in pending:
            self._collect(item, report)
        report.elapsed_ms += (time.perf_counter() - started) * 1000

    def _send(
        self, batch: list[units_pb2.Session]
    ) -> tuple[list[Future[index_pb2.UpsertSessionsResponse]], Future[int]]:
        groups: dict[int, list[units_pb2.Session]] = {}
        for session in batch:
            groups.setdefault(shard_for(session.id, len(self.shards)), []).append(session)
        upserts = [
            submit_in_context(self._shard_pools[shard], self._upsert, shard, group)
            for shard, group in sorted(groups.items())
        ]
        queued = submit_in_context(self._vector_pool, self._enqueue_after, upserts, batch)
        return upserts, queued

    def _upsert(self, shard: int, sessions: list[units_pb2.Session]) -> index_pb2.UpsertSessionsResponse:
        request = index_pb2.UpsertSessionsRequest(sessions=sessions)
        try:
            return self.shards[shard].UpsertSessions(request, timeout=SHARD_TIMEOUT_S, wait_for_ready=True)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def _enqueue_after(
        self, upserts: list[Future[index_pb2.UpsertSessionsResponse]], batch: list[units_pb2.Session]
    ) -> int:
        """Queue embedding only for what the shards acknowledged."""
        for upsert in upserts:
            if upsert.exception() is not None:
                return 0
        if self.vector is None:
            return 0
        items = [item for session in batch for item in dialogue_items(session)]
        request = vector_pb2.EnqueueRequest(items=items, replace_session_ids=[s.id for s in batch])
        response = self.vector.Enqueue(request, timeout=SHARD_TIMEOUT_S, wait_for_ready=True)
        return response.queued

    @staticmethod
    def _collect(
        item: tuple[list[Future[index_pb2.UpsertSessionsResponse]], Future[int]],
        report: ingest_pb2.IngestReport,
    ) -> None:
        upserts, queued = item
        for upsert in upserts:
            response = upsert.result()  # a failed shard fails the ingest: nothing is acknowledged falsely
            report.sessions_written += response.sessions_written
            report.sessions_unchanged += response.sessions_unchanged
            report.messages_written += response.messages_written
        try:
            report.vectors_queued += queued.result()
        except grpc.RpcError as error:
            caveat = (
                f"dialogue text was not queued for embedding ({from_rpc_error(error)}); lexical search is unaffected"
            )
            if caveat not in report.caveats:
                report.caveats.append(caveat)
