"""Codex rollouts: dedupe of the doubled dialogue, roles, tool outputs in both shapes, tokens."""

from __future__ import annotations

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES, categories, roles

ROLLOUT = FIXTURES / "codex" / "rollout.jsonl"


def test_rollout_session_and_roles() -> None:
    result = parse_file(ROLLOUT)
    assert result.format == "codex" and result.issues == []
    session = result.sessions[0]
    assert session.id == "codex-session:0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
    assert (session.repo, session.branch, session.model) == ("quarry", "fix/pool", "gpt-5-codex")
    assert roles(session) == {"user": 2, "assistant": 5, "tool": 3, "system": 1}
    assert [m.role for m in session.messages][:4] == ["user", "user", "assistant", "assistant"]
    assert session.title == "Run the tests and fix the failure"


def test_user_text_written_twice_is_one_message() -> None:
    result = parse_file(ROLLOUT)
    session = result.sessions[0]
    texts = [b.text for m in session.messages for b in m.blocks if b.type == "text"]
    assert texts.count("Run the tests and fix the failure") == 1
    assert texts.count("Fixed: the loop now honours the deadline.") == 1
    assert [m.blocks[0].text for m in session.messages if m.role == "assistant" and m.blocks[0].type == "thinking"] == [
        "**Running tests**"
    ]
    assert (session.counts.user_messages, session.counts.authored_user_messages) == (2, 1)
    assert result.skipped_record_types["codex:event_msg/user_message"] == 1


def test_developer_is_system_and_injected_context_not_authored() -> None:
    session = parse_file(ROLLOUT).sessions[0]
    environment, prompt = (m for m in session.messages if m.role == "user")
    assert environment.blocks[0].text.startswith("<environment_context>") and not environment.authored
    assert prompt.authored
    developer = next(m for m in session.messages if m.role == "system")
    assert developer.blocks[0].text.startswith("<permissions instructions>") and not developer.authored


def test_tool_outputs_exit_codes_and_patch_paths() -> None:
    session = parse_file(ROLLOUT).sessions[0]
    assert categories(session) == {"shell": 2, "file_edit": 1}
    shell, patch, exec_command = session.actions
    assert (shell.tool, shell.command, shell.output, shell.failed) == ("shell", "pytest -q", "1 failed, 2 passed", True)
    assert (patch.tool, patch.path, patch.failed) == ("apply_patch", "db/pool.py", False)
    assert patch.output.startswith("Success. Updated the following files:")
    assert (exec_command.command, exec_command.failed) == ("pytest -q", False)
    assert exec_command.output.endswith("3 passed\n")


def test_turn_usage_lands_on_the_turn_last_model_message() -> None:
    session = parse_file(ROLLOUT).sessions[0]
    final = next(m for m in session.messages if m.role == "assistant" and m.blocks[0].type == "text")
    # Two distinct requests (the repeated count is ignored): (1000-200)+(2000-800) uncached input.
    assert (final.input_tokens, final.cache_read_tokens, final.output_tokens) == (2000, 1000, 150)
    assert sum(m.output_tokens for m in session.messages) == 150


def test_rollout_without_envelope_is_read_too() -> None:
    result = parse_file(FIXTURES / "codex" / "legacy_rollout.jsonl")
    assert result.format == "codex" and result.issues == []
    session = result.sessions[0]
    assert session.id == "codex-session:5f1c0e5a-1111-4222-8333-944455556666"
    assert (session.repo, session.branch) == ("tools", "main")
    assert roles(session) == {"user": 1, "assistant": 2, "tool": 1}
    (action,) = session.actions
    assert (action.command, action.output, action.failed) == ("ls", "README.md\nsetup.py\n", False)
    assert result.skipped_record_types == {"codex:record_type/state": 2}


def test_dialogue_only_in_events_is_still_read() -> None:
    lines = [
        {"timestamp": "2025-09-01T10:00:00Z", "type": "session_meta", "payload": {"id": "evt-1", "cwd": "/w/app"}},
        {
            "timestamp": "2025-09-01T10:00:01Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "hi"},
        },
        {
            "timestamp": "2025-09-01T10:00:02Z",
            "type": "event_msg",
            "payload": {"type": "agent_reasoning", "text": "greet"},
        },
        {
            "timestamp": "2025-09-01T10:00:03Z",
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "hello"},
        },
    ]
    result = parse_bytes(b"\n".join(orjson.dumps(line) for line in lines), "events.jsonl")
    session = result.sessions[0]
    assert [(m.role, m.blocks[0].type, m.blocks[0].text) for m in session.messages] == [
        ("user", "text", "hi"),
        ("assistant", "thinking", "greet"),
        ("assistant", "text", "hello"),
    ]
    assert (session.id, session.repo, session.duration_ms) == ("codex-session:evt-1", "app", 3000)
