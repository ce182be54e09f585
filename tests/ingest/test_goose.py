"""Goose sessions (its SQLite `sessions.db`, origin goose-session): the real database of
../shared/real-logs/goose counted with sqlite3 (the command beside each number), and databases of our own,
built in tmp_path, for what it lacks (its one session never got a message): tool calls and their results,
developer tools, errors, thinking, images, compaction, tokens and model, older schemas, damage."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_file
from quarry.ingest.sources import goose
from quarry.ingest.sources.sqlite_snapshot import open_snapshot, table_columns
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

REAL = REAL_LOGS / "goose"
DATABASE = REAL / "jwp23__dotfiles__.local__share__goose__sessions__sessions.db"
PROJECTS = REAL / "jwp23__dotfiles__.local__share__goose__projects.json"


@needs_shared
def test_the_real_database_s_one_session_has_its_row_and_no_messages() -> None:
    result = parse_file(DATABASE)
    assert result.format == "goose" and list(result.issues) == [] and not result.skipped_record_types
    # sqlite3 sessions.db 'select count(*) from sessions'  -> 1
    (session,) = result.sessions
    # sqlite3 sessions.db 'select count(*) from messages'  -> 0
    assert (len(session.messages), len(session.actions), failed_actions(session)) == (0, 0, 0)
    # sqlite3 sessions.db 'select id, name, working_dir, created_at, updated_at, user_set_name from sessions'
    #   -> 20251202_1|CLI Session|/Users/jpresley/workspace/tmp/vsl|2025-12-02 16:58:55|2025-12-02 16:58:55|0
    assert session.id == "goose-session:20251202_1" and session.native_id == "20251202_1"
    assert (session.title, session.cwd, session.repo) == ("CLI Session", "/Users/jpresley/workspace/tmp/vsl", "vsl")
    assert session.created_ms == session.updated_ms == 1_764_694_735_000  # 2025-12-02T16:58:55Z
    # The session row is the one raw event, log-only; a default name with no prompt is no title snapshot.
    assert [(e.type, e.surface) for e in session.log_events] == [("goose:session", "log-only")]
    assert not session.title_snapshot.kind
    # A word only this file holds (its working dir) is kept.
    assert "jpresley" in session.cwd and "jpresley" in session.log_events[0].raw_json.decode()


@needs_shared
def test_projects_json_beside_the_database_is_not_a_session_log() -> None:
    # jq 'keys' projects.json  -> ["projects"]: Goose's recent-projects list
    result = parse_file(PROJECTS)
    assert result.format == "unknown" and not result.sessions


@needs_shared
@pytest.mark.parametrize("name", sorted(p.name for p in (REAL_LOGS / "opencode_go").glob("*.db")))
def test_crush_and_opencode_go_databases_are_not_goose(name: str) -> None:
    # sqlite3 crush.db 'pragma table_info(messages)': parts, no content_json; sessions: no working_dir
    path = REAL_LOGS / "opencode_go" / name
    with open_snapshot(path.read_bytes(), str(path)) as conn:  # never an open of the shared file itself
        tables = table_columns(conn)
    assert "sessions" in tables and "messages" in tables and goose.recognize(tables) == ""


# ------------------------------------------------------------------ databases of our own

SESSIONS = """CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT)"""
MESSAGES = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT)"""
# Schema 1 (Goose 1.9): no name, user_set_name, session_type, provider, model config, message_id or metadata.
OLD_SESSIONS = """CREATE TABLE sessions (id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}', total_tokens INTEGER,
    input_tokens INTEGER, output_tokens INTEGER, accumulated_total_tokens INTEGER,
    accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT)"""
OLD_MESSAGES = """CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER)"""
T0 = 1_767_261_600  # 2026-01-01T10:00:00Z
USER_ONLY = {"userVisible": True, "agentVisible": False}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


