"""How a search's text is read: as prose (the words of a question or a description) or as the query
language. Most people type prose; the language is for those who write fields, operators and phrases.

The text is read as the query language when it holds any of these, and as prose otherwise:

- a quote `"` (a phrase, or `~"…"`), or a pipe `|` (a pipeline);
- an operator: `AND`, `OR` or `NOT` as a word of its own, in capitals, beside a word that is not (an
  error shouted in capitals, `404 NOT FOUND`, is prose); a word negated by one `-` (`-flaky`; `--force`
  is a flag, prose);
- a field written as one: `name:value` with nothing between the colon and the value, where the name is
  a field of a sessions search (`repo:`, `origin:`, `since:`, `session.repo:`, `near:`, `lane:`, …) or a
  slip of one (two letters swapped, one letter more or fewer in a name of five letters or more, a
  plural: `reop:`, `orign:`, `tags:`), which then fails with the correction. A colon followed by a
  space is prose (`the server would not start: RangeError`), and so is a name that is no field
  (`TypeError:`, `http://…`, `test:unit`);
- a comparison of a count field (`messages > 20`, `words between 10 and 50`);
- a form of the language: `sessions where …`, `<unit> where …`, `exists <unit>(…)`, `seq(…)`,
  `with <unit>(…)`, a word ending in `*` (a prefix).

Prose is searched as its words (quarry.dsl.plain: every other character a space), ranked by how many of
them a session holds rather than needing all of them (the query node's prose admission), on the hybrid
lane where vectors exist. The rule never reads syntax as prose: every query that uses the language
means what it meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from quarry.core.vocab import UNIT_SOURCES
from quarry.dsl.fields import SESSION_FIELDS
from quarry.dsl.plain import plain_text_query

PROSE, QUERY_LANGUAGE = "prose", "query"
READINGS = (PROSE, QUERY_LANGUAGE)
_PREFIXED = ("near", "lineage", "lane")  # leaves and directives written `name:` beside the fields
_COUNT_FIELDS = (
    "messages|words|user_messages|authored_user_messages|assistant_messages|system_messages|tool_messages|"
    "user_words|authored_user_words|assistant_words|tool_use_messages|thinking_messages|paste_messages|"
    "duration_ms|input_tokens|output_tokens|cache_read_tokens|cache_write_tokens|tool_uses|total_tokens|"
    "tokens_before|word_count|exit_code|cost_usd|date"
)
_UNITS = "|".join(sorted({"sessions", *UNIT_SOURCES.values()}, key=len, reverse=True))
_OPERATORS = frozenset(("AND", "OR", "NOT"))
_SYNTAX = re.compile(
    r'["|]'  # a phrase or `~"…"`; a pipeline
    r"|(?<![^\s(])-(?=[^\s-])"  # `-word`
    rf"|(?<![\w.])(?:session\.)?(?:{_COUNT_FIELDS})(?:\s*(?:>=|<=|!=|>|<|=)|\s+between\s)"  # a comparison
    rf"|^\s*(?:{_UNITS})\s+where(?!\S)"  # `sessions where …`, `<unit> where …`
    r"|(?<!\S)(?:exists\s+[a-z][a-z0-9_-]*\s*\(|seq\s*\()"
    rf"|(?<!\S)with\s+(?:{_UNITS})\s*[(\[]"
    r"|\w\*(?!\S)"  # a prefix
)
_FIELD = re.compile(r"(?<![^\s(])(?P<name>(?:session\.)?[A-Za-z_][A-Za-z0-9_]*):(?=[^\s:])")


@dataclass(frozen=True)
class Reading:
    """How a search's text was read, the query that reading compiles, and for prose the text as written,
    which the semantic lane embeds: the embedder reads a sentence with its punctuation, contractions and
    file names better than the bare words the lexical lanes match (bench/RESULTS.md, "Session search")."""

    how: str  # PROSE | QUERY_LANGUAGE
    query: str
    written: str = ""  # prose: the text, its runs of white space made one space; the language: ""


def read(text: str, forced: str = "") -> Reading:
    """The reading of `text` (`forced`: PROSE or QUERY_LANGUAGE, whatever the text; "": the rule above)."""
    how = forced or (QUERY_LANGUAGE if uses_the_language(text) else PROSE)
    if how == PROSE:
        return Reading(how, plain_text_query(text), " ".join(text.split()))
    return Reading(how, text)


def uses_the_language(text: str) -> bool:
    """Whether `text` holds any form of the query language (the module's rule); empty text (every
    session, newest first) is the language's."""
    if not text.strip() or _SYNTAX.search(text):
        return True
    words = text.split()
    for i, word in enumerate(words):
        beside = words[max(0, i - 1) : i] + words[i + 1 : i + 2]
        if word in _OPERATORS and any(w.upper() != w for w in beside):
            return True
    return any(_is_field(match["name"]) for match in _FIELD.finditer(text))


def _is_field(written: str) -> bool:
    name = written.removeprefix("session.").lower()
    return written.startswith("session.") or name in _field_names() or slip_of(name) is not None


@cache
def _field_names() -> frozenset[str]:
    return frozenset((*SESSION_FIELDS, *_PREFIXED))


def slip_of(name: str) -> str | None:
    """The field `name` is a slip of (two adjacent letters swapped, one letter more or fewer in a name of
    five letters or more, a plural), None when it is none: slips that make another common word
    (`test` for `text`, `line` for `lane`) are not counted, since they are substitutions."""
    name = name.lower()
    for field in sorted(_field_names()):
        if name == field:
            return None
        if name in (f"{field}s", f"{field}es") or _swapped(name, field) or _one_more_or_fewer(name, field):
            return field
    return None


def _swapped(a: str, b: str) -> bool:
    if len(a) != len(b) or a == b:
        return False
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(differ) != 2 or differ[1] != differ[0] + 1:
        return False
    first, second = differ
    return a[first] == b[second] and a[second] == b[first]


def _one_more_or_fewer(name: str, field: str) -> bool:
    if len(field) < 5 or abs(len(name) - len(field)) != 1:
        return False
    shorter, longer = sorted((name, field), key=len)
    return any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))


_CLAUSE = re.compile(r'(?<![^\s(])-?(?:session\.)?[A-Za-z_][A-Za-z0-9_]*:(?:\([^)]*\)|"(?:[^"\\]|\\.)*"|\S+)')


def without_field_clauses(text: str) -> tuple[str, tuple[str, ...]]:
    """The query's text without its `field:value` clauses, and those clauses as written: what an empty
    answer tries next, to tell whether a filter left out every session holding the words."""
    clauses = tuple(match[0] for match in _CLAUSE.finditer(text) if _is_field(match[0].lstrip("-").split(":", 1)[0]))
    rest = text
    for clause in clauses:
        rest = rest.replace(clause, " ", 1)
    return " ".join(rest.split()), clauses
