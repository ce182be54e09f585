"""A query typed as several shell words, put back together.

A shell drops the quotes of `quarry repo:x -"stale plan" "query envelope"` and hands over the words
`repo:x`, `-stale plan`, `query envelope`: joined with spaces, the phrases would fall apart into loose
words. A word holding whitespace is a phrase that was quoted, unless it carries query structure of
its own (parentheses, operators, comparisons, field clauses after its first one): then it was a
quoted sub-query (`sessions where '(repo:a OR repo:b) AND NOT tag:x'`) and is kept as typed. A single
word is the whole query and is never changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# An optional negation and one field name ahead of the phrase: `-"stale plan"`, `title:"query DSL"`.
_PHRASE_WORD = re.compile(r"(?P<prefix>-?(?:(?:session\.)?[A-Za-z_][A-Za-z0-9_]*:)?)(?P<phrase>.*)", re.S)
_STRUCTURE = re.compile(r"""["'()|:~<>=*]|(?<!\S)(?:AND|OR|NOT|between|and|where|exists|seq)(?!\S)""")


def join_words(words: Sequence[str]) -> str:
    """The query text the words were typed as (see the module docstring)."""
    if len(words) == 1:
        return words[0]
    return " ".join(_requote(word) for word in words)


def _requote(word: str) -> str:
    if not any(ch.isspace() for ch in word):
        return word
    match = _PHRASE_WORD.fullmatch(word)
    assert match is not None  # the pattern matches any text
    phrase = match["phrase"]
    if not phrase.strip() or _STRUCTURE.search(phrase):
        return word
    return f'{match["prefix"]}"{phrase}"'
