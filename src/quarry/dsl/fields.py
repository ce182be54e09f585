"""The fields each unit accepts in a query: name, kind, whether it may be negated, allowed values.

This table is the contract between the compiler (which validates against it) and the partitions
(which evaluate the FieldClause values it lets through). How a partition matches a value is set by
the field's kind:

- KEYWORD: the row's value equals one of the clause's values. Closed vocabularies (`allowed`) are
  compared case-insensitively: the compiler rewrites each value to its canonical spelling.
  `tool` is also case-insensitive: the compiler lowercases it and partitions compare lowercased tool
  names (`tool:bash` matches Claude Code's `Bash`).
- CONTAINS: the row's value contains the clause's value, case-insensitively (title, command,
  output, instruction, object_ref).
- PATH: the row's path contains the clause's value (`path:polylogue/archive` matches
  `polylogue/archive/query/plan.py`), case-sensitively, as paths are.
- SESSION_ID: the session id equals the value, `<origin>:<native id>`.
- FTS: not a FieldClause at all: `text:v` becomes a full-text leaf over the unit's text (a term,
  a "phrase" when quoted, a prefix when it ends in `*`).
- NUMBER: an integer column compared with FieldClause.op (`messages:>=5`, `words between 1 and 9`);
  values are decimal strings.
- DATE: a time column compared with FieldClause.op; the compiler resolves every date to Unix epoch
  milliseconds, so the clause field is always `date` (`since` / `until` are spellings of >= / <=).

Several values (`field:(a|b)`) match when any one does (KEYWORD, CONTAINS, PATH, SESSION_ID, FTS).

Negation is allowed only where it is unambiguous over a session's many rows (`-tag:stale`,
`NOT tool:bash`: no row has it) and refused elsewhere with UNSUPPORTED_NEGATION. `text` may be
negated because it is full-text negation, the same as `-word`. A unit row holds one value of each
of its closed fields, so those negate safely on unit queries; counts, numbers and dates hold one
value per row (or session) and negate safely everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from quarry.core.vocab import (
    ACTION_CATEGORIES,
    ASSERTION_AUTHORS,
    ASSERTION_KINDS,
    ASSERTION_STATUSES,
    BLOCK_TYPES,
    DELIVERY_STATES,
    EVENT_KINDS,
    FOLLOWUP_CLASSES,
    MAPPING_STATES,
    ORIGINS,
    RESULT_STATES,
    ROLES,
    RUN_ROLES,
    RUN_STATUSES,
    SNAPSHOT_BOUNDARIES,
    SNAPSHOT_INHERITANCE,
    UNIT_SOURCES,
    well_formed_origin,
)

SNAPSHOT_TRIGGERS = ("auto", "manual")


class FieldKind(StrEnum):
    KEYWORD = "keyword"
    CONTAINS = "contains"
    PATH = "path"
    SESSION_ID = "session_id"
    FTS = "fts"
    NUMBER = "number"
    DATE = "date"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: FieldKind
    negatable: bool
    doc: str
    allowed: tuple[str, ...] = ()  # a closed vocabulary; empty = any non-empty value
    # For session fields: usable as `session.<name>` inside a unit query.
    session_scopable: bool = True
    # Another name for a field of the unit (the peer tool's): the plan carries that field's name.
    alias_of: str = ""
    decimal: bool = False  # a number compared exactly, decimals allowed (`cost_usd > 0.25`)

    @property
    def compared(self) -> bool:
        """Whether the field takes comparisons (`>=5`, `between`) rather than matching values."""
        return self.kind in (FieldKind.NUMBER, FieldKind.DATE)


_TEXT_DOC = 'full-text over the unit\'s text: `text:word`, `text:"a phrase"`, `text:pref*`'

# SessionCounts, in units.proto order.
COUNT_FIELDS = (
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
)
_COUNT_DOCS = {
    "user_messages": "messages with the provider role user (may include runtime protocol/context rows)",
    "user_words": "words in messages with the provider role user (may include runtime rows)",
    "authored_user_messages": "human-authored user messages",
    "authored_user_words": "words in human-authored user messages",
    "tool_use_messages": "messages carrying a tool use (not raw block rows)",
    "thinking_messages": "messages carrying thinking (not raw block rows)",
    "paste_messages": "messages carrying a paste (not raw block rows)",
}


def _number(name: str, doc: str) -> FieldSpec:
    return FieldSpec(name, FieldKind.NUMBER, True, doc)


def _cost() -> FieldSpec:
    doc = "what it cost in US dollars, as the source recorded it (0: not recorded): `cost_usd > 0.25`"
    return FieldSpec("cost_usd", FieldKind.NUMBER, True, doc, decimal=True)


def _dates(what: str) -> tuple[FieldSpec, ...]:
    return (
        FieldSpec("date", FieldKind.DATE, True, f"{what}: `date:>=2026-01-02`, `date between A and B`"),
        FieldSpec("since", FieldKind.DATE, True, f"{what} is at or after the value: `since:7d`, `since:2026-01-02`"),
        FieldSpec("until", FieldKind.DATE, True, f"{what} is at or before the value (a day: its end)"),
    )


def _table(*specs: FieldSpec) -> dict[str, FieldSpec]:
    return {spec.name: spec for spec in specs}


# `has:FEATURE` (a session's features; `session.has:` in a unit query): each is what the session holds,
# lowered by the compiler onto the counts and units that record it.
FEATURES: dict[str, str] = {
    "tools": "a message carrying a tool use",
    "thinking": "a message carrying thinking",
    "paste": "a message carrying a paste",
    "images": "an image block",
    "errors": "a tool call that failed",
    "subagents": "a subagent run",
    "compaction": "a context compaction",
}

SESSION_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("repo", FieldKind.KEYWORD, True, "the repository the session worked in"),
    FieldSpec("project", FieldKind.KEYWORD, True, "the project the session worked in: its repository (as `repo:`)"),
    FieldSpec(
        "root",
        FieldKind.SESSION_ID,
        False,
        "the family's root session: that session and every session below it (its subagents', `<root id>/…`)",
    ),
    FieldSpec("origin", FieldKind.KEYWORD, True, "the agent that wrote the session log", ORIGINS),
    FieldSpec(
        "scope",
        FieldKind.KEYWORD,
        True,
        "the scope (team, project) the session was ingested into; only scopes the caller may read match",
    ),
    FieldSpec(
        "host",
        FieldKind.KEYWORD,
        True,
        "the machine the session's log was read on: the laptop that pushed it (`quarry push`), or the ingest "
        "node's for a file it read itself",
    ),
    FieldSpec("pusher", FieldKind.KEYWORD, True, "the name of the token that wrote the session (empty without tokens)"),
    FieldSpec("title", FieldKind.CONTAINS, False, "the session title contains the value"),
    FieldSpec(
        "contains",
        FieldKind.CONTAINS,
        True,
        "a message's dialogue text (its text, code and thinking) holds the value literally, a substring of "
        'a word included: case-insensitive, any run of whitespace matching any other (`contains:"retry the '
        'write"`): docs/query-language.md#literal-text-contains',
    ),
    FieldSpec("cwd", FieldKind.CONTAINS, False, "the session's working directory contains the value"),
    FieldSpec("tag", FieldKind.KEYWORD, True, "the session carries the tag"),
    FieldSpec("tool", FieldKind.KEYWORD, True, "the session has an action using this tool"),
    FieldSpec("action", FieldKind.KEYWORD, True, "the session has an action of this category", ACTION_CATEGORIES),
    FieldSpec("path", FieldKind.PATH, False, "the session has an action on a path containing the value"),
    FieldSpec(
        "has",
        FieldKind.KEYWORD,
        True,
        "the session holds the feature: " + ", ".join(f"{name} ({what})" for name, what in FEATURES.items()),
        tuple(FEATURES),
    ),
    FieldSpec(
        "role",
        FieldKind.KEYWORD,
        True,
        "the session has a message with this role. The text leaves of the same AND-group must "
        'match inside a message of that role (`role:user AND ~"retry"`: a user message '
        "mentions retry); the partition applies it at message level",
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
    *(_number(name, _COUNT_DOCS.get(name, f"the session's {name.replace('_', ' ')} count")) for name in COUNT_FIELDS),
    _number("duration_ms", "the session duration the archive reports, in milliseconds"),
    *_dates("the session's time (its last activity)"),
)

MESSAGE_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("role", FieldKind.KEYWORD, True, "the message role", ROLES),
    FieldSpec("type", FieldKind.KEYWORD, True, "the message holds a block of this type", BLOCK_TYPES),
    FieldSpec("text", FieldKind.FTS, True, _TEXT_DOC),
    FieldSpec("tool", FieldKind.KEYWORD, True, "the message calls this tool"),
    FieldSpec("path", FieldKind.PATH, False, "the message has an action on a path containing the value"),
    FieldSpec("model", FieldKind.KEYWORD, True, "the model that wrote the message (assistant replies), as recorded"),
    _number("duration_ms", "the stored per-message duration, in milliseconds"),
    _number("input_tokens", "the message's input tokens"),
    _number("output_tokens", "the message's output tokens"),
    _number("cache_read_tokens", "the message's cache-read tokens"),
    _number("cache_write_tokens", "the message's cache-write tokens"),
    _number("words", "the words of the message's text"),
    _number("word_count", "the words of the message's text (the peer's name for `words`)"),
    _cost(),
    *_dates("the message time"),
)

ACTION_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("tool", FieldKind.KEYWORD, True, "the tool the action called"),
    FieldSpec("is_error", FieldKind.KEYWORD, True, "whether the tool call failed", ("true", "false")),
    _number("exit_code", "the command's exit status, where the source records it (Codex, Claude Code, Gemini CLI)"),
    FieldSpec(
        "followup_class",
        FieldKind.KEYWORD,
        True,
        "a failed action: what the agent's next turn did about it, a label read off its text "
        "(quarry.ingest.followup): acknowledged, silent_proceed, wordless_continuation or ambiguous",
        FOLLOWUP_CLASSES,
    ),
    FieldSpec("action", FieldKind.KEYWORD, True, "the action category", ACTION_CATEGORIES),
    FieldSpec("path", FieldKind.PATH, False, "the action's path contains the value"),
    FieldSpec("command", FieldKind.CONTAINS, False, "the shell command contains the value"),
    FieldSpec("output", FieldKind.CONTAINS, False, "the tool output contains the value"),
    FieldSpec("text", FieldKind.FTS, True, "full-text over the action's input, command and output"),
    *_dates("the action time"),
)

BLOCK_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("type", FieldKind.KEYWORD, True, "the block type", BLOCK_TYPES),
    FieldSpec("text", FieldKind.FTS, True, _TEXT_DOC),
    FieldSpec("tool", FieldKind.KEYWORD, True, "the tool a tool_use / tool_result block belongs to"),
    FieldSpec("path", FieldKind.PATH, False, "the block's tool path contains the value"),
    *_dates("the time of the block's message"),
)

FILE_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("path", FieldKind.PATH, False, "the normalized path contains the value"),
    FieldSpec(
        "action",
        FieldKind.KEYWORD,
        True,
        "the path has an action of this category (FileTouch.categories)",
        ACTION_CATEGORIES,
    ),
)

ASSERTION_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("kind", FieldKind.KEYWORD, True, "the assertion kind", ASSERTION_KINDS),
    FieldSpec("status", FieldKind.KEYWORD, True, "the assertion status", ASSERTION_STATUSES),
    FieldSpec("target", FieldKind.KEYWORD, False, "the public ref of the target, e.g. session:<id>"),
    FieldSpec("author", FieldKind.KEYWORD, True, "who wrote the assertion", ASSERTION_AUTHORS),
    FieldSpec("text", FieldKind.FTS, True, "full-text over the assertion body"),
    *_dates("the assertion's creation time"),
)

# The peer tool's names for fields of a unit (Polylogue's, whose query language Quarry's extends): unit ->
# peer name -> the field it names. Each is a field of the unit under that name (`alias_of`: the plan carries
# the field's own name) and groups where its field does. This is the one place they are declared; the peer
# names of row fields (what a projection lists) are quarry.core.row_fields.ALIASES.
PEER_NAMES: dict[str, dict[str, str]] = {
    "runs": {"provider_origin": "provider", "git_branch": "branch"},
    "observed-events": {"handler": "object_ref", "status": "delivery_state"},
    "context-snapshots": {"inheritance_mode": "inheritance"},
    "delegations": {"result_status": "result_state"},
}
_PEER_DOCS = {
    "handler": "what handled the event (a tool, a command, a child session's ref) contains the value",
    "status": "the event's outcome",
}


def _with_peers(unit: str, table: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
    """The unit's table, then each peer name of one of its fields: that field's spec under the peer name."""
    peers = {}
    for name, field in PEER_NAMES[unit].items():
        doc = f"{_PEER_DOCS.get(name, table[field].doc)} (as {field})"
        peers[name] = replace(table[field], name=name, doc=doc, alias_of=field)
    return {**table, **peers}


def _with_peer_groups(groups: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Each unit's group fields with every peer name of one of them right after it."""
    peers_of: dict[str, dict[str, list[str]]] = {}
    for unit, names in PEER_NAMES.items():
        for name, field in names.items():
            peers_of.setdefault(unit, {}).setdefault(field, []).append(name)
    return {
        unit: tuple(n for field in fields for n in (field, *peers_of.get(unit, {}).get(field, ())))
        for unit, fields in groups.items()
    }


