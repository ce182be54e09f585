"""Where each of the nine unit sources lives in a partition's SQLite, and what its fields read.

Messages, blocks and actions have their own lowering in predicates.py (message-level full text,
tool and path joins). The derived units (files, runs, observed events, context snapshots,
delegations) keep only their filter columns beside a serialized proto; a field without a column
is read from the proto by the SQL function `quarry_field(unit, proto, name)`, and their `text:`
leaves are case-insensitive substring tests over `quarry_text(unit, proto)`, the unit's text
fields joined. Both functions decode only the rows the cheaper column conditions let through
(SQLite evaluates an AND left to right, and the column clauses come first in a compiled plan).

Assertions live in their own database file beside the store (assertions.py: user data that a
re-ingest never touches). A reader connection ATTACHes it as schema `asr`: queries join it with
the sessions table in one statement (owning-session scope, `exists assertion(...)`), and
`PRAGMA query_only` on the reader keeps it read-only. A partition without an assertions file has no
assertion rows: the unit is empty and `exists assertion(...)` is false.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.message import Message as ProtoMessage

from quarry.core import id_order
from quarry.core.vocab import DIALOGUE_BLOCK_TYPES, UNIT_SOURCES
from quarry.v1 import units_pb2

ASSERTIONS_FILE = "assertions.sqlite3"
ASSERTIONS_SCHEMA = "asr"

# Singular structural-unit names (`exists message(...)`) and plan unit names, to the plan name.
UNIT_NAMES = UNIT_SOURCES | {plural: plural for plural in UNIT_SOURCES.values()}


@dataclass(frozen=True)
class UnitTable:
    """One unit source: its table (alias `u` in every statement), row time and owning-session link."""

    unit: str
    table: str
    time: str  # the column `sort by time` and `date:` read
    session_ord: bool = True  # linked by session_ord; else (assertions) by session_id
    columns: dict[str, str] = field(default_factory=dict)  # keyword field -> NOCASE column
    proto: type[ProtoMessage] | None = None
    proto_keywords: tuple[str, ...] = ()  # string fields compared equal, case-insensitively
    proto_contains: tuple[str, ...] = ()  # string fields compared by substring, case-insensitively
    proto_numbers: tuple[str, ...] = ()  # integer fields, with every comparison
    proto_decimals: tuple[str, ...] = ()  # decimal fields (cost_usd), compared exactly
    proto_flags: tuple[str, ...] = ()  # bool fields, compared with true / false
    text_fields: tuple[str, ...] = ()  # what `text:` searches
    group_fields: dict[str, str] = field(default_factory=dict)  # `group by` field -> SQL key

    def session_link(self, session_alias: str = "s") -> str:
        """The condition tying a row `u` to its owning session."""
        if self.session_ord:
            return f"u.session_ord = {session_alias}.ord"
        return f"u.session_id = {session_alias}.id"


def _keys(**columns: str) -> dict[str, str]:
    """Group keys: lowercased, so every partition spells a key the same and the query node sums them."""
    return {name: f"lower({column})" for name, column in columns.items()}


def _proto_key(unit: str, name: str) -> str:
    """A group key read from the row's proto (quarry_field, registered by `prepare`)."""
    return f"quarry_field('{unit}', u.proto, '{name}')"


_BOOLEAN_KEY = "CASE WHEN {} THEN 'true' ELSE 'false' END"  # a flag's groups, spelled as its values are


