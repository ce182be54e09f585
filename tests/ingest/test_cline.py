"""Cline and Roo Code task folders (origins cline-task, roo-code-task): the real tasks of
../shared/real-logs/cline and roo_code counted as jq counts them (the command beside each number), and
fixtures of our own for what they lack: XML tool calls with commands, exit codes and SEARCH/REPLACE
edits, native tool_result blocks, denials, condensing, a history item with lineage, cut and unknown
content, and files of other tools that must not be read as a task."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.ingest.parse import parse_file
from quarry.ingest.sources import cline
from quarry.ingest.validate import session_problems
from tests.shared_paths import REAL_LOGS, needs_shared

CLINE_TASK = REAL_LOGS / "cline" / "gmfstu__Online-Card-Architecture__exported_task_1769064454592__"
ROO_TASK = REAL_LOGS / "roo_code" / "jsboige__jsboige-mcp-servers__real-tasks__bc93a6f7-cd2e-4686-a832-46e3cd14d338__"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"


def real(task: Path, suffix: str) -> Path:
    return task.with_name(task.name + suffix)


def text_of(session: Any) -> str:
    return "\n".join(b.text for m in session.messages for b in m.blocks)


# ------------------------------------------------------------------ the real tasks


@needs_shared
def test_the_real_cline_task() -> None:
    result = parse_file(real(CLINE_TASK, HISTORY))
    assert result.format == "cline" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    # the id in the flattened prefix `exported_task_1769064454592`
    assert session.id == "cline-task:1769064454592"
    # jq -c '[.[] | .role] | group_by(.) | map({(.[0]): length}) | add'  -> assistant 36, user 36
    assert Counter(m.role for m in session.messages) == {"user": 36, "assistant": 36}
    # jq '[.[] | select(.role=="user" and any(.content[]; .type=="text" and (.text |
    #   test("^\\s*(<task>|<answer>|<feedback>|The user |New instructions for task continuation)"))))] | length'  -> 1
    assert session.counts.authored_user_messages == 1
    assert session.title.startswith("You have been given a Dockerized codebase")
    # jq -c '[.[] | .content[] | select(.type=="tool_use") | .name] | group_by(.) | map({(.[0]): length}) | add'
    assert Counter(a.tool for a in session.actions) == {
        "read_file": 20,
        "write_to_file": 14,
        "replace_in_file": 2,
        "list_files": 1,
        "attempt_completion": 1,
    }
    # jq '[.[] | select(.role=="user") | .content[] | select(.type=="text") |
    #   select(.text | test("^\\[[a-z_]+[^\\]]*\\] Result:|^Tool \\["))] | length'  -> 37 (all but attempt_completion)
    assert sum(bool(a.output) for a in session.actions) == 37
    # jq '[.[] | .content[] | select(.type=="text" and (.text | startswith("Tool [")))] | length'  -> 3 not executed
    assert sum(a.failed for a in session.actions) == 3
    # jq '[.[] | .content[] | select(.type=="tool_use") | select(.input.path or .input.absolutePath)] | length'  -> 37
    assert sum(bool(a.path) for a in session.actions) == 37
    assert "ModifyCardGA.cs" in {a.path for a in session.actions}  # absolutePath, relative to the cwd
    assert (session.cwd, session.repo) == ("/workspaces/Online-Card-Architecture", "Online-Card-Architecture")
    assert session.model == "claude-opus-4-5-20251101"  # jq '.[1].modelInfo.modelId'
    # 35 assistant messages hold thinking (jq '[.[] | select(.role=="assistant" and any(.content[];
    # .type=="thinking"))] | length'); the interrupted one's reasoning is in the UI only (36 say reasoning)
    assert session.counts.thinking_messages == 36
    # the UI's api_req_started: jq -c '[.[] | select(.say=="api_req_started") | .text | fromjson] |
    #   [(map(.tokensIn)|add), (map(.tokensOut)|add), (map(.cacheReads)|add), (map(.cacheWrites)|add)]'
    tokens = [sum(getattr(m, f) for m in session.messages) for f in ("input_tokens", "output_tokens")]
    caches = [sum(getattr(m, f) for m in session.messages) for f in ("cache_read_tokens", "cache_write_tokens")]
    assert (tokens, caches) == ([360, 30169], [1280342, 128708])
    # no ts in the history: the times come from the UI (jq -c '[.[].ts] | [min, max]' ui_messages.json)
    assert (session.created_ms, session.updated_ms) == (1769064454625, 1769067043918)
    assert all(m.time_ms for m in session.messages)
    assert [e.kind for e in session.events if e.kind != "tool_finished"] == [
        "session_started",
        "turn_aborted",  # "[Response interrupted by user]"
        "turn_completed",  # attempt_completion
    ]
    kinds = Counter(e.type for e in session.log_events)
    # 72 history messages are surface nodes; 207 UI records (jq 'length' ui_messages.json) and the metadata are log-only
    assert kinds["cline:message/user"] + kinds["cline:message/assistant"] == 72
    assert sum(n for kind, n in kinds.items() if kind.startswith("cline:ui/")) == 207
    assert kinds["cline:task-metadata"] == 1
    assert "Dockerized" in text_of(session)  # a word only this task has


@needs_shared
def test_the_real_roo_code_task() -> None:
    result = parse_file(real(ROO_TASK, HISTORY))
    assert result.format == "roo-code" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    assert session.id == "roo-code-task:bc93a6f7-cd2e-4686-a832-46e3cd14d338"
    # jq -c '[.[] | .role] | group_by(.) | map({(.[0]): length}) | add'  -> assistant 30, user 33
    assert Counter(m.role for m in session.messages) == {"user": 33, "assistant": 30}
    # the same jq as for Cline (task, answers, feedback, new instructions)  -> 9; message 4 is an MCP listing
    # that quotes other tasks' <task> tags: not a prompt
    assert session.counts.authored_user_messages == 9
    # jq -r '.[] | select(.role=="assistant") | .content[].text' | grep -oE
    #   '^<(update_todo_list|use_mcp_tool|ask_followup_question|attempt_completion|new_task)>' | sort | uniq -c
    assert Counter(a.tool for a in session.actions) == {
        "update_todo_list": 16,
        "new_task": 6,
        "use_mcp_tool": 4,
        "ask_followup_question": 3,
        "attempt_completion": 1,
    }
    # jq '[.[] | select(.role=="user") | .content[] | select(.type=="text") |
    #   select(.text | test("^\\[[a-z_]+[^\\]]*\\] Result:"))] | length'  -> 29 results, two of them a second result
    # of a new_task call already answered ([new_task completed] then [new_task in … mode]): 27 calls answered
    assert sum(bool(a.output) for a in session.actions) == 27
    # jq '[.[] | .content[] | select(.type=="text" and (.text | startswith("The tool execution failed")))] | length'
    assert sum(a.failed for a in session.actions) == 1
    # the subtask's own result is the new_task call's output
    new_task = next(a for a in session.actions if a.tool == "new_task" and a.output)
    assert new_task.output.startswith("J'ai identifié et corrigé la boucle infinie")
    mcp = next(a for a in session.actions if a.tool == "use_mcp_tool")
    assert orjson.loads(mcp.input_json)["tool_name"] == "list_conversations"
    # no modelInfo: the model is the environment details' <model>; the cwd their workspace directory
    assert session.model == "claude-sonnet-4-20250514"
    assert (session.cwd, session.repo) == ("d:/dev/roo-extensions", "roo-extensions")
    # Roo keeps reasoning in the UI only: jq '(map(select(.say=="api_req_started")) | .[0].ts) as $t |
    #   [.[] | select(.say=="reasoning" and .ts > $t)] | length'  -> 30, one per reply
    assert session.counts.thinking_messages == 30
    tokens = [sum(getattr(m, f) for m in session.messages) for f in ("input_tokens", "output_tokens")]
    caches = [sum(getattr(m, f) for m in session.messages) for f in ("cache_read_tokens", "cache_write_tokens")]
    assert (tokens, caches) == ([285, 16461], [1039280, 689253])  # the Cline jq above, on this ui_messages.json
    assert (session.created_ms, session.updated_ms) == (1758114661175, 1759050861688)
    assert "Epita" in text_of(session)


@needs_shared
@pytest.mark.parametrize(("task", "fmt"), [(CLINE_TASK, "cline"), (ROO_TASK, "roo-code")])
def test_the_files_beside_a_real_history_make_no_second_session(task: Path, fmt: str) -> None:
    result = parse_file(real(task, UI))
    assert (result.format, result.sessions, dict(result.skipped_record_types)) == (fmt, [], {f"{fmt}:ui-messages": 1})
    if fmt == "cline":
        result = parse_file(real(task, "task_metadata.json"))
        assert (result.format, dict(result.skipped_record_types)) == ("cline", {"cline:task-metadata": 1})


@needs_shared
@pytest.mark.parametrize(
    ("task", "origin", "turns"),
    [
        (CLINE_TASK, "cline-task:1769064454592", 36),
        (ROO_TASK, "roo-code-task:bc93a6f7-cd2e-4686-a832-46e3cd14d338", 30),
    ],
)
def test_a_real_ui_transcript_alone_is_the_task(tmp_path: Path, task: Path, origin: str, turns: int) -> None:
    alone = tmp_path / real(task, UI).name
    shutil.copy(real(task, UI), alone)
    (session,) = parse_file(alone).sessions
    assert session.id == origin
    # jq '[.[] | select(.say=="api_req_started")] | length' ui_messages.json: a request and its reply each
    assert Counter(m.role for m in session.messages) == {"user": turns, "assistant": turns}
    assert session.counts.authored_user_messages >= 1 and session.messages[0].authored
    assert session.title == parse_file(real(task, HISTORY)).sessions[0].title


# ------------------------------------------------------------------ fixtures of our own

T = 1_767_000_000_000  # epoch ms
CLINE_ENV = (
    "<environment_details>\n# Visual Studio Code Visible Files\napp.py\n\n# Current Time\n1/1/2026\n\n"
    "# Current Working Directory (/home/dev/shop) Files\napp.py\n\n# Current Mode\nACT MODE\n</environment_details>"
)
ROO_ENV = (
    "<environment_details>\n# VSCode Visible Files\n\n# Current Cost\n$0.00\n\n# Current Mode\n<slug>code</slug>\n"
    "<name>Code</name>\n<model>gpt-5</model>\n\n# Current Workspace Directory (/home/dev/shop) Files\napp.py\n"
    "</environment_details>"
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*blocks: str | dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": [text(b) if isinstance(b, str) else b for b in blocks], **extra}


def assistant(*blocks: str | dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(b) if isinstance(b, str) else b for b in blocks], **extra}


def record(at: int, kind: str, subtype: str, value: str, **extra: Any) -> dict[str, Any]:
    """A UI record written `at` ms after T."""
    return {"ts": T + at, "type": kind, kind: subtype, "text": value, **extra}


def write_task(folder: Path, history: Any = None, ui: Any = None, **files: Any) -> Path:
    """A task folder: the history (a value, or bytes as written) and the files beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in (("api_conversation_history", history), ("ui_messages", ui), *files.items()):
        if value is not None:
            (folder / f"{name}.json").write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return folder / HISTORY


