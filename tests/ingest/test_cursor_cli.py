"""The Cursor Agent CLI's chats (`~/.cursor/chats/<hash>/<agent id>/store.db`, origin cursor-cli-session): the real
stores of ../shared/real-logs/cursor_cli counted in the test itself (sqlite3 and json over the JSON blobs), and stores
of our own, built in tmp_path as the CLI lays them out, for damage: a lost root, a header that is not one."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from quarry.ingest.parse import parse_file
from quarry.ingest.validate import session_problems
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

REAL = REAL_LOGS / "cursor_cli"
SHORT = (
    REAL
    / "RLuf__FazAI__.cursor__chats__887904812217cca9bc2b9adb875daf42__dd3957b4-a8a8-41bc-83b9-a9bbb9fc4073__store.db"
)
LONG = (
    REAL
    / "RLuf__FazAI__.cursor__chats__887904812217cca9bc2b9adb875daf42__f7c24f05-8e2a-4e79-82ae-e2f53fa05141__store.db"
)


def _store(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the JSON message blobs, read independently of the parser."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        (value,) = conn.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
        messages = []
        for (data,) in conn.execute("SELECT data FROM blobs"):
            try:
                messages.append(json.loads(data))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue  # a binary record
        return json.loads(bytes.fromhex(value)), messages
    finally:
        conn.close()


def _parts(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [p for m in messages if isinstance(m["content"], list) for p in m["content"] if p.get("type") == kind]


@needs_shared
def test_the_short_chat_reads_in_conversation_order_with_its_title_and_model() -> None:
    result = parse_file(SHORT)
    assert result.format == "cursor-cli" and not result.issues
    (session,) = result.sessions
    assert not session_problems(session)
    header, messages = _store(SHORT)
    assert session.id == f"cursor-cli-session:{header['agentId']}" and session.created_ms == header["createdAt"]
    # The name holds a DEL typed into the prompt: applied, the title reads as the user meant it.
    assert "problm\x7fema" in header["name"] and session.title == "tem algum problema eeeeeeeeeeeeeeexecutar 2 sessoe:?"
    stored = Counter(m["role"] for m in messages)  # system 1, user 17, assistant 17, tool 1
    # The root also holds the reply being written when the copy was made (no blob of its own): one assistant more.
    assert roles(session) == {**stored, "assistant": stored["assistant"] + 1}
    assert session.counts.authored_user_messages == stored["user"]
    # Conversation order, not storage order: the system prompt, then each prompt answered before the next one.
    sequence = "".join(m.role[0] for m in session.messages)
    assert re.fullmatch(r"s(u(at)*a)+", sequence), sequence
    assert session.messages[1].blocks[0].text.strip() == session.title  # the first prompt, its erase keys applied
    assert {m.model for m in session.messages if m.role == "assistant"} == {header["lastUsedModel"]} == {"gpt-5"}
    # One Read answered, and the pending reply's Shell call, not answered yet.
    (read,) = _parts(messages, "tool-call")
    assert read["toolName"] == "Read" and categories(session) == {"file_read": 1, "shell": 1}
    assert [bool(a.output) for a in session.actions] == [True, False]


@needs_shared
def test_the_long_chat_s_tool_calls_and_their_outcomes() -> None:
    result = parse_file(LONG)
    assert not result.issues
    (session,) = result.sessions
    _, messages = _store(LONG)
    calls, results = _parts(messages, "tool-call"), _parts(messages, "tool-result")
    assert len(calls) == len(results) == len(session.actions) == 59 and all(a.output for a in session.actions)
    names = Counter(c["toolName"] for c in calls)  # ApplyPatch 13, Write 12, Read 10, Shell 8, Grep 8, LS 7, Glob 1
    assert categories(session) == {
        "file_edit": names["ApplyPatch"], "file_write": names["Write"], "file_read": names["Read"],
        "shell": names["Shell"], "search": names["Grep"] + names["LS"] + names["Glob"],
    }  # fmt: skip
    # Failures: a patch the CLI refused ("Error: …") and a command that exited non-zero.
    exits = [re.match(r"Finished with exit code (-?\d+)\.", r["result"]) for r in results if r["toolName"] == "Shell"]
    codes = Counter(int(m.group(1)) for m in exits if m)
    errors = sum(r["result"].startswith("Error") for r in results)
    assert Counter(a.exit_code for a in session.actions if a.HasField("exit_code")) == codes == {0: 7, 2: 1}
    assert failed_actions(session) == errors + codes[2] == 2
    paths = {
        c["args"].get("file_path") or c["args"].get("path") for c in calls if c["toolName"] in ("ApplyPatch", "Write")
    }
    assert {a.path for a in session.actions if a.category in ("file_edit", "file_write")} == paths
    thinking = [b for m in session.messages for b in m.blocks if b.type == "thinking"]
    assert len(thinking) == len(_parts(messages, "reasoning")) == 26


def _write_store(path: Path, header: Any, messages: list[dict[str, Any]], root: bytes | None) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB); CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    )
    ids = []
    for message in messages:
        data = json.dumps(message).encode()
        ids.append(hashlib.sha256(data).digest())
        conn.execute("INSERT INTO blobs VALUES (?, ?)", (hashlib.sha256(data).hexdigest(), data))
    if root is None:  # the root as the CLI writes it: field 1 (length-delimited) per message id, in order
        root = b"".join(b"\x0a\x20" + blob_id for blob_id in reversed(ids))
    root_id = hashlib.sha256(root).hexdigest()
    conn.execute("INSERT INTO blobs VALUES (?, ?)", (root_id, root))
    value = header if isinstance(header, str) else json.dumps({**header, "latestRootBlobId": root_id}).encode().hex()
    conn.execute("INSERT INTO meta VALUES ('0', ?)", (value,))
    conn.commit()
    conn.close()
    return path


CALL = {"type": "tool-call", "toolCallId": "call_1\nfc_1", "toolName": "Shell", "args": {"command": "pytest"}}
RESULT = {"type": "tool-result", "toolCallId": "call_1\nfc_1", "toolName": "Shell",
          "result": "Finished with exit code 1.\n\nstdout: 1 failed"}  # fmt: skip
CHAT = [
    {"role": "user", "content": [{"type": "text", "text": "run the tests"}]},
    {"role": "assistant", "id": "1", "content": [CALL]},
    {"role": "tool", "id": "call_1\nfc_1", "content": [RESULT]},
]  # fmt: skip
HEADER = {"agentId": "a1b2", "name": "run the tests", "createdAt": 1754635645568, "lastUsedModel": "gpt-5"}


def test_the_root_orders_the_messages_and_a_failed_command_is_failed(tmp_path: Path) -> None:
    # The root lists the messages in reverse storage order here: the root's order wins.
    result = parse_file(_write_store(tmp_path / "store.db", HEADER, list(reversed(CHAT)), None))
    (session,) = result.sessions
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    (action,) = session.actions
    assert (action.category, action.exit_code, action.failed) == ("shell", 1, True)


def test_a_lost_root_is_reported_and_the_messages_are_read_in_storage_order(tmp_path: Path) -> None:
    path = _write_store(tmp_path / "store.db", HEADER, CHAT, b"\xff\xff\xff")
    result = parse_file(path)
    (session,) = result.sessions
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    [lost] = result.issues
    assert lost.path == str(path) and "root blob" in lost.reason


def test_a_header_that_is_not_json_is_a_clear_issue(tmp_path: Path) -> None:
    path = _write_store(tmp_path / "store.db", "zz-not-a-header", CHAT, None)
    result = parse_file(path)
    assert not result.sessions
    [bad] = result.issues
    assert bad.path == str(path) and bad.code == "invalid_record" and "chat header" in bad.reason
