"""Claude.ai data exports (`conversations.json`, origin claude-ai-export): the real export of
../shared/real-logs/claude_ai counted as jq counts it (the command beside each number), and fixtures of
our own for what it lacks: an edited first prompt, calls without ids, block types not seen yet, a new
field, a cut file."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_bytes, parse_file
from tests.shared_paths import REAL_LOGS, needs_shared

EXPORT = REAL_LOGS / "claude_ai" / "Artem-SCM-AI__life-builder-os__conversations.subset.json"
BRANCHED = "claude-ai-export:708bbea4-fccf-46ff-9802-d33be25f7198"


@needs_shared
def test_the_real_export_s_sessions_messages_tools_and_titles() -> None:
    result = parse_file(EXPORT)
    assert result.format == "claude-ai" and not result.issues
    sessions = result.sessions
    # jq '[.[] | select((.chat_messages|length)>0)] | length'  -> 8 (and one empty conversation)
    assert len(sessions) == 8 and result.skipped_record_types["claude-ai:empty-conversation"] == 1
    # jq '[.[] | .chat_messages[] | .sender] | group_by(.) | map({(.[0]): length}) | add'  -> human 22, assistant 21
    assert Counter(m.role for s in sessions for m in s.messages) == {"user": 22, "assistant": 21}
    actions = [a for s in sessions for a in s.actions]
    # jq '[.[] | .chat_messages[] | .content[] | select(.type=="tool_use")] | length'  -> 29, each with its result
    assert len(actions) == 29 and all(a.output for a in actions)
    # jq '[.[] | .chat_messages[] | .content[] | select(.type=="tool_result" and .is_error==true)] | length'  -> 6
    assert sum(a.failed for a in actions) == 6
    # jq '... select(.type=="tool_use") | .name' grouped: web_search 6, view 2, bash_tool 1, create_file + file_create 2
    assert Counter(a.category for a in actions) == {"other": 18, "web": 6, "file_read": 2, "file_write": 2, "shell": 1}
    # jq -r '.[] | select((.chat_messages|length)>0) | .name'
    assert [s.title for s in sessions] == [
        "JOD to USD exchange rate",
        "Setting up supply chain dashboards in Asana",
        "Trash can dolly explained",
        "Home video course lighting setup",
        "Meeting request to finalize pricing",
        "Add to artifacts",
        "Product models and box configuration reference",
        "Documents and templates",
    ]
    assert all(s.id == f"claude-ai-export:{s.native_id}" and s.runs[0].provider == "anthropic" for s in sessions)
    # jq '[.[] | .chat_messages[] | .content[] | select(.type=="thinking")] | length'  -> 29 blocks in 15 messages
    assert sum(b.type == "thinking" for s in sessions for m in s.messages for b in m.blocks) == 29


@needs_shared
def test_the_real_export_s_edited_first_prompt_is_a_shadowed_branch() -> None:
    # jq '.[] | select(.uuid=="708bbea4-…") | .chat_messages[] | [.sender, .parent_message_uuid[0:8]]': two human
    # messages under the nil root (the prompt, then its edit 2 minutes later) and the reply to the edit
    session = next(s for s in parse_file(EXPORT).sessions if s.id == BRANCHED)
    assert [(m.role, m.surface) for m in session.messages] == [
        ("user", "current"),
        ("assistant", "current"),
        ("user", "shadowed"),
    ]


@needs_shared
def test_uploaded_files_are_referenced_by_name_and_an_upload_alone_is_a_message() -> None:
    # jq -c '[.[] | .chat_messages[] | select((.files|length)>0) | [.files[].file_name]]'  -> 4 messages, 6 files; two
    # of those messages have no text (jq '… select(.text=="")'): they are kept, holding the names alone
    sessions = parse_file(EXPORT).sessions
    texts = [b.text for s in sessions for m in s.messages for b in m.blocks if b.text.startswith("files: ")]
    assert texts == [
        "files: 3PL Product data.xlsx - Product.csv",
        "files: 3PL Product data-3.xlsx",
        "files: JumpZylla Fedex zone price out.xlsx, Rate Sheet Jumpzylla.pdf, "
        "SMART SHIP NETWORK, LLC - WAREHOUSE SERVICE AGREEMENT_Jumpzylla.pdf",
        "files: jumpzylla_3pl_dashboard.jsx",
    ]


# ------------------------------------------------------------------ fixtures of our own

NIL = "00000000-0000-4000-8000-000000000000"


def conversation(*messages: dict[str, Any], **extra: Any) -> bytes:
    body = {"uuid": "c-1", "name": "fixture", "summary": "", "created_at": "2026-03-01T10:00:00.000000Z",
            "updated_at": "2026-03-01T10:09:00.000000Z", "account": {"uuid": "a"},
            "chat_messages": list(messages), **extra}  # fmt: skip
    return orjson.dumps([body])


def message(uuid: str, sender: str, parent: str, minute: int, *content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"uuid": uuid, "text": "", "content": list(content), "sender": sender,
            "created_at": f"2026-03-01T10:0{minute}:00.000000Z", "updated_at": f"2026-03-01T10:0{minute}:00.000000Z",
            "attachments": [], "files": [], "parent_message_uuid": parent, **extra}  # fmt: skip


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value, "citations": []}


def test_calls_without_ids_pair_with_their_results_in_order_and_errors_mark_them_failed() -> None:
    call = {"type": "tool_use", "id": None, "name": "bash_tool", "input": {"command": "pytest -q"}}
    lookup = {"type": "tool_use", "id": None, "name": "web_search", "input": {"query": "sqlite wal"}}
    failed = {"type": "tool_result", "tool_use_id": None, "name": "bash_tool", "is_error": True,
              "content": [{"type": "text", "text": "Exit code 1\n2 failed"}]}  # fmt: skip
    page = {"type": "knowledge", "title": "WAL mode", "url": "https://sqlite.org/wal.html", "text": "…"}
    found = {"type": "tool_result", "tool_use_id": None, "name": "web_search", "is_error": False, "content": [page]}
    data = conversation(
        message("m1", "human", NIL, 0, text("run the tests")),
        message("m2", "assistant", "m1", 1, call, lookup, failed, found, text("Two tests fail.")),
    )
    session = parse_bytes(data, "conversations.json").sessions[0]
    shell, web = session.actions
    assert (shell.category, shell.command, shell.failed, shell.exit_code) == ("shell", "pytest -q", True, 1)
    assert shell.followup == "acknowledged"
    assert (web.category, web.failed) == ("web", False) and "sqlite.org/wal.html" in web.output


def test_an_edited_prompt_shadows_what_it_replaced_and_the_newest_leaf_is_current() -> None:
    data = conversation(
        message("p1", "human", NIL, 0, text("first try")),
        message("r1", "assistant", "p1", 1, text("an answer to the first try")),
        message("p2", "human", NIL, 2, text("second try")),
        message("r2", "assistant", "p2", 3, text("an answer to the second try")),
    )
    session = parse_bytes(data, "conversations.json").sessions[0]
    assert [(m.blocks[0].text, m.surface) for m in session.messages] == [
        ("second try", "current"),
        ("an answer to the second try", "current"),
        ("first try", "shadowed"),
        ("an answer to the first try", "shadowed"),
    ]


def test_block_types_not_seen_yet_keep_their_text_and_new_fields_are_ignored() -> None:
    data = conversation(
        message("m1", "human", NIL, 0, text("hello"), new_field={"x": 1}),
        message("m2", "assistant", "m1", 1, {"type": "voice_note", "text": "spoken words"}, {"type": "widget"}),
        new_top_level=True,
    )
    result = parse_bytes(data, "conversations.json")
    blocks = [b.text for m in result.sessions[0].messages for b in m.blocks]
    assert blocks == ["hello", "spoken words"]
    assert result.skipped_record_types["claude-ai:content/widget"] == 1


@pytest.mark.parametrize("cut", [100, 400])
def test_a_cut_export_is_reported_and_parses_nothing(cut: int) -> None:
    data = conversation(message("m1", "human", NIL, 0, text("hello " * 50)))
    result = parse_bytes(data[:cut], "conversations.json")
    assert result.sessions == [] and [i.code for i in result.issues] == ["unreadable"]
    assert "truncated JSON" in result.issues[0].reason
