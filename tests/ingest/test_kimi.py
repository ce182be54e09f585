"""Kimi CLI sessions (`~/.kimi/sessions/<hash>/<id>/context.jsonl`, subagents in `context_sub_<n>.jsonl`) on real
logs: counts are checked against the lines counted here, straight from the JSON."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from quarry.ingest.parse import parse_file
from tests.ingest.support import roles
from tests.shared_paths import REAL_LOGS, needs_shared

LOGS = REAL_LOGS / "kimi"
PREFIX = "youngstunners88__ihhashi__.kimi__sessions__697a0ebec3147bb421a9dd6a0531906f__"
CONTEXT = LOGS / f"{PREFIX}0be84c98-0aeb-48c3-aa42-0fb8330914ef__context.jsonl"
WIRE = LOGS / f"{PREFIX}0be84c98-0aeb-48c3-aa42-0fb8330914ef__wire.jsonl"
SUB = LOGS / f"{PREFIX}b1ea4a04-95d9-43a8-98ce-189f553b08ca__context_sub_8.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@needs_shared
def test_a_context_is_a_session_named_by_its_folder() -> None:
    lines = _lines(CONTEXT)
    kinds = Counter(line["role"] for line in lines)
    calls = [call for line in lines for call in line.get("tool_calls", [])]
    result = parse_file(CONTEXT)
    assert result.format == "kimi-cli" and result.issues == []
    (session,) = result.sessions
    assert session.id == "kimi-cli-session:0be84c98-0aeb-48c3-aa42-0fb8330914ef"
    assert roles(session) == {"user": kinds["user"], "assistant": kinds["assistant"], "tool": kinds["tool"]}
    assert (
        [a.tool for a in session.actions] == [c["function"]["name"].lower() for c in calls] == ["shell", "settodolist"]
    )
    thinking = sum(b.type == "thinking" for m in session.messages for b in m.blocks)
    assert thinking == sum(
        p.get("type") == "think" for line in lines for p in line.get("content") or [] if isinstance(p, dict)
    )
    assert session.actions[0].output.startswith("<system>Command executed successfully.</system>")


@needs_shared
def test_a_subagent_context_links_to_its_session() -> None:
    lines = _lines(SUB)
    calls = Counter(c["function"]["name"].lower() for line in lines for c in line.get("tool_calls", []))
    (session,) = parse_file(SUB).sessions
    assert session.id == "kimi-cli-session:b1ea4a04-95d9-43a8-98ce-189f553b08ca/sub_8"
    assert session.parent_session_id == "kimi-cli-session:b1ea4a04-95d9-43a8-98ce-189f553b08ca"
    assert not session.messages[0].authored  # the dispatcher's prompt, not the user's words
    assert Counter(a.tool for a in session.actions) == calls
    assert Counter(a.category for a in session.actions) == {
        "file_read": calls["readfile"],
        "file_edit": calls["strreplacefile"],
        "search": calls["grep"],
    }


@needs_shared
def test_the_wire_log_is_recognized_and_counted_not_a_second_session() -> None:
    result = parse_file(WIRE)
    assert result.format == "kimi-cli" and result.sessions == [] and result.issues == []
    assert result.skipped_record_types["kimi-cli:wire-log"] == len(_lines(WIRE))


def test_an_error_status_fails_the_call_and_task_dispatches_a_subagent(tmp_path: Path) -> None:
    folder = tmp_path / "0123abcd" / "11111111-2222-3333-4444-555555555555"
    folder.mkdir(parents=True)
    calls = [
        {"type": "function", "id": "t1", "function": {"name": "ReadFile", "arguments": '{"path": "/x/a.py"}'}},
        {"type": "function", "id": "t2", "function": {"name": "Task", "arguments": '{"subagent_name": "coder"}'}},
    ]
    lines = [
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading."}], "tool_calls": calls},
        {"role": "tool", "content": "<system>ERROR: File not found.</system>", "tool_call_id": "t1"},
        {"role": "tool", "content": [{"type": "text", "text": "<system>Done.</system>"}], "tool_call_id": "t2"},
        {"role": "_usage", "token_count": 120},
    ]
    path = folder / "context.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    (session,) = parse_file(path).sessions
    assert session.id == "kimi-cli-session:11111111-2222-3333-4444-555555555555"
    read, task = session.actions
    assert (read.path, read.failed, read.category) == ("/x/a.py", True, "file_read")
    assert (task.failed, task.category) == (False, "subagent")
    assert [d.agent for d in session.delegations] == ["coder"]


def _session_folder(tmp_path: Path, wire: bytes | None) -> Path:
    """`sessions/<hash>/<id>/` as Kimi writes it: the real context.jsonl and, if given, a wire.jsonl."""
    folder = tmp_path / "sessions" / "697a0ebec3147bb421a9dd6a0531906f" / "0be84c98-0aeb-48c3-aa42-0fb8330914ef"
    folder.mkdir(parents=True)
    (folder / "context.jsonl").write_bytes(CONTEXT.read_bytes())
    if wire is not None:
        (folder / "wire.jsonl").write_bytes(wire)
    return folder / "context.jsonl"


def _wire(kind: str) -> list[dict[str, Any]]:
    return [line for line in _lines(WIRE)[1:] if line["message"]["type"] == kind]


@needs_shared
def test_the_wire_log_gives_the_sessions_times_tokens_and_interruptions() -> None:
    usage = [line["message"]["payload"]["token_usage"] for line in _wire("StatusUpdate")]
    turns = _wire("TurnBegin")
    results = {line["message"]["payload"]["tool_call_id"]: line["timestamp"] for line in _wire("ToolResult")}
    stamps = [line["timestamp"] for line in _lines(WIRE)[1:]]
    (session,) = parse_file(CONTEXT).sessions
    replies = [m for m in session.messages if m.role == "assistant"]
    assert [m.output_tokens for m in replies if m.output_tokens] == [u["output"] for u in usage] == [216, 818]
    assert sum(m.input_tokens for m in replies) == sum(u["input_other"] for u in usage)
    assert sum(m.cache_read_tokens for m in replies) == sum(u["input_cache_read"] for u in usage)
    prompts = [m for m in session.messages if m.role == "user"]
    assert [m.time_ms for m in prompts] == [int(turn["timestamp"] * 1000) for turn in turns]
    tools = [(m.blocks[0].tool_use_id, m.time_ms) for m in session.messages if m.role == "tool"]
    assert tools == [(call, int(results[call] * 1000)) for call, _ in tools] and len(tools) == len(results) == 2
    aborted = [e.time_ms for e in session.events if e.kind == "turn_aborted"]
    assert aborted == [int(line["timestamp"] * 1000) for line in _wire("StepInterrupted")] and len(aborted) == 5
    assert session.created_ms == int(min(stamps) * 1000)
    # the first reply was made before the wire log begins: it keeps no time rather than a guessed one
    assert replies[0].time_ms == 0 and replies[0].output_tokens == 0


@needs_shared
def test_in_a_session_folder_the_wire_log_beside_the_context_is_read(tmp_path: Path) -> None:
    context = _session_folder(tmp_path, WIRE.read_bytes())
    (session,) = parse_file(context).sessions
    assert sum(m.output_tokens for m in session.messages) == 216 + 818
    assert all(m.time_ms for m in session.messages if m.role == "user")


@needs_shared
def test_a_damaged_wire_log_is_named_and_the_context_still_read(tmp_path: Path) -> None:
    lines = WIRE.read_bytes().splitlines(keepends=True)
    status = next(i for i, line in enumerate(lines) if b'"StatusUpdate"' in line)
    lines[status] = lines[status][:40] + b"\n"  # the first reply's usage cut short
    context = _session_folder(tmp_path, b"".join(lines))
    result = parse_file(context)
    (session,) = result.sessions
    assert [m.output_tokens for m in session.messages if m.output_tokens] == [818]
    assert [(i.path, i.line) for i in result.issues] == [(str(context.parent / "wire.jsonl"), status + 1)]


@needs_shared
def test_without_a_wire_log_nothing_is_guessed(tmp_path: Path) -> None:
    result = parse_file(_session_folder(tmp_path, None))
    (session,) = result.sessions
    assert result.issues == [] and session.created_ms == 0
    assert not any(m.time_ms or m.output_tokens for m in session.messages)
