"""The query node's calls to the vector node: whether it can rank, the capability check, its searches.

A vector lane (semantic, hybrid) or a control that needs vectors needs a vector node with an embedder:
without one the search fails SEMANTIC_UNAVAILABLE naming what needed it, before any partition is asked
(so an empty archive cannot answer "nothing" instead), and never falls back to a lexical lane. Whether
prose goes to the hybrid lane depends on whether the vector node can rank now. Both read the vector
node's stats for the caller's scopes as last seen within VECTOR_STATE_S, so a search pays no hop of its
own for them (the stats count the store's rows: about 3 ms at 50k vectors), a vector node that does not
answer costs a search no more than VECTOR_PROBE_S, and the backlog a semantic search reports is at most
that old.
"""

from __future__ import annotations

import math
import time

import grpc

from quarry.core import auth, telemetry
from quarry.core.errors import QuarryError
from quarry.query.scatter import Deadline, call, gather
from quarry.v1 import errors_pb2, vector_pb2, vector_pb2_grpc

NODE = "vector-0"  # the vector node's name in errors and in the cluster's status
VECTOR_STATE_S = 2.0  # how long a look at the vector node's stats serves the searches after it
VECTOR_PROBE_S = 0.3  # how long that look may take: a vector node that does not answer costs a search no more
SEEN_SCOPE_SETS = 256  # distinct callers' scope sets whose looks are kept (all are dropped past it)


class VectorClient:
    """The vector node at `address`, or none (`stub` None): the cluster has no vector node."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self.stub = vector_pb2_grpc.VectorServiceStub(telemetry.traced_channel(address)) if address else None
        # The caller's scopes -> (when seen, the stats then; None: the vector node did not answer).
        self._seen: dict[bytes, tuple[float, vector_pb2.VectorStats | None]] = {}

    def usable(self, deadline: Deadline) -> bool:
        """Whether the vector node can rank now for the caller (an embedder, and vectors in its scopes to
        search), as last seen within VECTOR_STATE_S: prose goes to the hybrid lane only then. A node that
        does not answer counts as not usable; the search stays lexical."""
        if self.stub is None:
            return False
        seen, stats = self._recent()
        if not seen:
            try:
                request = vector_pb2.VectorStatsRequest(recent_backlog=True)
                timeout = min(VECTOR_PROBE_S, deadline.remaining_s())
                stats = self.stub.Stats(request, timeout=timeout)
            except (grpc.RpcError, QuarryError):  # down, slow or out of time: this search stays lexical
                stats = None
            self._remember(stats)
        return bool(stats and stats.embedder and stats.ready and stats.vectors > 0)

    def require_embedder(self, parameter: str, deadline: Deadline) -> vector_pb2.VectorStats | None:
        """The vector node's stats (as last seen within VECTOR_STATE_S) when `parameter` (a vector lane, a
        semantic threshold, a vector weight) needs vectors; SEMANTIC_UNAVAILABLE, naming it, when no vector
        node has an embedder. Asked before the archive is, so an empty archive cannot answer "nothing"
        instead."""
        if not parameter:
            return None
        if self.stub is None:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors: this cluster has no vector node",
                parameter=parameter,
            )
        stats = self._seen_stats(deadline)  # no partition is asked
        if not stats.embedder:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors, and the vector node has no embedder configured (start it with "
                "--embedder minilm or --embedder openai:<base_url>#<model>)",
                parameter=parameter,
            )
        return stats

    def scopes_enforced(self, deadline: Deadline) -> bool:
        """Whether the vector node restricts every search to the caller's scopes itself (as last seen within
        VECTOR_STATE_S): a search then needs no list of the caller's sessions."""
        return self._seen_stats(deadline).scopes_enforced

    def _seen_stats(self, deadline: Deadline) -> vector_pb2.VectorStats:
        """The stats as last seen within VECTOR_STATE_S; asked now when not seen lately, or when the vector
        node did not answer then (failing typed if it does not answer now)."""
        stats = self._recent()[1]
        if stats is None:
            stats = self.stats(deadline, recent_backlog=True)
            self._remember(stats)
        return stats

    def _recent(self) -> tuple[bool, vector_pb2.VectorStats | None]:
        """Whether the vector node was asked for the caller's scopes within VECTOR_STATE_S, and its stats
        then (None: it did not answer)."""
        when, stats = self._seen.get(auth.scopes_key(), (-math.inf, None))
        return (True, stats) if time.monotonic() - when <= VECTOR_STATE_S else (False, None)

    def _remember(self, stats: vector_pb2.VectorStats | None) -> None:
        if len(self._seen) >= SEEN_SCOPE_SETS:
            self._seen.clear()
        self._seen[auth.scopes_key()] = (time.monotonic(), stats)

    def stats(self, deadline: Deadline, recent_backlog: bool = False) -> vector_pb2.VectorStats:
        """The vector node's embedder, vectors and backlog now (`recent_backlog`: the partitions' part of the
        backlog as the vector node last saw it, not asked of them)."""
        request = vector_pb2.VectorStatsRequest(recent_backlog=recent_backlog)
        stats: vector_pb2.VectorStats = gather([NODE], [call(self._node().Stats, request)], deadline)[0]
        return stats

    def search(self, request: vector_pb2.VectorSearchRequest, deadline: Deadline) -> vector_pb2.VectorSearchResponse:
        """The nearest sessions."""
        response: vector_pb2.VectorSearchResponse = gather([NODE], [call(self._node().Search, request)], deadline)[0]
        return response

    def _node(self) -> vector_pb2_grpc.VectorServiceStub:
        if self.stub is None:
            raise QuarryError(errors_pb2.SEMANTIC_UNAVAILABLE, "this cluster has no vector node")
        return self.stub
