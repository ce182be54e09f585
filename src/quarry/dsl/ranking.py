"""What a compiled plan ranks by and highlights: the positive full text of its `where` (its `fts` leaves not
under a negation) and the query's matched terms (docs/query-language.md#how-words-match)."""

from __future__ import annotations

import re

from quarry.v1 import plan_pb2

_FTS_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})


def positive_fts(predicate: plan_pb2.Predicate, negated: bool = False) -> list[plan_pb2.FtsExpr]:
    """The `fts` leaves of `predicate` that are not under a negation, in order."""
    node = predicate.WhichOneof("node")
    if node in ("all", "any"):
        items = getattr(predicate, node).items
        return [leaf for item in items for leaf in positive_fts(item, negated)]
    if node == "negate":
        return positive_fts(predicate.negate, not negated)
    if node == "fts" and not negated:
        return [predicate.fts]
    return []


def positive_fragments(expr: plan_pb2.FtsExpr) -> list[str]:
    """The raw text of the non-negated terms, phrases and prefixes of `expr`, in order."""
    node = expr.WhichOneof("node")
    if node in ("all", "any"):
        return [text for item in getattr(expr, node).items for text in positive_fragments(item)]
    if node in ("term", "phrase", "prefix"):
        return [getattr(expr, node)]
    return []


def matched_terms(fragments: list[str]) -> tuple[str, ...]:
    """The words a reader can expect highlighted: operators, quote/colon/paren punctuation and a trailing `*`
    stripped, duplicates dropped regardless of case (docs/query-language.md#how-words-match)."""
    seen: set[str] = set()
    terms: list[str] = []
    for fragment in fragments:
        for word in re.sub(r"[\"'():]", " ", fragment).split():
            word = word.rstrip("*")
            if not word or word in _FTS_OPERATORS or word.casefold() in seen:
                continue
            seen.add(word.casefold())
            terms.append(word)
    return tuple(terms)
