"""Full-text expressions (plan FtsExpr) analyzed once, then turned into Tantivy queries or evaluated.

`compile_fts` runs every word through the index analyzers (analyzer.py), so query and index tokens
agree. The compiled tree (`Fts`) has three leaf kinds:
- `term`: one token. An unquoted word carries its stem too: it matches and scores on the stemmed twin
  of the field (`text_stem` for `text`: `refactoring` finds `refactored`), and on its exact token in a
  field without one (`actions`). A quoted word has no stem: exact, on the field itself;
- `phrase`: several tokens (a quoted phrase, or an unquoted word like `connection_profile.py` that
  analyzes to several tokens: the identifier whole) -> exact phrase query;
- `prefix`: tokens whose last one is a prefix -> regex `tok.*` for one token (no cap on the words it
  matches), Tantivy's phrase-prefix query for several; exact;
and three inner kinds: `all` (Must, MustNot for negated items), `any` (Should), `not`.

Unquoted words: Chinese words in them are words of their own (`数据库连接` is `数据库` AND `连接`), and
stopwords (analyzer.STOPWORDS; negations are not among them) are dropped, unless every positive word
of the expression is one: then they are all kept, as exact terms, so `the` alone still finds text.
Quoted words keep their stopwords.

A leaf that analyzes to no token at all (punctuation only) is dropped from its parent; an expression
with no token left compiles to None, which callers treat as "matches nothing" (never as "match all").

The same tree evaluates in Python over an analyzed text (`matches`), which checks single blocks, finds
the query words a hit message contains (`matched_terms`) and the words of its text a snippet marks
(`Highlighter`); a stemmed leaf compares stems there as Tantivy does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from quarry.index.lexical import analyzer
from quarry.index.lexical.schema import STEMMED
from quarry.v1 import plan_pb2

# The simple tokenizer yields alphanumeric tokens only; escaping the regex metacharacters is a guard.
_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")


@dataclass(frozen=True)
class Fts:
    kind: str  # term | phrase | prefix | all | any | not
    tokens: tuple[str, ...] = ()  # exact tokens (the fields without stemming)
    children: tuple[Fts, ...] = ()
    raw: str = ""  # the user's text of a leaf, for substring lowering
    stem: str = ""  # an unquoted word's stem: a `term` matches it in a field's stemmed twin


def compile_fts(expr: plan_pb2.FtsExpr) -> Fts | None:
    node = _compile(expr, drop_stopwords=True)
    return node if node is not None else _compile(expr, drop_stopwords=False)


def _compile(expr: plan_pb2.FtsExpr, drop_stopwords: bool) -> Fts | None:
    kind = expr.WhichOneof("node")
    if kind == "term":
        return combine("all", (_word(w, drop_stopwords) for w in analyzer.words(expr.term)))
    if kind in ("phrase", "prefix"):
        raw = getattr(expr, kind)
        toks = tuple(analyzer.tokens(raw))
        if not toks:
            return None
        if kind == "prefix":
            return Fts("prefix", toks, raw=raw)
        return Fts("term" if len(toks) == 1 else "phrase", toks, raw=raw)
    if kind == "negate":
        child = _compile(expr.negate, drop_stopwords)
        return None if child is None else Fts("not", children=(child,))
    if kind in ("all", "any"):
        return combine(kind, [_compile(item, drop_stopwords) for item in getattr(expr, kind).items])
    return None


def _word(raw: str, drop_stopwords: bool) -> Fts | None:
    """One unquoted word: a stemmed term, an exact phrase of an identifier's parts, or (a stopword) None."""
    toks = tuple(analyzer.tokens(raw))
    if len(toks) != 1:
        return Fts("phrase", toks, raw=raw) if toks else None
    stem = analyzer.stem(toks[0])
    if not stem and drop_stopwords:
        return None
    return Fts("term", toks, raw=raw, stem=stem)


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


def match_key(node: Fts, field: str) -> object:
    """What a node matches by in `field`: an unquoted word by its stem where the field has a stemmed twin
    (there `neuron` and `neurons` are one term), anything else by itself."""
    if node.kind == "term" and node.stem and field in STEMMED:
        return ("stem", node.stem)
    return node