RUN_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("role", FieldKind.KEYWORD, True, "main or subagent run", RUN_ROLES),
    FieldSpec("status", FieldKind.KEYWORD, True, "the run status", RUN_STATUSES),
    FieldSpec("agent", FieldKind.KEYWORD, True, "the subagent type (Explore, general-purpose, …)"),
    FieldSpec("model", FieldKind.KEYWORD, True, "the model the run used"),
    FieldSpec("provider", FieldKind.KEYWORD, True, "who serves the run's model (anthropic, openai, google, …)"),
    FieldSpec("branch", FieldKind.KEYWORD, True, "the git branch the session worked on"),
    _number("duration_ms", "the run duration, in milliseconds"),
    _number("tool_uses", "the tool calls the run made"),
    _number("total_tokens", "the tokens the run used"),
    _cost(),
    *_dates("the run's start time"),
)

EVENT_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("kind", FieldKind.KEYWORD, True, "the event kind", EVENT_KINDS),
    FieldSpec("delivery_state", FieldKind.KEYWORD, True, "recorded, acted_on or failed", DELIVERY_STATES),
    FieldSpec("object_ref", FieldKind.CONTAINS, False, "what the event is about contains the value"),
    FieldSpec("text", FieldKind.FTS, True, "full-text over the event description"),
    *_dates("the event time"),
)

