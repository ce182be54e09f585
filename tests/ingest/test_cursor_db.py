"""Cursor's SQLite stores (`state.vscdb`, origin cursor-session): the two real databases of
../shared/real-logs/cursor counted with sqlite3 and jq (the command beside each number), and databases of
our own, built in tmp_path, for what they lack: the global database's cursorDiskKV composers and bubbles
(tool calls, thinking, tokens, dropped bubbles, sub-composers), broken rows and a damaged page."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.ingest.sources import cursor_db
from quarry.ingest.sources.sqlite_snapshot import open_snapshot, table_columns
from tests.ingest.support import roles
from tests.shared_paths import REAL_LOGS, needs_shared

CURSOR = REAL_LOGS / "cursor"
INLINE = CURSOR / "slevin48__cursor-history__state.vscdb"  # Cursor ≈0.42: chats and composers in ItemTable
HEADS = CURSOR / "choigoyoon__Oifunding__state.vscdb"  # Cursor ≈0.46: composer heads only, cursorDiskKV empty
# Below, `q KEY` stands for: sqlite3 -readonly <file> "select value from ItemTable where key='KEY'"
CHAT = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSERS = "composer.composerData"


@needs_shared
def test_the_inline_database_s_chat_tabs_and_composers() -> None:
    result = parse_file(INLINE)
    assert result.format == "cursor" and not result.issues
    sessions = result.sessions
    # q CHAT | jq '.tabs | length'  -> 5
    # q COMPOSERS | jq '[.allComposers[] | select((.conversation|length)>0)] | length'  -> 26 (all of them)
    assert len(sessions) == 31 and all(s.id == f"cursor-session:{s.native_id}" for s in sessions)
    # q CHAT | jq '[.tabs[].bubbles[] | select(.type=="user" and .text != "")] | length'  -> 22 (5 more have no text:
    # the input box each tab ends with, 2 of them with the open file attached: fileSelections)
    # q CHAT | jq '[.tabs[].bubbles[] | select(.type=="ai")] | length'  -> 22
    # q COMPOSERS | jq -c '[.allComposers[].conversation[] | .type] | group_by(.) | map(length)'  -> [41,41]
    assert Counter(m.role for s in sessions for m in s.messages) == {"user": 63, "assistant": 63}
    assert all(m.surface == "current" and m.authored for s in sessions for m in s.messages)
    # q aiService.prompts | jq length  -> 66; sqlite3 … "select count(*) from ItemTable" -> 66 rows, 4 of them read
    # (chatdata, composerData, prompts, the explorer state)
    assert result.skipped_record_types == {"cursor:empty-bubble": 5, "cursor:prompt": 66, "cursor:item/other": 62}
    # q CHAT | jq -r '.tabs[].chatTitle' (5 titles); q COMPOSERS | jq -r '.allComposers[].name | select(. != null)' (7)
    named = [s.title for s in sessions if s.title_snapshot.kind == "export"]
    assert named[:5] == [
        "Ionic App Sidebar Customization Guide",
        "Resolving Module Not Found Error in Code",
        "Resolving Module Not Found Error in Code",
        "Running a Local Python Server via CLI",
        "Android SDK Not Found Error Fix",
    ]
    assert len(named) == 12 and "by default the dark mode settings is off." in named
    # q CHAT | jq -c '[.tabs[].bubbles[] | .modelType | select(. != null)] | unique'  -> ["claude-3.5-sonnet"];
    # composers of this version record no model
    assert {s.model for s in sessions[:5]} == {"claude-3.5-sonnet"} and {s.model for s in sessions[5:]} == {""}


@needs_shared
def test_the_inline_database_s_composer_edits_are_file_edit_actions() -> None:
    sessions = parse_file(INLINE).sessions
    actions = [a for s in sessions for a in s.actions]
    # q COMPOSERS | jq '[.allComposers[].conversation[].codeBlocks[]?] | length'  -> 118, each in codeBlockData
    # q COMPOSERS | jq '[.allComposers[] | . as $c | .conversation[] | .codeBlocks[]? |
    #   $c.codeBlockData[.uri.external][.version].status] | group_by(.) | map({(.[0]): length}) | add'
    assert len(actions) == 118 and {(a.category, a.tool) for a in actions} == {("file_edit", "edit_file")}
    assert Counter(a.output for a in actions) == {
        "accepted": 45,
        "outdated": 31,
        "completed": 26,
        "cancelled": 8,
        "rejected": 8,
    }
    assert sum(a.failed for a in actions) == 16  # rejected + cancelled: not applied
    # the workspace folder: q workbench.explorer.treeViewState | jq -r '.focus[0]'  -> file:///c%3A/…/mobilechat::…
    assert {(s.cwd, s.repo) for s in sessions} == {("c:/Users/ydebray/Documents/mobilechat", "mobilechat")}
    assert Counter(a.path for a in actions)["src/app/app.routes.ts"] > 0


@needs_shared
def test_the_inline_database_s_attachments_code_and_words() -> None:
    sessions = parse_file(INLINE).sessions
    blocks = [b for s in sessions for m in s.messages for b in m.blocks]
    # q CHAT | jq '[.tabs[].bubbles[] | .selectedImages[]?] | length'  -> 4;
    # q COMPOSERS | jq '[.allComposers[].conversation[] | .context.selectedImages[]?] | length'  -> 12
    images = [b for b in blocks if b.type == "image"]
    assert len(images) == 16 and all(b.path and b.media_type in ("image/jpeg", "image/png") for b in images)
    # q CHAT | jq '[.tabs[].bubbles[] | select(.text != "") | .fileSelections[]?] | length'  -> 4, and 1 in a composer
    assert sum(b.text.startswith("files: ") for b in blocks) == 5
    # Cursor's fences name the file after the language (```typescript:src/app/app.routes.ts): the language alone stays
    languages = {b.language for b in blocks if b.type == "code"}
    assert "typescript" in languages and not any(":" in language for language in languages)
    # sqlite3 … "select count(*) from ItemTable where value like '%MathWork%'" -> 5 rows here, 0 in the other database;
    # grep -l MathWork cursor/*.md -> none
    main = next(s for s in sessions if s.native_id == "2aa483d1-573c-4039-ae4e-7415e28d2605")
    assert "MathWork account" in " ".join(b.text for m in main.messages for b in m.blocks)


@needs_shared
def test_a_workspace_database_of_composer_heads_yields_no_session() -> None:
    result = parse_file(HEADS)
    assert result.format == "cursor" and not result.issues and not result.sessions
    # q COMPOSERS | jq '[.allComposers[] | select(.type=="head")] | length'  -> 3 (their bubbles are in the global
    # database); q aiService.prompts | jq length -> 284; q aiService.generations | jq length -> 100;
    # sqlite3 … "select count(*) from cursorDiskKV" -> 0; "select count(*) from ItemTable" -> 73, 4 of them read
    assert result.skipped_record_types == {
        "cursor:composer-head": 3,
        "cursor:prompt": 284,
        "cursor:generation": 100,
        "cursor:item/other": 69,
    }


@needs_shared
@pytest.mark.parametrize(
    "name",
    [
        "opencode_go/chad-russell__chex-mix-timer__.crush__crush.db",
        "opencode_go/ojizou003__invadergame__.opencode__opencode.db",
        "goose/jwp23__dotfiles__.local__share__goose__sessions__sessions.db",
    ],
)
def test_other_tools_databases_are_not_cursor_s(name: str) -> None:
    with open_snapshot((REAL_LOGS / name).read_bytes(), str(REAL_LOGS / name)) as conn:
        assert cursor_db.recognize(table_columns(conn)) == ""


# ------------------------------------------------------------------ databases of our own

KV_TABLE = "(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"


def database(path: Path, items: dict[str, Any], disk: dict[str, Any] | None = None, page_size: int = 4096) -> Path:
    """A state.vscdb: ItemTable rows and, when given, cursorDiskKV rows (bytes and str values go in as they
    are, anything else as JSON)."""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute(f"CREATE TABLE ItemTable {KV_TABLE}")
    tables = {"ItemTable": items}
    if disk is not None:
        conn.execute(f"CREATE TABLE cursorDiskKV {KV_TABLE}")
        tables["cursorDiskKV"] = disk
    for table, rows in tables.items():
        for key, value in rows.items():
            stored = value if isinstance(value, str | bytes) else orjson.dumps(value).decode()
            conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, stored))
    conn.commit()
    conn.close()
    return path


def uri(path: str) -> dict[str, Any]:
    return {"$mid": 1, "fsPath": path, "external": f"file://{path}", "path": path, "scheme": "file"}


def tool(
    name: str, call_id: str, args: dict[str, Any], status: str, result: Any = None, **extra: Any
) -> dict[str, Any]:
    data = {"tool": 15, "toolCallId": call_id, "name": name, "rawArgs": orjson.dumps(args).decode(), "status": status}
    if result is not None:
        data["result"] = orjson.dumps(result).decode()
    return {**data, **extra}


def bubble(bubble_id: str, kind: int, minute: int, **fields: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "bubbleId": bubble_id, "createdAt": f"2026-01-05T10:{minute:02d}:00.000Z", **fields}


PARENT_BUBBLES = [
    bubble(
        "u1",
        1,
        0,
        text="Why does test_checkout fail?",
        modelInfo={"modelName": "gpt-5"},
        context={"fileSelections": [{"uri": uri("/home/dev/shop/tests/test_checkout.py")}]},
        images=[{"path": "/home/dev/shot.png", "uuid": "i1"}],
    ),
    bubble(
        "a1",
        2,
        1,
        text="Let me run it.\n\n```python:shop/cart.py\nTAX = 0.2\n```",
        thinking={"text": "The test depends on the wall clock.", "signature": ""},
        tokenCount={"inputTokens": 1200, "outputTokens": 80},
        timingInfo={"clientStartTime": 4745281.3, "clientRpcSendTime": 1767607261000, "clientEndTime": 1767607264000},
    ),
    bubble(
        "t1",
        2,
        2,
        toolFormerData=tool(
            "run_terminal_cmd",
            "call-1",
            {"command": "pytest tests/test_checkout.py", "is_background": False},
            "completed",
            {"output": "1 failed, 3 passed", "exitCodeV2": 1, "rejected": False},
        ),
    ),
    bubble(
        "t2",
        2,
        3,
        toolFormerData=tool(
            "read_file", "call-2", {"target_file": "/home/dev/shop/shop/cart.py"}, "completed", {"contents": "TAX = 2"}
        ),
    ),
    bubble(
        "t3",
        2,
        4,
        toolFormerData=tool(
            "search_replace",
            "call-3",
            {"file_path": "/home/dev/shop/shop/cart.py", "old_string": "TAX = 2", "new_string": "TAX = 0.2"},
            "completed",
            userDecision="rejected",
        ),
    ),
    bubble("t4", 2, 5, toolFormerData=tool("edit_file", "call-4", {"target_file": "shop/cart.py"}, "loading")),
    bubble("x1", 3, 6, text="a bubble type not seen yet"),
]


def global_database(path: Path) -> Path:
    parent = {
        "_v": 10,
        "composerId": "c-1",
        "name": "Fix the flaky checkout test",
        "createdAt": 1767607200000,
        "lastUpdatedAt": 1767607800000,
        "createdOnBranch": "fix/flaky",
        "modelConfig": {"modelName": "claude-4-sonnet", "maxMode": False},
        "workspaceIdentifier": {"id": "w", "uri": uri("/home/dev/shop")},
        "blobEncryptionKey": "SECRET-BLOB-KEY",
        "subComposerIds": ["c-2"],
        "aFieldOfTomorrow": {"kept": True},
        "fullConversationHeadersOnly": [
            *({"bubbleId": b["bubbleId"], "type": b["type"]} for b in PARENT_BUBBLES),
            {"bubbleId": "n1", "type": 2},
            {"bubbleId": "cut", "type": 2},
            {"bubbleId": "lost", "type": 2},
        ],
    }
    child = {
        "composerId": "c-2",
        "createdAt": 1767607300000,
        "fullConversationHeadersOnly": [{"bubbleId": "s1", "type": 1}, {"bubbleId": "s2", "type": 2}],
    }
    disk: dict[str, Any] = {
        "composerData:c-1": parent,
        "composerData:c-2": child,
        "composerData:c-3": {"composerId": "c-3", "fullConversationHeadersOnly": [], "createdAt": 1767607000000},
        **{f"bubbleId:c-1:{b['bubbleId']}": b for b in PARENT_BUBBLES},
        "bubbleId:c-1:n1": "null",
        "bubbleId:c-1:cut": '{"_v": 3, "type": 2, "text": "cut in the mid',
        "bubbleId:c-1:old": bubble("old", 1, 0, text="An earlier wording the user edited away"),
        "bubbleId:c-2:s1": bubble(
            "s1", 1, 2, text="Scan the fixtures for clocks", workspaceProjectDir="/home/dev/shop"
        ),
        "bubbleId:c-2:s2": bubble("s2", 2, 3, text="Two fixtures read time.time()."),
        "bubbleId:c-9:z": bubble("z", 1, 0, text="a bubble whose composer is gone"),
        "checkpointId:c-1:k1": {"files": []},
        "messageRequestContext:c-1:u1": {"gitStatusRaw": ""},
    }
    return database(path, {"cursorAuth/accessToken": "SECRET-TOKEN"}, disk)


def test_global_composers_bubbles_tools_and_what_was_skipped(tmp_path: Path) -> None:
    result = parse_file(global_database(tmp_path / "state.vscdb"))
    assert result.format == "cursor"
    assert [(i.code, i.reason.split(" is ")[0]) for i in result.issues] == [
        ("invalid_record", "cursorDiskKV bubbleId:c-1:cut")
    ]
    assert result.skipped_record_types == {
        "cursor:bubble/type-3": 1,
        "cursor:empty-bubble": 1,  # the JSON null row
        "cursor:missing-bubble": 1,  # a header without a row
        "cursor:empty-conversation": 1,  # c-3
        "cursor:row/checkpointId": 1,
        "cursor:row/messageRequestContext": 1,
        "cursor:bubble-without-composer": 1,
        "cursor:item/other": 1,  # the access token's row: never read
    }
    parent, child = result.sessions
    assert (parent.id, parent.title, parent.branch, parent.cwd, parent.repo) == (
        "cursor-session:c-1",
        "Fix the flaky checkout test",
        "fix/flaky",
        "/home/dev/shop",
        "shop",
    )
    assert (child.parent_session_id, child.cwd, child.title) == (
        "cursor-session:c-1",
        "/home/dev/shop",
        "Scan the fixtures for clocks",
    )
    assert [(m.role, m.surface) for m in parent.messages] == [
        ("user", "current"),
        *[("assistant", "current")] * 5,
        ("user", "shadowed"),  # a bubble the headers no longer list: after the current ones
    ]
    assert parent.created_ms == 1767607200000 and parent.updated_ms == 1767607800000


def test_global_bubble_contents_models_tokens_and_tool_results(tmp_path: Path) -> None:
    parent = parse_file(global_database(tmp_path / "state.vscdb")).sessions[0]
    question, reply = parent.messages[:2]
    assert [(b.type, b.text or b.path) for b in question.blocks] == [
        ("text", "Why does test_checkout fail?"),
        ("text", "files: /home/dev/shop/tests/test_checkout.py"),
        ("image", "/home/dev/shot.png"),
    ]
    assert [(b.type, b.language) for b in reply.blocks] == [("thinking", ""), ("text", ""), ("code", "python")]
    # the model the request asked for (the user bubble's), before the composer's configured one
    assert (reply.model, reply.input_tokens, reply.output_tokens, reply.duration_ms) == ("gpt-5", 1200, 80, 3000)
    assert parent.model == "gpt-5"
    run, read, replace, edit = parent.actions
    assert (run.tool, run.command, run.output, run.exit_code, run.failed) == (
        "run_terminal_cmd",
        "pytest tests/test_checkout.py",
        "1 failed, 3 passed",
        1,
        True,
    )
    assert run.followup  # the failure's follow-up is read from the messages after it
    assert (read.category, read.path, read.output, read.failed) == ("file_read", "shop/cart.py", "TAX = 2", False)
    assert (replace.tool, replace.path, replace.output, replace.failed) == (
        "search_replace",
        "shop/cart.py",
        "rejected",
        True,
    )
    assert (edit.category, edit.path, edit.output, edit.failed) == (
        "file_edit",
        "shop/cart.py",
        "",
        False,
    )  # still running


def test_global_rows_are_raw_events_and_secrets_stay_out(tmp_path: Path) -> None:
    path = global_database(tmp_path / "state.vscdb")
    result = parse_file(path)
    parent = result.sessions[0]
    types = [e.type for e in parent.log_events]
    assert types[0] == "cursor:composerData" and types.count("cursor:bubble/assistant") == 5
    assert "cursor:bubble/type-3" in types
    composer = parent.log_events[0]
    assert composer.surface == "log-only" and b"aFieldOfTomorrow" in composer.raw_json
    dropped = parent.log_events[-1]
    assert (dropped.surface, dropped.replaced_by) == ("shadowed", 0)
    everything = b"".join(s.SerializeToString() for s in result.sessions)
    assert b"SECRET-BLOB-KEY" not in everything and b"SECRET-TOKEN" not in everything
    assert parse_file(path).sessions == result.sessions  # deterministic


def workspace_database(path: Path, *, disk: dict[str, Any] | None = None) -> Path:
    edited = "/c:/work/shop/src/app.ts"
    chat = {
        "tabs": [
            {
                "tabId": "tab-1",
                "chatTitle": "Routing question",
                "lastSendTime": 1731818231743,
                "bubbles": [
                    {
                        "type": "user",
                        "id": "b1",
                        "text": "What does this route do?",
                        "selections": [
                            {"text": "```typescript\nconst routes = [];\n```", "rawText": "const routes = [];"}
                        ],
                    },
                    {"type": "ai", "id": "b2", "text": "It declares no route yet.", "modelType": "gpt-4o"},
                    {"type": "system", "id": "b3", "text": "a notice"},
                    {"type": "user", "id": "b4", "text": "", "fileSelections": [{"uri": uri("c:\\work\\shop\\a.ts")}]},
                ],
            }
        ]
    }
    composers = {
        "allComposers": [
            {
                "composerId": "k-1",
                "createdAt": 1731799911716,
                "conversation": [
                    {"type": 1, "bubbleId": "q", "text": "Add a route", "context": {}},
                    {
                        "type": 2,
                        "bubbleId": "r",
                        "text": "```typescript:src/app.ts\nroutes.push(1)\n```",
                        "codeBlocks": [
                            {"uri": {"fsPath": "c:\\work\\shop\\src\\app.ts", "external": "file:///c%3A/work/shop/src/app.ts",
                                     "path": edited}, "version": 0, "codeBlockIdx": 0},
                            {"uri": {"fsPath": "c:\\work\\shop\\src\\app.ts", "external": "file:///c%3A/work/shop/src/app.ts",
                                     "path": edited}, "version": 1, "codeBlockIdx": 1},
                        ],
                    },
                ],
                "codeBlockData": {
                    "file:///c%3A/work/shop/src/app.ts": [
                        {"version": 0, "status": "rejected", "languageId": "typescript"},
                        {"version": 1, "status": "accepted", "languageId": "typescript"},
                    ]
                },
            },
            {"type": "head", "composerId": "k-2", "name": "only a head", "createdAt": 1738732158464},
            {"type": "head", "composerId": "g-1", "name": "in the global table too"},
        ]
    }  # fmt: skip
    items = {
        CHAT: chat,
        COMPOSERS: composers,
        "workbench.explorer.treeViewState": {"focus": ["file:///c%3A/work/shop::file:///c%3A/work/shop/src"]},
        "aiService.prompts": [{"text": "Add a route", "commandType": 4}, {"text": "What does", "commandType": 4}],
        "aiService.generations": [{"unixMs": 1731799911716, "generationUUID": "g", "type": "composer"}],
        "workbench.panel.markers": {"a": 1},
    }
    return database(path, items, disk)


def test_workspace_chat_tabs_inline_composers_and_code_block_edits(tmp_path: Path) -> None:
    result = parse_file(workspace_database(tmp_path / "state.vscdb"))
    assert result.format == "cursor" and not result.issues
    assert result.skipped_record_types == {
        "cursor:bubble/type-system": 1,
        "cursor:empty-bubble": 1,  # the input box with the open file attached
        "cursor:composer-head": 2,
        "cursor:prompt": 2,
        "cursor:generation": 1,
        "cursor:item/other": 1,
    }
    tab, composer = result.sessions
    assert (tab.id, tab.title, tab.model, tab.cwd, tab.repo) == (
        "cursor-session:tab-1",
        "Routing question",
        "gpt-4o",
        "c:/work/shop",
        "shop",
    )
    assert roles(tab) == {"user": 1, "assistant": 1}
    assert [(b.type, b.language, b.text) for b in tab.messages[0].blocks] == [
        ("text", "", "What does this route do?"),
        ("code", "typescript", "const routes = [];"),
    ]
    assert (composer.id, composer.title) == ("cursor-session:k-1", "Add a route")
    rejected, accepted = composer.actions
    assert (rejected.tool, rejected.category, rejected.path, rejected.output, rejected.failed) == (
        "edit_file",
        "file_edit",
        "src/app.ts",
        "rejected",
        True,
    )
    assert (accepted.output, accepted.failed) == ("accepted", False)


def test_a_workspace_head_of_a_composer_in_the_same_database_is_read_once(tmp_path: Path) -> None:
    global_row = {
        "composerId": "g-1",
        "name": "in the global table too",
        "fullConversationHeadersOnly": [{"bubbleId": "u", "type": 1}],
    }
    disk = {"composerData:g-1": global_row, "bubbleId:g-1:u": bubble("u", 1, 0, text="hello")}
    result = parse_file(workspace_database(tmp_path / "state.vscdb", disk=disk))
    assert [s.id for s in result.sessions] == ["cursor-session:g-1", "cursor-session:tab-1", "cursor-session:k-1"]
    assert result.skipped_record_types["cursor:composer-head"] == 1  # k-2 alone


def test_a_vs_code_database_without_chats_yields_no_session(tmp_path: Path) -> None:
    path = database(tmp_path / "state.vscdb", {"workbench.panel.markers": {"a": 1}, "interactive.sessions": []})
    result = parse_file(path)
    assert (result.format, result.sessions, result.issues) == ("cursor", [], [])
    assert result.skipped_record_types == {"cursor:item/other": 2}


def test_values_of_the_wrong_type_read_as_empty(tmp_path: Path) -> None:
    bubbles = [{"type": "user", "text": 7}, "junk", {"type": "ai", "text": "hi"}]
    items = {CHAT: {"tabs": [{"tabId": "t", "bubbles": bubbles}]}, COMPOSERS: {"allComposers": "not a list"}}
    result = parse_file(database(tmp_path / "state.vscdb", items))
    (session,) = result.sessions
    assert roles(session) == {"assistant": 1}
    assert result.skipped_record_types == {"cursor:empty-bubble": 1, "cursor:bubble/type-(none)": 1}


def test_a_damaged_page_costs_its_rows_and_the_rest_is_read(tmp_path: Path) -> None:
    disk: dict[str, Any] = {}
    for n in range(12):
        disk[f"composerData:c{n:02d}"] = {
            "composerId": f"c{n:02d}",
            "fullConversationHeadersOnly": [{"bubbleId": "u", "type": 1}],
        }
        disk[f"bubbleId:c{n:02d}:u"] = bubble("u", 1, n, text=f"question {n} " + "y" * 300)
    data = bytearray(database(tmp_path / "state.vscdb", {}, disk, page_size=1024).read_bytes())
    data[-1024:] = bytes(1024)  # the last page, the last rows written
    result = parse_bytes(bytes(data), "state.vscdb")
    assert result.format == "cursor" and 0 < len(result.sessions) < 12
    assert [i.code for i in result.issues] == ["unreadable"]


def test_a_cut_database_is_reported_unreadable(tmp_path: Path) -> None:
    data = global_database(tmp_path / "state.vscdb").read_bytes()
    result = parse_bytes(data[: len(data) // 2], "state.vscdb")
    assert (result.format, [i.code for i in result.issues]) == ("unknown", ["unreadable"])
