"""Gemini CLI sessions: one JSON object, thoughts, tool calls with their results, tokens."""

from __future__ import annotations

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES, categories, roles

CHAT = FIXTURES / "gemini" / "chat.json"


def test_session_roles_and_blocks() -> None:
    result = parse_file(CHAT)
    assert result.format == "gemini" and result.issues == []
    session = result.sessions[0]
    assert session.id == "gemini-cli-session:gem-0001"
    assert roles(session) == {"user": 2, "assistant": 2}
    assert roles(session, "log-only") == {"system": 1}  # the CLI's info notice is never sent to the model
    reply = session.messages[1]
    assert [b.type for b in reply.blocks] == ["thinking", "text", "tool_use", "tool_result", "tool_use", "tool_result"]
    assert reply.blocks[0].text == "Removing build output\nA recursive delete is needed."
    assert session.messages[3].blocks[0].text == "Use sudo then"  # content given as parts
    assert not session.messages[2].authored  # the info notice
    assert (session.created_ms, session.duration_ms) == (1768046400000, 60_000)


def test_tool_failures_from_exit_code_and_status() -> None:
    session = parse_file(CHAT).sessions[0]
    assert categories(session) == {"shell": 1, "file_read": 1}
    shell, read = session.actions
    assert (shell.command, shell.failed) == ("rm -rf build", True)  # "Exit Code: 1"
    assert (read.path, read.output, read.failed) == ("/home/dev/projects/quarry/Makefile", "File not found", True)


def test_tokens_split_cached_input_and_count_thoughts_as_output() -> None:
    reply = parse_file(CHAT).sessions[0].messages[1]
    assert (reply.input_tokens, reply.cache_read_tokens, reply.output_tokens) == (400, 100, 50)
