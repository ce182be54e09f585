"""The embedders: spec parsing, MiniLM quality and shape, the OpenAI-compatible client."""

from __future__ import annotations

import numpy as np
import pytest

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2
from quarry.vector.embed import Embedder, MiniLMEmbedder, OpenAIEmbedder, load_embedder

from .conftest import EmbeddingsServer


def test_spec_forms() -> None:
    assert load_embedder("none") is None
    assert load_embedder(None) is load_embedder("minilm-int8")  # the default backend of a new store
    assert load_embedder("minilm") is load_embedder(" MiniLM ")  # one model per process
    remote = load_embedder("openai:https://api.example.com/v1#text-embedding-3-small")
    assert isinstance(remote, OpenAIEmbedder)
    assert (remote.base_url, remote.model, remote.name) == (
        "https://api.example.com/v1",
        "text-embedding-3-small",
        "openai",
    )


@pytest.mark.parametrize("spec", ["bert", "openai:api.example.com#m", "openai:https://api.example.com/v1", "onnx"])
def test_unknown_spec_is_bad_value_naming_the_accepted_forms(spec: str) -> None:
    with pytest.raises(QuarryError) as caught:
        load_embedder(spec)
    assert caught.value.code == errors_pb2.BAD_VALUE
    assert "minilm" in caught.value.message and "openai:<base_url>#<model>" in caught.value.message
    assert caught.value.parameter == "embedder"


def test_bad_thread_count_is_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_EMBED_THREADS", "many")
    with pytest.raises(QuarryError) as caught:
        MiniLMEmbedder()
    assert caught.value.code == errors_pb2.BAD_VALUE


def test_minilm_returns_unit_float32_rows(minilm: Embedder) -> None:
    vectors = minilm.embed(["sqlite database is locked", "", "flexbox centering"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384) == (3, minilm.dimension)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_puts_related_texts_closer(minilm: Embedder) -> None:
    query, related, unrelated = minilm.embed(
        ["database lock timeout in sqlite", "sqlite database is locked error", "bake banana bread for an hour"]
    )
    assert query @ related > query @ unrelated + 0.3


def test_minilm_batch_keeps_order_and_vectors(minilm: Embedder) -> None:
    """Texts are sorted by length and embedded in chunks; each row must still belong to its text."""
    texts = [("rebase the branch onto main " * (n % 7 + 1)) + str(n) for n in range(20)][::-1]
    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_openai_embedder_normalizes_and_orders_by_index(
    embeddings_server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUARRY_EMBEDDER_API_KEY", "sk-test")
    embedder = load_embedder(f"openai:{embeddings_server.url}#embed-small")
    assert embedder is not None and embedder.dimension == 0
    vectors = embedder.embed(["first", "second", "third"])
    assert vectors.shape == (3, 8) and embedder.dimension == 8
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array(embeddings_server.vector("second"))
    np.testing.assert_allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert embeddings_server.requests[0]["model"] == "embed-small"
    assert embeddings_server.authorizations == ["Bearer sk-test"]


def test_openai_embedder_failure_is_semantic_unavailable(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.failing = True
    embedder = load_embedder(f"openai:{embeddings_server.url}#embed-small")
    assert embedder is not None
    with pytest.raises(QuarryError) as caught:
        embedder.embed(["anything"])
    assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert "503" in caught.value.message
