"""Identical texts are embedded once (issue 13): a text the store already holds a vector of, or one
repeated within a batch, is answered with that vector, and every message holding it gets its vector."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quarry.v1 import index_pb2, vector_pb2
from quarry.vector.node import VectorNode
from tests.index_vector.conftest import EmbeddingsServer, corpus_items

REPEATED = "Continue with the next step of the plan."


def item(session_id: str, seq: int, text: str) -> index_pb2.EmbedItem:
    return index_pb2.EmbedItem(message_id=f"{session_id}:m{seq}", session_id=session_id, text=text)


def test_identical_texts_are_embedded_once_and_map_back_to_every_message(
    tmp_path: Path, embeddings_server: EmbeddingsServer
) -> None:
    node = VectorNode(tmp_path / "vectors", f"openai:{embeddings_server.url}#embed-small")
    node.start()
    try:
        node.enqueue([*corpus_items(), item("s:a", 0, REPEATED), item("s:b", 0, REPEATED)])
        assert node.wait_idle(20)
        node.enqueue([item("s:c", 0, REPEATED), item("s:c", 1, "a text of its own")])
        assert node.wait_idle(20)
        embedded = [text for request in embeddings_server.requests for text in request["input"]]
        assert embedded.count(REPEATED) == 1
        assert embedded.count("a text of its own") == 1
        stats = node.stats()
        assert stats.pending == 0
        for session in ("s:a", "s:b", "s:c"):
            vectors = node._state.store.session_vectors(session)
            assert len(vectors) == (2 if session == "s:c" else 1)
        same = [node._state.store.session_vectors(s)[0] for s in ("s:a", "s:b")]
        assert np.array_equal(same[0], same[1])
        hits = node.search(vector_pb2.VectorSearchRequest(text=REPEATED, limit=10)).hits
        assert {"s:a", "s:b", "s:c"} <= {h.session_id for h in hits}
    finally:
        node.close()
