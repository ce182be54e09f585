"""The vector store's queue order and coverage: the most recently active sessions are taken first, the
status's time range follows what is stored, and a store written before session times existed opens
with its queued texts counted as the oldest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pysqlite3.dbapi2 as sqlite3

from quarry.vector.store import VectorStore

DAY_MS = 86_400_000


def items(session: str, day: int, *texts: str) -> list[tuple[str, str, str, int]]:
    return [(f"{session}:m{i}", session, text, day * DAY_MS) for i, text in enumerate(texts)]


def embed_next(store: VectorStore, count: int) -> list[str]:
    """Store vectors for the next `count` queued texts; returns their message ids."""
    texts = store.take_pending(count)
    store.store_vectors("test-model", texts, [np.ones((1, 4), dtype=np.float32)] * len(texts))
    return [t.message_id for t in texts]


def test_the_newest_sessions_are_taken_first_and_the_status_says_what_is_covered(tmp_path: Path) -> None:
    store = VectorStore(tmp_path / "vectors.sqlite")
    store.enqueue(items("s:old", 1, "a", "b") + items("s:new", 9, "c") + items("s:mid", 5, "d", "e"), [])
    assert store.window(3) == ["s:new", "s:mid", "s:old"]
    assert (store.coverage().covered_after_ms, store.coverage().embedded_oldest_ms) == (9 * DAY_MS, 0)

    assert embed_next(store, 3) == ["s:new:m0", "s:mid:m0", "s:mid:m1"]
    coverage = store.coverage()
    assert (coverage.covered_after_ms, coverage.embedded_oldest_ms, coverage.embedded_newest_ms) == (
        1 * DAY_MS,
        5 * DAY_MS,
        9 * DAY_MS,
    )

    # The old session becomes the most recent: its queued texts jump the queue, and the vectors of a
    # session whose texts are unchanged move to its new time.
    store.enqueue(items("s:old", 12, "a", "b") + items("s:late", 10, "f"), [])
    store.enqueue(items("s:mid", 11, "d", "e"), [])
    assert embed_next(store, 2) == ["s:old:m0", "s:old:m1"]
    coverage = store.coverage()
    assert (coverage.covered_after_ms, coverage.embedded_oldest_ms, coverage.embedded_newest_ms) == (
        10 * DAY_MS,
        9 * DAY_MS,
        12 * DAY_MS,
    )
    assert embed_next(store, 5) == ["s:late:m0"]
    assert store.coverage().covered_after_ms == 0  # nothing queued
    store.close()


def test_a_store_from_before_session_times_opens_with_its_queue_oldest(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    conn = sqlite3.connect(str(path))
    conn.executescript(
        "CREATE TABLE vectors (rowid INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE,"
        " session_id TEXT NOT NULL, text_hash BLOB NOT NULL);"
        "CREATE TABLE pending (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE,"
        " session_id TEXT NOT NULL, text TEXT NOT NULL, text_hash BLOB NOT NULL);"
        "INSERT INTO pending (message_id, session_id, text, text_hash) VALUES ('s:queued:m0', 's:queued', 'x', x'00');"
    )
    conn.close()

    store = VectorStore(path)
    store.enqueue(items("s:fresh", 3, "y"), [])
    assert [t.message_id for t in store.take_pending(10)] == ["s:fresh:m0", "s:queued:m0"]
    store.close()
