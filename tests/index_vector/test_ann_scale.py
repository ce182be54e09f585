"""The serving index past its switch point (IVF-Flat), against exact inner product on a seeded corpus;
and the partition's query-vector cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from quarry.v1 import vector_pb2
from quarry.vector.ann import AnnIndex
from quarry.vector.node import VectorNode

from .conftest import SQLITE_QUERY, EmbeddingsServer, corpus_items

DIMENSION = 64
SWITCH = 1000


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around the same 40 centres (topics, as real embeddings have), drawn by `seed`."""
    centres = np.random.default_rng(0).normal(size=(40, DIMENSION))
    rng = np.random.default_rng(seed)
    return unit(centres[rng.integers(0, 40, count)] + rng.normal(0, 0.9, (count, DIMENSION)))


def exact_top(vectors: np.ndarray, rowids: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(-(vectors @ query), kind="stable")[:k]
    return rowids[order]


@pytest.fixture
def corpus() -> tuple[np.ndarray, np.ndarray]:
    vectors = clustered(2 * SWITCH, seed=1)
    return np.arange(1, len(vectors) + 1, dtype=np.int64), vectors


@pytest.fixture
def index(corpus: tuple[np.ndarray, np.ndarray]) -> AnnIndex:
    rowids, vectors = corpus
    ann = AnnIndex(DIMENSION, approximate_above=SWITCH, nlist=32, nprobe=4)
    for start in range(0, len(rowids), 300):  # in chunks, as start() rebuilds from the store
        ann.add(rowids[start : start + 300], vectors[start : start + 300])
    return ann


def test_switches_to_approximate_past_the_threshold(corpus: tuple[np.ndarray, np.ndarray]) -> None:
    rowids, vectors = corpus
    ann = AnnIndex(DIMENSION, approximate_above=SWITCH)
    ann.add(rowids[:SWITCH], vectors[:SWITCH])
    assert not ann.approximate
    ann.add(rowids[SWITCH : SWITCH + 1], vectors[SWITCH : SWITCH + 1])
    assert ann.approximate and ann.ntotal == SWITCH + 1
    ann.remove(list(rowids[:10]))
    assert ann.approximate  # one-way: removals do not bring back the flat index


def test_top_hit_matches_exact_search(index: AnnIndex, corpus: tuple[np.ndarray, np.ndarray]) -> None:
    rowids, vectors = corpus
    assert index.approximate
    queries = clustered(300, seed=2)
    same = sum(index.search(q, 10)[1][0] == exact_top(vectors, rowids, q, 1)[0] for q in queries)
    assert same >= 0.98 * len(queries)
    distances, _ = index.search(queries[0], 10)
    assert list(distances) == sorted(distances)
    expected = np.sqrt(2 - 2 * float(vectors[rowids == index.search(queries[0], 1)[1][0]][0] @ queries[0]))
    assert distances[0] == pytest.approx(expected, abs=1e-5)


def test_removed_vectors_never_come_back(index: AnnIndex, corpus: tuple[np.ndarray, np.ndarray]) -> None:
    rowids, vectors = corpus
    removed = rowids[::7]
    index.remove(list(removed))
    assert index.ntotal == len(rowids) - len(removed)
    for rowid in removed[:60]:
        vector = vectors[rowid - 1]
        _, found = index.search(vector, 50)
        assert not set(found) & set(removed)
        _, allowed = index.search(vector, 10, allowed_rowids=np.array([rowid, rowid + 1], dtype=np.int64))
        assert list(allowed) == [rowid + 1]


def test_removed_before_the_switch_stay_removed(corpus: tuple[np.ndarray, np.ndarray]) -> None:
    rowids, vectors = corpus
    ann = AnnIndex(DIMENSION, approximate_above=SWITCH, nlist=32, nprobe=4)
    ann.add(rowids[:SWITCH], vectors[:SWITCH])
    ann.remove([1, 2, 3])
    ann.add(rowids[SWITCH:], vectors[SWITCH:])
    assert ann.approximate and ann.ntotal == len(rowids) - 3
    for rowid in (1, 2, 3):
        assert not {1, 2, 3} & set(ann.search(vectors[rowid - 1], 50)[1])


def test_appends_after_the_switch_are_found(index: AnnIndex) -> None:
    fresh = clustered(100, seed=3)
    fresh_ids = np.arange(10_001, 10_101, dtype=np.int64)
    index.add(fresh_ids, fresh)
    assert all(index.search(vector, 1)[1][0] == rowid for rowid, vector in zip(fresh_ids, fresh, strict=True))


@pytest.mark.parametrize("share", [0.01, 0.3])
def test_allow_list_search_is_exact(index: AnnIndex, corpus: tuple[np.ndarray, np.ndarray], share: float) -> None:
    """Small allow-lists are scanned exactly; large ones (30% of the vectors) fall back to it when the
    probed lists hold fewer than k of them, and a query here sits among allowed vectors anyway."""
    rowids, vectors = corpus
    rng = np.random.default_rng(4)
    allowed = np.sort(rng.choice(rowids, int(share * len(rowids)), replace=False))
    for query in clustered(40, seed=5):
        distances, found = index.search(query, 10, allowed_rowids=allowed)
        assert set(found) <= set(allowed)
        if share < 0.1:
            assert list(found) == list(exact_top(vectors[allowed - 1], allowed, query, 10))
            inner = vectors[found - 1] @ query
            np.testing.assert_allclose(distances, np.sqrt(2 - 2 * inner), atol=1e-5)
        else:
            assert len(found) == 10


def test_partition_rebuilds_the_approximate_index_at_start(corpus_node_dir: Path) -> None:
    """A reopened partition past its switch point serves from IVF with the same answers (one list here)."""
    exact = VectorNode(corpus_node_dir, "minilm")
    exact.start()
    request = vector_pb2.VectorSearchRequest(text=SQLITE_QUERY, limit=10)
    before = exact.search(request)
    allowed = vector_pb2.VectorSearchRequest(
        text=SQLITE_QUERY, allow_session_ids=["codex:css"], restrict_to_allowed=True
    )
    before_allowed = exact.search(allowed)
    exact.close()
    node = VectorNode(corpus_node_dir, "minilm", approximate_above=5)
    node.start()
    try:
        assert node._state.ann is not None and node._state.ann.approximate
        after = node.search(request)
        assert [(h.session_id, h.message_id) for h in after.hits] == [(h.session_id, h.message_id) for h in before.hits]
        assert [h.message_id for h in node.search(allowed).hits] == [h.message_id for h in before_allowed.hits]
    finally:
        node.close()


def test_query_vectors_are_cached(tmp_path: Path, embeddings_server: EmbeddingsServer) -> None:
    node = VectorNode(tmp_path / "vectors", f"openai:{embeddings_server.url}#embed-small")
    node.start()
    try:
        node.enqueue(corpus_items())
        assert node.wait_idle(20)

        def embedded(text: str) -> int:
            return sum(request["input"] == [text] for request in embeddings_server.requests)

        request = vector_pb2.VectorSearchRequest(text="merge conflicts", limit=3)
        first = node.search(request)
        second = node.search(request)
        assert embedded("merge conflicts") == 1
        assert [(h.message_id, h.distance) for h in second.hits] == [(h.message_id, h.distance) for h in first.hits]
        assert second.embed_ms < 1  # honest: nothing was embedded
        node.search(vector_pb2.VectorSearchRequest(text="  merge conflicts ", limit=1))  # the stripped text
        assert embedded("merge conflicts") == 1
        node.search(vector_pb2.VectorSearchRequest(text="dark mode", limit=1))
        assert embedded("dark mode") == 1
    finally:
        node.close()
