"""The IVF-SQ8 training kept in the vector store: a restart past the switch point takes it instead of
training again and answers as before; a corrupt or mismatched one is trained again, with correct answers."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import faiss
import numpy as np
import pysqlite3.dbapi2 as sqlite3
import pytest

from quarry.v1 import vector_pb2
from quarry.vector.ann import AnnIndex
from quarry.vector.kept_training import StoredTraining, digest
from quarry.vector.node import STORE_FILE, VectorNode
from quarry.vector.store import AnnTraining, VectorStore

from .conftest import SQLITE_QUERY
from .test_ann_scale import DIMENSION, SWITCH, clustered, exact_top

TRAINED = "trained IVF-SQ8"
TAKEN = "kept IVF-SQ8 training taken"
UNUSABLE = "training again"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VectorStore]:
    store = VectorStore(tmp_path / STORE_FILE)
    store.set_model("test-model", DIMENSION)
    yield store
    store.close()


@pytest.fixture
def corpus() -> tuple[np.ndarray, np.ndarray]:
    vectors = clustered(2 * SWITCH, seed=1)
    return np.arange(1, len(vectors) + 1, dtype=np.int64), vectors


def started(store: VectorStore, corpus: tuple[np.ndarray, np.ndarray], nlist: int = 32) -> AnnIndex:
    """An AnnIndex rebuilt in chunks as start() does, keeping its training in `store`."""
    rowids, vectors = corpus
    ann = AnnIndex(DIMENSION, approximate_above=SWITCH, nlist=nlist, nprobe=4, keeper=StoredTraining(store))
    for start in range(0, len(rowids), 300):
        ann.add(rowids[start : start + 300], vectors[start : start + 300])
    assert ann.approximate
    return ann


def messages(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


def answers(ann: AnnIndex, queries: np.ndarray) -> list[list[int]]:
    return [list(ann.search(query, 10)[1]) for query in queries]


def assert_correct(ann: AnnIndex, corpus: tuple[np.ndarray, np.ndarray]) -> None:
    rowids, vectors = corpus
    queries = clustered(200, seed=2)
    same = sum(ann.search(q, 10)[1][0] == exact_top(vectors, rowids, q, 1)[0] for q in queries)
    assert same >= 0.98 * len(queries)


def test_a_restart_takes_the_kept_training(
    store: VectorStore, corpus: tuple[np.ndarray, np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    queries = clustered(100, seed=2)
    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        first = answers(started(store, corpus), queries)
        assert TRAINED in messages(caplog)
        kept = store.ann_training()
        assert kept is not None and len(kept.data) < 64 * 1024  # centroids and ranges, no vectors
        caplog.clear()
        restarted = started(store, corpus)
    assert TAKEN in messages(caplog) and TRAINED not in messages(caplog)
    assert answers(restarted, queries) == first
    assert store.ann_training() == kept


def test_the_kept_training_serves_appends_and_removals_since(
    store: VectorStore, corpus: tuple[np.ndarray, np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    """Only the training is kept: the vectors come from the store at every start, whatever changed."""
    rowids, vectors = corpus
    started(store, corpus)
    fresh = clustered(100, seed=3)
    fresh_ids = np.arange(10_001, 10_101, dtype=np.int64)
    now = (np.concatenate([rowids[::2], fresh_ids]), np.concatenate([vectors[::2], fresh]))
    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        ann = started(store, now)
    assert TRAINED not in messages(caplog)
    assert ann.ntotal == len(now[0])
    assert all(ann.search(v, 1)[1][0] == rowid for rowid, v in zip(fresh_ids, fresh, strict=True))
    assert not set(np.concatenate(answers(ann, vectors[1::2][:50]))) & set(rowids[1::2])
    assert_correct(ann, now)


def corrupt(store: VectorStore) -> None:
    kept = store.ann_training()
    assert kept is not None
    data = bytearray(kept.data)
    data[len(data) // 2] ^= 0xFF
    store.save_ann_training(AnnTraining(kept.params, kept.digest, bytes(data)))


def truncated(store: VectorStore) -> None:
    """Cut short, with a digest of the bytes left: only FAISS can tell."""
    kept = store.ann_training()
    assert kept is not None
    data = kept.data[: len(kept.data) // 2]
    store.save_ann_training(AnnTraining(kept.params, digest(data), data))


def another_index(store: VectorStore) -> None:
    """An IVF-Flat under the right parameters and digest."""
    kept = store.ann_training()
    assert kept is not None
    flat = faiss.IndexIVFFlat(faiss.IndexFlatIP(DIMENSION), DIMENSION, 4, faiss.METRIC_INNER_PRODUCT)
    flat.train(clustered(400, seed=9))
    data = faiss.serialize_index(flat).tobytes()
    store.save_ann_training(AnnTraining(kept.params, digest(data), data))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (corrupt, "do not match their digest"),
        (truncated, "FAISS cannot read it"),
        (another_index, "not an IndexIVFScalarQuantizer"),
    ],
)
def test_a_damaged_training_is_trained_again(
    store: VectorStore, corpus: tuple[np.ndarray, np.ndarray], caplog: pytest.LogCaptureFixture, damage, reason: str
) -> None:
    started(store, corpus)
    damage(store)
    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        ann = started(store, corpus)
    assert reason in messages(caplog) and UNUSABLE in messages(caplog) and TRAINED in messages(caplog)
    assert_correct(ann, corpus)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        started(store, corpus)  # the new training replaced the damaged one
    assert TAKEN in messages(caplog) and TRAINED not in messages(caplog)


def test_other_parameters_train_again(
    store: VectorStore, corpus: tuple[np.ndarray, np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    started(store, corpus, nlist=32)
    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        ann = started(store, corpus, nlist=16)
    assert '"nlist": 32' in messages(caplog) and UNUSABLE in messages(caplog)
    assert f"{TRAINED} (nlist 16)" in messages(caplog)
    assert_correct(ann, corpus)


def test_a_restarted_partition_answers_as_before_without_training(
    corpus_node_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "vectors"
    shutil.copytree(corpus_node_dir, data_dir)  # the session's corpus stays as other tests expect it

    def change(statement: str) -> None:
        with closing(sqlite3.connect(str(data_dir / STORE_FILE))) as conn, conn:
            conn.execute(statement)

    change("DELETE FROM ann_training")  # another test may have switched the session's corpus before
    request = vector_pb2.VectorSearchRequest(text=SQLITE_QUERY, limit=10)

    def search_once() -> list[tuple[str, str]]:
        node = VectorNode(data_dir, "minilm", approximate_above=5)
        node.start()
        try:
            assert node._state.ann is not None and node._state.ann.approximate
            return [(h.session_id, h.message_id) for h in node.search(request).hits]
        finally:
            node.close()

    with caplog.at_level(logging.INFO, logger="quarry.vector"):
        before = search_once()
        assert TRAINED in messages(caplog)
        caplog.clear()
        assert search_once() == before
        assert TAKEN in messages(caplog) and TRAINED not in messages(caplog)
        caplog.clear()
        change("UPDATE ann_training SET data = zeroblob(length(data))")
        assert search_once() == before
    assert "do not match their digest" in messages(caplog) and TRAINED in messages(caplog)
