"""Ids of the units inside a session (`<session_id>:m<seq>`, …), stable across re-ingest."""

from __future__ import annotations


def message_id(session_id: str, seq: int) -> str:
    return f"{session_id}:m{seq}"


def block_id(message_id_: str, index: int) -> str:
    return f"{message_id_}:{index}"


def action_id(session_id: str, seq: int) -> str:
    return f"{session_id}:action:{seq}"
