"""Ids of the units inside a session (`<session_id>:m<seq>`, …), stable across re-ingest, and the
public refs that name them (`<kind>:<id>`, e.g. `block:claude-code-session:abc:m3:0`)."""

from __future__ import annotations


def message_id(session_id: str, seq: int) -> str:
    return f"{session_id}:m{seq}"


def block_id(message_id_: str, index: int) -> str:
    return f"{message_id_}:{index}"


def action_id(session_id: str, seq: int) -> str:
    return f"{session_id}:action:{seq}"


def file_id(session_id: str, path: str) -> str:
    return f"{session_id}:file:{path}"


def run_id(session_id: str, dispatch: int | None = None) -> str:
    """The main run (`dispatch` None) or the subagent run of the n-th dispatch (from 1)."""
    return f"{session_id}:run:{'main' if dispatch is None else dispatch}"


def event_id(session_id: str, seq: int) -> str:
    return f"{session_id}:event:{seq}"


def snapshot_id(session_id: str, seq: int) -> str:
    return f"{session_id}:snapshot:{seq}"


def delegation_id(session_id: str, dispatch: int) -> str:
    """The n-th subagent dispatch of a session (from 1)."""
    return f"{session_id}:delegation:{dispatch}"


def ref(kind: str, id_: str) -> str:
    """A public ref: `session:<id>`, `message:<id>`, `block:<id>`, `run:<id>`, …"""
    return f"{kind}:{id_}"
