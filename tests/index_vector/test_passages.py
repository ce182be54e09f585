"""Long messages are embedded as passages: what a message says past the model's reach is found by meaning,
and a store of one vector per message keeps its vectors when opened."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from quarry.v1 import index_pb2, vector_pb2
from quarry.vector.embed import Embedder
from quarry.vector.node import STORE_FILE, VectorNode
from quarry.vector.passages import MAX_PASSAGES, PASSAGE_STRIDE, PASSAGE_TOKENS, WordPieceWindows, windows
from quarry.vector.store import VectorStore, _connect

FILLER = " ".join(
    f"The quarterly report section {n} lists revenue, headcount and office leases for the northern region."
    for n in range(30)
)
TAIL = "Finally, the sqlite database was locked because two processes wrote at once; raising busy_timeout fixed it."


def spans(count: int) -> list[tuple[int, int]]:
    return [(i * 2, i * 2 + 1) for i in range(count)]


def test_a_text_the_model_reads_whole_is_one_passage() -> None:
    text = "x " * PASSAGE_TOKENS
    assert windows(spans(PASSAGE_TOKENS), text) == [text]


@given(st.integers(min_value=PASSAGE_TOKENS + 1, max_value=PASSAGE_TOKENS * 30))
def test_windows_overlap_and_reach_the_end_or_the_cap(count: int) -> None:
    text = "x " * count
    passages = windows(spans(count), text)
    assert all(len(p.split()) <= PASSAGE_TOKENS for p in passages)
    assert passages[0] == text[: PASSAGE_TOKENS * 2 - 1]
    covered = min(count, PASSAGE_STRIDE * (MAX_PASSAGES - 1) + PASSAGE_TOKENS)
    assert sum(len(p.split()) for p in passages) >= covered  # every word piece up to the cap is in one
    if len(passages) < MAX_PASSAGES:
        assert text.rstrip().endswith(passages[-1])
    else:
        assert len(passages) == MAX_PASSAGES


def test_minilm_windows_are_slices_of_the_text_within_the_model_reach() -> None:
    passages = WordPieceWindows()(FILLER + " " + TAIL)
    assert len(passages) > 2
    assert all(p in FILLER + " " + TAIL for p in passages)
    assert passages[-1].endswith(TAIL)


def test_a_message_is_found_by_what_it_says_past_the_model_reach(open_node, minilm: Embedder) -> None:
    node: VectorNode = open_node("minilm")
    node.enqueue(
        [
            index_pb2.EmbedItem(message_id="long:m0", session_id="long", text=FILLER + " " + TAIL),
            index_pb2.EmbedItem(message_id="other:m0", session_id="other", text="bake banana bread at 180 degrees"),
            index_pb2.EmbedItem(message_id="css:m0", session_id="css", text="center the login form with flexbox"),
        ]
    )
    assert node.wait_idle(120), node.stats()
    assert node.stats().vectors == 3  # texts embedded, whatever their passages
    hits = node.search(vector_pb2.VectorSearchRequest(text="sqlite database is locked", limit=3)).hits
    assert (hits[0].session_id, hits[0].message_id) == ("long", "long:m0")
    whole = minilm.embed(["sqlite database is locked", FILLER + " " + TAIL])
    assert hits[0].distance < float(np.linalg.norm(whole[0] - whole[1])) - 0.2  # nearer than the truncated vector


def test_a_store_of_one_vector_per_message_is_opened_with_its_vectors(tmp_path: Path, minilm: Embedder) -> None:
    data_dir = tmp_path / "vectors"
    data_dir.mkdir()
    vectors = minilm.embed(["sqlite database is locked", "bake banana bread"])
    old = _connect(data_dir / STORE_FILE)
    old.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE vectors (
          rowid INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,
          text_hash BLOB NOT NULL, session_updated_ms INTEGER NOT NULL DEFAULT 0);
        CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[384]);
        """
    )
    old.executemany("INSERT INTO meta VALUES (?, ?)", [("model", minilm.model), ("dimension", "384")])
    old.executemany(
        "INSERT INTO vectors (rowid, message_id, session_id, text_hash) VALUES (?, ?, ?, ?)",
        [(7, "db:m0", "db", b"h0"), (9, "cake:m0", "cake", b"h1")],
    )
    old.executemany(
        "INSERT INTO vec_items (rowid, embedding) VALUES (?, ?)", [(7, vectors[0].tobytes()), (9, vectors[1].tobytes())]
    )
    old.execute("UPDATE sqlite_sequence SET seq = 12 WHERE name = 'vectors'")  # rowids 10-12 were removed
    old.close()
    store = VectorStore(data_dir / STORE_FILE)
    assert store.counts() == (2, 0)
    assert store.vectors_of_texts([b"h0"])[b"h0"].shape == (1, 384)
    store.close()

    node = VectorNode(data_dir, "minilm")
    node.start()
    try:
        hits = node.search(vector_pb2.VectorSearchRequest(text="database locked", limit=2)).hits
        assert [(h.session_id, h.message_id) for h in hits] == [("db", "db:m0"), ("cake", "cake:m0")]
        node.enqueue([index_pb2.EmbedItem(message_id="new:m0", session_id="new", text="a new text")])
        assert node.wait_idle(60)
    finally:
        node.close()
    reopened = _connect(data_dir / STORE_FILE)
    rowid = reopened.execute("SELECT rowid FROM vectors WHERE message_id = 'new:m0'").fetchone()[0]
    assert rowid == 13  # no removed rowid is used again
