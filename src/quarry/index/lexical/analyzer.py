"""The text analysis shared by indexing and querying, and its pure-Python counterparts.

Two Tantivy analyzers, registered on every `Index` handle by `register(index)` (Tantivy does not
persist custom tokenizers):
- `folded` (exact): simple tokenizer -> remove_long(40) -> lowercase -> ascii_fold. Identifiers and
  paths split into their parts (`connection_profile.py` -> connection / profile / py), and the word
  order is indexed, so a phrase of the parts finds the identifier whole. `zrobiłem` and `zrobilem`
  both become `zrobilem`, `Łódź` becomes `lodz`.
- `folded_stem` (ranking): the same, then common English and Chinese stopwords removed (the
  negations no / not / nor / never / without and 不 / 没 / 没有 / 无 / 非 are kept) and the English
  Snowball stemmer (`refactoring`, `refactored` -> `refactor`). Stemming is what moves BM25 on a
  retrieval benchmark (BEIR SciFact nDCG@10 0.661 -> 0.687); the exact field keeps identifiers,
  quoted words and stopwords findable.

Chinese has no spaces, and the simple tokenizer keeps a run of Han characters as one token (dropped
whole past 40 bytes). `segment()` cuts each run into words (jieba-rs dictionary, no HMM guessing, so
the same word cuts the same way in a query and in a text) and puts U+200B ZERO WIDTH SPACE between
them: the tokenizer splits there, and the text still reads the same where it is shown (snippets).
The segmenter loads on the first Han character seen (~0.2 s), so Latin-only text never pays for it.
Documents are segmented before indexing (records.py), query words in `tokens()` / `stem_tokens()`.

`tokens()` and `stem_tokens()` run the very same analyzers on query text, so query terms and indexed
terms always agree. `fold()` is the substring-matching counterpart (title contains, no tokenization):
lowercase, strip combining marks, and map the Latin letters that have no Unicode decomposition
(ł, ø, ß, ...) the way tantivy's `ascii_fold` does.

`VERSION` names the analysis of indexed text: an index built with another version is rebuilt from
the store when its partition opens (schema.py, partition.py). Bump it whenever indexed tokens change.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata

import tantivy

from quarry.core import cjk

VERSION = 2  # 1: exact field only, no segmentation
ANALYZER_NAME = "folded"
STEM_ANALYZER_NAME = "folded_stem"
MAX_TOKEN_CHARS = 40
SEPARATOR = "\u200b"  # between segmented words: not alphanumeric, so the tokenizer splits there

# Tantivy's English list (Lucene's) without the negations `no` and `not`.
ENGLISH_STOPWORDS = (
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
)
CHINESE_STOPWORDS = (
    "的",
    "了",
    "是",
    "在",
    "和",
    "也",
    "就",
    "都",
    "而",
    "及",
    "与",
    "着",
    "或",
    "一个",
    "吗",
    "呢",
    "吧",
    "啊",
    "把",
    "被",
    "之",
    "其",
)
STOPWORDS = (*ENGLISH_STOPWORDS, *CHINESE_STOPWORDS)

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


def _builder() -> tantivy.TextAnalyzerBuilder:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
    )


def build_analyzer() -> tantivy.TextAnalyzer:
    """The exact analyzer: simple tokenizer (split on non-alphanumerics) -> remove_long -> lowercase -> ascii_fold."""
    return _builder().build()


def build_stem_analyzer() -> tantivy.TextAnalyzer:
    """The ranking analyzer: the exact one, then stopwords removed and English stems."""
    return (
        _builder().filter(tantivy.Filter.custom_stopword(list(STOPWORDS))).filter(tantivy.Filter.stemmer("english"))
    ).build()


def register(index: tantivy.Index) -> None:
    """Make both analyzers known to this index handle (required after every open)."""
    index.register_tokenizer(ANALYZER_NAME, build_analyzer())
    index.register_tokenizer(STEM_ANALYZER_NAME, build_stem_analyzer())


def _segment_run(match: re.Match[str]) -> str:
    return SEPARATOR + SEPARATOR.join(cjk.cut(match.group())) + SEPARATOR


def segment(text: str) -> str:
    """`text` with its Chinese words separated by SEPARATOR (unchanged when it has no Han character)."""
    if text.isascii():
        return text
    return cjk.HAN_RUN.sub(_segment_run, text)


def words(text: str) -> list[str]:
    """The parts of one query word that are words of their own: its Chinese words and the text between
    them (a Latin word or an identifier stays whole)."""
    return [w for w in segment(text).split(SEPARATOR) if w]


def _exact() -> tantivy.TextAnalyzer:
    analyzer = getattr(_local, "exact", None)
    if analyzer is None:
        analyzer = _local.exact = build_analyzer()
    return analyzer


def _stemming() -> tantivy.TextAnalyzer:
    analyzer = getattr(_local, "stemming", None)
    if analyzer is None:
        analyzer = _local.stemming = build_stem_analyzer()
    return analyzer


def tokens(text: str) -> list[str]:
    """The exact tokens of `text`, as the `text` and `actions` fields index them."""
    return _exact().analyze(segment(text))


def stem_tokens(text: str) -> list[str]:
    """The ranking tokens of `text` (no stopwords, English stems), as the `text_stem` field indexes them."""
    return _stemming().analyze(segment(text))


@functools.lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """The ranking token of one exact token: its stem, or "" for a stopword. The ranking tokens of a text
    are the stems of its exact tokens, in order, without the stopwords."""
    analyzed = _stemming().analyze(token)
    return analyzed[0] if analyzed else ""


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
