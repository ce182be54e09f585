"""Query text -> typed AST (quarry.dsl.ast), with one Lark LALR parser built once per process.

The AST is built during the parse (Lark's tree-less mode, by quarry.dsl.ast_builder), so there is no
intermediate parse tree. Syntax errors become QuarryError(INVALID_QUERY) carrying the offending token, its
position and the human names of what would have been accepted there (quarry.dsl.syntax_errors).

`~"…"` leaves: the string is unescaped (`\\"` -> `"`, `\\\\` -> `\\`) and its content parsed with
the grammar's `fts` entry point: words, `word*` prefixes, phrases in 'single quotes' (or in
escaped double quotes), `-word`, AND / OR / NOT and parentheses. A `'` inside a word is an
apostrophe (`don't`); only a `'` that starts a word opens a phrase.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark
from lark.exceptions import UnexpectedInput

from quarry.core.errors import QuarryError
from quarry.dsl import ast
from quarry.dsl.ast_builder import AstBuilder
from quarry.dsl.errors import INVALID_QUERY, locate, query_error
from quarry.dsl.syntax_errors import syntax_error

MAX_QUERY_CHARS = 10_000
MAX_DEPTH = 64

_GRAMMAR = Path(__file__).with_name("grammar.lark")


@lru_cache(maxsize=1024)  # the tree is immutable; a paged walk, a retry or an agent's loop parses once
def parse(text: str) -> ast.Query:
    """Parse a whole query (syntax only: fields are validated by compile_query).

    Raises QuarryError: INVALID_QUERY for syntax, BAD_VALUE for a number too large to hold,
    UNSUPPORTED_FORM for `semantic:(a|b)`.
    """
    if len(text) > MAX_QUERY_CHARS:
        raise locate(
            query_error(
                INVALID_QUERY,
                f"the query is longer than {MAX_QUERY_CHARS} characters",
                ast.Span(MAX_QUERY_CHARS, MAX_QUERY_CHARS),
            ),
            text,
        )
    try:
        query = _parse(text, "query")
        _check_depth(query)
    except QuarryError as error:
        raise locate(error, text) from None
    return query


def _parse(text: str, start: str) -> Any:
    try:
        return _lark().parse(text, start=start)
    except UnexpectedInput as error:
        raise syntax_error(error, text) from None


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        _GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        start=["query", "fts"],
        transformer=AstBuilder(parse_fts=_parse_fts),
        cache=True,  # the grammar's tables from a file in the temp dir: ~10 ms to build instead of ~120
    )


def _parse_fts(content: str) -> ast.Fts:
    """The content of a `~"…"` leaf, by the grammar's `fts` entry point, its nesting checked."""
    expr = _parse(content, "fts")
    _check_depth(expr)
    return expr


# ---------------------------------------------------------------- depth guard


def _children(node: object) -> tuple[object, ...]:
    match node:
        case ast.And() | ast.Or() | ast.FtsAnd() | ast.FtsOr():
            return node.items
        case ast.Not() | ast.FtsNot():
            return (node.item,)
        case ast.FreeText() | ast.FtsLeaf():
            return (node.expr,)
        case ast.Exists():
            return (node.predicate,)
        case ast.Seq():
            return node.steps
        case ast.CompactQuery() | ast.SessionsQuery():
            filters = tuple(f for projection in node.projections for f in projection.filters)
            return ((node.predicate,) if node.predicate is not None else ()) + filters
        case ast.UnitQuery():
            return (node.predicate,) + ((node.session_scope,) if node.session_scope is not None else ())
    return ()


def _check_depth(root: object) -> None:
    """Reject absurd nesting up front, so every later recursive walk stays far from the C stack."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            span = getattr(node, "span", None)
            raise query_error(INVALID_QUERY, f"the query nests deeper than {MAX_DEPTH} levels", span)
        stack.extend((child, depth + 1) for child in _children(node))
