"""OpenCode sessions (`opencode export` documents and the JSON storage, origin opencode-session): the two real
exports of ../shared/real-logs/opencode counted as jq counts them (the command beside each number), the first
one's content laid out as both storage layouts, and fixtures of our own for what the real files lack: child
sessions, compaction, revert, injected text, attachments, errors, part types not seen yet, cut files."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from quarry.ingest import detect
from quarry.ingest.parse import iter_parse, parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.support import categories, roles
from tests.shared_paths import REAL_LOGS, needs_shared

SKILLPATH = REAL_LOGS / "opencode" / "rajsinghast03__skillpath__chat-export.json"
CAP = REAL_LOGS / "opencode" / "w12z__Cap__opencode-session.json"


@needs_shared
def test_the_skillpath_export_s_messages_tools_and_tokens() -> None:
    result = parse_file(SKILLPATH)
    assert result.format == "opencode" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    # jq -c '.info | [.id, .title, .directory, .parentID]'
    assert session.id == "opencode-session:ses_ff11ac3b7ffeuofa8m9N4TlzSu" and session.title == "Assignment.md review"
    assert (session.cwd, session.repo, session.parent_session_id) == (
        "/home/rajsinghast03/dev/skillpath",
        "skillpath",
        "",
    )
    # jq -c '[.messages[].info.role] | group_by(.) | map({(.[0]): length}) | add'  -> assistant 67, user 3
    assert roles(session) == {"user": 3, "assistant": 67} and session.counts.authored_user_messages == 3
    # jq '[.messages[].parts[] | select(.type=="tool")] | length'  -> 70, all completed (each has its output)
    assert len(session.actions) == 70 and all(a.output for a in session.actions)
    # jq '... select(.type=="tool" and (.state.status=="error" or ((.state.metadata.exit? // 0) != 0)))' -> 0
    assert sum(a.failed for a in session.actions) == 0
    # jq '[... select(.tool=="bash") | .state.metadata.exit]'  -> 39 zeros
    assert Counter(a.exit_code for a in session.actions if a.HasField("exit_code")) == {0: 39}
    # jq '[.messages[].parts[] | select(.type=="tool") | .tool] | group_by(.) | ...': bash 39, read 13, webfetch 6,
    # todowrite 4, question 2, skill 2, write 2, glob 1, edit 1
    assert categories(session) == {
        "shell": 39, "file_read": 13, "other": 8, "web": 6, "file_write": 2, "search": 1, "file_edit": 1
    }  # fmt: skip
    # jq -c '[... select(.tool=="write" or .tool=="edit") | .state.input.filePath]'
    assert sorted(a.path for a in session.actions if a.category in ("file_edit", "file_write")) == [
        "/tmp/opencode/Courses.tsx",
        "NOTE.md",
        "README.md",
    ]
    blocks = Counter(b.type for m in session.messages for b in m.blocks)
    # jq '[.messages[].parts[] | select(.type=="reasoning")] | length'  -> 5; text parts: 53;
    # jq -c '[... .state.attachments[]? | .mime] | group_by(.) ...'  -> image/jpeg 6 (referenced, not inlined)
    assert blocks == {"tool_use": 70, "tool_result": 70, "text": 53, "thinking": 5, "image": 6}
    # jq -c '[.messages[] | select(.info.role=="assistant") | .info.modelID] | group_by(.) ...'
    # -> kimi-k3 61, deepseek-v4-flash-free 6
    assert session.model == "kimi-k3"
    assert Counter(m.model for m in session.messages if m.role == "assistant") == {
        "kimi-k3": 61,
        "deepseek-v4-flash-free": 6,
    }
    # jq '[.messages[].parts[] | select(.type=="step-finish") | .tokens.input] | add'  -> 169191; output + reasoning
    # -> 22149; .tokens.cache.read -> 5333200
    assert sum(m.input_tokens for m in session.messages) == 169_191
    assert sum(m.output_tokens for m in session.messages) == 22_149
    assert sum(m.cache_read_tokens for m in session.messages) == 5_333_200
    assert session.runs[0].status == "completed" and session.runs[0].total_tokens == 5_524_540
    # grep -c Skillpath: 20 lines here, 0 in the other export
    assert any("Skillpath" in b.text for m in session.messages for b in m.blocks)


@needs_shared
def test_the_sanitized_cap_export_keeps_an_aborted_reply_a_failed_edit_and_a_running_command() -> None:
    result = parse_file(CAP)
    assert result.format == "opencode" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    # jq -c '.info | [.id, .title, .directory]': the title and the directory are redaction markers
    assert session.id == "opencode-session:ses_0922c7a27ffesprkDLUo8I7EY3"
    assert session.title == "[redacted:session-title:ses_0922c7a27ffesprkDLUo8I7EY3]"
    assert (session.cwd, session.repo) == ("", "")
    # jq -c '[.messages[].info.role] | group_by(.) ...'  -> assistant 80, user 16; jq -c '[.messages[] |
    # select(.info.error) | [.info.id, [.parts[].type]]]'  -> one MessageAbortedError reply holding step-start and
    # reasoning only: OpenCode does not send it back to the model (log-only)
    assert roles(session) == {"user": 16, "assistant": 79} and roles(session, "log-only") == {"assistant": 1}
    assert [e.text for e in session.events if e.kind == "turn_aborted"] == ["turn aborted (Aborted)"]
    # jq '[.messages[].parts[] | select(.type=="tool")] | length'  -> 97; one bash still `running`: no result
    assert len(session.actions) == 97
    assert [(a.tool, a.output, a.failed) for a in session.actions if not a.output] == [("bash", "", False)]
    # jq '... select(.type=="tool" and .state.status=="error")'  -> 1: an edit
    (failed,) = (a for a in session.actions if a.failed)
    assert failed.tool == "edit" and failed.output.startswith("Could not find oldString in the file.")
    # jq '[... .tool] | group_by(.) ...': bash 35, edit 18, apply_patch 8, write 13, read 9, grep 6, glob 2,
    # todowrite 4, skill 1, question 1
    assert categories(session) == {
        "shell": 35,
        "file_edit": 26,
        "file_write": 13,
        "file_read": 9,
        "search": 8,
        "other": 6,
    }
    # jq '[.messages[].parts[] | select(.type=="reasoning")] | length'  -> 112; replies with reasoning: 65 (one of them
    # the aborted one), with tools: 65
    assert sum(b.type == "thinking" for m in session.messages for b in m.blocks) == 112
    assert (session.counts.thinking_messages, session.counts.tool_use_messages) == (64, 65)
    # jq '[... select(.type=="step-finish") | .tokens.output + .tokens.reasoning] | add'  -> 90074
    assert sum(m.output_tokens for m in session.messages) == 90_074
    # jq -c '[... .info.modelID] | group_by(.) ...'  -> glm-5.2 43, gpt-5.6-sol 37
    assert session.model == "glm-5.2"
    # grep -c "whitespace, indentation": 1 line here, 0 in the other export
    assert "whitespace, indentation" in failed.output


@needs_shared
@pytest.mark.parametrize("layout", ["1.x", "0.x"])
def test_the_real_export_laid_out_as_storage_reads_the_same(tmp_path: Path, layout: str) -> None:
    export = orjson.loads(SKILLPATH.read_bytes())
    session_file = write_storage(tmp_path, export, layout)
    stored = parse_file(session_file)
    assert stored.format == "opencode" and not stored.issues
    (from_storage,) = stored.sessions
    (from_export,) = parse_file(SKILLPATH).sessions
    assert from_storage.id == from_export.id and from_storage.title == from_export.title
    assert [(m.role, m.surface, [(b.type, b.text) for b in m.blocks]) for m in from_storage.messages] == [
        (m.role, m.surface, [(b.type, b.text) for b in m.blocks]) for m in from_export.messages
    ]
    assert [(a.tool, a.path, a.output) for a in from_storage.actions] == [
        (a.tool, a.path, a.output) for a in from_export.actions
    ]
    # A walk over the tree reads the session once, from its file; message and part files alone make none.
    walked = list(iter_parse([tmp_path]))
    assert sum(len(r.sessions) for r in walked) == 1 and all(r.format == "opencode" and not r.issues for r in walked)
    skipped = sum((r.skipped_record_types for r in walked), Counter())
    # jq '.messages | length'  -> 70 message files; jq '[.messages[].parts[]] | length'  -> 262 part files
    assert skipped == {"opencode:storage-message": 70, "opencode:storage-part": 262}


# ------------------------------------------------------------------ fixtures of our own

SID = "ses_fixture0001"
T0 = 1_760_000_000_000


def session_info(sid: str = SID, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "slug": "calm-river", "projectID": "global", "directory": "/w/app", "title": "Fix the pool",
            "version": "1.18.0", "time": {"created": T0, "updated": T0 + 60_000}, **extra}  # fmt: skip


def message(mid: str, role: str, *parts: dict[str, Any], sid: str = SID, **extra: Any) -> dict[str, Any]:
    """A message whose parts get ids from its own (`msg_007` -> `prt_00701`, …) and times from its number."""
    at = T0 + int(mid[-3:]) * 1000
    info = {"id": mid, "sessionID": sid, "role": role, "time": {"created": at}}
    if role == "assistant":
        info |= {"parentID": "msg_001", "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
                 "agent": "build", "path": {"cwd": "/w/app", "root": "/w/app"}, "cost": 0.01,
                 "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 400, "write": 0}},
                 "time": {"created": at, "completed": at + 500}, "finish": "stop"}  # fmt: skip
    else:
        info |= {"agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    info |= extra
    numbered = [
        {"id": f"prt_{mid[-3:]}{n:02d}", "sessionID": sid, "messageID": mid, **part} for n, part in enumerate(parts, 1)
    ]
    return {"info": info, "parts": numbered}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool(
    name: str, call_id: str, tool_input: dict[str, Any], status: str = "completed", **state: Any
) -> dict[str, Any]:
    body = {"status": status, "input": tool_input, "time": {"start": T0, "end": T0 + 10}}
    if status == "completed":
        body |= {"output": "ok", "title": name, "metadata": {}}
    return {"type": "tool", "callID": call_id, "tool": name, "state": body | state}


def export(*messages: dict[str, Any], **info: Any) -> bytes:
    return orjson.dumps({"info": session_info(**info), "messages": list(messages)}, option=orjson.OPT_INDENT_2)


def write_storage(root: Path, document: dict[str, Any], layout: str = "1.x") -> Path:
    """The export's objects as OpenCode's storage keeps them, one pretty-printed file each; the session file's path."""
    info = document["info"]
    sid = info["id"]
    storage = root / "storage"
    if layout == "1.x":
        session_file = storage / "session" / info.get("projectID", "global") / f"{sid}.json"
        message_dir, part_dir = storage / "message" / sid, storage / "part"
    else:
        session_file = storage / "session" / "info" / f"{sid}.json"
        message_dir, part_dir = storage / "session" / "message" / sid, storage / "session" / "part" / sid
    for path, value in itertools.chain(
        [(session_file, info)],
        ((message_dir / f"{m['info']['id']}.json", m["info"]) for m in document["messages"]),
        ((part_dir / m["info"]["id"] / f"{p['id']}.json", p) for m in document["messages"] for p in m["parts"]),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    return session_file


def one_session(data: bytes) -> units_pb2.Session:
    result = parse_bytes(data, "session.json")
    assert result.format == "opencode" and not result.issues, result.issues
    (session,) = result.sessions
    return session


def test_a_task_call_links_its_child_session_and_the_child_links_back() -> None:
    child_id = "ses_child00001"
    task_input = {"description": "Find the pool", "prompt": "Where is the pool built?", "subagent_type": "explore"}
    dispatch = tool(
        "task", "call_task", task_input,
        output="task_id: ses_child00001\n\n<task_result>\nIn db/pool.py.\n</task_result>",
        metadata={"sessionId": child_id, "model": {"modelID": "claude-haiku-4-5", "providerID": "anthropic"}},
    )  # fmt: skip
    parent = one_session(
        export(message("msg_001", "user", text("where is the pool?")), message("msg_002", "assistant", dispatch))
    )
    (delegation,) = parent.delegations
    assert (delegation.child_session_id, delegation.agent, delegation.child_model) == (
        f"opencode-session:{child_id}",
        "explore",
        "claude-haiku-4-5",
    )
    assert parent.actions[0].category == "subagent" and delegation.result_state == "completed"
    child = one_session(
        export(
            message("msg_003", "user", text("Where is the pool built?"), sid=child_id, agent="explore"),
            message("msg_004", "assistant", text("In db/pool.py."), sid=child_id, agent="explore"),
            sid=child_id, parentID=SID, title="Find the pool (@explore subagent)",
        )
    )  # fmt: skip
    assert (child.parent_session_id, child.agent) == (parent.id, "explore")
    assert child.counts.authored_user_messages == 0 and child.snapshots[0].boundary == "subagent_start"


def test_a_finished_compaction_shadows_what_came_before_and_is_a_snapshot() -> None:
    summary = message("msg_004", "assistant", text("## Goal\nFix the pool."), parentID="msg_003", summary=True,
                      mode="compaction", agent="compaction")  # fmt: skip
    session = one_session(
        export(
            message("msg_001", "user", text("fix the pool")),
            message("msg_002", "assistant", text("Looking.")),
            message("msg_003", "user", {"type": "compaction", "auto": True}),
            summary,
            message("msg_005", "user", text("go on")),
        )
    )
    assert [(m.role, m.surface) for m in session.messages] == [
        ("user", "shadowed"),
        ("assistant", "shadowed"),
        ("assistant", "current"),
        ("user", "current"),
    ]
    assert [(s.boundary, s.trigger, s.preview) for s in session.snapshots][1:] == [
        ("compaction", "auto", "## Goal\nFix the pool.")
    ]
    assert [e.kind for e in session.events if e.kind == "compaction"] == ["compaction"]


def test_a_0x_summary_reply_alone_replaces_the_context() -> None:
    session = one_session(
        export(
            message("msg_001", "user", text("fix the pool")),
            message("msg_002", "assistant", text("Looking.")),
            message("msg_003", "assistant", text("Summary: the pool leaks."), summary=True),
        )
    )
    assert [m.surface for m in session.messages] == ["shadowed", "shadowed", "current"]
    assert session.snapshots[1].trigger == ""


def test_a_reverted_tail_is_shadowed_by_the_session_record() -> None:
    session = one_session(
        export(
            message("msg_001", "user", text("fix the pool")),
            message("msg_002", "assistant", text("Done.")),
            message("msg_003", "user", text("now break it")),
            message("msg_004", "assistant", text("Broken.")),
            revert={"messageID": "msg_003", "snapshot": "abc"},
        )
    )
    assert [m.surface for m in session.messages] == ["current", "current", "shadowed", "shadowed"]
    assert session.log_events[0].type == "opencode:session" and len(session.log_events[0].replaced_event_seqs) == 4


PNG = "data:image/png;base64," + "iVBORw0KGgo" * 200


def test_injected_text_is_a_message_of_its_own_and_files_are_referenced() -> None:
    prompt = message(
        "msg_001", "user",
        text("explain @src/pool.py"),
        {"type": "file", "mime": "text/plain", "filename": "src/pool.py", "url": "file:///w/app/src/pool.py"},
        text('Called the Read tool with the following input: {"filePath":"/w/app/src/pool.py"}', synthetic=True),
        text("<file>\n00001| import os\n</file>", synthetic=True),
        {"type": "file", "mime": "image/png", "filename": "shot.png", "url": PNG},
    )  # fmt: skip
    session = one_session(export(prompt, message("msg_002", "assistant", text("It pools."))))
    typed, injected, _ = session.messages
    assert typed.authored and [(b.type, b.text, b.media_type) for b in typed.blocks] == [
        ("text", "explain @src/pool.py", ""),
        ("text", "file: src/pool.py (text/plain)", ""),
        ("image", "", "image/png"),
    ]
    assert not injected.authored and injected.role == "user" and len(injected.blocks) == 2
    assert session.title == "Fix the pool" and session.counts.authored_user_messages == 1
    assert PNG.encode() not in b"".join(e.raw_json for e in session.log_events)


def test_tools_paths_exit_codes_and_errors() -> None:
    patch = "*** Begin Patch\n*** Update File: db/pool.py\n@@\n-a\n+b\n*** End Patch"
    reply = message(
        "msg_002", "assistant",
        tool("bash", "call_1", {"command": "pytest -q", "description": "Run tests"}, output="2 failed",
             metadata={"exit": 2, "output": "2 failed"}),
        tool("apply_patch", "call_2", {"patchText": patch}),
        tool("edit", "call_3", {"filePath": "/w/app/db/pool.py", "oldString": "a", "newString": "b"}, status="error",
             error="Could not find oldString in the file."),
        tool("read", "call_4", {"filePath": "/w/app/db/pool.py"}, status="pending"),
    )  # fmt: skip
    session = one_session(export(message("msg_001", "user", text("fix it")), reply))
    bash, apply_patch, edit, read = session.actions
    assert (bash.category, bash.command, bash.failed, bash.exit_code) == ("shell", "pytest -q", True, 2)
    assert (apply_patch.category, apply_patch.path, apply_patch.failed) == ("file_edit", "db/pool.py", False)
    assert (edit.path, edit.failed, edit.output) == ("db/pool.py", True, "Could not find oldString in the file.")
    assert (read.output, read.failed) == ("", False)


def test_errors_retries_patches_and_usage_by_step() -> None:
    steps = [
        {"type": "step-finish", "reason": "tool-calls", "cost": 0,
         "tokens": {"input": 10, "output": 1, "reasoning": 2, "cache": {"read": 100, "write": 7}}},
        {"type": "patch", "hash": "abc", "files": ["/w/app/db/pool.py"]},
        {"type": "retry", "attempt": 1, "error": {"name": "APIError", "data": {"message": "overloaded"}},
         "time": {"created": T0 + 2500}},
        {"type": "step-finish", "reason": "stop", "cost": 0,
         "tokens": {"input": 20, "output": 3, "reasoning": 0, "cache": {"read": 200, "write": 0}}},
    ]  # fmt: skip
    failed = {"name": "ProviderAuthError", "data": {"providerID": "anthropic", "message": "bad key"}}
    session = one_session(
        export(
            message("msg_001", "user", text("fix it")),
            message("msg_002", "assistant", text("Fixed."), *steps),
            message("msg_003", "assistant", {"type": "reasoning", "text": "Retrying."}, error=failed, finish=None),
        )
    )
    reply = session.messages[1]
    assert (reply.input_tokens, reply.output_tokens, reply.cache_read_tokens, reply.cache_write_tokens) == (
        30,
        6,
        300,
        7,
    )
    errors = [e.text for e in session.events if e.kind == "api_error"]
    assert errors == ["API error (retry 1): overloaded", "API error: ProviderAuthError: bad key"]
    assert any(e.text == "files changed: /w/app/db/pool.py" for e in session.log_events)
    # A reply that failed with only reasoning is not sent back to the model.
    assert [m.surface for m in session.messages] == ["current", "current", "log-only"]


def test_a_0x_system_prompt_is_one_system_message_until_it_changes() -> None:
    system = {"system": ["You are opencode.", "<env>Working directory: /w/app</env>"]}
    session = one_session(
        export(
            message("msg_001", "user", text("hi")),
            message("msg_002", "assistant", text("Hello."), **system),
            message("msg_003", "user", text("again")),
            message("msg_004", "assistant", text("Hello again."), **system),
        )
    )
    assert [m.role for m in session.messages] == ["user", "system", "assistant", "user", "assistant"]
    assert session.messages[1].blocks[0].text == "You are opencode.\n\n<env>Working directory: /w/app</env>"


def test_part_types_not_seen_yet_are_counted_and_keep_their_text_and_new_fields_are_ignored() -> None:
    result = parse_bytes(
        export(
            message("msg_001", "user", text("hello", new_field={"x": 1}), {"type": "agent", "name": "explore"}),
            message("msg_002", "assistant", {"type": "voice", "text": "spoken words"}, {"type": "widget"}),
            message("msg_003", "moderator", text("not a role")),
            title="New session - 2025-10-09T10:00:00.000Z",
            new_top_level=True,
        ),
        "session.json",
    )
    (session,) = result.sessions
    assert [b.text for m in session.messages for b in m.blocks] == ["hello", "spoken words"]
    assert result.skipped_record_types == {
        "opencode:part/voice": 1,
        "opencode:part/widget": 1,
        "opencode:message/moderator": 1,
    }
    assert session.title == "hello"  # OpenCode's placeholder title is no title


def test_storage_files_alone_and_a_cut_part_file(tmp_path: Path) -> None:
    document = orjson.loads(
        export(message("msg_001", "user", text("fix the pool")), message("msg_002", "assistant", text("Done.")))
    )
    session_file = write_storage(tmp_path, document)
    message_file = next((tmp_path / "storage" / "message" / SID).glob("*.json"))
    part_file = tmp_path / "storage" / "part" / "msg_002" / "prt_00201.json"
    for path, kind in ((message_file, "storage-message"), (part_file, "storage-part")):
        alone = parse_file(path)
        assert (alone.format, alone.sessions, alone.issues) == ("opencode", [], [])
        assert alone.skipped_record_types == {f"opencode:{kind}": 1}
    part_file.write_bytes(part_file.read_bytes()[:40])
    result = parse_file(session_file)
    assert [(i.path, i.code) for i in result.issues] == [(str(part_file), "malformed_json")]
    (session,) = result.sessions
    # The reply lost its only part; it is kept for the usage it records.
    assert [(m.role, [b.text for b in m.blocks]) for m in session.messages] == [
        ("user", ["fix the pool"]),
        ("assistant", []),
    ]
    assert session.messages[1].input_tokens == 100


def test_a_storage_session_without_messages_and_a_cut_export() -> None:
    lone = parse_bytes(orjson.dumps(session_info()), "/nowhere/storage/session/global/ses_fixture0001.json")
    assert (lone.format, lone.sessions, lone.skipped_record_types) == ("opencode", [], {"opencode:empty-session": 1})
    data = export(message("msg_001", "user", text("hello " * 50)))
    for cut in (100, 400):
        result = parse_bytes(data[:cut], "session.json")
        assert result.sessions == [] and [i.code for i in result.issues] == ["unreadable"]
        assert "truncated JSON" in result.issues[0].reason


def test_recognition_needs_opencode_s_ids() -> None:
    assert detect.document_format(orjson.loads(export())) == "opencode"
    assert detect.document_format({"info": {"id": "conv-1", "time": {}}, "messages": []}) == "unknown"
    assert detect.document_format({"id": "msg_1", "sessionID": "chat-1", "role": "user"}) == "unknown"
    assert detect.document_format({"id": "ses_1", "title": "t"}) == "unknown"  # no time object
    assert detect.document_format([{"info": session_info(), "messages": []}]) == "unknown"


@needs_shared
def test_each_reply_carries_its_cost() -> None:
    (session,) = parse_file(SKILLPATH).sessions
    # jq '[.messages[] | .info.cost // 0] | add'  -> 2.2804212 (the step-finish parts' costs sum to the same)
    assert round(sum(m.cost_usd for m in session.messages), 6) == round(2.2804212, 6)
    assert round(session.runs[0].cost_usd, 6) == round(2.2804212, 6)
    # the sanitized Cap export: jq '[.messages[] | .info.cost // 0] | add'  -> 0
    assert not any(m.cost_usd for m in parse_file(CAP).sessions[0].messages)
