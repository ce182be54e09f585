"""The query node's calls to the vector node: whether it can rank, the capability check, its searches.

A vector lane (semantic, hybrid) or a control that needs vectors needs a vector node with an embedder:
without one the search fails SEMANTIC_UNAVAILABLE naming what needed it, before any partition is asked
(so an empty archive cannot answer "nothing" instead), and never falls back to a lexical lane. Whether
prose goes to the hybrid lane depends on whether the vector node can rank now: a look taken within
VECTOR_PROBE_S and kept VECTOR_STATE_S, so a vector node that does not answer costs a search no more.
"""

from __future__ import annotations

import math
import time

import grpc

from quarry.core import telemetry
from quarry.core.errors import QuarryError
from quarry.query.scatter import Deadline, call, gather
from quarry.v1 import errors_pb2, vector_pb2, vector_pb2_grpc

NODE = "vector-0"  # the vector node's name in errors and in the cluster's status
VECTOR_STATE_S = 2.0  # how long a look at whether the vector node can rank serves the searches after it
VECTOR_PROBE_S = 0.3  # how long that look may take: a vector node that does not answer costs a search no more


class VectorClient:
    """The vector node at `address`, or none (`stub` None): the cluster has no vector node."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self.stub = vector_pb2_grpc.VectorServiceStub(telemetry.traced_channel(address)) if address else None
        self._state = (-math.inf, False)  # (when seen, whether the vector node could rank)

    def usable(self, deadline: Deadline) -> bool:
        """Whether the vector node can rank now (an embedder, and vectors to search), as last seen within
        VECTOR_STATE_S: prose goes to the hybrid lane only then. A node that does not answer counts as not
        usable; the search stays lexical."""
        if self.stub is None:
            return False
        now = time.monotonic()
        if now - self._state[0] > VECTOR_STATE_S:
            try:
                request = vector_pb2.VectorStatsRequest(recent_backlog=True)
                timeout = min(VECTOR_PROBE_S, deadline.remaining_s())
                stats: vector_pb2.VectorStats = self.stub.Stats(request, timeout=timeout)
                usable = bool(stats.embedder and stats.ready and stats.vectors > 0)
            except (grpc.RpcError, QuarryError):  # down, slow or out of time: this search stays lexical
                usable = False
            self._state = (now, usable)
        return self._state[1]

    def require_embedder(self, parameter: str, deadline: Deadline) -> vector_pb2.VectorStats | None:
        """The vector node's stats when `parameter` (a vector lane, a semantic threshold, a vector
        weight) needs vectors; SEMANTIC_UNAVAILABLE, naming it, when no vector node has an embedder.
        Asked before the archive is, so an empty archive cannot answer "nothing" instead."""
        if not parameter:
            return None
        if self.stub is None:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors: this cluster has no vector node",
                parameter=parameter,
            )
        stats = self.stats(deadline, recent_backlog=True)  # one hop: no partition is asked
        if not stats.embedder:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"{parameter} needs vectors, and the vector node has no embedder configured (start it with "
                "--embedder minilm or --embedder openai:<base_url>#<model>)",
                parameter=parameter,
            )
        return stats

    def stats(self, deadline: Deadline, recent_backlog: bool = False) -> vector_pb2.VectorStats:
        """The vector node's embedder, vectors and backlog (`recent_backlog`: the backlog as of now)."""
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
