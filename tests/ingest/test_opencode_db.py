"""OpenCode's SQLite store (`opencode.db`, sst/opencode ≥ 1.2, origin opencode-session): the real database of
../shared/real-logs/opencode_db counted with sqlite3 in the test itself, and databases of our own, built in
tmp_path as OpenCode's schema lays them out, for what it lacks: a subagent session, an API error, a damaged row,
credentials that must never be read."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from quarry.ingest.parse import parse_file
from quarry.ingest.validate import session_problems
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

REAL = REAL_LOGS / "opencode_db" / "suhd550-dev__stunning-memory__opencode.db"


def _query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """An independent read of the database (immutable: nothing is written beside it)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _data(path: Path, table: str) -> list[dict[str, Any]]:
    return [orjson.loads(data) for (data,) in _query(path, f"SELECT data FROM {table} ORDER BY time_created, id")]


@needs_shared
def test_the_real_database_s_session_messages_tools_and_tokens() -> None:
    result = parse_file(REAL)
    assert result.format == "opencode-db" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    assert not session_problems(session)
    [(sid, directory, title, created, tokens_in, tokens_out, reasoning, cache_read)] = _query(
        REAL,
        "SELECT id, directory, title, time_created, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read "
        "FROM session",
    )
    assert session.id == f"opencode-session:{sid}" and (session.cwd, session.repo) == (directory, "workspace")
    assert session.created_ms == created
    messages = _data(REAL, "message")
    assert roles(session) == dict(Counter(m["role"] for m in messages))  # user 8, assistant 27
    # The title is OpenCode's placeholder ("New session - <date>"): the first prompt titles the session instead.
    assert title.startswith("New session - ")
    first_prompt = _query(
        REAL, "SELECT json_extract(data, '$.text') FROM part WHERE json_extract(data, '$.type') = 'text' "
        "AND message_id = (SELECT id FROM message ORDER BY time_created, id LIMIT 1)",
    )[0][0]  # fmt: skip
    assert session.title == first_prompt.strip() and session.counts.authored_user_messages == 8
    parts = _data(REAL, "part")
    tools = [p for p in parts if p["type"] == "tool"]
    tool_names = Counter(p["tool"] for p in tools)  # bash 11, write 5, read 2, glob 2, question 1
    assert categories(session) == {
        "shell": tool_names["bash"], "file_write": tool_names["write"], "file_read": tool_names["read"],
        "search": tool_names["glob"], "other": tool_names["question"],
    }  # fmt: skip
    assert all(a.output for a in session.actions)
    exits = Counter(p["state"].get("metadata", {}).get("exit") for p in tools if p["tool"] == "bash")
    assert Counter(a.exit_code for a in session.actions if a.HasField("exit_code")) == exits
    assert failed_actions(session) == sum(n for code, n in exits.items() if code) + sum(
        p["state"]["status"] == "error" for p in tools
    )
    # The session row's totals are the sum of every step's usage: the messages carry them, step by step.
    assert sum(m.input_tokens for m in session.messages) == tokens_in
    assert sum(m.output_tokens for m in session.messages) == tokens_out + reasoning
    assert sum(m.cache_read_tokens for m in session.messages) == cache_read
    models = Counter(m["modelID"] for m in messages if m["role"] == "assistant")
    assert session.model == models.most_common(1)[0][0] == "monkeycode-basic/deepseek-v4-flash"
    thinking = sum(b.type == "thinking" for m in session.messages for b in m.blocks)
    assert thinking == sum(p["type"] == "reasoning" for p in parts)


# Our own databases, in OpenCode's schema (the columns its migrations create that the reader looks at).
SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, time_created integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
  directory text NOT NULL, title text NOT NULL, version text NOT NULL, share_url text, revert text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_archived integer, agent text, model text,
  cost real DEFAULT 0 NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE account (id text PRIMARY KEY, email text, access_token text, refresh_token text);
