"""What a syntax error says: the offending token, its position, the human names of what would have been
accepted there, and a fix where one is plain (a missing AND, `field=value` for `field:value`, bare text
where a `where` predicate belongs) (docs/query-language.md#errors, #corrections)."""

from __future__ import annotations

import re
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from quarry.core.errors import QuarryError
from quarry.dsl import ast
from quarry.dsl.errors import INVALID_QUERY, query_error

# Terminal name -> what a user reads in `expected`, in the order they are listed.
_HUMAN_NAMES = {
    "FIELD": "field:value",
    "TILDE_STRING": '~"full-text"',
    "NEAR_TEXT": "near:text:",
    "NEAR_ID": "near:id:",
    "LINEAGE_ID": "lineage:id:",
    "CMP_FIELD": "comparison (field >= n)",
    "EXISTS": "exists",
    "SEQ": "seq(",
    "WORD": "word",
    "FWORD": "word",
    "STRING": '"phrase"',
    "SQ_STRING": "'phrase'",
    "VALUE": "value",
    "NOT": "NOT",
    "MINUS": "-",
    "LPAR": "(",
    "_AND": "AND",
    "_OR": "OR",
    "RPAR": ")",
    "ARROW": "->",
    "CMP_OP": "comparison operator (>=, <=, >, <, =)",
    "BETWEEN": "between",
    "BETWEEN_AND": "and",
    "SESSIONS": "sessions",
    "UNIT": "unit (messages, actions, blocks, files, assertions, runs, observed-events, context-snapshots, "
    "delegations)",
    "WHERE": "where",
    "PIPE": "|",
    "SORT": "sort",
    "GROUP": "group",
    "COUNT": "count",
    "LIMIT": "limit",
    "OFFSET": "offset",
    "BY": "by",
    "TIME": "time",
    "SEQ_KEY": "seq",
    "KEY": "key",
    "ASC": "asc",
    "DESC": "desc",
    "INT": "number",
    "NAME": "name",
    "$END": "end of query",
}
_ORDER = {name: index for index, name in enumerate(_HUMAN_NAMES)}


def syntax_error(error: UnexpectedInput, text: str) -> QuarryError:
    if isinstance(error, UnexpectedCharacters):
        offset = error.pos_in_stream
        char = text[offset] if offset < len(text) else ""
        return query_error(
            INVALID_QUERY,
            _unexpected_character(text, offset),
            ast.Span(offset, offset + 1),
            token=char,
            expected=_human(error.allowed),
        )
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = set(error.accepts or error.expected)
        if token.type == "$END":
            return query_error(
                INVALID_QUERY,
                "the query ends too early",
                ast.Span(len(text), len(text)),
                expected=_human(expected),
            )
        message = f"unexpected {token.value!r}"
        fix: tuple[str, str] | None = None
        if "_AND" in expected and "WORD" not in expected and token.type not in ("_AND", "_OR"):
            message, fix = _side_by_side(token)
        elif token.value == "-" or str(token.value).startswith("{"):
            message = _unexpected_character(text, token.start_pos or 0)
        elif expected == {"WHERE"}:
            message = (
                f"expected `where` here, not {token.value!r}: a query that starts with a unit name "
                'is a unit query (put the word in quotes, "like this", to search for it)'
            )
        elif "TILDE_STRING" in expected and not expected & {"WORD", "FWORD"} and _looks_like_text(token):
            message, fix = _bare_text(str(token.value))
        return query_error(
            INVALID_QUERY,
            message,
            ast.Span(token.start_pos, token.end_pos),
            token=str(token.value),
            expected=_human(expected),
            fix=fix,
        )
    offset = getattr(error, "pos_in_stream", None) or 0
    return query_error(INVALID_QUERY, "invalid query", ast.Span(offset, offset))


# Tokens that open a `where` predicate: written right after another one, AND was left out.
_PREDICATE_OPENERS = frozenset(
    {
        *("FIELD", "TILDE_STRING", "NEAR_TEXT", "NEAR_ID", "LINEAGE_ID", "CMP_FIELD"),
        *("EXISTS", "SEQ", "NOT", "MINUS", "LPAR"),
    }
)
_FIELD_WITH_EQUALS = re.compile(r"((?:session\.)?[A-Za-z_][A-Za-z0-9_]*)=([^=<>].*)")


def _side_by_side(token: Token) -> tuple[str, tuple[str, str] | None]:
    """A predicate (or bare text) right after another one after `where`: strict, AND or OR joins them
    (the fix: AND before a predicate; none for bare text, which may as well have meant a value)."""
    written = str(token.value)
    if token.type in _PREDICATE_OPENERS:
        return (
            f"{written!r} follows a predicate with neither AND nor OR: after `where`, predicates are "
            "joined by AND or OR (only the compact form, without `where`, joins side by side)",
            ("", "AND "),
        )
    return (
        f"bare text {written!r} after a predicate: after `where`, predicates are joined by AND or OR, "
        f'and text is ~"…" or text:…',
        None,
    )


def _bare_text(written: str) -> tuple[str, tuple[str, str] | None]:
    """Bare text where a `where` predicate belongs; `field=value` is taken for the field clause."""
    equals = _FIELD_WITH_EQUALS.fullmatch(written)
    if equals is not None:
        clause = f"{equals[1]}:{equals[2]}"
        return f"a field clause is written with `:`, not `=`: {clause}", (written, clause)
    quoted = written.strip(chr(34))
    return (
        f'bare text {written!r} is not a predicate after `where`: write ~"{quoted}" or text:{written}',
        (written, f'~"{quoted}"'),
    )


def _unexpected_character(text: str, offset: int) -> str:
    char = text[offset] if offset < len(text) else ""
    if char == '"' or text.startswith('~"', offset):
        return 'a quoted string is not closed: add the closing "'
    if char == "'":
        return "a 'phrase' is not closed: add the closing '"
    if char == "-":
        return "a lone '-': write -word (no space) to exclude a word"
    if char == "{":
        return "column filters ({…}:) are not part of the query language"
    return f"unexpected character {char!r}"


def _looks_like_text(token: Token) -> bool:
    return token.type in {"WORD", "FWORD", "VALUE", "NAME", "INT", "STRING"} or bool(
        re.fullmatch(r"[^\s()|]+", token.value)
    )


def _human(names: Any) -> list[str]:
    known = [name for name in set(names) if name in _HUMAN_NAMES]
    out: list[str] = []
    for name in sorted(known, key=_ORDER.__getitem__):
        if _HUMAN_NAMES[name] not in out:
            out.append(_HUMAN_NAMES[name])
    return out
