"""The fields each unit accepts in a query: name, kind, whether it may be negated, allowed values.

This table is the contract between the compiler (which validates against it) and the shards
(which evaluate the FieldClause values it lets through). How a shard matches a value is set by
the field's kind:

- KEYWORD: the row's value equals one of the clause's values. Closed vocabularies (`allowed`) are
  compared case-insensitively: the compiler rewrites each value to its canonical spelling.
  `tool` is also case-insensitive: the compiler lowercases it and shards compare lowercased tool
  names (`tool:bash` matches Claude Code's `Bash`).
- CONTAINS: the row's value contains the clause's value, case-insensitively (title, command,
  output).
- PATH: the row's path contains the clause's value (`path:polylogue/archive` matches
  `polylogue/archive/query/plan.py`), case-sensitively, as paths are.
- SESSION_ID: the session id equals the value, `<origin>:<native id>`.
- FTS: not a FieldClause at all: `text:v` becomes a full-text leaf over the unit's text (a term,
  a "phrase" when quoted, a prefix when it ends in `*`).

Several values (`field:(a|b)`) match when any one does.

Negation is allowed only where it is unambiguous over a session's many rows (`-tag:stale`,
`NOT tool:bash`: no row has it) and refused elsewhere with UNSUPPORTED_NEGATION. `text` may be
negated because it is full-text negation, the same as `-word`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from quarry.core.vocab import ACTION_CATEGORIES, BLOCK_TYPES, ORIGINS, ROLES


class FieldKind(StrEnum):
    KEYWORD = "keyword"
    CONTAINS = "contains"
    PATH = "path"
    SESSION_ID = "session_id"
    FTS = "fts"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: FieldKind
    negatable: bool
    doc: str
    allowed: tuple[str, ...] = ()  # a closed vocabulary; empty = any non-empty value
    # For session fields: usable as `session.<name>` inside a unit query.
    session_scopable: bool = True


_TEXT_DOC = 'full-text over the unit\'s text: `text:word`, `text:"a phrase"`, `text:pref*`'

SESSION_FIELDS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("repo", FieldKind.KEYWORD, True, "the repository the session worked in"),
        FieldSpec("origin", FieldKind.KEYWORD, True, "the agent that wrote the session log", ORIGINS),
        FieldSpec("title", FieldKind.CONTAINS, False, "the session title contains the value"),
        FieldSpec("tag", FieldKind.KEYWORD, True, "the session carries the tag"),
        FieldSpec("tool", FieldKind.KEYWORD, True, "the session has an action using this tool"),
        FieldSpec(
            "action",
            FieldKind.KEYWORD,
            True,
            "the session has an action of this category",
            ACTION_CATEGORIES,
        ),
        FieldSpec("path", FieldKind.PATH, False, "the session has an action on a path containing the value"),
        FieldSpec(
            "role",
            FieldKind.KEYWORD,
            True,
            "the session has a message with this role. The text leaves of the same AND-group must "
            'match inside a message of that role (`role:user AND ~"retry"`: a user message '
            "mentions retry); the shard applies it at message level",
            ROLES,
            session_scopable=False,
        ),
        FieldSpec("text", FieldKind.FTS, True, _TEXT_DOC, session_scopable=False),
        FieldSpec(
            "session",
            FieldKind.SESSION_ID,
            False,
            "the session id, `<origin>:<native id>` (`session.id:` inside a unit query)",
        ),
    )
}

MESSAGE_FIELDS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("role", FieldKind.KEYWORD, True, "the message role", ROLES),
        FieldSpec("text", FieldKind.FTS, True, _TEXT_DOC),
        FieldSpec("tool", FieldKind.KEYWORD, True, "the message calls this tool"),
        FieldSpec("path", FieldKind.PATH, False, "the message has an action on a path containing the value"),
    )
}

ACTION_FIELDS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("tool", FieldKind.KEYWORD, True, "the tool the action called"),
        FieldSpec("action", FieldKind.KEYWORD, True, "the action category", ACTION_CATEGORIES),
        FieldSpec("path", FieldKind.PATH, False, "the action's path contains the value"),
        FieldSpec("command", FieldKind.CONTAINS, False, "the shell command contains the value"),
        FieldSpec("output", FieldKind.CONTAINS, False, "the tool output contains the value"),
        FieldSpec("text", FieldKind.FTS, True, "full-text over the action's input, command and output"),
    )
}

BLOCK_FIELDS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("type", FieldKind.KEYWORD, True, "the block type", BLOCK_TYPES),
        FieldSpec("text", FieldKind.FTS, True, _TEXT_DOC),
        FieldSpec("tool", FieldKind.KEYWORD, True, "the tool a tool_use / tool_result block belongs to"),
        FieldSpec("path", FieldKind.PATH, False, "the block's tool path contains the value"),
    )
}

FIELDS_BY_UNIT: dict[str, dict[str, FieldSpec]] = {
    "sessions": SESSION_FIELDS,
    "messages": MESSAGE_FIELDS,
    "actions": ACTION_FIELDS,
    "blocks": BLOCK_FIELDS,
}

# `session.<name>` inside a unit query names a session field; the session id is `session.id`.
SESSION_SCOPE_NAMES: dict[str, str] = {
    ("id" if name == "session" else name): name for name, spec in SESSION_FIELDS.items() if spec.session_scopable
}

# Fields of seed 000 that the language will accept but does not yet: using one is
# UNSUPPORTED_FORM (a typed "not yet"), not UNKNOWN_FIELD (a typo).
PLANNED_FIELDS: dict[str, str] = {
    **dict.fromkeys(
        (
            "messages",
            "words",
            "user_messages",
            "authored_user_messages",
            "assistant_messages",
            "system_messages",
            "tool_messages",
            "user_words",
            "authored_user_words",
            "assistant_words",
            "tool_use_messages",
            "thinking_messages",
            "paste_messages",
            "duration_ms",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ),
        "count and numeric comparisons",
    ),
    **dict.fromkeys(("date", "since", "until"), "date filters"),
    "near": "near:id: (sessions similar to a session)",
    "lineage": "lineage:id: (session lineage)",
    "has": "has: feature filters",
}


def unit_fields(unit: str) -> dict[str, FieldSpec]:
    """The field table of `unit` (sessions, messages, actions, blocks)."""
    return FIELDS_BY_UNIT[unit]


def canonical_value(spec: FieldSpec, value: str) -> str | None:
    """The canonical spelling of `value` for `spec`, or None when it is outside the vocabulary."""
    if spec.allowed:
        folded = value.lower()
        return folded if folded in spec.allowed else None
    if spec.name == "tool":
        return value.lower()
    return value
