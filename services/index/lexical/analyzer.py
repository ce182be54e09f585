"""The folding text analyzer shared by indexing and querying, and its pure-Python counterparts.

Tantivy does not persist custom tokenizers: every `Index` handle must get `register(index)` before it
indexes or searches. `tokens()` runs the very same analyzer on query text, so query terms and
indexed terms always agree (`zrobiłem` and `zrobilem` both become `zrobilem`, `Łódź` becomes `lodz`).

`fold()` is the substring-matching counterpart (title contains, no tokenization): lowercase, strip
combining marks, and map the Latin letters that have no Unicode decomposition (ł, ø, ß, ...) the
way tantivy's `ascii_fold` does.
"""

from __future__ import annotations

import threading
import unicodedata

import tantivy

ANALYZER_NAME = "folded"
MAX_TOKEN_CHARS = 40

_NO_DECOMPOSITION = str.maketrans(
    {
        "ł": "l",
        "Ł": "l",
        "đ": "d",
        "Đ": "d",
        "ð": "d",
        "Ð": "d",
        "ø": "o",
        "Ø": "o",
        "ß": "ss",
        "æ": "ae",
        "Æ": "ae",
        "œ": "oe",
        "Œ": "oe",
        "þ": "th",
        "Þ": "th",
        "ı": "i",
        "ħ": "h",
        "Ħ": "h",
    }
)

_local = threading.local()


def build_analyzer() -> tantivy.TextAnalyzer:
    """simple tokenizer (split on non-alphanumerics) -> remove_long -> lowercase -> ascii_fold."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


def register(index: tantivy.Index) -> None:
    """Make the folding analyzer known to this index handle (required after every open)."""
    index.register_tokenizer(ANALYZER_NAME, build_analyzer())


def tokens(text: str) -> list[str]:
    """The indexed tokens of `text`, exactly as the index stores them."""
    analyzer = getattr(_local, "analyzer", None)
    if analyzer is None:
        analyzer = _local.analyzer = build_analyzer()
    return analyzer.analyze(text)


def fold(text: str) -> str:
    """Lowercased, diacritic-free text for substring comparisons (punctuation and spaces kept)."""
    lowered = text.translate(_NO_DECOMPOSITION).lower()
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def normalize_path(path: str) -> str:
    """A path in the form path filters compare: forward slashes, no leading `./`."""
    normalized = path.strip().replace("\\", "/")
    while normalized.startswith("./"):
        normalized = normalized[2:]
    return normalized