def distinct(nodes: Iterable[Fts], field: str) -> tuple[Fts, ...]:
    """The nodes without repeats of one term (the first of each kept): a word typed twice, or two forms
    of one stem, count and score once, as admission's distinct analyzed query terms do
    (docs/search-api.md#admission)."""
    first: dict[object, Fts] = {}
    for node in nodes:
        first.setdefault(match_key(node, field), node)
    return tuple(first.values())


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


FieldTerm = tuple[str, str]
Idfs = Mapping[FieldTerm, tuple[float, float]]  # (field, term) -> (the archive's IDF, this partition's)


def to_query(
    node: Fts,
    schema: tantivy.Schema,
    field: str,
    expansions: Mapping[str, Sequence[str]] | None = None,
    idfs: Idfs | None = None,
) -> Query:
    """The Tantivy query of the expression over one field (stemmed terms over its stemmed twin, if any).

    A one-token prefix matches by regex, which scores a constant; with `expansions` (prefix -> its most
    frequent completions) the regex becomes a zero-score filter and the completions add BM25, so
    prefix queries rank like word queries instead of tying everywhere.

    With `idfs`, every scored term and phrase is boosted by the ratio of the archive's IDF to this
    partition's, so its BM25 is computed with the statistics of the whole archive (Elasticsearch's
    dfs_query_then_fetch): the same document scores alike in every partition, however the archive is cut.
    """
    if node.kind == "term":
        key = term_key(node, field)
        return _boosted(Query.term_query(schema, key[0], key[1]), [key], idfs)
    if node.kind == "phrase":
        return _boosted(Query.phrase_query(schema, field, list(node.tokens)), [(field, t) for t in node.tokens], idfs)
    if node.kind == "prefix":
        if len(node.tokens) > 1:
            return Query.phrase_prefix_query(schema, field, list(node.tokens))
        regex = Query.regex_query(schema, field, _regex_escape(node.tokens[0]) + ".*")
        completions = (expansions or {}).get(node.tokens[0])
        if not completions:
            return regex
        return Query.boolean_query(
            [(Occur.Must, Query.const_score_query(regex, 0.0))]
            + [(Occur.Should, _boosted(Query.term_query(schema, field, t), [(field, t)], idfs)) for t in completions]
        )
    if node.kind == "not":
        return Query.boolean_query(
            [(Occur.Must, Query.all_query()), (Occur.MustNot, to_query(node.children[0], schema, field))]
        )
    clauses = []
    for child in distinct(node.children, field):
        if child.kind == "not":
            clauses.append((Occur.MustNot, to_query(child.children[0], schema, field)))
        else:
            occur = Occur.Must if node.kind == "all" else Occur.Should
            clauses.append((occur, to_query(child, schema, field, expansions, idfs)))
    return Query.boolean_query(clauses)


def term_key(node: Fts, field: str) -> FieldTerm:
    """The (field, term) a `term` leaf scores on: its stem on the field's stemmed twin, else its token."""
    stemmed = STEMMED.get(field) if node.stem else None
    return (stemmed, node.stem) if stemmed is not None else (field, node.tokens[0])


def scored_terms(node: Fts, field: str, expansions: Mapping[str, Sequence[str]] | None = None) -> list[FieldTerm]:
    """The (field, term) pairs whose statistics `to_query` scores the expression with, without repeats."""
    out: dict[FieldTerm, None] = {}

    def walk(n: Fts) -> None:
        if n.kind == "term":
            out[term_key(n, field)] = None
        elif n.kind == "phrase":
            out.update(dict.fromkeys((field, t) for t in n.tokens))
        elif n.kind == "prefix" and len(n.tokens) == 1:
            out.update(dict.fromkeys((field, t) for t in (expansions or {}).get(n.tokens[0], ())))
        elif n.kind in ("all", "any"):
            for child in n.children:
                if child.kind != "not":
                    walk(child)

    walk(node)
    return list(out)


def _boosted(query: Query, keys: Sequence[FieldTerm], idfs: Idfs | None) -> Query:
    """The query scaled from this partition's IDF to the archive's (a phrase's being its terms' sum)."""
    if not idfs or any(key not in idfs for key in keys):
        return query
    archive = sum(idfs[key][0] for key in keys)
    local = sum(idfs[key][1] for key in keys)
    return Query.boost_query(query, archive / local) if local > 0 else query


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