SNAPSHOT_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("boundary", FieldKind.KEYWORD, True, "where the context starts", SNAPSHOT_BOUNDARIES),
    FieldSpec("trigger", FieldKind.KEYWORD, True, "what triggered a compaction", SNAPSHOT_TRIGGERS),
    FieldSpec("model", FieldKind.KEYWORD, True, "the model at the boundary"),
    FieldSpec("branch", FieldKind.KEYWORD, True, "the git branch at the boundary"),
    FieldSpec(
        "inheritance",
        FieldKind.KEYWORD,
        True,
        "how the context at the boundary was formed: fresh (a new session), prompt (a subagent's instruction "
        "only), inherited (a conversation's branch: all before the fork), summary (a compaction)",
        SNAPSHOT_INHERITANCE,
    ),
    FieldSpec("cwd", FieldKind.CONTAINS, False, "the working directory at the boundary contains the value"),
    _number("tokens_before", "the context's tokens before a compaction"),
    FieldSpec("text", FieldKind.FTS, True, "full-text over the context preview"),
    *_dates("the snapshot time"),
)

DELEGATION_FIELDS: dict[str, FieldSpec] = _table(
    FieldSpec("mapping_state", FieldKind.KEYWORD, True, "whether the child session is known", MAPPING_STATES),
    FieldSpec("result_state", FieldKind.KEYWORD, True, "the recorded result", RESULT_STATES),
    FieldSpec("agent", FieldKind.KEYWORD, True, "the subagent type"),
    FieldSpec("tool", FieldKind.KEYWORD, True, "the dispatching tool (task, agent, …)"),
    FieldSpec("child_model", FieldKind.KEYWORD, True, "the model the subagent ran, when recorded"),
    FieldSpec("is_error", FieldKind.KEYWORD, True, "whether the dispatch's result is an error", ("true", "false")),
    FieldSpec("instruction", FieldKind.CONTAINS, False, "the recorded instruction contains the value"),
    *_dates("the dispatch time"),
)

