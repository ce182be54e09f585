"""Kiro CLI / Amazon Q Developer CLI chats (`data.sqlite3`), written as the CLI writes them.

The database is made with the CLI's own migrations (aws/amazon-q-developer-cli at
15cc8f3cd18c4272925ce1c7053268eedff1ea0a: crates/chat-cli/src/database/sqlite_migrations/000_migration_table.sql
and 007_conversations_table.sql), a row per working folder whose value is the `ConversationState` as serde
writes it (tests/fixtures/kiro_cli/conversation.json: crates/chat-cli/src/cli/chat/conversation.rs,
message.rs, parser.rs); Kiro CLI's `conversations_v2` holds the same state per conversation id. Counts are
taken from the fixture's JSON in the test, not from the parser.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES

STATE = orjson.loads((FIXTURES / "kiro_cli" / "conversation.json").read_bytes())
MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS migrations (id INTEGER PRIMARY KEY, version INTEGER NOT NULL,"
    " migration_time INTEGER NOT NULL)"
)
CONVERSATIONS = "CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)"
CONVERSATIONS_V2 = (
    "CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL, value TEXT NOT NULL,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (key, conversation_id))"
)


def database(path: Path, *rows: tuple[str, Any]) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute(MIGRATIONS)
        conn.execute(CONVERSATIONS)
        conn.executemany(
            "INSERT INTO migrations (version, migration_time) VALUES (?, ?)", [(v, 1700000000) for v in range(8)]
        )
        conn.executemany(
            "INSERT INTO conversations (key, value) VALUES (?, ?)", [(k, orjson.dumps(v).decode()) for k, v in rows]
        )
    return path


def contents(kind: str) -> list[dict[str, Any]]:
    """The user contents of that kind in the fixture, counted here."""
    return [turn["user"]["content"][kind] for turn in STATE["history"] if kind in turn["user"]["content"]]


def test_a_folder_s_chat_is_read_with_its_calls_results_cancellations_and_times(tmp_path: Path) -> None:
    result = parse_file(database(tmp_path / "data.sqlite3", ("/home/ravi/infra", STATE)))
    assert result.format == "kiro-cli" and not result.issues
    (session,) = result.sessions
    assert session.id == f"kiro-cli-session:{STATE['conversation_id']}"
    assert (session.cwd, session.repo) == ("/home/ravi/infra", "infra")
    prompts = [c["prompt"] for c in contents("Prompt")] + [c["prompt"] for c in contents("CancelledToolUses")]
    authored = [
        b.text for m in session.messages if m.role == "user" and m.authored for b in m.blocks if b.type == "text"
    ]
    assert sorted(authored) == sorted(prompts)
    assert session.title == prompts[0]  # the context files (additional_context) are not the user's words
    assert "AGENTS.md" not in "".join(authored)
    calls = [call for turn in STATE["history"] for call in next(iter(turn["assistant"].values())).get("tool_uses", [])]
    assert [a.tool for a in session.actions] == [c["name"] for c in calls]
    assert [a.category for a in session.actions] == ["other", "shell", "file_read"]  # use_aws is AWS's API
    results = [
        r for kind in ("ToolUseResults", "CancelledToolUses") for c in contents(kind) for r in c["tool_use_results"]
    ]
    failed = {r["tool_use_id"] for r in results if r["status"] == "Error"}
    assert [a.failed for a in session.actions] == [c["id"] in failed for c in calls] == [False, True, False]
    assert session.actions[1].command == "aws logs tail /aws/lambda/billing --since 1h"
    assert "Tool use was cancelled" in session.actions[1].output
    assert '"exit_status":"0"' in session.actions[0].output  # a Json result block, as JSON text
    replies = [m for m in session.messages if m.role == "assistant"]
    metadata = [turn["request_metadata"] for turn in STATE["history"]]
    assert [(m.time_ms, m.duration_ms, m.model) for m in replies] == [
        (r["request_start_timestamp_ms"], r["stream_end_timestamp_ms"] - r["request_start_timestamp_ms"], r["model_id"])
        for r in metadata
    ]
    first = next(m for m in session.messages if m.role == "user")
    assert first.time_ms == 1772611950412  # 2026-03-04T09:12:30.412871+01:00


def test_kiro_cli_s_conversations_v2_and_a_damaged_row(tmp_path: Path) -> None:
    path = database(tmp_path / "data.sqlite3", ("/home/ravi/other", {"history": "nope"}))
    with sqlite3.connect(path) as conn:
        conn.execute(CONVERSATIONS_V2)
        second = dict(STATE, conversation_id="c2", history=STATE["history"][:1])
        rows = [
            ("/home/ravi/infra", s["conversation_id"], orjson.dumps(s).decode(), 1772611950000, 1772611990000)
            for s in (STATE, second)
        ]
        conn.executemany("INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)", rows)
    result = parse_file(path)
    assert sorted(s.native_id for s in result.sessions) == sorted([STATE["conversation_id"], "c2"])
    assert [(i.code, i.reason) for i in result.issues] == [
        ("invalid_record", "conversations row '/home/ravi/other' holds no conversation")
    ]
