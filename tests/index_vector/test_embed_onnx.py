"""The ONNX Runtime int8 MiniLM: close to torch's vectors, unit rows, batch-independent, cached once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from quarry.vector import embed, embed_onnx
from quarry.vector.embed import Embedder, MiniLMEmbedder, load_embedder
from quarry.vector.embed_onnx import OnnxMiniLM, model_file

TEXTS = [
    "sqlite database is locked",
    "flexbox",
    "why does the docker build fail after the base image tag was removed from the registry?",
    "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n"
    "        except OSError:\n            time.sleep(2 ** i)",
    "Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\nKeyError: 'user_id'",
    "git rebase -i HEAD~3 && git push --force-with-lease origin feature/login",
    "Zrobiłem commit, ale testy nie przechodzą: łódź, żółw i źdźbło w nazwach plików.",
    "Die Datenbank ist gesperrt, weil zwei Prozesse gleichzeitig schreiben.",
    "数据库被锁定了，因为两个进程同时写入。",
    "src/components/LoginForm.tsx: center the submit button with align-items",
    # Over 256 tokens: both backends must truncate at the same place.
    " ".join(f"step {n}: raise the busy_timeout pragma and retry the write" for n in range(60)),
    "The WAL journal mode lets readers continue while a writer commits; checkpoints fold it back.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def int8(cache: Path) -> OnnxMiniLM:
    """Exported and quantized into a temporary cache (about 15 s on the 2-core box)."""
    embedder = OnnxMiniLM(cache=cache)
    embedder.embed(["load the model"])
    return embedder


@pytest.fixture(scope="module")
def torch_minilm() -> Embedder:
    embedder = load_embedder("minilm-torch")
    assert embedder is not None
    return embedder


def test_int8_vectors_are_close_to_torch(int8: OnnxMiniLM, torch_minilm: Embedder) -> None:
    cosine = (int8.embed(TEXTS) * torch_minilm.embed(TEXTS)).sum(axis=1)
    assert cosine.min() >= 0.98, dict(zip(TEXTS, cosine.round(4), strict=True))


def test_int8_returns_unit_float32_rows(int8: OnnxMiniLM) -> None:
    vectors = int8.embed([*TEXTS, ""])
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS) + 1, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert int8.embed([]).shape == (0, 384)


def test_int8_vector_does_not_depend_on_the_batch(int8: OnnxMiniLM) -> None:
    """Padding to the longest text of a chunk must not change a shorter text's vector."""
    together = int8.embed(TEXTS[::-1])[::-1]
    alone = np.vstack([int8.embed([text]) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_the_cached_model_is_reused(int8: OnnxMiniLM, cache: Path) -> None:
    path = model_file(cache)
    before = path.stat().st_mtime_ns
    again = OnnxMiniLM(cache=cache)
    np.testing.assert_allclose(again.embed(TEXTS[:3]), int8.embed(TEXTS[:3]), atol=1e-6)
    assert path.stat().st_mtime_ns == before
    assert [p.name for p in cache.iterdir() if p.suffix == ".onnx"] == [path.name]


def test_backend_specs() -> None:
    assert isinstance(load_embedder("minilm-torch"), MiniLMEmbedder)
    int8 = load_embedder(" MiniLM-INT8 ")
    assert isinstance(int8, OnnxMiniLM) and int8 is load_embedder("minilm-int8")
    # The store refuses vectors of another model, so the backends must not share a model string.
    assert int8.model != MiniLMEmbedder.model and int8.name == "minilm-int8"
    assert load_embedder("minilm") is load_embedder(embed.MINILM_DEFAULT)


def test_concurrent_first_loads_export_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes starting together: the second waits on the lock, then finds the first one's file."""
    calls: list[Path] = []

    def fake_export(target: Path) -> None:
        calls.append(target)
        time.sleep(0.2)
        target.write_bytes(b"model")

    monkeypatch.setattr(embed_onnx, "_export_quantized", fake_export)
    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda _: embed_onnx.ensure_model(tmp_path), range(4)))
    assert len(calls) == 1 and set(paths) == {model_file(tmp_path)}