ROO_XML = [
    user("<task>\nFix the failing test\n</task>", ROO_ENV, ts=T),
    assistant(
        "<thinking>The test fails; run it first.</thinking>\nRunning the tests.\n\n"
        "<execute_command>\n<command>pytest -q</command>\n</execute_command>",
        ts=T + 1_000,
    ),
    user(
        "[execute_command for 'pytest -q'] Result:",
        "Command executed in terminal within working directory '/home/dev/shop'. Command execution was not "
        "successful, inspect the cause and adjust as needed.\nExit code: 1\nOutput:\n1 failed, 2 passed",
        ROO_ENV,
        ts=T + 2_000,
    ),
    assistant(
        "<apply_diff>\n<path>shop/cart.py</path>\n<diff>\n<<<<<<< SEARCH\n:start_line:3\n-------\n"
        "return total\n=======\nreturn round(total, 2)\n>>>>>>> REPLACE\n</diff>\n</apply_diff>",
        ts=T + 3_000,
    ),
    user("[apply_diff for 'shop/cart.py'] Result:", "Changes successfully applied to shop/cart.py", ROO_ENV),
    assistant(
        "<write_to_file>\n<path>notes.xml</path>\n<content>\n<content>kept whole</content>\n</content>\n"
        "<line_count>1</line_count>\n</write_to_file>"
    ),
    user(
        "[write_to_file for 'notes.xml'] Result:",
        '{"status":"denied","feedback":"do not create notes"}',
        ROO_ENV,
    ),
    assistant("<attempt_completion>\n<result>\nRounded the total.\n</result>\n</attempt_completion>"),
]


