"""EmbeddingService: embedding status, preflight and backfill (docs/cluster.md, "Embedding operations").

The vector node knows its embedder, queue and runs; this node adds the archive side (sessions and
messages summed over the partitions' Stats, so coverage = embedded sessions / archive sessions) and the
next action an operator or an agent should take. Status always answers: a vector node that is missing
or does not answer is itself the state it reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from quarry.core.embed_window import check_max_sessions
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.outgoing import SCOPES
from quarry.query.cluster_client import ClusterClient
from quarry.query.scatter import Deadline
from quarry.v1 import embedding_pb2, errors_pb2, index_pb2, vector_pb2, vector_pb2_grpc

STATUS_TIMEOUT_S = 2.0
DEFAULT_OPERATION_TIMEOUT_S = 600.0  # a preflight or backfill whose caller set no deadline
CONFIGURE_COMMAND = "quarry up --embedder minilm"
STATUS_COMMAND = "quarry embed status"
SCOPED_COUNTS = (
    "vectors, queued texts and coverage are those of your scopes' sessions; texts the vector node has not "
    "pulled from the archive yet belong to no scope until it does, and are not counted"
)
# The largest window next_action suggests: a bounded slice, whose progress shows between runs.
SUGGESTED_MAX_SESSIONS = 100


def backfill_args(max_sessions: int) -> list[str]:
    return ["quarry", "embed", "backfill", "--max-sessions", str(max_sessions)]


class EmbeddingOps:
    """Serves EmbeddingService over the partitions and the vector node (None: no vector node)."""

    def __init__(
        self,
        cluster: ClusterClient,
        vector: vector_pb2_grpc.VectorServiceStub | None,
        vector_address: str,
    ) -> None:
        self.cluster = cluster
        self.vector = vector
        self.vector_address = vector_address if vector is not None else ""

    def status(self) -> embedding_pb2.EmbeddingStatus:
        status = embedding_pb2.EmbeddingStatus(vector_address=self.vector_address)
        self._add_archive(status)
        if self.vector is not None:
            try:
                status.vector.CopyFrom(
                    self.vector.EmbedStatus(vector_pb2.EmbedStatusRequest(), timeout=STATUS_TIMEOUT_S)
                )
                status.vector_reachable = True
            except grpc.RpcError as error:
                status.caveats.append(f"vector node {self.vector_address}: {from_rpc_error(error).message}")
        if status.vector_reachable:
            vector = status.vector
            if SCOPES.get() is not None:
                status.caveats.append(SCOPED_COUNTS)
            status.backlog_texts = vector.queued_texts + vector.feed_backlog_texts
            if status.archive_sessions:
                status.coverage = vector.embedded_sessions / status.archive_sessions
            status.semantic_usable = vector.ready and vector.vectors > 0
        status.next_action.CopyFrom(next_action(status))
        return status

    def preflight(self, max_sessions: int, timeout: float | None) -> embedding_pb2.EmbeddingPreflight:
        check_max_sessions(max_sessions)
        request = vector_pb2.EmbedWindowRequest(max_sessions=max_sessions)
        window = self._call_vector(lambda v: v.EmbedPreflight, request, timeout)
        return embedding_pb2.EmbeddingPreflight(window=window, backfill_args=backfill_args(max_sessions))

    def backfill(self, max_sessions: int, timeout: float | None) -> embedding_pb2.EmbeddingBackfill:
        check_max_sessions(max_sessions)
        request = vector_pb2.EmbedWindowRequest(max_sessions=max_sessions)
        result = self._call_vector(lambda v: v.EmbedBackfill, request, timeout)
        return embedding_pb2.EmbeddingBackfill(result=result, next_action=self.status().next_action)

    def _call_vector(
        self,
        select: Callable[[vector_pb2_grpc.VectorServiceStub], Any],
        request: vector_pb2.EmbedWindowRequest,
        timeout: float | None,
    ) -> Any:
        """The selected call of the vector node, its node errors naming the node."""
        if self.vector is None:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"this cluster has no vector node: nothing is embedded (start one: `{CONFIGURE_COMMAND}`)",
            )
        try:
            return select(self.vector)(request, timeout=timeout or DEFAULT_OPERATION_TIMEOUT_S)
        except grpc.RpcError as error:
            typed = from_rpc_error(error)
            if typed.code in (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED, errors_pb2.INTERNAL):
                raise QuarryError(typed.code, f"vector node {self.vector_address}: {typed.message}") from None
            raise typed from None

    def _add_archive(self, status: embedding_pb2.EmbeddingStatus) -> None:
        """Sessions and messages over every partition that answers; the others become caveats."""
        fanned = self.cluster.stats(
            lambda partitions: index_pb2.PartitionStatsRequest(partitions=partitions),
            Deadline(STATUS_TIMEOUT_S * 1000),
        )
        for stats in fanned.ordered():
            status.archive_sessions += stats.sessions
            status.archive_messages += stats.messages
        for partition, why in sorted(fanned.missing.items()):
            status.caveats.append(f"partition {partition} did not answer ({why}): archive counts leave it out")


def next_action(status: embedding_pb2.EmbeddingStatus) -> embedding_pb2.NextAction:
    """What to do next, from the first condition that holds: no vector node, unreachable, no embedder,
    a failing embedder, a manual-mode backlog, an auto-mode backlog, nothing."""
    action = embedding_pb2.NextAction
    if not status.vector_address:
        return action(
            code="start_vector_node",
            reason="this cluster has no vector node, so nothing is embedded and the semantic lane is unavailable",
            command=CONFIGURE_COMMAND,
        )
    if not status.vector_reachable:
        return action(
            code="start_vector_node",
            reason=f"the vector node {status.vector_address} does not answer: start it (or check its log)",
            command=STATUS_COMMAND,
        )
    vector = status.vector
    if not vector.embedder:
        return action(
            code="configure_embedder",
            reason="the vector node has no embedder configured: nothing is embedded",
            command=CONFIGURE_COMMAND,
        )
    if vector.last_error and not vector.ready:
        return action(
            code="fix_embedder",
            reason=f"the embedder {vector.embedder} ({vector.model}) fails: {vector.last_error}",
            command=STATUS_COMMAND,
        )
    coverage = f"{vector.embedded_sessions} of {status.archive_sessions} sessions have vectors"
    if status.backlog_texts and vector.mode == "manual":
        sessions = min(vector.queued_sessions or SUGGESTED_MAX_SESSIONS, SUGGESTED_MAX_SESSIONS)
        return action(
            code="run_backfill",
            reason=(
                f"{status.backlog_texts} texts wait to be embedded ({vector.queued_sessions} sessions queued) and "
                f"the vector node embeds only on request (manual mode); {coverage}"
            ),
            command=" ".join(backfill_args(sessions)),
        )
    if status.backlog_texts:
        return action(
            code="wait",
            reason=f"the vector node is catching up in the background: {status.backlog_texts} texts left; {coverage}",
            command=STATUS_COMMAND,
        )
    return action(code="none", reason=f"every queued text is embedded; {coverage}", command="")
