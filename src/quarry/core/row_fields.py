"""The fields of each unit's rows, by name: what a projection (`with messages(id, role, text)`) may
list, what csv prints, and how each value is read from the row's proto.

A row field is a field of the unit's proto (units.proto, by its proto name), or one derived from it:
a message's `text` (its text and code blocks joined) and `types` (the kinds of block it holds). Every
row also has `ref` (its public ref) and `session_id`.

Polylogue, whose query language Quarry's extends, names some of these fields otherwise; its names are
accepted as aliases (ALIASES) and a projected row is keyed by the name the query wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict

from quarry.core.vocab import UNIT_SOURCES
from quarry.v1 import query_pb2, units_pb2

# unit -> the QueryUnitRow / UnitRow oneof field that carries its rows (`observed-event` -> observed_event)
ROW_KINDS: dict[str, str] = {unit: kind.replace("-", "_") for kind, unit in UNIT_SOURCES.items()}

# Prose a message's `text` joins (thinking, tool calls and their output are other fields' business).
TEXT_BLOCK_TYPES = ("text", "code")


def message_text(message: units_pb2.Message) -> str:
    """A message's text: its text and code blocks, joined by newlines."""
    return "\n".join(b.text for b in message.blocks if b.text and b.type in TEXT_BLOCK_TYPES)


def _message_types(message: units_pb2.Message) -> list[str]:
    return list(dict.fromkeys(b.type for b in message.blocks if b.type))


Getter = Callable[[Any], Any]

# Fields computed from the row rather than read from one proto field.
_DERIVED: dict[str, dict[str, Getter]] = {
    "messages": {"text": message_text, "types": _message_types},
}

# Polylogue's names for the same things, per unit.
ALIASES: dict[str, dict[str, str]] = {
    "messages": {"message_id": "id", "word_count": "words", "type": "types"},
    "actions": {
        "action_id": "id",
        "tool_name": "tool",
        "semantic_type": "category",
        "is_error": "failed",
        "input": "input_json",
        "followup_class": "followup",
    },
    "blocks": {"block_id": "id", "block_type": "type", "tool_input": "tool_input_json"},
    "files": {
        "file_id": "id",
        "action_count": "actions",
        "failed_count": "failed",
        "first_seen_ms": "first_time_ms",
        "last_seen_ms": "last_time_ms",
    },
    "assertions": {"assertion_id": "id", "target": "target_ref", "evidence": "evidence_refs"},
    "runs": {"run_id": "id", "run_role": "role", "subagent_type": "agent"},
    "observed-events": {"event_id": "id", "event_kind": "kind"},
    "context-snapshots": {"snapshot_id": "id"},
    "delegations": {"delegation_id": "id", "subagent_type": "agent", "child_session": "child_session_id"},
}

# Every row's own fields, beside its payload's.
ROW_ONLY = ("ref", "session_id")

# What a row shows when no field is named (csv: after `ref` and `session_id`; a projection: after
# `ref`). Long bodies go last.
SUMMARY_FIELDS: dict[str, tuple[str, ...]] = {
    "messages": ("seq", "role", "authored", "time_ms", "model", "surface", "words", "input_tokens",
                 "output_tokens", "text"),
    "actions": ("seq", "time_ms", "category", "tool", "failed", "path", "command", "message_id", "output"),
    "blocks": ("index", "type", "language", "tool_name", "path", "is_error", "text"),
    "files": ("path", "actions", "failed", "categories", "first_time_ms", "last_time_ms", "first_ref", "last_ref"),
    "assertions": ("kind", "status", "author", "target_ref", "created_ms", "updated_ms", "supersedes", "reason",
                   "evidence_refs", "body"),
    "runs": ("role", "status", "agent", "model", "started_ms", "ended_ms", "duration_ms", "tool_uses",
             "total_tokens", "child_session_id", "delegation_id"),
    "observed-events": ("seq", "kind", "time_ms", "delivery_state", "object_ref", "source_ref", "text"),
    "context-snapshots": ("seq", "boundary", "time_ms", "trigger", "tokens_before", "model", "cwd", "branch",
                          "message_ref", "preview"),
    "delegations": ("time_ms", "tool", "agent", "mapping_state", "child_session_id", "result_state", "tool_use_ref",
                    "description", "result_preview", "result_sha256", "child_excerpt_preview",
                    "child_excerpt_sha256"),
}  # fmt: skip
PROJECTED_BY_DEFAULT: dict[str, tuple[str, ...]] = {unit: ("ref", *names) for unit, names in SUMMARY_FIELDS.items()}


def _proto_fields(unit: str) -> tuple[str, ...]:
    payload = query_pb2.QueryUnitRow.DESCRIPTOR.fields_by_name[ROW_KINDS[unit]].message_type
    return tuple(f.name for f in payload.fields)


def fields_of(unit: str) -> tuple[str, ...]:
    """Every field a row of `unit` has, by its own name (aliases not included)."""
    return tuple(dict.fromkeys((*ROW_ONLY, *_proto_fields(unit), *_DERIVED.get(unit, {}))))


def canonical(unit: str, name: str) -> str | None:
    """The row field `name` names on `unit` (itself, or what its alias stands for); None when none."""
    name = ALIASES.get(unit, {}).get(name, name)
    return name if name in fields_of(unit) else None


def known_names(unit: str) -> tuple[str, ...]:
    """The names a projection of `unit` accepts: its fields and their aliases."""
    return (*fields_of(unit), *ALIASES.get(unit, {}))


def value(unit: str, row: query_pb2.QueryUnitRow, name: str) -> Any:
    """The value of the row field `name` (canonical) as plain data: a number, a string, a flag, a list
    or a mapping. Numbers stay ints (a Struct makes them doubles, exactly up to 2^53)."""
    if name == "ref":
        return row.ref
    if name == "session_id":
        return row.session_id
    payload = getattr(row, ROW_KINDS[unit])
    derived = _DERIVED.get(unit, {}).get(name)
    if derived is not None:
        return derived(payload)
    field = payload.DESCRIPTOR.fields_by_name[name]
    if field.has_presence and field.message_type is None and not payload.HasField(name):
        return None  # an optional number the source does not record (an action's exit_code)
    raw = getattr(payload, name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return dict(raw)
    if field.is_repeated:
        return [MessageToDict(v, preserving_proto_field_name=True) if field.message_type else v for v in raw]
    if field.message_type is not None:
        return MessageToDict(raw, preserving_proto_field_name=True)
    return raw