def build(
    path: Path,
    sessions: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    schema: tuple[str, str] = (SESSIONS, MESSAGES),
) -> Path:
    """A Goose database: sessions as rows ({column: value}, JSON columns as values), messages as
    (session_id, role, content items, optional metadata / message_id / created_timestamp)."""
    conn = sqlite3.connect(path)
    for statement in (*schema, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY)"):
        conn.execute(statement)
    for row in sessions:
        row = {k: orjson.dumps(v).decode() if isinstance(v, dict | list) else v for k, v in row.items()}
        conn.execute(
            f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
        )
    for n, message in enumerate(messages):
        row = {"session_id": message.get("session", "20260101_1"), "role": message["role"],
               "content_json": message.get("raw") or orjson.dumps(message["content"]).decode(),
               "created_timestamp": message.get("created", T0 + n)}  # fmt: skip
        if "metadata" in message:
            row["metadata_json"] = orjson.dumps(message["metadata"]).decode()
        conn.execute(
            f"INSERT INTO messages ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
        )
    conn.commit()
    conn.close()
    return path


def session_row(**extra: Any) -> dict[str, Any]:
    return {"id": "20260101_1", "name": "Fix the flaky pool test", "working_dir": "/home/dev/projects/quarry",
            "created_at": "2026-01-01 10:00:00", "updated_at": "2026-01-01 10:09:00", **extra}  # fmt: skip


def msg(role: str, *content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": list(content), **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolRequest", "id": call_id,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}}}  # fmt: skip


def response(call_id: str, *contents: dict[str, Any], is_error: bool = False) -> dict[str, Any]:
    value = {"content": list(contents), "isError": is_error}
    return {"type": "toolResponse", "id": call_id, "toolResult": {"status": "success", "value": value}}


def output(value: str, audience: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "text", "text": value}
    if audience:
        item["annotations"] = {"audience": [audience]}
    return item


