"""The snippet of a hit: an excerpt of its text that holds the match, its matched words in [ and ].

Tantivy's snippet generator knows which words of a text the query matched (folded, stemmed, Chinese
words segmented as indexed), so it marks them; but it cuts the text into fixed windows first and keeps
the best one, and a match across a window's edge loses its last words (`…切换为[黑色]` for 黑色主题, or
`turn on the [dark]` for `dark theme`). So the generator here marks the whole text (`WHOLE`) and the
window is chosen after: at most SNIPPET_CHARS characters from a word's start to a word's end, holding
the most different matched words whole (then the most matches, then the earliest), beginning a little
before its first match. A text that fits is shown whole. The snippet is the text's own characters:
marks aside, it is a substring of the text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import NamedTuple

import tantivy

from quarry.index.lexical import analyzer

SNIPPET_CHARS = 160
WHOLE = 1 << 31  # the generator's fragment size: one fragment, the whole text
_CONTEXT = SNIPPET_CHARS // 4  # characters shown before the window's first match, when there are
_TOKEN = re.compile(r"[^\W_]+")  # a word as the tokenizer sees one (it splits on what is not alphanumeric)


class _Span(NamedTuple):
    start: int
    end: int


def marked(generator: tantivy.SnippetGenerator, field: str, text: str) -> str:
    """The snippet of `text` with the words `generator` highlights in [ and ]; the text's start when
    none is highlighted."""
    doc = tantivy.Document()
    segmented = analyzer.segment(text)
    doc.add_text(field, segmented)
    snippet = generator.snippet_from_doc(doc)
    marks = _char_spans(segmented, snippet)
    if not marks:
        head = text[:SNIPPET_CHARS]
        return head if len(text) <= SNIPPET_CHARS else head.rsplit(" ", 1)[0] + "…"
    begin, end = _window(segmented, marks)
    pieces, at = [], begin
    for mark in marks:
        if begin <= mark.start and mark.end <= end:
            pieces += [segmented[at : mark.start], "[", segmented[mark.start : mark.end], "]"]
            at = mark.end
    pieces.append(segmented[at:end])
    return "".join(pieces).replace(analyzer.SEPARATOR, "")


def _char_spans(text: str, snippet: tantivy.Snippet) -> list[_Span]:
    """The highlighted spans as character offsets of `text` (Tantivy gives UTF-8 byte offsets, relative
    to the fragment), in order."""
    base = snippet.fragment_range().start
    ranges = sorted((base + r.start, base + r.end) for r in snippet.highlighted())
    if text.isascii():
        return [_Span(start, end) for start, end in ranges]
    data = text.encode()
    spans, byte_at, char_at = [], 0, 0
    for start, end in ranges:
        char_at += len(data[byte_at:start].decode())
        width = len(data[start:end].decode())
        spans.append(_Span(char_at, char_at + width))
        byte_at, char_at = end, char_at + width
    return spans


def _visible(text: str, start: int, end: int) -> int:
    """The characters of text[start:end] a reader sees (the separators of segmented words are not)."""
    return end - start - text.count(analyzer.SEPARATOR, start, end)


def _window(text: str, marks: list[_Span]) -> tuple[int, int]:
    """[begin, end) of the excerpt: whole words, at most SNIPPET_CHARS visible characters, holding the
    most different marked words whole (then the most marks, then the earliest)."""
    words = _Words(text, [m.span() for m in _TOKEN.finditer(text)] or list(marks))
    first, last = words.starts[0], words.ends[-1]
    if _visible(text, first, last) <= SNIPPET_CHARS:
        return first, last
    mark_starts, mark_ends = [m.start for m in marks], [m.end for m in marks]
    folded = [analyzer.fold(text[m.start : m.end]) for m in marks]
    best: tuple[tuple[int, int, int], int, int] | None = None
    for mark in marks:
        begin = words.begin(mark.start, _CONTEXT)
        end = words.end(begin)
        if end >= last:  # the text's end: fill the window backwards instead
            begin, end = words.begin(last, SNIPPET_CHARS), last
        lo, hi = bisect_left(mark_starts, begin), bisect_right(mark_ends, end)
        key = (len(set(folded[lo:hi])), hi - lo, -begin)
        if best is None or key > best[0]:
            best = (key, begin, end)
    assert best is not None  # marks is not empty
    return best[1], best[2]


class _Words:
    """The words of a text (as the tokenizer splits it), by their starts and ends."""

    def __init__(self, text: str, spans: list[tuple[int, int]]) -> None:
        self.text = text
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]
        # Without separators (no Chinese words segmented) every character is visible: a window's edges
        # are found by bisection alone, not by counting separators word by word.
        self.plain = analyzer.SEPARATOR not in text

    def begin(self, anchor: int, before: int) -> int:
        """The start of the earliest word from which `anchor` is at most `before` visible characters on
        (`anchor` itself when the word holding it starts further back)."""
        holder = max(0, bisect_right(self.starts, anchor) - 1)
        if self.plain:
            index = min(bisect_left(self.starts, anchor - before), holder)
        else:
            index = holder
            while index > 0 and _visible(self.text, self.starts[index - 1], anchor) <= before:
                index -= 1
        return min(self.starts[index], anchor)

    def end(self, begin: int) -> int:
        """The end of the last word that keeps [begin, end) within SNIPPET_CHARS visible characters."""
        first = bisect_left(self.starts, begin)
        if self.plain:
            fits = bisect_right(self.ends, begin + SNIPPET_CHARS, lo=first) - first
        else:
            # Separators at most double a text's length: no word starting 3 windows on can fit.
            reach = bisect_left(self.starts, begin + 3 * SNIPPET_CHARS, lo=first)
            visible = lambda i: _visible(self.text, begin, self.ends[i])  # noqa: E731
            fits = bisect_right(range(first, reach), SNIPPET_CHARS, key=visible)
        return self.ends[first + fits - 1] if fits else self.ends[first]
