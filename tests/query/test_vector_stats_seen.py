"""The query node reads the vector node's stats once per VECTOR_STATE_S per caller's scopes, not on every
search, and never hands one caller's counts to a caller of other scopes."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.query import vector_client
from quarry.query.scatter import Deadline
from quarry.query.vector_client import VectorClient
from quarry.v1 import errors_pb2, vector_pb2


class Unavailable(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE


class VectorNode:
    """Answers Stats with the vectors and backlog of the caller's scopes, counting the calls."""

    def __init__(self, embedder: str = "minilm", down: bool = False) -> None:
        self.embedder, self.down, self.calls = embedder, down, 0
        self.vectors = {"team-a": 10, "team-b": 0}

    def Stats(self, request: vector_pb2.VectorStatsRequest, timeout: float | None = None, **_: Any) -> Any:
        self.calls += 1
        if self.down:
            raise Unavailable()
        scopes = auth.SCOPES.get()
        vectors = sum(self.vectors.values()) if scopes is None else sum(self.vectors[s] for s in scopes)
        return vector_pb2.VectorStats(vectors=vectors, pending=3, embedder=self.embedder, ready=True)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(vector_client.time, "monotonic", lambda: now[0])
    return now


def client_of(node: VectorNode) -> VectorClient:
    client = VectorClient(None)
    client.stub = node  # type: ignore[assignment]
    return client


def as_scopes(scopes: set[str] | None, fn: Any) -> Any:
    token = auth.SCOPES.set(None if scopes is None else frozenset(scopes))
    try:
        return fn()
    finally:
        auth.SCOPES.reset(token)


def test_searches_within_the_state_window_ask_the_vector_node_once(clock: list[float]) -> None:
    node = VectorNode()
    client = client_of(node)
    for _ in range(5):
        assert client.usable(Deadline(1000))
        stats = client.require_embedder("lane", Deadline(1000))
        assert stats is not None and stats.pending == 3
    assert node.calls == 1
    clock[0] += vector_client.VECTOR_STATE_S + 0.1
    client.require_embedder("lane", Deadline(1000))
    assert node.calls == 2


def test_each_callers_scopes_get_their_own_counts(clock: list[float]) -> None:
    client = client_of(VectorNode())
    assert as_scopes({"team-a"}, lambda: client.usable(Deadline(1000)))
    # Team b has no vectors: its prose stays lexical, whatever team a saw a moment before.
    assert not as_scopes({"team-b"}, lambda: client.usable(Deadline(1000)))
    seen = as_scopes({"team-b"}, lambda: client.require_embedder("lane", Deadline(1000)))
    assert seen.vectors == 0


def test_a_vector_node_that_did_not_answer_is_not_probed_again_within_the_window(clock: list[float]) -> None:
    node = VectorNode(down=True)
    client = client_of(node)
    assert not client.usable(Deadline(1000))
    assert not client.usable(Deadline(1000))
    assert node.calls == 1
    # A search that needs vectors asks again, and fails typed, naming the node.
    with pytest.raises(QuarryError) as raised:
        client.require_embedder("lane", Deadline(1000))
    assert raised.value.code == errors_pb2.NODE_UNAVAILABLE and "vector-0" in raised.value.message
    assert node.calls == 2


def test_a_vector_node_without_an_embedder_fails_every_search_that_needs_vectors(clock: list[float]) -> None:
    node = VectorNode(embedder="")
    client = client_of(node)
    for _ in range(2):
        with pytest.raises(QuarryError) as raised:
            client.require_embedder("controls.admission.min_semantic_similarity", Deadline(1000))
        assert raised.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
        assert raised.value.parameter == "controls.admission.min_semantic_similarity"
    assert node.calls == 1
