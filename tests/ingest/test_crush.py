"""Crush and OpenCode (Go) databases (`.crush/crush.db`, `.opencode/opencode.db`, origin crush-session): the
real databases of ../shared/real-logs/opencode_go counted with sqlite3 and jq (the command beside each number),
and databases of our own, built in tmp_path, for what they lack: sub-agent sessions, a compaction, every part
type, a new column, unknown parts and roles, a damaged file, a live database's write-ahead log."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_file
from quarry.ingest.sources import crush
from quarry.ingest.sources.sqlite_snapshot import open_snapshot, table_columns
from quarry.ingest.validate import session_problems
from quarry.v1 import units_pb2
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

CRUSH_DB = REAL_LOGS / "opencode_go" / "chad-russell__chex-mix-timer__.crush__crush.db"
OPENCODE_DB = REAL_LOGS / "opencode_go" / "ojizou003__invadergame__.opencode__opencode.db"
# The counts below: `sqlite3 <db>` stands for `sqlite3 'file:<db>?immutable=1'` (a plain open of these WAL-mode
# files creates -wal and -shm files beside them), and `jq '[PARTS | …]'` for
# sqlite3 -json <db> "select session_id, role, parts from messages" | jq '[.[] | (.parts|fromjson)[] | …]'.


def problems(session: units_pb2.Session) -> list[str]:
    """session_problems, but for the origin: crush-session is not in vocab.ORIGINS yet (a shared file)."""
    return [problem for problem in session_problems(session) if not problem.startswith("session: origin")]


def text_of(session: units_pb2.Session) -> str:
    return "\n".join(b.text for m in session.messages for b in m.blocks)


@needs_shared
def test_the_real_crush_database() -> None:
    result = parse_file(CRUSH_DB)
    # sqlite3 crush.db "select count(*) from sessions"  -> 1; no message lacks content (jq: parts other than finish)
    assert result.format == "crush" and not result.issues and not result.skipped_record_types
    [session] = result.sessions
    assert session.id == "crush-session:1c9c4c9c-6cdf-4c79-aed5-99c25ca9b8ec" and not problems(session)
    # sqlite3 crush.db "select title from sessions"
    assert session.title == "Unsubscribe Push Notifications Button"
    assert session.title_snapshot.kind == "ai-title"
    # sqlite3 crush.db "select role, count(*) from messages group by role"  -> assistant 79, tool 56, user 23
    assert roles(session) == {"user": 23, "assistant": 79, "tool": 56}
    assert session.counts.authored_user_messages == 23
    # jq '[PARTS | select(.type=="tool_call") | .data.name] | group_by(.) | map({(.[0]): length}) | add'
    #   -> bash 242, multiedit 38, write 31, view 13 (324 calls; 324 tool_result parts answer them, one each)
    assert categories(session) == {"shell": 242, "file_edit": 38, "file_write": 31, "file_read": 13}
    assert all(a.output for a in session.actions)
    # jq '[PARTS | select(.type=="tool_result" and .data.is_error)] | length'  -> 48 (multiedit 33, write 15);
    # jq '[PARTS | select(.type=="tool_result" and (.data.is_error|not)) | .data.content
    #   | select(test("(^|\n)Exit code -?[0-9]+\\s*(<cwd>[^\n]*</cwd>\\s*)?$"))] | length'  -> 88 bash commands
    #   that exited non-zero (87 with 1, 1 with 2), which the database keeps as is_error false
    assert failed_actions(session) == 48 + 88
    assert Counter(a.exit_code for a in session.actions if a.HasField("exit_code")) == {1: 87, 2: 1}
    # jq '[PARTS | select(.type=="finish") | .data.reason] | group_by(.) | …'  -> end_turn 22 (stop 79, tool_use 56)
    assert Counter(e.kind for e in session.events) == {"session_started": 1, "tool_finished": 324, "turn_completed": 22}
    # jq: the distinct file_path of view/write/multiedit inputs  -> 11 files
    assert len(session.files) == 11
    # sqlite3 crush.db "select count(*) from files"  -> 30 file versions, log-only events
    assert Counter(e.type for e in session.log_events if e.surface == "log-only") == {
        "crush:session": 1,
        "crush:file": 30,
    }
    # jq '[PARTS | select(.type=="tool_result") | .data.metadata | fromjson? | .working_directory] | unique'
    assert (session.cwd, session.repo) == ("/Users/chadrussell/Code/chex-mix-timer", "chex-mix-timer")
    # sqlite3 crush.db "select distinct model, provider from messages where role='assistant'"
    assert session.model == "openrouter/sonoma-sky-alpha"
    # sqlite3 crush.db "select prompt_tokens, completion_tokens from sessions"  -> 140486, 39: the last request's
    last = [m for m in session.messages if m.role == "assistant"][-1]
    assert (last.input_tokens, last.output_tokens) == (140486, 39)
    # sqlite3 crush.db "select created_at from sessions"  -> 1757360294 (seconds)
    assert session.created_ms == 1757360294000
    assert "unsubsribe from push notifications" in text_of(session)  # the user's typo: only in this file


@needs_shared
def test_the_real_opencode_go_database() -> None:
    result = parse_file(OPENCODE_DB)
    # the same schema, without messages.provider (sqlite3 opencode.db ".schema messages"): the same origin
    assert result.format == "crush" and not result.issues
    # jq: messages whose parts are a finish alone  -> 3 assistant messages (1 end_turn, 2 canceled)
    assert result.skipped_record_types == {"crush:empty-message": 3}
    init, game = result.sessions
    assert [s.native_id for s in result.sessions] == [
        "93c7e4e5-127a-4e28-a00a-f1f49665a96d",
        "542a6f97-b666-4beb-908a-f781014eb550",
    ]  # sqlite3 opencode.db "select id from sessions order by created_at"
    # sqlite3 opencode.db "select title from sessions"  -> "New Session" twice: the first prompt titles them
    assert init.title.startswith("Please analyze this codebase and create a OpenCode.md file")
    assert game.title == "OpenCode.mdファイルを作成して。" and not game.HasField("title_snapshot")
    # sqlite3 opencode.db "select session_id, role, count(*) from messages group by 1, 2"
    #   -> 93c7: user 2, assistant 3, tool 1; 542a: user 5, assistant 36, tool 31 (less the empty ones)
    assert roles(init) == {"user": 2, "assistant": 2, "tool": 1}
    assert roles(game) == {"user": 5, "assistant": 34, "tool": 31}
    # jq: tool_call names per session  -> 93c7: glob 7, ls 4; 542a: write 33, patch 15, view 13, edit 3
    assert categories(init) == {"search": 11}
    assert categories(game) == {"file_write": 33, "file_edit": 15 + 3, "file_read": 13}
    assert Counter(a.tool for a in game.actions)["patch"] == 15
    # jq: is_error tool results per session  -> 3 and 19
    assert (failed_actions(init), failed_actions(game)) == (3, 19)
    # jq '(call ids) - (tool_call_ids)'  -> call_311be997-…: the last call, whose result the copied file lacks
    unanswered = [a for a in game.actions if not a.output]
    assert [orjson.loads(a.input_json) for a in unanswered] == [
        {"file_path": "/home/ojizou003/work/invadergame/OpenCode.md"}
    ]
    # jq: finish reasons per session  -> 93c7: end_turn 2; 542a: end_turn 2, canceled 2
    assert Counter(e.kind for e in init.events) == {"session_started": 1, "tool_finished": 11, "turn_completed": 2}
    assert Counter(e.kind for e in game.events) == {
        "session_started": 1,
        "tool_finished": 63,
        "turn_completed": 2,
        "turn_aborted": 2,
    }
    # jq: patch_text "*** Update File:" headers name their file
    patch = next(a for a in game.actions if a.tool == "patch")
    assert patch.category == "file_edit" and patch.path == "/home/ojizou003/work/invadergame/OpenCode.md"
    # jq: distinct file_path / path / patch headers  -> 4 and 16 files
    assert (len(init.files), len(game.files)) == (4, 16)
    # sqlite3 opencode.db "select session_id, count(*) from files group by 1"  -> 542a: 61
    assert sum(e.type == "crush:file" for e in game.log_events) == 61
    # sqlite3 opencode.db "select id, prompt_tokens, completion_tokens from sessions"
    assert [(m.input_tokens, m.output_tokens) for m in game.messages if m.role == "assistant"][-1] == (83934, 82900)
    assert init.model == game.model == "gemini-2.5-flash" and init.cwd == game.cwd == ""
    assert "スペースインベーダー" in text_of(game)  # only in this file
    assert not problems(init) and not problems(game)


@needs_shared
@pytest.mark.parametrize("name", ["goose", "cursor"])
def test_other_tools_databases_are_not_claimed(name: str) -> None:
    """Goose's sessions.db has sessions and messages too (content_json, not parts); Cursor's state.vscdb has
    neither."""
    paths = [p for p in sorted((REAL_LOGS / name).iterdir()) if p.read_bytes()[:16] == b"SQLite format 3\x00"]
    assert paths
    for path in paths:
        with open_snapshot(path.read_bytes(), str(path)) as conn:
            assert crush.recognize(table_columns(conn)) == ""
        assert parse_file(path).format != "crush"


# ------------------------------------------------------------------ databases of our own

T0 = 1757360000  # seconds, as Crush stores them
SCHEMA = """
CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL,
    is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')));
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0, updated_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    finished_at INTEGER, provider TEXT, is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL,
    PRIMARY KEY (path, session_id));
