"""Zed's agent threads (`threads/threads.db`), written as Zed writes them.

The database is made with Zed's own DDL and insert (zed-industries/zed crates/agent/src/db.rs at
0642ec7e49e2d2c06f55db8c5bb2d4eca0f5223b: `ThreadsDatabase::new` creates `threads` and adds parent_id,
folder_paths, folder_paths_order and created_at; `save_thread_sync` stores the thread as zstd-compressed
JSON with its `version`). The thread (tests/fixtures/zed/thread.json) is a `DbThread` as serde writes it:
messages as externally tagged enums (crates/agent/src/thread.rs), tool results keyed by call id, token
usage per user message id. Counts are taken from the fixture's JSON in the test, not from the parser.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES

THREAD = orjson.loads((FIXTURES / "zed" / "thread.json").read_bytes())
THREAD_ID = "0e9f3c1a-5b2d-4f7e-8a6c-1d2e3f4a5b6c"
DDL = (
    "CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " data_type TEXT NOT NULL, data BLOB NOT NULL)",
    "ALTER TABLE threads ADD COLUMN parent_id TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths_order TEXT",
    "ALTER TABLE threads ADD COLUMN created_at TEXT",
)
INSERT = (
    "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, updated_at, data_type, data,"
    " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
)


def save(db: Path, thread_id: str, thread: Any, *, parent: str | None = None, data_type: str = "zstd") -> None:
    data = orjson.dumps(thread)
    blob = zstandard.ZstdCompressor(level=3).compress(data) if data_type == "zstd" else data
    with sqlite3.connect(db) as conn:
        for statement in DDL:
            with contextlib.suppress(sqlite3.OperationalError):  # the column is there already, as in Zed
                conn.execute(statement)
        stamp = thread["updated_at"] if isinstance(thread, dict) else "2026-02-03T10:00:00+00:00"
        conn.execute(
            INSERT,
            (
                thread_id,
                parent,
                "/home/kim/code/inkwell",
                "0",
                "Fix failing parser tests",
                stamp,
                data_type,
                blob,
                stamp,
            ),
        )


def items(kind: str) -> list[Any]:
    """Every content item of that kind in the fixture's messages (counted here, not by the parser)."""
    return [
        item[kind]
        for message in THREAD["messages"]
        if isinstance(message, dict)
        for body in message.values()
        for item in body["content"]
        if kind in item
    ]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "threads.db"
    save(path, THREAD_ID, THREAD)
    return path


def test_a_thread_is_read_with_its_calls_results_failures_tokens_and_model(db: Path) -> None:
    result = parse_file(db)
    assert result.format == "zed" and not result.issues
    (session,) = result.sessions
    assert session.id == f"zed-session:{THREAD_ID}"
    assert (session.title, session.cwd, session.repo) == (
        "Fix failing parser tests",
        "/home/kim/code/inkwell",
        "inkwell",
    )
    users = [m for m in session.messages if m.role == "user"]
    replies = [m for m in session.messages if m.role == "assistant"]
    assert (len(users), len(replies)) == (sum("User" in m for m in THREAD["messages"] if isinstance(m, dict)), 2)
    # the mention is referenced by its file, its inlined content left out
    assert users[0].blocks[-1].text == "mentions: File /home/kim/code/inkwell/parser/src/lib.rs"
    assert "todo!()" not in "".join(b.text for b in users[0].blocks)
    calls = items("ToolUse")
    assert [a.tool for a in session.actions] == [call["name"] for call in calls]
    results = {
        key for m in THREAD["messages"] if isinstance(m, dict) and "Agent" in m for key in m["Agent"]["tool_results"]
    }
    with_result = [a.output != "" for a in session.actions]
    assert with_result == [call["id"] in results for call in calls]  # the call cut off by the stop has none
    failed = [
        m["Agent"]["tool_results"][k]["is_error"]
        for m in THREAD["messages"]
        if isinstance(m, dict) and "Agent" in m
        for k in m["Agent"]["tool_results"]
    ]
    assert sum(a.failed for a in session.actions) == sum(failed) == 1
    assert session.actions[0].command == "cargo test -p parser" and "exit code 101" in session.actions[0].output
    assert session.actions[0].category == "shell"
    assert session.actions[1].path == "inkwell/parser/src/lib.rs" and session.actions[1].category == "file_edit"
    thinking = [b.text for m in replies for b in m.blocks if b.type == "thinking"]
    assert thinking == [t["text"] for t in items("Thinking")]
    assert result.skipped_record_types["zed:agent-content/RedactedThinking"] == len(items("RedactedThinking"))
    assert {m.model for m in replies} == {THREAD["model"]["model"]}
    usage = THREAD["request_token_usage"]
    assert [(m.input_tokens, m.output_tokens, m.cache_read_tokens) for m in replies] == [
        (u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"]) for u in usage.values()
    ]
    turns = [e.text for e in session.events if e.kind == "turn_started"]
    assert turns == ["turn started", "resumed after the tool-use limit was reached", "turn started"]


def test_a_subagent_thread_names_its_parent_and_a_json_row_is_read_too(db: Path) -> None:
    child = dict(THREAD, messages=THREAD["messages"][:2], title="Look for the parser's tests")
    save(db, "child-1", child, parent=THREAD_ID, data_type="json")
    sessions = {s.native_id: s for s in parse_file(db).sessions}
    assert sessions["child-1"].parent_session_id == f"zed-session:{THREAD_ID}"
    assert len(sessions["child-1"].messages) == 2


def test_damaged_and_old_rows_are_issues_naming_their_thread_and_the_others_are_read(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        stamp = "2026-02-03T10:00:00+00:00"
        rows = [
            ("bomb", "zstd", b"\x28\xb5\x2f\xfd" + b"\xff" * 40),  # a zstd frame that is not one
            ("nonsense", "json", b'{"title": "x"}'),
            ("legacy", "json", orjson.dumps({"version": "0.2.0", "summary": "old", "messages": [{"role": "user"}]})),
            ("odd", "brotli", b"..."),
        ]
        for thread_id, kind, data in rows:
            conn.execute(INSERT, (thread_id, None, None, None, "t", stamp, kind, data, stamp))
    result = parse_file(db)
    assert [s.native_id for s in result.sessions] == [THREAD_ID]
    reasons = {i.reason.split(":")[0]: i.reason for i in result.issues}
    assert set(reasons) == {"thread 'bomb'", "thread 'nonsense'", "thread 'legacy'", "thread 'odd'"}
    assert "cannot be decompressed" in reasons["thread 'bomb'"]
    assert "first agent panel" in reasons["thread 'legacy'"]
    assert all(i.path == str(db) for i in result.issues)