FIELDS_BY_UNIT: dict[str, dict[str, FieldSpec]] = {
    "sessions": SESSION_FIELDS,
    "messages": MESSAGE_FIELDS,
    "actions": ACTION_FIELDS,
    "blocks": BLOCK_FIELDS,
    "files": FILE_FIELDS,
    "assertions": ASSERTION_FIELDS,
    "runs": _with_peers("runs", RUN_FIELDS),
    "observed-events": _with_peers("observed-events", EVENT_FIELDS),
    "context-snapshots": _with_peers("context-snapshots", SNAPSHOT_FIELDS),
    "delegations": _with_peers("delegations", DELEGATION_FIELDS),
}

# `exists <unit>(…)` names the unit in the singular.
EXISTS_UNITS: dict[str, str] = UNIT_SOURCES

# `group by FIELD | count`: the fields each unit aggregates over (docs/query-language.md#counting-and-grouping).
# `day` is the UTC day of the row's time (YYYY-MM-DD), on every unit with a date.
_SESSION_GROUPS = ("session.origin", "session.repo", "session.host", "session.pusher")
_DATED_GROUPS = ("day", *_SESSION_GROUPS)
GROUP_FIELDS: dict[str, tuple[str, ...]] = _with_peer_groups(
    {
        "messages": ("role", "type", "model", *_DATED_GROUPS),
        "actions": ("tool", "action", "is_error", "exit_code", "followup_class", *_DATED_GROUPS),
        "blocks": ("type", "tool", *_DATED_GROUPS),
        "files": ("path", *_SESSION_GROUPS),
        "assertions": ("kind", "status", "author", *_DATED_GROUPS),
        "runs": ("role", "status", "agent", "model", "provider", "branch", *_DATED_GROUPS),
        "observed-events": ("kind", "delivery_state", *_DATED_GROUPS),
        "context-snapshots": ("boundary", "trigger", "model", "inheritance", *_DATED_GROUPS),
        "delegations": ("mapping_state", "result_state", "agent", "tool", "child_model", "is_error", *_DATED_GROUPS),
    }
)