def test_xml_tool_calls_commands_exit_codes_edits_and_denials(tmp_path: Path) -> None:
    result = parse_file(write_task(tmp_path / "tasks" / "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", ROO_XML))
    assert result.format == "roo-code" and not result.issues
    (session,) = result.sessions
    assert session.id == "roo-code-task:0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"  # the folder's name
    assert (session.model, session.cwd, session.title) == ("gpt-5", "/home/dev/shop", "Fix the failing test")
    command, diff, write, done = session.actions
    assert (command.tool, command.command, command.failed, command.exit_code) == (
        "execute_command",
        "pytest -q",
        True,
        1,
    )
    assert command.output.endswith("1 failed, 2 passed")
    assert (diff.tool, diff.path, diff.failed) == ("apply_diff", "shop/cart.py", False)
    assert "<<<<<<< SEARCH" in orjson.loads(diff.input_json)["diff"]
    assert orjson.loads(write.input_json)["content"] == "<content>kept whole</content>"
    assert (write.path, write.failed) == ("notes.xml", True)  # {"status":"denied"}
    denial = session.messages[6]
    assert denial.authored and denial.blocks[-1].text == "do not create notes"
    assert (done.tool, done.output) == ("attempt_completion", "")
    first = session.messages[1]
    assert [b.type for b in first.blocks] == ["thinking", "text", "tool_use"]
    assert first.blocks[0].text == "The test fails; run it first."
    assert [e.kind for e in session.events if e.kind != "tool_finished"][-1] == "turn_completed"


