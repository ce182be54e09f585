"""Public refs: `session:<id>`, `message:<id>`, `block:<id>`, `action:<id>`."""

from __future__ import annotations

REF_KINDS = ("session", "message", "block", "action")


def make_ref(kind: str, object_id: str) -> str:
    if kind not in REF_KINDS:
        raise ValueError(f"unknown ref kind {kind!r}")
    return f"{kind}:{object_id}"


def message_id(session_id: str, seq: int) -> str:
    return f"{session_id}:m{seq}"


def block_id(message_id_: str, index: int) -> str:
    return f"{message_id_}:{index}"


def action_id(session_id: str, seq: int) -> str:
    return f"{session_id}:action:{seq}"
