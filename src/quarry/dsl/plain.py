"""Natural-language text as a query whose bare terms are its words, for callers that pass prose (an
agent's question, a benchmark's claim) rather than the query language.

Prose is not always a valid query, or means something else: `:` `"` `(` `)` `~` `*` `-` `|` `>` `=` have
meanings, upper-case AND / OR / NOT are operators, a leading unit name (`runs of heavy rain`) makes a unit
query, and `words between 3 and 5` is a comparison. So every character that is not a letter or digit
becomes a space (the analyzer splits words there anyway), the operators are lower-cased, and the
keywords left that could still act (a leading unit name or `sessions`, `between`) are capitalized: the
grammar's keywords are lower-case, the analyzer lower-cases every term, so they search as plain words.
"""

from __future__ import annotations

import unicodedata

from quarry.core.vocab import UNIT_SOURCES

_OPERATORS = frozenset(("AND", "OR", "NOT"))
_LEADING_KEYWORDS = frozenset(("sessions", *UNIT_SOURCES.values()))
_KEYWORDS = frozenset(("between",))


def plain_text_query(text: str) -> str:
    """The query of `text`'s words, each a bare term (an empty string when it has none)."""
    composed = unicodedata.normalize("NFC", text)
    words = "".join(c if c.isalnum() else " " for c in composed).split()
    out = [w.lower() if w in _OPERATORS else w.capitalize() if w in _KEYWORDS else w for w in words]
    if out and out[0] in _LEADING_KEYWORDS:
        out[0] = out[0].capitalize()
    return " ".join(out)
