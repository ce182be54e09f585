"""Random choices for the generator, served from large numpy batches through cursors rather than one
generator call per word: uniforms, picks, lexicon words drawn with a Zipf-Mandelbrot distribution (a
few function words dominate, most terms are rare), and opaque tokens."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np

from quarry.cli.synthetic.vocabulary import LEXICON

_T = TypeVar("_T")

ZIPF_EXPONENT = 1.05
ZIPF_OFFSET = 6.0


def lexicon_probabilities() -> np.ndarray:
    """P(word) per lexicon rank for the background text (before topic words are mixed in)."""
    ranks = np.arange(len(LEXICON), dtype=np.float64)
    weights = 1.0 / np.power(ranks + ZIPF_OFFSET, ZIPF_EXPONENT)
    return weights / weights.sum()


class Draws:
    """Random choices served from large numpy batches: one generator call per ~1M draws, not per word."""

    def __init__(self, rng: np.random.Generator, batch: int) -> None:
        self._rng = rng
        self._batch = batch
        self._cdf = np.cumsum(lexicon_probabilities())
        self._cdf[-1] = 1.0
        self._lexicon = np.array(LEXICON, dtype=object)
        # A C-level iterator over batches of uniforms: `u()` costs one `next`, not a Python frame.
        self.u: Callable[[], float] = itertools.chain.from_iterable(self._uniform_batches()).__next__
        self._w: list[str] = []
        self._wi = 0

    def _uniform_batches(self) -> Iterator[list[float]]:
        while True:
            yield self._rng.random(self._batch).tolist()

    def below(self, n: int) -> int:
        return int(self.u() * n)

    def pick(self, seq: Sequence[_T]) -> _T:
        return seq[int(self.u() * len(seq))]

    def words(self, n: int) -> list[str]:
        i = self._wi
        if i + n > len(self._w):
            ids = np.searchsorted(self._cdf, self._rng.random(self._batch))
            self._w = self._lexicon[ids].tolist()
            i = 0
        self._wi = i + n
        return self._w[i : i + n]

    def token(self) -> str:
        """An opaque 20-hex-digit token (tool-use ids and the like)."""
        return f"{int(self.u() * (1 << 40)):010x}{int(self.u() * (1 << 40)):010x}"

    def uuid4(self) -> str:
        h = f"{int(self.u() * (1 << 48)):012x}{int(self.u() * (1 << 48)):012x}{int(self.u() * (1 << 32)):08x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"