CLINE_NATIVE = [
    user(
        "<task>\nshow the readme\n</task>",
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 200}},
        CLINE_ENV,
    ),
    assistant(
        {"type": "thinking", "thinking": "", "summary": [{"type": "summary_text", "text": "Look at the readme."}]},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "README.md"}},
        modelInfo={"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
        metrics={"tokens": {"prompt": 12, "completion": 34, "cached": 56}},
    ),
    user(
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[read_file for 'README.md'] Result:\n# Shop"},
        CLINE_ENV,
    ),
    assistant({"type": "tool_use", "id": "toolu_2", "name": "execute_command", "input": {"command": "make"}}),
    user(
        {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True, "content": [text("make: *** failed")]},
        "[TASK RESUMPTION] This task was interrupted 2 minutes ago. The current working directory is now '/x'.",
        "New instructions for task continuation:\n<user_message>\nuse npm instead\n</user_message>",
        CLINE_ENV,
    ),
    assistant("Switching to npm.", {"type": "voice_memo", "data": "…"}, fieldFromAFutureVersion={"x": 1}),
]


def test_native_results_images_tokens_resumption_and_new_content_without_ui(tmp_path: Path) -> None:
    result = parse_file(write_task(tmp_path / "tasks" / "1767000000000", CLINE_NATIVE))
    assert result.format == "cline" and not result.issues
    assert dict(result.skipped_record_types) == {"cline:content/voice_memo": 1}
    (session,) = result.sessions
    assert session.id == "cline-task:1767000000000"
    read, make = session.actions
    assert (read.path, read.output, read.failed) == ("README.md", "# Shop", False)
    assert (make.command, make.failed) == ("make", True)
    image = session.messages[0].blocks[1]
    assert (image.type, image.media_type, image.text) == ("image", "image/png", "")  # referenced, not inlined
    reply = session.messages[1]
    assert reply.blocks[0].text == "Look at the readme."  # an empty thinking's summary
    # metrics.tokens without a UI: prompt, completion, cached
    assert (reply.model, reply.input_tokens, reply.output_tokens, reply.cache_read_tokens) == (
        "claude-sonnet-4-5",
        12,
        34,
        56,
    )
    resumed = session.messages[4]
    assert resumed.authored and [b.text for b in resumed.blocks if b.type == "text"] == ["use npm instead"]
    assert session.cwd == "/home/dev/shop" and session.created_ms == 0  # no ts and no UI: no times


