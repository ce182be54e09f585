"""Claude Code transcripts: merged API responses, authored prompts, tools, titles, tokens."""

from __future__ import annotations

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES

SESSION = FIXTURES / "claude_code" / "session.jsonl"


def test_session_fields_and_counts() -> None:
    session = parse_file(SESSION).sessions[0]
    assert (session.id, session.origin, session.native_id) == (
        "claude-code-session:sess-1",
        "claude-code-session",
        "sess-1",
    )
    assert session.title == "Fix the pool retry loop"  # the latest title event wins
    assert (session.cwd, session.repo, session.branch) == ("/home/dev/projects/quarry", "quarry", "main")
    assert session.model == "claude-sonnet-4-6"
    assert session.source_path == str(SESSION)
    # The queue-operation at :00 is the first timestamp, the last assistant line at :10 the last.
    assert (session.created_ms, session.updated_ms, session.duration_ms) == (1772359200000, 1772359210000, 10_000)
    counts = session.counts
    assert (counts.messages, counts.user_messages, counts.authored_user_messages) == (7, 4, 1)
    assert (counts.assistant_messages, counts.tool_use_messages, counts.thinking_messages) == (3, 2, 1)
    assert counts.authored_user_words == 9  # "Why does the retry loop in db/pool.py never stop?"
    assert counts.words == sum(m.words for m in session.messages)
    assert counts.assistant_words == 6 + 6 + 10  # thinking, text, final answer


def test_lines_sharing_a_message_id_are_one_message() -> None:
    session = parse_file(SESSION).sessions[0]
    first = session.messages[1]
    assert [b.type for b in first.blocks] == ["thinking", "text", "tool_use"]
    assert [b.id for b in first.blocks] == [f"claude-code-session:sess-1:m1:{i}" for i in range(3)]
    # usage repeated on three lines: counted once, with the final output count
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.cache_write_tokens) == (
        10,
        40,
        100,
        20,
    )


def test_actions_pair_tool_use_with_result() -> None:
    session = parse_file(SESSION).sessions[0]
    read, bash = session.actions
    assert (read.id, read.seq, read.category, read.tool) == (
        "claude-code-session:sess-1:action:0",
        0,
        "file_read",
        "read",
    )
    assert read.path == "db/pool.py" and not read.failed  # relative to the session cwd
    assert read.output.startswith("1\tdef acquire(self):")
    assert (read.message_id, read.block_id) == ("claude-code-session:sess-1:m1", "claude-code-session:sess-1:m1:2")
    assert (bash.category, bash.command, bash.failed) == ("shell", "pytest -q tests/test_pool.py", True)
    use = session.messages[3].blocks[0]
    assert (use.type, use.text, use.tool_name, use.tool_use_id) == (
        "tool_use",
        "pytest -q tests/test_pool.py",
        "Bash",
        "toolu_2",
    )
    result = session.messages[4].blocks[0]
    assert (result.type, result.tool_name, result.tool_use_id, result.is_error) == (
        "tool_result",
        "Bash",
        "toolu_2",
        True,
    )


def test_runtime_rows_are_not_authored() -> None:
    session = parse_file(SESSION).sessions[0]
    users = [(m.authored, m.blocks[0].type) for m in session.messages if m.role == "user"]
    assert users == [(True, "text"), (False, "tool_result"), (False, "tool_result"), (False, "text")]


def test_turn_duration_is_the_turn_last_reply_duration() -> None:
    lines = [
        {"type": "user", "uuid": "a", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "b", "sessionId": "s", "message": {"id": "m", "content": "hello"}},
        {"type": "system", "subtype": "turn_duration", "uuid": "c", "sessionId": "s", "durationMs": 1234},
    ]
    result = parse_bytes(b"\n".join(orjson.dumps(line) for line in lines), "turn.jsonl")
    assert [m.duration_ms for m in result.sessions[0].messages] == [0, 1234]
    assert result.skipped_record_types == {}