class Analyzed:
    """One text's exact tokens, and its stems when a stemmed leaf first asks for them."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.token_set = set(tokens)
        self._stems: set[str] | None = None

    @classmethod
    def of(cls, text: str) -> Analyzed:
        return cls(analyzer.tokens(text))

    @property
    def stems(self) -> set[str]:
        if self._stems is None:
            self._stems = {analyzer.stem(t) for t in self.token_set} - {""}
        return self._stems


def matches(node: Fts, text: Analyzed, stemmed: bool = True) -> bool:
    """Evaluate the expression over one analyzed text; `stemmed`: whether its field has a stemmed twin
    (dialogue text), so that unquoted words compare stems."""
    if node.kind == "term":
        if stemmed and node.stem:
            return node.stem in text.stems
        return node.tokens[0] in text.token_set
    if node.kind == "phrase":
        return all(t in text.token_set for t in node.tokens) and _has_sequence(text.tokens, node.tokens, False)
    if node.kind == "prefix":
        if len(node.tokens) == 1:
            return any(t.startswith(node.tokens[0]) for t in text.token_set)
        return _has_sequence(text.tokens, node.tokens, True)
    if node.kind == "not":
        return not matches(node.children[0], text, stemmed)
    if node.kind == "all":
        return all(matches(c, text, stemmed) for c in node.children)
    return any(matches(c, text, stemmed) for c in node.children)


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


def _leaves(node: Fts) -> Iterable[Fts]:
    if node.kind in ("all", "any"):
        for c in node.children:
            yield from _leaves(c)
    else:
        yield node


def matched_terms(node: Fts | None, tokens: list[str], stemmed: bool = True) -> list[str]:
    """The positive query words present in `tokens` (an unquoted word also when a token shares its stem,
    with `stemmed` as in `matches`); a prefix contributes the tokens it matched."""
    node = positive(node)
    if node is None:
        return []
    text = Analyzed(tokens)
    out: list[str] = []

    def add(t: str) -> None:
        if t not in out:
            out.append(t)

    for leaf in _leaves(node):
        if leaf.kind == "prefix":
            for t in leaf.tokens[:-1]:
                if t in text.token_set:
                    add(t)
            for t in tokens:
                if t.startswith(leaf.tokens[-1]):
                    add(t)
        elif leaf.kind == "term" and stemmed and leaf.stem:
            if leaf.stem in text.stems:
                add(leaf.tokens[0])
        else:
            for t in leaf.tokens:
                if t in text.token_set:
                    add(t)
    return out


def stemmed_leaves(node: Fts | None) -> bool:
    """Whether the positive expression has a word that matches by its stem in a stemmed field."""
    node = positive(node)
    return node is not None and any(leaf.kind == "term" and leaf.stem for leaf in _leaves(node))


class Highlighter:
    """The distinct tokens of a text (exact, as `field` or its exact twin indexes them) that the positive
    expression's leaves match there: what a snippet of the text marks (`refactored` for `refactoring`).
    Built once per search; called on every hit's tokens."""

    def __init__(self, node: Fts | None, field: str) -> None:
        node = positive(node)
        stemmed = field in STEMMED
        self._exact: set[str] = set()
        self._stems: set[str] = set()
        prefixes: list[str] = []
        for leaf in _leaves(node) if node is not None else ():
            if leaf.kind == "term" and stemmed and leaf.stem:
                self._stems.add(leaf.stem)
            elif leaf.kind == "prefix":
                self._exact.update(leaf.tokens[:-1])
                prefixes.append(leaf.tokens[-1])
            else:
                self._exact.update(leaf.tokens)
        self._starts = tuple(prefixes)

    def __call__(self, tokens: list[str]) -> list[str]:
        exact, starts, stems, stem = self._exact, self._starts, self._stems, analyzer.stem
        return [
            t
            for t in dict.fromkeys(tokens)
            if t in exact or (starts and t.startswith(starts)) or (stems and stem(t) in stems)
        ]


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