def test_ui_beside_the_history_gives_times_tokens_errors_and_truncation(tmp_path: Path) -> None:
    history = [
        user("<task>\nhi\n</task>", CLINE_ENV),
        assistant("Hello.", modelInfo={"modelId": "m1"}),
        user("<feedback>\nmore\n</feedback>", CLINE_ENV),
        assistant("More."),
    ]
    request = {"request": "…", "tokensIn": 5, "tokensOut": 7, "cacheReads": 11, "cacheWrites": 13, "cost": 0.1}
    failed = {**request, "cancelReason": "streaming_failed", "streamingFailedMessage": "overloaded"}
    ui = [
        record(1_000, "say", "text", "hi", conversationHistoryIndex=-1),
        record(1_100, "say", "api_req_started", orjson.dumps(request).decode(), conversationHistoryIndex=-1),
        record(1_200, "say", "text", "Hello.", conversationHistoryIndex=0),
        record(1_300, "ask", "api_req_failed", "529 overloaded", conversationHistoryIndex=1),
        record(1_400, "say", "api_req_started", orjson.dumps(failed).decode(), conversationHistoryIndex=1,
               conversationHistoryDeletedRange=[1, 1]),
        record(1_500, "say", "hologram", "a kind not seen yet", conversationHistoryIndex=2),
    ]  # fmt: skip
    result = parse_file(write_task(tmp_path / "1767000000001", history, ui))
    (session,) = result.sessions
    assert dict(result.skipped_record_types) == {"cline:ui/hologram": 1}
    assert [m.time_ms - T for m in session.messages] == [1_100, 1_200, 1_400, 1_500]
    first, second = (m for m in session.messages if m.role == "assistant")
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.cache_write_tokens) == (
        5,
        7,
        11,
        13,
    )
    assert (first.model, second.model, second.output_tokens) == ("m1", "", 7)  # no modelInfo, UI model or metadata
    assert [e.kind for e in session.events if e.kind == "api_error"] == ["api_error", "api_error"]
    assert [m.surface for m in session.messages] == ["current", "shadowed", "current", "current"]


def test_roo_condensing_shadows_what_the_summary_replaced(tmp_path: Path) -> None:
    history = [
        user("<task>\nbig job\n</task>", ROO_ENV, ts=1),
        assistant("step one", ts=2, condenseParent="c1"),
        user("[update_todo_list] Result:", "Todo list updated successfully.", ROO_ENV, ts=3, condenseParent="c1"),
        assistant("Summary of the work so far.", ts=4, isSummary=True, condenseId="c1"),
        assistant("step two", ts=5),
    ]
    (session,) = parse_file(write_task(tmp_path / "t", history)).sessions
    assert [m.surface for m in session.messages] == ["current", "shadowed", "shadowed", "current", "current"]
    assert [(c.boundary, c.inheritance) for c in session.snapshots] == [
        ("session_start", "fresh"),
        ("compaction", "summary"),
    ]
    assert session.snapshots[1].message_ref.endswith(session.messages[3].id)
    assert not session.messages[3].authored