# `session.<name>` inside a unit query names a session field; the session id is `session.id`.
SESSION_SCOPE_NAMES: dict[str, str] = {
    ("id" if name == "session" else name): name for name, spec in SESSION_FIELDS.items() if spec.session_scopable
}


def planned_name(unit: str, name: str) -> str:
    """The name the plan gives a field of the unit: its own, or the field it is another name for."""
    spec = FIELDS_BY_UNIT.get(unit, {}).get(name)
    return spec.alias_of if spec is not None and spec.alias_of else name


def unit_fields(unit: str) -> dict[str, FieldSpec]:
    """The field table of `unit` (sessions or one of the nine unit sources)."""
    return FIELDS_BY_UNIT[unit]


def canonical_value(spec: FieldSpec, value: str) -> str | None:
    """The canonical spelling of `value` for `spec`, or None when it is outside the vocabulary."""
    if spec.name == "origin":
        return canonical_origin(value)
    if spec.allowed:
        folded = value.lower()
        return folded if folded in spec.allowed else None
    if spec.name == "tool":
        return value.lower()
    return value


def canonical_origin(value: str) -> str | None:
    """An origin value folded to lower case, or None when it is not spelled as an origin is (one Quarry
    does not read is still valid: it matches nothing)."""
    folded = value.lower()
    return folded if well_formed_origin(folded) else None


AGGREGATE_FUNCTIONS = ("sum", "avg", "min", "max", "p50", "p90", "p99")  # and `count` (the rows), `sessions`


def aggregable_fields(unit: str) -> tuple[str, ...]:
    """The fields an `agg` function takes on the unit: its numbers, and its flags (as 0 / 1)."""
    fields = FIELDS_BY_UNIT.get(unit, {})
    numbers = [name for name, spec in fields.items() if spec.kind is FieldKind.NUMBER]
    flags = [name for name, spec in fields.items() if spec.allowed == ("true", "false")]
    return tuple(sorted(numbers + flags))