"""
T0 = 1_785_420_295_689


def _database(
    path: Path, sessions: list[tuple[Any, ...]], messages: list[tuple[Any, ...]], parts: list[tuple[Any, ...]]
):
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO account VALUES ('acc', 'me@example.com', 'sk-secret-access', 'rt-secret-refresh')")
    conn.executemany(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
        " VALUES (?, 'p1', ?, 'slug', ?, ?, 'v1.16.0', ?, ?)",
        sessions,
    )
    conn.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?)", messages)
    conn.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", parts)
    conn.commit()
    conn.close()
    return path


def _message(mid: str, sid: str, at: int, **data: Any) -> tuple[Any, ...]:
    return (mid, sid, at, at, orjson.dumps({"time": {"created": at}, **data}).decode())


def _part(pid: str, mid: str, sid: str, at: int, **data: Any) -> tuple[Any, ...]:
    return (pid, mid, sid, at, at, orjson.dumps(data).decode())


def _subagent_database(path: Path) -> Path:
    task = {
        "status": "completed", "input": {"description": "find it", "prompt": "Where is the pool?",
        "subagent_type": "explore"}, "output": "In db/pool.py.", "metadata": {"sessionId": "ses_child"},
        "time": {"start": T0 + 3, "end": T0 + 9},
    }  # fmt: skip
    error = {"name": "APIError", "data": {"message": "rate limited"}}
    return _database(
        path,
        [("ses_main", None, "/home/me/shop", "Pool hunt", T0, T0 + 20),
         ("ses_child", "ses_main", "/home/me/shop", "find it (@explore subagent)", T0 + 4, T0 + 8)],
        [_message("msg_1", "ses_main", T0 + 1, role="user", agent="build"),
         _message("msg_2", "ses_main", T0 + 2, role="assistant", parentID="msg_1", modelID="gpt-5", finish="tool-calls",
                  tokens={"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}, cost=0.25),
         _message("msg_3", "ses_child", T0 + 5, role="user", agent="explore"),
         _message("msg_4", "ses_child", T0 + 6, role="assistant", parentID="msg_3", modelID="gpt-5-mini",
                  finish="stop"),
         _message("msg_5", "ses_main", T0 + 10, role="assistant", parentID="msg_1", modelID="gpt-5", error=error),
         ("msg_6", "ses_main", T0 + 11, T0 + 11, "{not json")],
        [_part("prt_1", "msg_1", "ses_main", T0 + 1, type="text", text="where is the pool?"),
         _part("prt_2", "msg_2", "ses_main", T0 + 3, type="tool", tool="task", callID="call_task", state=task),
         _part("prt_3", "msg_3", "ses_child", T0 + 5, type="text", text="Where is the pool?"),
         _part("prt_4", "msg_4", "ses_child", T0 + 6, type="text", text="In db/pool.py."),
         _part("prt_5", "msg_5", "ses_main", T0 + 10, type="step-start")],
    )  # fmt: skip


def test_a_subagent_session_links_to_its_task_call_and_an_api_error_is_an_event(tmp_path: Path) -> None:
    result = parse_file(_subagent_database(tmp_path / "opencode.db"))
    assert result.format == "opencode-db"
    main, child = result.sessions
    assert (main.id, main.title, main.cwd, main.repo) == (
        "opencode-session:ses_main",
        "Pool hunt",
        "/home/me/shop",
        "shop",
    )
    (delegation,) = main.delegations
    assert (delegation.child_session_id, delegation.agent) == ("opencode-session:ses_child", "explore")
    assert (child.parent_session_id, child.agent, child.counts.authored_user_messages) == (main.id, "explore", 0)
    assert [e.text for e in main.events if e.kind == "api_error"] == ["API error: APIError: rate limited"]
    reply = next(m for m in main.messages if m.role == "assistant")
    assert (reply.model, reply.input_tokens, reply.output_tokens, reply.cost_usd) == ("gpt-5", 10, 5, 0.25)
    # The damaged row is named; the rest of its session is kept.
    [damaged] = result.issues
    assert damaged.code == "invalid_record" and "message msg_6: data is not a JSON object" in damaged.reason
    assert damaged.path == str(tmp_path / "opencode.db")


def test_credentials_in_the_database_are_never_read(tmp_path: Path) -> None:
    result = parse_file(_subagent_database(tmp_path / "opencode.db"))
    stored = b"".join(s.SerializeToString() for s in result.sessions)
    assert b"sk-secret-access" not in stored and b"rt-secret-refresh" not in stored and b"me@example.com" not in stored


def test_messages_without_their_session_row_are_kept_and_reported(tmp_path: Path) -> None:
    path = _database(
        tmp_path / "opencode.db",
        [],
        [_message("msg_1", "ses_orphan", T0, role="user")],
        [_part("prt_1", "msg_1", "ses_orphan", T0, type="text", text="still here")],
    )
    result = parse_file(path)
    (session,) = result.sessions
    assert session.id == "opencode-session:ses_orphan" and session.title == "still here"
    assert ["has no row in session" in i.reason for i in result.issues] == [True]


def test_a_database_cut_short_is_reported_with_its_path(tmp_path: Path) -> None:
    whole = _subagent_database(tmp_path / "whole.db").read_bytes()
    cut = tmp_path / "opencode.db"
    cut.write_bytes(whole[: len(whole) // 2])
    result = parse_file(cut)
    assert result.issues and all(i.path == str(cut) for i in result.issues)
