"""The typed syntax tree of a query: what the user wrote, before any field is validated.

Nodes are frozen dataclasses that compare by structure; `span` (where the node sits in the query
text) is carried for error messages and ignored by equality, so `parse(render(q)) == q`.

The parser hands out trees in one canonical shape:
- `And` / `Or` never hold a node of their own kind (nested groups are flattened), and hold two or
  more items;
- in the compact form, all bare text of one AND-group (or OR-group) is merged into a single
  `FreeText` placed where the group's first text was, so `foo repo:x bar` is
  `And(FreeText(FtsAnd(foo, bar)), Field(repo))`; a subtree made of text only is one `FreeText`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class Span:
    """Character offsets [start, end) into the query text."""

    start: int
    end: int


# ---------------------------------------------------------------- full-text expressions


@dataclass(frozen=True, slots=True)
class Term:
    """One word, as written (the index analyzer may split it into several tokens)."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Phrase:
    """Quoted words that must appear together, in order."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Prefix:
    """`word*`: `text` is the raw text before the star."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FtsAnd:
    items: tuple[Fts, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FtsOr:
    items: tuple[Fts, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FtsNot:
    item: Fts
    span: Span | None = field(default=None, compare=False, repr=False)


Fts = Term | Phrase | Prefix | FtsAnd | FtsOr | FtsNot


# ---------------------------------------------------------------- predicate leaves


@dataclass(frozen=True, slots=True)
class Value:
    """One field value; `quoted` records `"…"`, which matters for `text:` (a phrase, not a term)."""

    text: str
    quoted: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Field:
    """`name:value`, `name:"value"`, `name:(a|b)`; `session.name:…` sets `session_scoped`."""

    name: str
    values: tuple[Value, ...]
    session_scoped: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FreeText:
    """Bare words and "phrases" of the compact form (with their AND/OR/NOT structure)."""

    expr: Fts
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FtsLeaf:
    """`~"…"`: an explicit full-text leaf whose content is itself full-text syntax."""

    expr: Fts
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Semantic:
    """`semantic:"…"` or `near:text:…`: rows semantically close to `text`."""

    text: str
    via: Literal["semantic", "near"] = "semantic"
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Comparison:
    """`field op value` or `field between a and b` (op "between", two values)."""

    field: str
    op: Literal[">=", "<=", ">", "<", "=", "between"]
    values: tuple[str, ...]
    session_scoped: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Exists:
    """`exists <unit>(predicate)`: the session has a child row of `unit` matching `predicate`."""

    unit: str
    predicate: Predicate
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Seq:
    """`seq(step -> step …)`: an ordered subsequence of action rows, one step per row."""

    steps: tuple[Predicate, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NearSession:
    """`near:id:<session id>`: sessions semantically near that session (a vector-lane leaf)."""

    session_id: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Lineage:
    """`lineage:id:<session id>`: that session's family (its lineage root and every session below)."""

    session_id: str
    span: Span | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------- boolean structure


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Predicate, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Predicate, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Not:
    item: Predicate
    span: Span | None = field(default=None, compare=False, repr=False)


Predicate = Field | FreeText | FtsLeaf | Semantic | Comparison | Exists | Seq | NearSession | Lineage | And | Or | Not


# ---------------------------------------------------------------- pipeline stages


@dataclass(frozen=True, slots=True)
class Sort:
    """`sort by time|seq|count|key [asc|desc]` (ascending unless `desc`)."""

    key: Literal["time", "seq", "count", "key"]
    descending: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GroupBy:
    field: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Count:
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """`agg count, avg:duration_ms, p90:total_tokens`: per group (or over every row), each function of
    its field; `count` counts the rows."""

    functions: tuple[tuple[str, str], ...]  # (function, field); ("count", "")
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Limit:
    n: int
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Offset:
    n: int
    span: Span | None = field(default=None, compare=False, repr=False)


Stage = Sort | GroupBy | Count | Aggregate | Limit | Offset


# ---------------------------------------------------------------- projections


@dataclass(frozen=True, slots=True)
class Projection:
    """One item of `with`: `messages(id, role, text)[role:user, last:10]`. Of each session hit, the
    unit's rows passing `filters` (AND-joined; `first:N` / `last:N` among them say which rows are kept),
    each holding `fields` (as written: aliases are resolved when the query is lowered; empty: the unit's
    default fields)."""

    unit: str
    fields: tuple[str, ...] = ()
    filters: tuple[Predicate, ...] = ()
    unit_span: Span | None = field(default=None, compare=False, repr=False)
    field_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)
    span: Span | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class CompactQuery:
    """Clauses without a `where`: selects sessions. `predicate` is None for the empty query."""

    predicate: Predicate | None
    span: Span | None = field(default=None, compare=False, repr=False)
    projections: tuple[Projection, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionsQuery:
    """`sessions where <predicate>`, with the `with` items that follow it."""

    predicate: Predicate
    span: Span | None = field(default=None, compare=False, repr=False)
    projections: tuple[Projection, ...] = ()


@dataclass(frozen=True, slots=True)
class UnitQuery:
    """`<unit> where <predicate> | stage…`, optionally after `sessions where <scope> |`."""

    unit: str
    predicate: Predicate
    stages: tuple[Stage, ...] = ()
    session_scope: Predicate | None = None
    unit_span: Span | None = field(default=None, compare=False, repr=False)
    span: Span | None = field(default=None, compare=False, repr=False)


Query = CompactQuery | SessionsQuery | UnitQuery
