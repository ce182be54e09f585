"""Identical texts embedded once: an embedder that answers a text the vector store already holds a
vector of (for any message, of any session) with that vector, and embeds only the others, each once.

Agents repeat themselves across sessions (the same instructions, tool outputs quoted back, "Continue"),
so a shared archive holds many identical message texts; a vector depends on the text and the model
alone, and the store keeps one model. The texts' hashes are the store's (`text_hash`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from quarry.core.embed import Embedder
from quarry.index.vector.store import text_hash


class ReusingEmbedder:
    """Wraps `embedder`; `known(hashes)` gives the stored vectors of the hashes the store holds."""

    def __init__(self, embedder: Embedder, known: Callable[[Sequence[bytes]], dict[bytes, np.ndarray]]) -> None:
        self.embedder = embedder
        self._known = known
        self.reused = 0  # texts answered from the store or from an identical text of the same batch

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def model(self) -> str:
        return self.embedder.model

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hashes = [text_hash(text) for text in texts]
        vectors = self._known(hashes)
        missing = {digest: text for digest, text in zip(hashes, texts, strict=True) if digest not in vectors}
        if missing:
            fresh = self.embedder.embed(list(missing.values()))
            vectors.update(zip(missing, fresh, strict=True))
        self.reused += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([vectors[digest] for digest in hashes]).astype(np.float32, copy=False)