def test_a_history_item_names_the_task_its_parent_and_its_children(tmp_path: Path) -> None:
    history = [
        user("<task>\nDebug the loop\n</task>", ROO_ENV),
        assistant("<new_task>\n<mode>debug</mode>\n<message>find it</message>\n</new_task>"),
    ]
    item = {"id": "child-1", "parentTaskId": "root-0", "number": 2, "ts": T, "task": "Debug the loop", "tokensIn": 1,
            "tokensOut": 2, "totalCost": 0, "workspace": "/srv/app", "childIds": ["grandchild-9"]}  # fmt: skip
    result = parse_file(write_task(tmp_path / "renamed-folder", history, history_item=item))
    (session,) = result.sessions
    assert (session.id, session.parent_session_id) == ("roo-code-task:child-1", "roo-code-task:root-0")
    assert (session.cwd, session.repo) == ("/srv/app", "app")
    assert session.counts.authored_user_messages == 0  # the parent agent wrote this prompt
    assert session.log_events[0].type == "roo-code:history-item"
    item_result = parse_file(tmp_path / "renamed-folder" / "history_item.json")
    assert (item_result.format, dict(item_result.skipped_record_types)) == ("roo-code", {"roo-code:history-item": 1})


def test_a_cut_file_beside_is_an_issue_and_a_cut_history_leaves_the_ui_as_the_task(tmp_path: Path) -> None:
    request = {"request": f"<task>\nhi\n</task>\n\n{CLINE_ENV}", "tokensIn": 3}
    ui = [
        record(10, "say", "text", "hi"),
        record(11, "say", "api_req_started", orjson.dumps(request).decode()),
        record(12, "say", "text", "Hello there."),
    ]
    history = [user("<task>\nhi\n</task>", CLINE_ENV), assistant("Hello there.")]
    path = write_task(tmp_path / "a" / "1767000000002", history, orjson.dumps(ui)[:60])
    result = parse_file(path)
    assert [(i.code, Path(i.path).name) for i in result.issues] == [("malformed_json", UI)]
    assert len(result.sessions[0].messages) == 2
    path = write_task(tmp_path / "b" / "1767000000002", orjson.dumps(history)[:50], ui)
    (cut,) = parse_file(path).issues
    assert cut.code == "unreadable" and "truncated JSON" in cut.reason
    (session,) = parse_file(path.with_name(UI)).sessions
    assert session.id == "cline-task:1767000000002"
    assert [(m.role, m.time_ms - T, m.input_tokens) for m in session.messages] == [
        ("user", 11, 0),
        ("assistant", 12, 3),
    ]


def test_the_task_id_comes_from_the_folder_the_prefix_or_the_prompt(tmp_path: Path) -> None:
    history = [user("<task>\nhi\n</task>", CLINE_ENV), assistant("Hello.")]
    flat = tmp_path / "someone__repo__exported_task_1767000000003__api_conversation_history.json"
    flat.write_bytes(orjson.dumps(history))
    assert parse_file(flat).sessions[0].id == "cline-task:1767000000003"
    renamed = tmp_path / "mine.json"
    renamed.write_bytes(orjson.dumps(history))
    first, again = (parse_file(renamed).sessions[0].native_id for _ in range(2))
    assert first == again and first.startswith("sha-")