TABLES: dict[str, UnitTable] = {
    t.unit: t
    for t in (
        UnitTable(
            "messages",
            "messages",
            "time_ms",
            proto=units_pb2.Message,
            group_fields=_keys(role="u.role", model=_proto_key("messages", "model")),
        ),
        UnitTable(
            "actions",
            "actions",
            "time_ms",
            group_fields={
                **_keys(tool="u.tool", action="u.category", followup_class="u.followup"),
                "is_error": _BOOLEAN_KEY.format("u.failed"),
                "exit_code": "COALESCE(CAST(u.exit_code AS TEXT), '')",  # "": not recorded
            },
        ),
        UnitTable(
            "blocks",
            "blocks",
            "time_ms",
            group_fields=_keys(type="u.type", tool="u.tool"),
        ),
        UnitTable(
            "files",
            "files",
            "first_time_ms",
            proto=units_pb2.FileTouch,
            proto_numbers=("actions", "failed"),
            text_fields=("path",),
            group_fields={"path": "u.path_norm"},
        ),
        UnitTable(
            "assertions",
            f"{ASSERTIONS_SCHEMA}.assertions",
            "created_ms",
            session_ord=False,
            columns={"kind": "kind", "status": "status", "author": "author", "target": "target_ref"},
            text_fields=("body",),
            group_fields=_keys(kind="u.kind", status="u.status", author="u.author"),
        ),
        UnitTable(
            "runs",
            "runs",
            "started_ms",
            columns={"role": "role", "status": "status", "agent": "agent", "child_session_id": "child_session_id"},
            proto=units_pb2.Run,
            proto_keywords=("model", "delegation_id", "provider", "branch"),
            proto_numbers=("duration_ms", "tool_uses", "total_tokens"),
            proto_decimals=("cost_usd",),
            text_fields=("role", "status", "agent", "model"),
            group_fields=_keys(
                role="u.role",
                status="u.status",
                agent="u.agent",
                model=_proto_key("runs", "model"),
                provider=_proto_key("runs", "provider"),
                branch=_proto_key("runs", "branch"),
            ),
        ),
        UnitTable(
            "observed-events",
            "observed_events",
            "time_ms",
            columns={"kind": "kind", "delivery_state": "delivery_state"},
            proto=units_pb2.ObservedEvent,
            proto_contains=("object_ref", "source_ref"),
            text_fields=("text", "object_ref"),
            group_fields=_keys(kind="u.kind", delivery_state="u.delivery_state"),
        ),
        UnitTable(
            "context-snapshots",
            "context_snapshots",
            "time_ms",
            columns={"boundary": "boundary"},
            proto=units_pb2.ContextSnapshot,
            proto_keywords=("trigger", "model", "branch", "inheritance"),
            proto_contains=("cwd", "message_ref"),
            proto_numbers=("tokens_before",),
            text_fields=("preview",),
            group_fields=_keys(
                boundary="u.boundary",
                trigger=_proto_key("context-snapshots", "trigger"),
                model=_proto_key("context-snapshots", "model"),
                inheritance=_proto_key("context-snapshots", "inheritance"),
            ),
        ),
        UnitTable(
            "delegations",
            "delegations",
            "time_ms",
            columns={
                "mapping_state": "mapping_state",
                "result_state": "result_state",
                "agent": "agent",
                "child_session_id": "child_session_id",
            },
            proto=units_pb2.Delegation,
            proto_keywords=("tool", "child_model"),
            proto_flags=("is_error",),
            proto_contains=("instruction", "description", "result_preview", "child_excerpt_preview"),
            text_fields=("description", "instruction", "result_preview", "child_excerpt_preview"),
            group_fields=_keys(
                mapping_state="u.mapping_state",
                result_state="u.result_state",
                agent="u.agent",
                tool=_proto_key("delegations", "tool"),
                child_model=_proto_key("delegations", "child_model"),
            )
            | {"is_error": _BOOLEAN_KEY.format(_proto_key("delegations", "is_error"))},
        ),
    )
}
_PROTOS = {t.unit: t.proto for t in TABLES.values() if t.proto is not None}
_TEXT_FIELDS = {t.unit: t.text_fields for t in TABLES.values()}


def table(unit: str) -> UnitTable | None:
    """The table of a unit, by plan name or singular structural name; None for an unknown unit."""
    name = UNIT_NAMES.get(unit)
    return TABLES[name] if name is not None else None


def _field(unit: str, blob: bytes, name: str) -> object:
    value = getattr(_PROTOS[unit].FromString(blob), name)
    return int(value) if isinstance(value, bool) else value


def _text(unit: str, blob: bytes) -> str:
    decoded = _PROTOS[unit].FromString(blob)
    return "\n".join(getattr(decoded, name) for name in _TEXT_FIELDS[unit])


@functools.lru_cache(maxsize=64)
def literal_pattern(text: str) -> re.Pattern[str]:
    """An event filter's text clause (docs/sessions.md#sessions-and-filters): the literal text,
    case-insensitive, any run of whitespace matching any other."""
    return re.compile(r"\s+".join(re.escape(word) for word in text.split()), re.IGNORECASE)


def _holds(blob: bytes, text: str) -> int:
    """Whether a message (its proto) holds `text` in its dialogue text (text, code and thinking blocks)."""
    message = units_pb2.Message.FromString(blob)
    dialogue = "\n".join(b.text for b in message.blocks if b.text and b.type in DIALOGUE_BLOCK_TYPES)
    return int(literal_pattern(text).search(dialogue) is not None)


def _has_bytes(blob: bytes, word: str) -> int:
    """Whether a stored row holds the (lower-case ASCII) word in its bytes, ASCII case folded: a cheap
    necessary condition before a row is decoded."""
    return int(word.encode() in blob.lower())


def message_seq(message_id: str) -> int:
    """A message's seq, the number its id ends in (`<session>:m<seq>`, quarry.core.refs)."""
    digits = message_id.rsplit(":m", 1)[-1]
    return int(digits) if digits.isdecimal() else 0


def prepare(conn: sqlite3.Connection, partition_dir: Path) -> bool:
    """Make a reader connection ready for unit queries (idempotent): the proto functions and the id
    order (quarry.core.id_order) registered and the assertions database attached when the file exists.
    Returns whether assertions are attached."""
    schemas = {row[1] for row in conn.execute("PRAGMA database_list")}
    if ASSERTIONS_SCHEMA in schemas:
        return True
    conn.create_function("quarry_field", 3, _field, deterministic=True)
    conn.create_function("quarry_text", 2, _text, deterministic=True)
    conn.create_function("quarry_holds", 2, _holds, deterministic=True)
    conn.create_function("quarry_has_bytes", 2, _has_bytes, deterministic=True)
    conn.create_function("quarry_seq", 1, message_seq, deterministic=True)
    conn.create_collation(id_order.COLLATION, id_order.compare)
    path = partition_dir / ASSERTIONS_FILE
    if not path.exists():
        return False
    conn.execute(f"ATTACH DATABASE ? AS {ASSERTIONS_SCHEMA}", (str(path),))
    return True