def conversation() -> list[dict[str, Any]]:
    """A prompt, four developer tool calls (one failed, one denied as an error status) and the answer."""
    return [
        msg("user", text("The pool test is flaky; fix it.")),
        msg(
            "assistant",
            {"type": "thinking", "thinking": "Run it first.", "signature": "sig"},
            text("Running the tests."),
            call("c1", "developer__shell", command="pytest -q tests/test_pool.py"),
        ),
        msg("user", response("c1", output("1 failed, 2 passed", "assistant"), output("1 failed, 2 passed", "user"))),
        msg(
            "assistant",
            call("c2", "developer__text_editor", command="view", path="/home/dev/projects/quarry/db/pool.py"),
        ),
        msg("user", response("c2", output("def acquire(): ..."))),
        msg(
            "assistant",
            {"type": "redactedThinking", "data": "opaque"},
            call("c3", "developer__text_editor", command="str_replace", path="db/pool.py", old_str="a", new_str="b"),
        ),
        msg("user", response("c3", output("old_str not found in db/pool.py"), is_error=True)),
        msg("assistant", call("c4", "developer__text_editor", command="write", path="db/pool.py", file_text="x")),
        msg("user", {"type": "toolResponse", "id": "c4", "toolResult": {"status": "error", "error": "-32603: denied"}}),
        msg("assistant", call("c5", "computercontroller__web_search", query="sqlite wal")),
        msg(
            "user",
            response("c5", output("WAL mode"), {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
        ),
        msg("assistant", text("Fixed: the loop now honours the deadline.")),
    ]


def test_a_conversation_s_roles_tools_results_and_failures(tmp_path: Path) -> None:
    path = build(tmp_path / "sessions.db", [session_row()], conversation())
    result = parse_file(path)
    assert result.format == "goose" and list(result.issues) == [] and not result.skipped_record_types
    (session,) = result.sessions
    assert (session.id, session.title) == ("goose-session:20260101_1", "Fix the flaky pool test")
    assert (session.cwd, session.repo) == ("/home/dev/projects/quarry", "quarry")
    assert roles(session) == {"user": 6, "assistant": 6}
    assert (session.counts.authored_user_messages, session.counts.thinking_messages) == (1, 2)
    assert categories(session) == {"shell": 1, "file_read": 1, "file_edit": 1, "file_write": 1, "other": 1}
    shell, view, edit, write, search = session.actions
    assert (shell.tool, shell.command, shell.failed) == ("shell", "pytest -q tests/test_pool.py", False)
    assert shell.output == "1 failed, 2 passed"  # the copy addressed to the user only is left out
    assert (view.tool, view.command, view.path, view.output) == ("view", "", "db/pool.py", "def acquire(): ...")
    assert orjson.loads(view.input_json)["command"] == "view"
    assert (edit.tool, edit.path, edit.failed) == ("str_replace", "db/pool.py", True)
    assert edit.output == "old_str not found in db/pool.py"
    assert (write.tool, write.failed, write.output) == ("write", True, "-32603: denied")
    assert (search.tool, search.output, search.failed) == ("computercontroller__web_search", "WAL mode", False)
    assert failed_actions(session) == 2
    blocks = [b for m in session.messages for b in m.blocks]
    assert [b.text for b in blocks if b.type == "thinking"] == ["Run it first.", ""]
    assert [b.media_type for b in blocks if b.type == "image"] == ["image/png"]
    assert session.created_ms == T0 * 1000 and session.updated_ms == (T0 + 540) * 1000  # updated_at 10:09


def test_raw_events_are_the_rows_and_a_response_cites_its_request(tmp_path: Path) -> None:
    session = parse_file(build(tmp_path / "sessions.db", [session_row()], conversation())).sessions[0]
    events = session.log_events
    assert [e.type for e in events[:3]] == ["goose:session", "goose:message/user", "goose:message/assistant"]
    assert [e.surface for e in events] == ["log-only"] + ["current"] * 12
    assert list(events[3].source_event_seqs) == [2]  # the shell output cites the shell call
    assert b'"data":"iVBORw0KGgo="' in events[11].raw_json  # the row as stored: a payload this small stays in it
    assert orjson.loads(events[1].raw_json)["content_json"] == [text("The pool test is flaky; fix it.")]
    # A session with prompts, named by Goose (not by the user): an ai-title.
    assert (session.title_snapshot.kind, session.title_snapshot.seq) == ("ai-title", 0)
    again = parse_file(tmp_path / "sessions.db").sessions[0]
    assert again.content_hash == session.content_hash  # deterministic


def test_tokens_model_recipe_and_a_name_the_user_set(tmp_path: Path) -> None:
    row = session_row(
        user_set_name=1, input_tokens=900, output_tokens=40, accumulated_input_tokens=5000,
        accumulated_output_tokens=300, provider_name="anthropic",
        model_config_json={"model_name": "claude-sonnet-4-5", "context_limit": 200000},
        recipe_json={"title": "Flaky tests", "instructions": "Always run the tests twice.", "prompt": "go"},
    )  # fmt: skip
    path = build(tmp_path / "sessions.db", [row], [msg("user", text("go")), msg("assistant", text("done"))])
    (session,) = parse_file(path).sessions
    assert roles(session) == {"system": 1, "user": 1, "assistant": 1}
    assert session.messages[0].blocks[0].text == "Always run the tests twice." and not session.messages[0].authored
    assert session.model == "claude-sonnet-4-5"
    last = session.messages[-1]
    assert (last.input_tokens, last.output_tokens) == (5000, 300)
    assert session.title_snapshot.kind == "custom-title"


def test_a_compaction_shadows_the_history_and_its_prompt_copy_is_not_authored(tmp_path: Path) -> None:
    messages = [
        msg("user", text("Refactor the pool."), metadata=USER_ONLY),
        msg("assistant", text("Done with step one."), metadata=USER_ONLY),
        msg("user", text("Now step two."), metadata=USER_ONLY),
        msg("user", text("The user asked to refactor the pool; step one is done."), metadata=AGENT_ONLY),
        msg(
            "assistant",
            text("Your context was compacted. The previous message contains a summary."),
            metadata=AGENT_ONLY,
        ),
        msg("user", text("Now step two.")),
        msg("assistant", text("Step two is done.")),
        msg(
            "assistant",
            {"type": "systemNotification", "notificationType": "inlineMessage", "msg": "Compacted"},
            metadata=USER_ONLY,
        ),
    ]
    result = parse_file(build(tmp_path / "sessions.db", [session_row()], messages))
    (session,) = result.sessions
    assert [(m.role, m.surface, m.authored) for m in session.messages] == [
        ("user", "shadowed", True),
        ("assistant", "shadowed", True),
        ("user", "shadowed", True),
        ("user", "current", False),
        ("assistant", "current", False),
        ("user", "current", False),
        ("assistant", "current", True),
    ]
    assert [(s.boundary, s.message_ref) for s in session.snapshots if s.boundary == "compaction"] == [
        ("compaction", f"message:{session.messages[3].id}")
    ]
    assert Counter(e.kind for e in session.events)["compaction"] == 1
    notification = session.log_events[-1]
    assert (notification.surface, notification.text) == ("log-only", "Compacted")


def test_older_items_context_limits_and_compactions_become_events(tmp_path: Path) -> None:
    messages = [
        msg("user", text("Summarize the logs.")),
        msg("assistant", {"type": "contextLengthExceeded", "msg": "The context is full."}),
        msg("user", {"type": "summarizationRequested", "msg": "Summarize?"}),
        msg("assistant", {"type": "conversationCompacted", "msg": "Conversation compacted"}, text("A summary.")),
    ]
    (session,) = parse_file(build(tmp_path / "sessions.db", [session_row()], messages)).sessions
    assert [(m.blocks[0].text, m.surface) for m in session.messages] == [
        ("Summarize the logs.", "shadowed"),
        ("A summary.", "current"),
    ]
    kinds = [(e.kind, e.delivery_state) for e in session.events if e.kind in ("api_error", "compaction")]
    assert kinds == [("api_error", "failed"), ("compaction", "recorded")]  # no reply after the summary
    assert [e.text for e in session.log_events][3] == "Summarize?"


def test_unknown_items_roles_new_columns_and_content_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    messages = [
        msg("user", text("hello"), {"type": "voiceNote", "text": "spoken words"}, {"type": "widget"}),
        msg("system", text("a role Goose never writes")),
        msg("assistant", raw="{not json"),
        msg("assistant", {"type": "jsonRenderSpec", "spec": "{}"}),
        msg("assistant", text("bye")),
    ]
    build(path, [session_row()], messages)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE sessions ADD COLUMN mood TEXT")  # a column of a future schema
    conn.execute("CREATE TABLE eval_runs (id TEXT)")
    conn.commit()
    conn.close()
    result = parse_file(path)
    assert [i.reason for i in result.issues] == ["message row 3: content_json is not JSON"]
    assert dict(result.skipped_record_types) == {
        "goose:content/widget": 1, "goose:role/system": 1, "goose:content/jsonRenderSpec": 1,
        "goose:empty-message": 1,
    }  # fmt: skip
    (session,) = result.sessions
    assert [b.text for m in session.messages for b in m.blocks] == ["hello", "spoken words", "bye"]
    assert len(session.log_events) == 6  # every row is kept as a raw event, the unreadable one too
    assert orjson.loads(session.log_events[3].raw_json)["content_json"] == "{not json"


def test_the_oldest_schema_and_messages_without_a_session_row(tmp_path: Path) -> None:
    row = {"id": "20250501_3", "description": "Old style title", "working_dir": "/w/app", "accumulated_input_tokens": 7}
    messages = [
        msg("user", text("hi"), session="20250501_3"),
        msg(
            "assistant",
            {
                "type": "toolRequest",
                "id": "t1",
                "toolCall": {"name": "developer__shell", "arguments": {"command": "ls"}},
            },
            session="20250501_3",
        ),
        msg(
            "user",
            {"type": "toolResponse", "id": "t1", "toolResult": {"status": "success", "value": [output("README.md")]}},
            session="20250501_3",
        ),
        msg("user", text("lost"), session="20250501_9"),
    ]
    result = parse_file(build(tmp_path / "sessions.db", [row], messages, (OLD_SESSIONS, OLD_MESSAGES)))
    assert result.format == "goose"
    assert [i.reason for i in result.issues] == ["1 message(s) of session '20250501_9', which has no row in sessions"]
    old, orphan = result.sessions
    assert (old.id, old.title, old.repo) == ("goose-session:20250501_3", "Old style title", "app")
    (action,) = old.actions
    assert (action.category, action.command, action.output) == ("shell", "ls", "README.md")
    assert old.messages[1].input_tokens == 7
    assert (orphan.id, orphan.title, len(orphan.messages)) == ("goose-session:20250501_9", "lost", 1)


def test_a_call_the_model_got_wrong_keeps_its_error(tmp_path: Path) -> None:
    bad = {"type": "toolRequest", "id": "b1", "toolCall": {"status": "error", "error": "-32602: invalid arguments"}}
    refused = {"type": "toolResponse", "id": "b1", "toolResult": {"status": "error", "error": "invalid arguments"}}
    (session,) = parse_file(
        build(tmp_path / "s.db", [session_row()], [msg("assistant", bad), msg("user", refused)])
    ).sessions
    (action,) = session.actions
    assert (action.tool, action.failed, action.output) == ("", True, "invalid arguments")
    assert session.messages[0].blocks[0].text == "-32602: invalid arguments"


def test_a_database_damaged_in_the_middle_keeps_the_rows_before_the_damage(tmp_path: Path) -> None:
    messages = [msg("user" if n % 2 == 0 else "assistant", text(f"turn {n} " + "words " * 60)) for n in range(300)]
    data = build(tmp_path / "sessions.db", [session_row()], messages).read_bytes()
    page = int.from_bytes(data[16:18], "big")
    image = bytearray(data[: len(data) // 2 // page * page])
    image[28:32] = (len(image) // page).to_bytes(4, "big")  # the header's page count, as a cut copy would say
    conn = sqlite3.connect(":memory:")
    conn.deserialize(bytes(image))
    try:
        result = goose.parse(conn, "cut.db")
    finally:
        conn.close()
    (problem,) = result.issues
    assert problem.code == "unreadable" and problem.reason.startswith("the messages table is unreadable after ")
    (session,) = result.sessions
    read = int(problem.reason.split("after ")[1].split(" ")[0])
    assert 0 < read < 300 and len(session.messages) == read
    assert session.messages[0].blocks[0].text.startswith("turn 0 ")


def test_a_live_database_s_newest_rows_are_read_from_its_write_ahead_log(tmp_path: Path) -> None:
    path = build(tmp_path / "sessions.db", [session_row()], [msg("user", text("first"))])
    writer = sqlite3.connect(path)  # Goose keeps the database open in WAL mode while it runs
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?, ?, ?, ?)",
            ("20260101_1", "assistant", orjson.dumps([text("second")]).decode(), T0 + 1),
        )
        writer.commit()
        assert (tmp_path / "sessions.db-wal").stat().st_size > 0
        (session,) = parse_file(path).sessions
    finally:
        writer.close()
    assert [m.blocks[0].text for m in session.messages] == ["first", "second"]


def test_recognize_needs_goose_s_columns() -> None:
    crush = {"sessions": {"id", "title", "parent_session_id"}, "messages": {"id", "session_id", "role", "parts"}}
    ours = {"sessions": {"id", "working_dir"}, "messages": {"session_id", "role", "content_json", "created_timestamp"}}
    assert goose.recognize(crush) == "" and goose.recognize(ours) == "goose" and goose.recognize({}) == ""