def test_cline_or_roo_code_is_read_from_the_content() -> None:
    assert cline.recognize([user("<task>\nx\n</task>", CLINE_ENV)]) == "cline"
    assert cline.recognize([user("<task>\nx\n</task>", ROO_ENV)]) == "roo-code"
    assert cline.recognize([user("<task>\nx\n</task>"), assistant("y", isSummary=True)]) == "roo-code"
    ui = [{"ts": 1, "type": "say", "say": "text", "text": "x"}]
    assert cline.recognize(ui) == "cline"
    assert cline.recognize([*ui, {"ts": 2, "type": "ask", "ask": "followup", "isAnswered": True}]) == "roo-code"
    metadata = {"files_in_context": [{"path": "a", "roo_read_date": 1}], "model_usage": []}
    assert cline.recognize(metadata) == "roo-code"


@pytest.mark.parametrize(
    "document",
    [
        [{"title": "chat", "mapping": {}, "current_node": None}],  # ChatGPT
        [{"uuid": "u", "name": "chat", "chat_messages": []}],  # Claude.ai
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],  # a plain message list
        [{"role": "user", "content": [{"type": "text", "text": "no task here"}]}],
        [{"ts": 1, "type": "event", "text": "x"}],
        [],
        {"messages": [], "sessionId": "s"},
    ],
)
def test_other_json_is_not_a_task(document: Any) -> None:
    assert cline.recognize(document) == ""


# ------------------------------------------------------------------ nothing raises on content

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
TEXTS = st.sampled_from(
    [
        "<task>\nx\n</task>",
        "[read_file for 'a.py'] Result:\nz",
        "[execute_command for 'make'] Result:\nExit code: 2",
        "Tool [read_file] was not executed because a tool has already been used",
        "<read_file>\n<path>a.py",
        "<write_to_file><path>b</path><content>x</content></write_to_file><thinking>t",
        '{"status": "error"}',
        CLINE_ENV,
        ROO_ENV,
    ]
)
BLOCKS = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "reasoning", "image", "?"]) | VALUES},
    optional={k: TEXTS | VALUES for k in ("text", "id", "name", "input", "content", "tool_use_id", "is_error")},
)
MESSAGES = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system"]) | VALUES,
        "content": st.lists(BLOCKS, max_size=3) | VALUES,
    },
    optional={k: VALUES for k in ("ts", "modelInfo", "metrics", "isSummary", "condenseId", "condenseParent", "type")},
)
UI_RECORDS = st.fixed_dictionaries(
    {
        "ts": st.integers(T, T + 10**6) | VALUES,
        "type": st.sampled_from(["say", "ask"]),
        "say": st.sampled_from(sorted(cline.UI_KINDS)) | VALUES,
        "ask": st.sampled_from(["tool", "followup", "command", "api_req_failed"]) | VALUES,
    },
    optional={"text": TEXTS | VALUES, "conversationHistoryIndex": VALUES, "conversationHistoryDeletedRange": VALUES},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGES, max_size=5), st.lists(UI_RECORDS, max_size=6), st.booleans())
def test_arbitrary_tasks_never_raise(messages: list[Any], records: list[Any], with_history: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        history = [user("<task>\nfuzz\n</task>", CLINE_ENV), *messages] if with_history else None
        ui = [record(0, "say", "text", "fuzz"), *records]
        path = write_task(Path(folder) / "1767000000009", history, ui)
        for result in (parse_file(path), parse_file(path.with_name(UI))):
            for session in result.sessions:
                session.SerializeToString()
                assert session_problems(session) == []


@needs_shared
@pytest.mark.parametrize(("task", "cost"), [(CLINE_TASK, 2.200621), (ROO_TASK, 2.900008)])
def test_each_reply_carries_the_cost_of_its_requests(task: Path, cost: float) -> None:
    (session,) = parse_file(Path(f"{task}api_conversation_history.json")).sessions
    # jq '[.[] | select(.say=="api_req_started") | .text | fromjson | .cost // 0] | add' ui_messages.json
    #   -> 2.200621 (Cline), 2.90000775 (Roo Code)
    assert round(sum(m.cost_usd for m in session.messages), 6) == cost
    assert round(session.runs[0].cost_usd, 6) == cost
    assert all(m.cost_usd == 0 for m in session.messages if m.role != "assistant")