"""


def part(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data}


def text(value: str) -> dict[str, Any]:
    return part("text", text=value)


def call(call_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return part("tool_call", id=call_id, name=name, input=orjson.dumps(tool_input).decode(), finished=True)


def result(call_id: str, content: str, *, is_error: bool = False, metadata: str = "", **extra: Any) -> dict[str, Any]:
    return part(
        "tool_result", tool_call_id=call_id, name="", content=content, metadata=metadata, is_error=is_error, **extra
    )


def finish(reason: str, **extra: Any) -> dict[str, Any]:
    return part("finish", reason=reason, time=T0 + 50, **extra)


class Db:
    """A Crush database being written: rows in insertion order, times in seconds from T0."""

    def __init__(self, path: Path, extra_message_column: str = "") -> None:
        self.path = path
        self.conn = sqlite3.connect(path)
        self.conn.executescript(SCHEMA)
        if extra_message_column:
            self.conn.execute(f"ALTER TABLE messages ADD COLUMN {extra_message_column} TEXT")
        self.messages = 0

    def session(self, session_id: str, title: str = "New Session", at: int = 0, **columns: Any) -> None:
        row = {"id": session_id, "title": title, "created_at": T0 + at, "updated_at": T0 + at + 60, **columns}
        self._insert("sessions", row)

    def message(self, session_id: str, role: str, *parts: Any, at: int, **columns: Any) -> str:
        self.messages += 1
        row = {
            "id": columns.pop("id", f"m{self.messages}"),
            "session_id": session_id,
            "role": role,
            "parts": parts[0] if len(parts) == 1 and isinstance(parts[0], str) else orjson.dumps(parts).decode(),
            "model": "claude-sonnet-4" if role == "assistant" else "",
            "created_at": T0 + at,
            "updated_at": T0 + at,
            **columns,
        }
        self._insert("messages", row)
        return row["id"]

    def file(self, session_id: str, file_path: str, version: int, content: str, at: int) -> None:
        row = {"id": f"f{file_path}{version}", "session_id": session_id, "path": file_path, "content": content,
               "version": version, "created_at": T0 + at, "updated_at": T0 + at}  # fmt: skip
        self._insert("files", row)

    def _insert(self, table: str, row: dict[str, Any]) -> None:
        names = ", ".join(row)
        self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        self.conn.commit()

    def close(self) -> Path:
        self.conn.close()
        return self.path


def test_sub_agent_sessions_are_children_of_their_dispatch(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db")
    db.session("main", title="Refactor the parser", prompt_tokens=1200, completion_tokens=80, cost=0.02)
    db.message("main", "user", text("Find where tokens are parsed"), finish("stop"), at=1)
    db.message(
        "main", "assistant", call("call_A", "agent", prompt="Search for the tokenizer"), finish("tool_use"), at=2
    )
    db.message("main", "tool", result("call_A", "It is in lexer.go"), finish("stop"), at=9)
    db.message("main", "assistant", text("The tokenizer is in lexer.go."), finish("end_turn"), at=10)
    # Crush names a sub-agent session <message id>$$<tool call id>; OpenCode (Go) the tool call id alone.
    db.session("m2$$call_A", title="New Agent Session", parent_session_id="main", at=2)
    db.message("m2$$call_A", "user", text("Search for the tokenizer"), finish("stop"), at=3)
    bash = call("call_B", "bash", command="grep -rn tokenize .")
    db.message("m2$$call_A", "assistant", bash, finish("tool_use"), at=4, model="gpt-5-mini")
    listing = result("call_B", "./lexer.go:12: func tokenize", metadata='{"working_directory": "/src/app"}')
    db.message("m2$$call_A", "tool", listing, finish("stop"), at=5)
    db.message("m2$$call_A", "assistant", text("It is in lexer.go"), finish("end_turn"), at=6, model="gpt-5-mini")
    # The title-generation session the runtime could create, and a session that holds nothing.
    db.session("title-main", title="Generate a title", parent_session_id="main", at=1)
    db.message("title-main", "user", text("Find where tokens are parsed"), at=1)
    db.message("title-main", "assistant", text("Refactor the parser"), at=1)
    db.session("empty", at=30)
    parsed = parse_file(db.close())
    assert parsed.format == "crush" and not parsed.issues
    assert parsed.skipped_record_types == {"crush:title-session": 1, "crush:empty-session": 1}
    main, child = parsed.sessions
    assert (main.title, child.title) == ("Refactor the parser", "Search for the tokenizer")
    assert child.parent_session_id == "crush-session:main" and child.agent == "agent"
    assert child.counts.authored_user_messages == 0 and main.counts.authored_user_messages == 1
    # The child's cwd is its bash metadata's; the parent has none of its own and keeps none.
    assert (child.cwd, child.repo, main.cwd) == ("/src/app", "app", "")
    [delegation] = main.delegations
    assert delegation.child_session_id == child.id and delegation.mapping_state == "resolved"
    assert (delegation.instruction, delegation.result_state) == ("Search for the tokenizer", "completed")
    assert delegation.child_excerpt_preview == "It is in lexer.go" and delegation.child_model == "gpt-5-mini"
    assert main.actions[0].category == "subagent"
    assert child.snapshots[0].boundary == "subagent_start"
    # The session row's tokens are the last request's: on the last assistant message.
    assert [(m.input_tokens, m.output_tokens) for m in main.messages if m.role == "assistant"] == [(0, 0), (1200, 80)]
    assert not problems(main) and not problems(child)


def test_an_opencode_go_child_is_named_by_its_tool_call(tmp_path: Path) -> None:
    db = Db(tmp_path / "opencode.db")
    db.session("s", title="Audit")
    db.message("s", "user", text("audit it"), at=1)
    db.message("s", "assistant", call("toolu_01", "agent", prompt="list files"), at=2)
    db.session("toolu_01", title="New Agent Session", parent_session_id="s", at=2)
    db.message("toolu_01", "user", text("list files"), at=3)
    db.message("toolu_01", "assistant", text("a.go b.go"), at=4)
    parent, child = parse_file(db.close()).sessions
    assert parent.delegations[0].child_session_id == child.id == "crush-session:toolu_01"
    assert parent.delegations[0].result_state == "missing"


def test_every_part_type_and_the_bash_exit_code(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db", extra_message_column="annotations")
    db.session("s", title="Parts")
    png = "data:image/png;base64," + "iVBORw0KGgo" * 200
    db.message(
        "s",
        "user",
        text("What is on this screenshot?"),
        part("image_url", url=png),
        part("binary", Path="/tmp/notes.txt", MIMEType="text/plain", Data="aGVsbG8="),
        part("binary", Path="/tmp/shot.jpg", MIMEType="image/jpeg", Data="/9j/4AAQ"),
        part("shell_command", command="git status", output="clean", exit_code=0),
        finish("stop"),
        at=1,
        annotations="a column added by a newer Crush",
    )
    db.message(
        "s",
        "assistant",
        part("reasoning", thinking="The user wants a description.", signature="sig"),
        part("reasoning", thinking="", signature="only a signature"),
        text("A login form."),
        call("c1", "bash", command="npm run lint", description="lint"),
        call("c2", "view", file_path="/src/logo.png"),
        part("tool_call", id="c3", name="write", input='{"file_path": "/src/a.ts", "conte', finished=False),
        part("citation", url="https://example.com"),
        finish("tool_use"),
        at=2,
        finished_at=T0 + 7,
    )
    lint = "\n> eslint .\n\n/src/a.ts\n  1:1  error  no-any\n\nexit status 1\nExit code 1\n\n<cwd>/src</cwd>"
    db.message(
        "s",
        "tool",
        result("c1", lint, metadata='{"working_directory": "/src", "output": "…"}'),
        result("c2", "Image read", data="iVBORw0KGgo=", mime_type="image/png"),
        result("c3", "Tool execution canceled by user", is_error=True),
        at=8,
    )
    db.message("s", "assistant", finish("error", message="Provider Error", details="rate limited"), at=9)
    db.message("s", "assistant", text("…"), finish("content_filter"), at=10)
    db.message("s", "critic", text("a role Crush does not write"), at=11)
    parsed = parse_file(db.close())
    assert parsed.format == "crush" and not parsed.issues
    assert parsed.skipped_record_types == {
        "crush:empty-reasoning": 1,
        "crush:part/citation": 1,
        "crush:empty-message": 1,
        "crush:role/critic": 1,
    }
    [session] = parsed.sessions
    user, reply, tools, refused = session.messages
    assert [(b.type, b.media_type, b.text) for b in user.blocks] == [
        ("text", "", "What is on this screenshot?"),
        ("image", "image/png", ""),
        ("text", "", "attached file: /tmp/notes.txt (text/plain)"),
        ("image", "image/jpeg", ""),
        ("text", "", "$ git status\nclean\n(exit code 0)"),
    ]
    assert user.authored and session.counts.paste_messages == 1
    assert len(session.held_payloads) == 1  # the image is held apart from its record, once
    assert session.ByteSize() - session.held_payloads[0].ByteSize() < 10_000  # and copied nowhere else
    assert [b.type for b in reply.blocks] == ["thinking", "text", "tool_use", "tool_use", "tool_use"]
    assert reply.duration_ms == 5_000 and reply.model == "claude-sonnet-4"
    lint_run, view, write = session.actions
    assert (lint_run.category, lint_run.command, lint_run.exit_code, lint_run.failed) == (
        "shell",
        "npm run lint",
        1,
        True,
    )
    assert (view.path, view.failed) == ("logo.png", False)  # relative to the cwd the bash metadata names
    assert orjson.loads(write.input_json) == {"input": '{"file_path": "/src/a.ts", "conte'} and write.failed
    assert [b.type for b in tools.blocks] == ["tool_result", "tool_result", "image", "tool_result"]
    assert refused.blocks[0].text == "…"
    events = [(e.kind, e.text) for e in session.events if e.kind not in ("session_started", "tool_finished")]
    assert events == [
        ("command", "! git status"),
        ("api_error", "API error: Provider Error: rate limited"),
        ("api_error", "refused by the provider (content_filter)"),
    ]
    log = [(e.type, e.surface) for e in session.log_events]
    assert log[-1] == ("crush:message/critic", "log-only")
    first = orjson.loads(session.log_events[1].raw_json)
    assert first["annotations"] == "a column added by a newer Crush" and first["parts"][0]["type"] == "text"
    assert first["parts"][1]["data"]["url"]["held_apart"] == "media"
    assert (session.cwd, session.repo) == ("/src", "src")


def test_a_summary_message_compacts_what_came_before(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db")
    db.message("s", "user", text("Build the timer"), at=1)
    db.message("s", "assistant", text("Done: timer.ts"), finish("end_turn"), at=2)
    summary = db.message("s", "assistant", text("Summary: the timer is built."), at=3, is_summary_message=1)
    db.message("s", "user", text("Now the settings page"), at=4)
    db.session("s", title="Timer", summary_message_id=summary)
    db.file("s", "/src/timer.ts", 0, "", at=2)
    db.file("s", "/src/timer.ts", 1, "export const timer = 1;", at=2)
    [session] = parse_file(db.close()).sessions
    assert [m.surface for m in session.messages] == ["shadowed", "shadowed", "current", "current"]
    assert [s.boundary for s in session.snapshots] == ["session_start", "compaction"]
    assert [e.kind for e in session.events].count("compaction") == 1
    types = [e.type for e in session.log_events]
    roles_in_order = ["user", "assistant", "assistant", "user"]
    assert types == ["crush:session"] + [f"crush:message/{role}" for role in roles_in_order] + ["crush:file"] * 2
    file_event = session.log_events[-1]
    assert (
        file_event.surface == "log-only" and orjson.loads(file_event.raw_json)["content"] == "export const timer = 1;"
    )


def test_messages_of_a_missing_session_row_and_parts_that_are_not_json(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db")
    db.message("ghost", "user", text("is anyone there"), at=1)
    db.message("ghost", "assistant", "{not json", at=2)
    parsed = parse_file(db.close())
    [session] = parsed.sessions
    assert session.id == "crush-session:ghost" and session.title == "is anyone there"
    assert [i.code for i in parsed.issues] == ["invalid_record"] and "m2" in parsed.issues[0].reason
    assert parsed.skipped_record_types == {"crush:empty-message": 1}
    assert session.log_events[-1].raw_json == orjson.dumps(
        {"id": "m2", "session_id": "ghost", "role": "assistant", "parts": "{not json", "model": "claude-sonnet-4",
         "created_at": T0 + 2, "updated_at": T0 + 2, "finished_at": None, "provider": None, "is_summary_message": 0}
    )  # fmt: skip


def test_a_damaged_database_keeps_the_rows_before_the_damage(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db")
    db.session("s", title="Long")
    for n in range(200):
        db.message("s", "user" if n % 2 == 0 else "assistant", text(f"turn {n} " + "words " * 400), at=n)
    data = db.close().read_bytes()
    # A file cut at its middle page: SQLite refuses it (its header counts more pages) unless the schema is
    # writable, which is how a reader can get at the rows the pages it still has hold.
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data[: len(data) // 2 // 4096 * 4096])
    conn.execute("PRAGMA writable_schema=ON")
    parsed = crush.parse(conn, "cut.db")
    [session] = parsed.sessions
    assert 0 < len(session.messages) < 200
    assert session.messages[0].blocks[0].text.startswith("turn 0 ")
    assert [i.code for i in parsed.issues] == ["unreadable"] and "the messages table" in parsed.issues[0].reason


def test_a_live_database_is_read_with_its_write_ahead_log(tmp_path: Path) -> None:
    db = Db(tmp_path / "crush.db")
    db.conn.execute("PRAGMA journal_mode=WAL")
    db.conn.execute("PRAGMA wal_autocheckpoint=0")
    db.session("s", title="Live")
    db.message("s", "user", text("first"), at=1)
    db.message("s", "assistant", text("newest reply, still in the log"), at=2)
    assert (tmp_path / "crush.db-wal").stat().st_size > 0
    [session] = parse_file(db.path).sessions  # the writer is still open
    assert [m.blocks[0].text for m in session.messages] == ["first", "newest reply, still in the log"]
    db.close()


def test_recognize_needs_the_parts_and_session_columns() -> None:
    tables = {"sessions": {"id", "parent_session_id", "title", "message_count", "created_at"},
              "messages": {"id", "session_id", "role", "parts", "created_at", "model"}}  # fmt: skip
    assert crush.recognize(tables) == "crush"
    goose = {"sessions": {"id", "name", "working_dir", "created_at"},
             "messages": {"id", "session_id", "role", "content_json", "created_timestamp"}}  # fmt: skip
    assert crush.recognize(goose) == ""
    assert crush.recognize({"ItemTable": {"key", "value"}}) == ""


@needs_shared
def test_the_session_s_cost_is_on_its_last_reply() -> None:
    # sqlite3 opencode.db "select id, cost from sessions"  -> 93c7…: 0.0044034, 542a…: 0.20698245
    init, game = parse_file(OPENCODE_DB).sessions
    assert [round(s.runs[0].cost_usd, 7) for s in (init, game)] == [0.0044034, round(0.20698245, 7)]
    last = [m for m in game.messages if m.role == "assistant"][-1]
    assert round(last.cost_usd, 9) == game.runs[0].cost_usd
    # sqlite3 crush.db "select cost from sessions"  -> 0.0
    assert not any(m.cost_usd for m in parse_file(CRUSH_DB).sessions[0].messages)
