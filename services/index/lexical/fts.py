"""Full-text expressions (plan FtsExpr) analyzed once, then turned into Tantivy queries or evaluated.

`compile_fts` runs every term through the index analyzer, so query and index tokens agree. The
compiled tree (`Fts`) has three leaf kinds:
- `term`: one token -> term query;
- `phrase`: several tokens (a quoted phrase, or a word like `connection_profile.py` that analyzes to
  several tokens) -> phrase query;
- `prefix`: tokens whose last one is a prefix -> regex `tok.*` for one token (no cap on the words it
  matches), Tantivy's phrase-prefix query for several;
and three inner kinds: `all` (Must, MustNot for negated items), `any` (Should), `not`.

A leaf that analyzes to no token at all (punctuation only) is dropped from its parent; an expression
with no token left compiles to None, which callers treat as "matches nothing" (never as "match all").

The same tree evaluates in Python over a token list (`matches`), which checks single blocks and finds
the query terms a hit message contains (`matched_terms`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from quarry.index.lexical import analyzer
from quarry.v1 import plan_pb2

# The simple tokenizer yields alphanumeric tokens only; escaping the regex metacharacters is a guard.
_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")


@dataclass(frozen=True)
class Fts:
    kind: str  # term | phrase | prefix | all | any | not
    tokens: tuple[str, ...] = ()
    children: tuple[Fts, ...] = ()
    raw: str = ""  # the user's text of a leaf, for substring lowering


def compile_fts(expr: plan_pb2.FtsExpr) -> Fts | None:
    kind = expr.WhichOneof("node")
    if kind in ("term", "phrase", "prefix"):
        raw = getattr(expr, kind)
        toks = tuple(analyzer.tokens(raw))
        if not toks:
            return None
        if kind == "prefix":
            return Fts("prefix", toks, raw=raw)
        return Fts("term" if len(toks) == 1 else "phrase", toks, raw=raw)
    if kind == "negate":
        child = compile_fts(expr.negate)
        return None if child is None else Fts("not", children=(child,))
    if kind in ("all", "any"):
        return combine(kind, [compile_fts(item) for item in getattr(expr, kind).items])
    return None


def combine(kind: str, items: Iterable[Fts | None]) -> Fts | None:
    """An `all` / `any` of the items, flattened; None when nothing positive is left."""
    children: list[Fts] = []
    for item in items:
        if item is None:
            continue
        children.extend(item.children if item.kind == kind else (item,))
    if not any(c.kind != "not" for c in children):
        return None
    if len(children) == 1:
        return children[0]
    return Fts(kind, children=tuple(children))


def positive(node: Fts | None) -> Fts | None:
    """The expression without its negations: what a ranking scores."""
    if node is None or node.kind == "not":
        return None
    if node.kind in ("all", "any"):
        children = [positive(c) for c in node.children]
        if all(p is c for p, c in zip(children, node.children, strict=True)):
            return node  # nothing negated below: the expression itself
        return combine(node.kind, children)
    return node


def _regex_escape(token: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in token)


def to_query(
    node: Fts, schema: tantivy.Schema, field: str, expansions: Mapping[str, Sequence[str]] | None = None
) -> Query:
    """The Tantivy query of the expression over one field.

    A one-token prefix matches by regex, which scores a constant; with `expansions` (prefix -> its most
    frequent completions) the regex becomes a zero-score filter and the completions add BM25, so
    prefix queries rank like word queries instead of tying everywhere.
    """
    if node.kind == "term":
        return Query.term_query(schema, field, node.tokens[0])
    if node.kind == "phrase":
        return Query.phrase_query(schema, field, list(node.tokens))
    if node.kind == "prefix":
        if len(node.tokens) > 1:
            return Query.phrase_prefix_query(schema, field, list(node.tokens))
        regex = Query.regex_query(schema, field, _regex_escape(node.tokens[0]) + ".*")
        completions = (expansions or {}).get(node.tokens[0])
        if not completions:
            return regex
        return Query.boolean_query(
            [(Occur.Must, Query.const_score_query(regex, 0.0))]
            + [(Occur.Should, Query.term_query(schema, field, t)) for t in completions]
        )
    if node.kind == "not":
        return Query.boolean_query(
            [(Occur.Must, Query.all_query()), (Occur.MustNot, to_query(node.children[0], schema, field))]
        )
    clauses = []
    for child in node.children:
        if child.kind == "not":
            clauses.append((Occur.MustNot, to_query(child.children[0], schema, field)))
        else:
            occur = Occur.Must if node.kind == "all" else Occur.Should
            clauses.append((occur, to_query(child, schema, field, expansions)))
    return Query.boolean_query(clauses)


def prefixes(node: Fts | None) -> list[str]:
    """Single-token prefixes of the positive expression (for snippet term expansion)."""
    node = positive(node)
    if node is None:
        return []
    if node.kind in ("all", "any"):
        return [p for c in node.children for p in prefixes(c)]
    return [node.tokens[-1]] if node.kind == "prefix" else []


def needs_tokens(node: Fts) -> bool:
    """Whether a hit's matched terms depend on its text (an OR branch or a prefix), or follow from the
    fact that it matched (every positive token of an AND of terms and phrases is present)."""
    if node.kind == "prefix" or node.kind == "any":
        return True
    return any(needs_tokens(c) for c in node.children if c.kind != "not")


def _has_sequence(tokens: list[str], seq: tuple[str, ...], last_is_prefix: bool) -> bool:
    n = len(seq)
    for i in range(len(tokens) - n + 1):
        if tokens[i : i + n - 1] == list(seq[:-1]):
            last = tokens[i + n - 1]
            if last == seq[-1] or (last_is_prefix and last.startswith(seq[-1])):
                return True
    return False


def matches(node: Fts, tokens: list[str], token_set: set[str]) -> bool:
    """Evaluate the expression over the analyzed tokens of one text."""
    if node.kind == "term":
        return node.tokens[0] in token_set
    if node.kind == "phrase":
        return all(t in token_set for t in node.tokens) and _has_sequence(tokens, node.tokens, False)
    if node.kind == "prefix":
        if len(node.tokens) == 1:
            return any(t.startswith(node.tokens[0]) for t in token_set)
        return _has_sequence(tokens, node.tokens, True)
    if node.kind == "not":
        return not matches(node.children[0], tokens, token_set)
    if node.kind == "all":
        return all(matches(c, tokens, token_set) for c in node.children)
    return any(matches(c, tokens, token_set) for c in node.children)


def query_terms(node: Fts | None) -> list[str]:
    """The folded tokens of the positive expression, in query order, without duplicates."""
    node = positive(node)
    out: list[str] = []
    if node is None:
        return out

    def walk(n: Fts) -> None:
        if n.kind in ("all", "any"):
            for c in n.children:
                walk(c)
        else:
            out.extend(t for t in n.tokens if t not in out)

    walk(node)
    return out


def matched_terms(node: Fts | None, tokens: list[str]) -> list[str]:
    """The positive query terms present in `tokens`; a prefix contributes the tokens it matched."""
    node = positive(node)
    if node is None:
        return []
    token_set = set(tokens)
    out: list[str] = []

    def add(t: str) -> None:
        if t not in out:
            out.append(t)

    def walk(n: Fts) -> None:
        if n.kind in ("all", "any"):
            for c in n.children:
                walk(c)
        elif n.kind == "prefix":
            for t in n.tokens[:-1]:
                if t in token_set:
                    add(t)
            for t in tokens:
                if t.startswith(n.tokens[-1]):
                    add(t)
        else:
            for t in n.tokens:
                if t in token_set:
                    add(t)

    walk(node)
    return out


def substring_sql(node: Fts, columns: tuple[str, ...]) -> tuple[str, list[object]]:
    """The expression as case-insensitive (ASCII) substring tests over columns: each leaf's raw text
    must occur in one of them. For unit fields that are unindexed substring filters by contract."""
    if node.kind in ("term", "phrase", "prefix"):
        needle = node.raw.lower()
        sql = "(" + " OR ".join(f"instr(lower({c}), ?) > 0" for c in columns) + ")"
        return sql, [needle] * len(columns)
    if node.kind == "not":
        sql, params = substring_sql(node.children[0], columns)
        return f"NOT {sql}", params
    parts = [substring_sql(c, columns) for c in node.children]
    joiner = " AND " if node.kind == "all" else " OR "
    return "(" + joiner.join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
