"""Identical texts embedded once: an embedder that answers a message text the vector store already holds
vectors of (for any message, of any session) with those vectors, and embeds only the others, each once,
as its passages (quarry.vector.passages).

Agents repeat themselves across sessions (the same instructions, tool outputs quoted back, "Continue"),
so a shared archive holds many identical message texts; a vector depends on the text and the model
alone, and the store keeps one model. The texts' hashes are the store's (`text_hash`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from quarry.vector.embed import Embedder
from quarry.vector.store import text_hash


class ReusingEmbedder:
    """Wraps `embedder`; `known(hashes)` gives the stored passage vectors (rows, in passage order) of the
    message text hashes the store holds."""

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
        """The embedder's own vectors of `texts` (a warm-up, a query): nothing stored is reused."""
        return self.embedder.embed(texts)

    def embed_messages(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each message text's passage vectors (rows of `dimension`, in passage order)."""
        hashes = [text_hash(text) for text in texts]
        vectors = self._known(hashes)
        missing = {digest: text for digest, text in zip(hashes, texts, strict=True) if digest not in vectors}
        if missing:
            passages = {digest: self.embedder.passages(text) for digest, text in missing.items()}
            fresh = self.embedder.embed([passage for split in passages.values() for passage in split])
            start = 0
            for digest, split in passages.items():
                vectors[digest] = fresh[start : start + len(split)]
                start += len(split)
        self.reused += len(texts) - len(missing)
        return [np.asarray(vectors[digest], dtype=np.float32) for digest in hashes]
