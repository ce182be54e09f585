"""GitHub Copilot Chat exports (VS Code "Export Chat" JSON, origin copilot-chat-export): the two real exports
of ../shared/real-logs/copilot counted as jq counts them (the command beside each number), and fixtures of our
own for what they lack: an Edit-mode edit, terminal calls without round metadata, refused confirmations,
attachments, errors, part kinds not seen yet, a store file, an export without ids, a cut file."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.ingest.sources import copilot
from tests.ingest.support import FIXTURES
from tests.shared_paths import REAL_LOGS, needs_shared

AGENT_EXPORT = REAL_LOGS / "copilot" / "bunty1981__AI-copilot-vibe-app__copilot-chat.json"
CHAT_EXPORT = REAL_LOGS / "copilot" / "dealenx__copilot-chat-analyzer__examples__parse-export-chat-json__chat.json"
WORKSPACE = "/Users/BHAGARO1/code/AI-copilot-vibe-app"


def session_text(session: Any) -> str:
    return "\n".join(b.text for m in session.messages for b in m.blocks)


@needs_shared
def test_the_agent_mode_export_s_turns_tools_and_failures() -> None:
    result = parse_file(AGENT_EXPORT)
    assert result.format == "copilot-chat" and not result.issues
    (session,) = result.sessions
    # jq -r '.requests[0].result.metadata.sessionId'  (the export carries no id of its own)
    assert session.id == "copilot-chat-export:87f36f1d-bde7-48d3-abac-5b5a3e687307"
    # jq '.requests | length' -> 9 prompts, each answered; jq '[.requests[] | select(.result.metadata.
    # renderedGlobalContext)] | length' -> 1 rendered context (the system message)
    assert Counter(m.role for m in session.messages) == {"system": 1, "user": 9, "assistant": 9}
    # jq -r '.requests[0].result.metadata.renderedGlobalContext[0].text' | grep -A1 'following folders'
    assert (session.cwd, session.repo) == (WORKSPACE, "AI-copilot-vibe-app")
    tools = Counter(a.tool for a in session.actions)
    # jq -r '.requests[].result.metadata.toolCallRounds[]?.toolCalls[].name' | sort | uniq -c -> 39 calls:
    # create_file 22, read_file 6, list_dir 6, run_in_terminal 2, create_directory, create_new_workspace,
    # replace_string_in_file; plus the copilot_createFile part of the cancelled request 4 that no round records
    # (jq '.requests[3].response[-1].toolCallId' -> call_jzc6…, absent from its toolCallRounds)
    assert tools == {
        "create_file": 23,
        "read_file": 6,
        "list_dir": 6,
        "run_in_terminal": 2,
        "create_directory": 1,
        "create_new_workspace": 1,
        "replace_string_in_file": 1,
    }
    assert {a.category for a in session.actions if a.tool == "create_file"} == {"file_write"}
    assert {a.category for a in session.actions if a.tool == "read_file"} == {"file_read"}
    # jq '[.requests[].result.metadata.toolCallResults // {} | .[] | .content[0].value | strings |
    #   select(startswith("ERROR") or startswith("The user cancelled"))] | length' -> 4
    failed = [(a.tool, a.output.split("\n")[0][:40]) for a in session.actions if a.failed]
    assert failed == [
        ("create_file", "ERROR while calling tool: Invalid input "),
        ("run_in_terminal", "The user cancelled the tool call."),
        ("list_dir", "ERROR while calling tool: Error: ENOENT:"),
        ("read_file", "ERROR while calling tool: cannot open fi"),
    ]
    # jq -c '[.. | .terminalCommandState? | objects | .exitCode]' -> [null, 0]: `ls -a` exited 0
    assert [(a.command, a.exit_code) for a in session.actions if a.HasField("exit_code")] == [("ls -a", 0)]
    # the createFile part cut off by the cancel has no result: no output, not failed
    streamed = session.actions[30]
    assert (streamed.tool, streamed.path, streamed.output, streamed.failed) == ("create_file", "", "", False)
    # jq -r '…toolCalls[].arguments | fromjson | .filePath // .path // .dirPath' | sort -u -> 26 paths and null
    assert len(session.files) == 26
    # jq '[.requests[].response[] | select(.kind=="textEditGroup")] | length' -> 22, each on the file of a call
    # before it: no edit_file action of their own
    assert "edit_file" not in tools


@needs_shared
def test_the_agent_mode_export_s_replies_thinking_models_and_turn_ends() -> None:
    result = parse_file(AGENT_EXPORT)
    session = result.sessions[0]
    blocks = Counter(b.type for m in session.messages for b in m.blocks)
    # jq '[.requests[].response[] | select(.kind=="thinking" and (.value|type)=="string" and .value!="")] | length'
    assert blocks["thinking"] == 18
    # jq '[.requests[].response[] | select(.kind=="toolInvocationSerialized")] | length' -> 39, 38 of them
    # with a round result, plus the round call of request 9 no part shows
    assert (blocks["tool_use"], blocks["tool_result"]) == (40, 39)
    # jq -r '.requests[].result.details' -> Grok Code Fast 1 twice, then Raptor mini (Preview); modelId is copilot/auto
    replies = [m for m in session.messages if m.role == "assistant"]
    assert [m.model for m in replies[:3]] == ["Grok Code Fast 1", "Grok Code Fast 1", "Raptor mini (Preview)"]
    # jq '.requests[0] | .timestamp, .result.timings' -> 1773720267846, firstProgress 8835, totalElapsed 27192
    assert (replies[0].time_ms, replies[0].duration_ms) == (1773720267846 + 8835, 27192)
    # jq '[.requests[] | .modelState.value] | group_by(.) | map({(tostring): length})' -> 1: 7, 2 (cancelled): 2
    events = Counter(e.kind for e in session.events)
    assert (events["turn_started"], events["turn_completed"], events["turn_aborted"]) == (9, 7, 2)
    # jq -c '[.requests[].response[] | .kind] | group_by(.) | map({(.[0]): length})': mcpServersStarting 9,
    # undoStop 1, codeblockUri 1; the two "\n```\n" parts around the textEditGroup of request 7 frame the edit
    assert dict(result.skipped_record_types) == {
        "copilot-chat:part/mcpServersStarting": 9,
        "copilot-chat:part/undoStop": 1,
        "copilot-chat:part/codeblockUri": 1,
        "copilot-chat:part/edit-frame": 2,
        "copilot-chat:part/thinking-marker": 39,  # 57 thinking parts, 18 with text: the rest carry ids, end marks
    }
    # jq -r '.requests[0].variableData.variables[] | .name' -> file:Application-spec.md, prompt:instructionsList
    prompt = session.messages[1]
    assert prompt.blocks[1].text == (
        f"attachments: file:Application-spec.md ({WORKSPACE}/Application-spec.md), prompt:instructionsList"
    )
    assert session.title.startswith("Application specification: This is a *progressive web application*")
    # grep -c -i codespaces: 35 in this export, 0 in the other
    assert "Codespaces" in session_text(session)


@needs_shared
def test_the_ask_export_s_two_turns() -> None:
    result = parse_file(CHAT_EXPORT)
    assert result.format == "copilot-chat" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    assert session.id == "copilot-chat-export:ff72bca6-0dec-4953-b130-a103a97e5380"
    # jq '.requests | length' -> 2; jq '[.requests[] | select(.result.metadata.renderedGlobalContext)] | length' -> 1
    assert Counter(m.role for m in session.messages) == {"system": 1, "user": 2, "assistant": 2}
    assert [b.text for m in session.messages[1:] for b in m.blocks] == [
        "hi",
        "Hello! How can I help you today?",
        "hello",
        "Hello! How can I help you?",
    ]
    # jq -r '.requests[].modelId' -> copilot/gemini-2.5-pro twice; "There is no workspace currently open."
    assert (session.model, session.cwd, session.actions) == ("copilot/gemini-2.5-pro", "", [])
    # grep -c -i powershell: 1 here (the rendered context), 0 in the other export
    assert "powershell.exe" in session.messages[0].blocks[0].text
    assert [e.kind for e in session.events] == [
        "session_started",
        "turn_started",
        "turn_completed",
        "turn_started",
        "turn_completed",
    ]


@needs_shared
def test_other_tools_json_files_are_not_copilot_exports() -> None:
    others = [p for p in sorted(REAL_LOGS.rglob("*.json")) if p.parent.name != "copilot"]
    assert others  # opencode exports, Cline / Roo Code task files, Goose projects.json, ChatGPT, Claude.ai
    assert [p.name for p in others if copilot.recognize(orjson.loads(p.read_bytes()))] == []
    assert all(copilot.recognize(orjson.loads(p.read_bytes())) for p in (AGENT_EXPORT, CHAT_EXPORT))


# ------------------------------------------------------------------ fixtures of our own

T0 = 1_770_000_000_000


def export(*requests: dict[str, Any], **top: Any) -> bytes:
    return orjson.dumps({"responderUsername": "GitHub Copilot", "initialLocation": "panel", **top,
                         "requests": list(requests)})  # fmt: skip


def request(n: int, text: str, *response: Any, result: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    body = {"requestId": f"request_{n}", "timestamp": T0 + n * 60_000, "modelId": "copilot/gpt-4.1",
            "message": {"text": text, "parts": [{"kind": "text", "text": text}]}, "variableData": {"variables": []},
            "response": list(response), "agent": {"id": "github.copilot.editsAgent", "modes": ["agent"]},
            "result": {"timings": {"firstProgress": 500, "totalElapsed": 2000}, "metadata": {}}
            if result is None else result}  # fmt: skip
    return {**body, **extra}


def md(value: str) -> dict[str, Any]:
    return {"value": value, "supportThemeIcons": False, "supportHtml": False}


def uri(path: str) -> dict[str, Any]:
    return {"$mid": 1, "fsPath": path, "external": f"file://{path}", "path": path, "scheme": "file"}


def terminal(call_id: str, command: str, exit_code: int | None, output: str, **extra: Any) -> dict[str, Any]:
    state = {"timestamp": T0 + 90_000} if exit_code is None else {"exitCode": exit_code, "timestamp": T0 + 90_000}
    return {"kind": "toolInvocationSerialized", "toolId": "run_in_terminal", "toolCallId": call_id,
            "invocationMessage": "", "isComplete": True, "isConfirmed": {"type": 4},
            "toolSpecificData": {"kind": "terminal", "commandLine": {"original": command}, "cwd": uri("/w/app"),
                                 "terminalCommandState": state, "terminalCommandOutput": {"text": output}},
            **extra}  # fmt: skip


def test_an_edit_mode_answer_s_edit_group_is_a_file_edit_call_and_its_fence_frame_is_dropped() -> None:
    edit = {"kind": "textEditGroup", "uri": uri("/w/app/src/pool.py"), "done": True,
            "edits": [[{"text": "POOL_SIZE = 8\n", "range": {"startLineNumber": 3, "endLineNumber": 3}}]]}  # fmt: skip
    data = export(
        request(
            1,
            "make the pool bigger",
            md("I'll raise the pool size:\n"),
            md("\n```\n"),
            {"kind": "undoStop", "id": "u1"},
            {"kind": "codeblockUri", "uri": uri("/w/app/src/pool.py"), "isEdit": True},
            edit,
            md("\n```\n"),
            md("Done: the pool holds "),
            {"kind": "inlineReference", "inlineReference": uri("/w/app/src/pool.py")},
            md(" now."),
        )
    )
    result = parse_bytes(data, "chat.json")
    session = result.sessions[0]
    reply = session.messages[1]
    assert [(b.type, b.text) for b in reply.blocks] == [
        ("text", "I'll raise the pool size:\n"),
        ("tool_use", "/w/app/src/pool.py"),
        ("text", "Done: the pool holds pool.py now."),
    ]
    (action,) = session.actions
    assert (action.tool, action.category, action.path, action.failed) == (
        "edit_file",
        "file_edit",
        "/w/app/src/pool.py",
        False,
    )
    assert "POOL_SIZE = 8" in action.input_json
    assert result.skipped_record_types["copilot-chat:part/edit-frame"] == 2


def test_terminal_calls_without_rounds_keep_command_exit_code_and_cwd_and_refusals_fail() -> None:
    denied = {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile", "toolCallId": "t3",
              "invocationMessage": {"value": "Reading [](file:///w/app/.env)",
                                    "uris": {"file:///w/app/.env": {"path": "/w/app/.env", "scheme": "file"}}},
              "isConfirmed": {"type": 0}, "isComplete": True}  # fmt: skip
    legacy = {"kind": "toolInvocationSerialized", "toolId": "copilot_findFiles", "toolCallId": "t4",
              "invocationMessage": "Searching", "isConfirmed": False, "isComplete": True}  # fmt: skip
    broken = {"kind": "toolInvocationSerialized", "toolId": "mcp_db_query", "toolCallId": "t5", "isComplete": True,
              "invocationMessage": "Running query", "isConfirmed": {"type": 1},
              "resultDetails": {"input": '{"sql": "select 1"}', "isError": True,
                                "output": [{"type": "embed", "isText": True, "value": "no such table"}]}}  # fmt: skip
    data = export(
        request(
            1,
            "run the tests",
            terminal("t1", "pytest -q", 1, "2 failed"),
            terminal("t2", "ls", 0, "src"),
            denied,
            legacy,
            broken,
            md("Two tests fail."),
        )
    )
    session = parse_bytes(data, "chat.json").sessions[0]
    assert session.cwd == "/w/app"
    rows = [(a.tool, a.command, a.path, a.failed, a.output) for a in session.actions]
    assert rows == [
        ("run_in_terminal", "pytest -q", "", True, "2 failed"),
        ("run_in_terminal", "ls", "", False, "src"),
        ("read_file", "", ".env", True, "denied by the user"),
        ("file_search", "", "", True, "denied by the user"),
        ("mcp_db_query", "", "", True, "no such table"),
    ]
    assert [a.exit_code for a in session.actions[:2]] == [1, 0]
    assert session.actions[4].input_json == '{"sql":"select 1"}'


def test_parts_pair_with_round_calls_by_id_or_by_tool_and_unshown_calls_come_in_order() -> None:
    rounds = [
        {"toolCalls": [{"name": "read_file", "id": "call_a__vscode-1", "arguments": '{"filePath": "/w/app/a.py"}'}]},
        {"toolCalls": [{"name": "grep_search", "id": "call_b__vscode-2", "arguments": '{"query": "TODO"}'}]},
        {"toolCalls": [{"name": "list_dir", "id": "call_c__vscode-3", "arguments": '{"path": "/w/app/src"}'}]},
    ]
    lines = [{"text": "import os", "lineBreakBefore": False}, {"text": "print(os.getcwd())", "lineBreakBefore": True}]
    results = {
        "call_a__vscode-1": {"content": [{"value": {"node": {"children": [{"children": lines}]}}}]},
        "call_b__vscode-2": {"content": [{"value": "ERROR while calling tool: bad regex"}]},
        "call_c__vscode-3": {"content": [{"value": "main.py"}]},
    }  # fmt: skip
    shown_a = {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile", "toolCallId": "call_a",
               "invocationMessage": "Reading a.py", "isConfirmed": {"type": 1}, "isComplete": True}  # fmt: skip
    shown_c = {"kind": "toolInvocationSerialized", "toolId": "copilot_listDirectory", "toolCallId": "uuid-c",
               "pastTenseMessage": {"value": "Read [](file:///w/app/src)",
                                    "uris": {"file:///w/app/src": {"path": "/w/app/src", "scheme": "file"}}},
               "invocationMessage": "Reading", "isConfirmed": {"type": 1}, "isComplete": True}  # fmt: skip
    metadata = {"toolCallRounds": rounds, "toolCallResults": results, "sessionId": "s-1"}
    data = export(request(1, "look around", shown_a, shown_c, md("ok"), result={"metadata": metadata}))
    session = parse_bytes(data, "chat.json").sessions[0]
    assert [(a.tool, a.path, a.failed, a.output) for a in session.actions] == [
        ("read_file", "/w/app/a.py", False, "import os\nprint(os.getcwd())"),
        ("grep_search", "", True, "ERROR while calling tool: bad regex"),
        ("list_dir", "/w/app/src", False, "main.py"),
    ]
    uses = [b.tool_use_id for m in session.messages for b in m.blocks if b.type == "tool_use"]
    assert uses == ["call_a", "call_b__vscode-2", "uuid-c"]
    assert session.id == "copilot-chat-export:s-1"


def test_attachments_are_referenced_not_inlined_and_images_are_image_blocks() -> None:
    variables = {"variables": [
        {"kind": "file", "id": "file:///w/app/secret.py", "name": "secret.py",
         "value": {"uri": uri("/w/app/secret.py"), "range": {"startLineNumber": 1}}},
        {"kind": "image", "id": "img", "name": "screenshot.png", "mimeType": "image/png", "value": {"0": 137, "1": 80}},
        {"kind": "promptText", "id": "vscode.prompt.instructions.text", "name": "prompt:instructionsList",
         "value": "<skills>do not inline me</skills>", "automaticallyAdded": True},
    ]}  # fmt: skip
    data = export(request(1, "what does this do?", md("It reads a secret."), variableData=variables))
    prompt = parse_bytes(data, "chat.json").sessions[0].messages[0]
    assert [(b.type, b.text, b.media_type) for b in prompt.blocks] == [
        ("text", "what does this do?", ""),
        ("text", "attachments: secret.py (/w/app/secret.py), prompt:instructionsList", ""),
        ("image", "", "image/png"),
    ]


def test_errors_cancels_usage_and_part_kinds_not_seen_yet() -> None:
    failed = {"errorDetails": {"message": "Sorry, you have been rate-limited.", "isRateLimited": True}}
    data = export(
        request(1, "first", md("Partial answer"), result=failed),
        request(2, "second", {"kind": "hologram", "value": 3}, "not a part", md("Sure."), isCanceled=True),
        request(3, "third", md("Counted."), {"kind": "usage", "promptTokens": 1200, "completionTokens": 80},
                new_field={"x": 1}),
    )  # fmt: skip
    result = parse_bytes(data, "chat.json")
    session = result.sessions[0]
    events = [(e.kind, e.text) for e in session.events if e.kind not in ("session_started", "turn_started")]
    assert events == [
        ("api_error", "API error: Sorry, you have been rate-limited."),
        ("turn_aborted", "turn aborted"),
        ("turn_completed", "turn completed"),
    ]
    assert result.skipped_record_types["copilot-chat:part/hologram"] == 1
    assert result.skipped_record_types["copilot-chat:part/(not an object)"] == 1
    replies = [m for m in session.messages if m.role == "assistant"]
    assert [b.text for m in replies for b in m.blocks] == ["Partial answer", "Sure.", "Counted."]
    assert (replies[2].input_tokens, replies[2].output_tokens) == (1200, 80)
    assert replies[2].time_ms == T0 + 180_000 + 500 and replies[2].duration_ms == 2000
    assert replies[0].model == "copilot/gpt-4.1"


def test_a_store_file_names_its_session_and_title() -> None:
    data = orjson.dumps({"version": 3, "sessionId": "0b1c-store", "creationDate": T0, "customTitle": "Pool sizing",
                         "requests": [request(1, "hi", md("hello"))]})  # fmt: skip
    result = parse_bytes(data, "0b1c-store.json")
    assert result.format == "copilot-chat"
    session = result.sessions[0]
    assert (session.id, session.title, session.title_snapshot.kind) == (
        "copilot-chat-export:0b1c-store",
        "Pool sizing",
        "custom-title",
    )


def test_an_export_without_ids_gets_a_stable_id_from_its_first_request() -> None:
    data = export(request(1, "hi", md("hello")))
    first, again = parse_bytes(data, "a.json").sessions[0], parse_bytes(data, "b.json").sessions[0]
    assert first.id == again.id and len(first.native_id) == 32
    longer = export(request(1, "hi", md("hello")), request(2, "more", md("sure")))
    assert parse_bytes(longer, "a.json").sessions[0].id == first.id  # a later export of the same chat
    other = export(request(1, "bye", md("hello")))
    assert parse_bytes(other, "a.json").sessions[0].id != first.id


def test_an_export_without_requests_has_no_session() -> None:
    result = parse_bytes(export(), "chat.json")
    assert (result.format, result.sessions) == ("copilot-chat", [])
    assert result.skipped_record_types["copilot-chat:empty-session"] == 1


@pytest.mark.parametrize("cut", [60, 400])
def test_a_cut_export_is_reported_and_parses_nothing(cut: int) -> None:
    data = orjson.dumps(orjson.loads(export(request(1, "hello " * 50, md("hi")))), option=orjson.OPT_INDENT_2)
    result = parse_bytes(data[:cut], "chat.json")
    # a pretty-printed document cut short: said to be truncated JSON, not records of another format
    assert result.sessions == [] and [i.code for i in result.issues] == ["unreadable"]
    assert "truncated JSON" in result.issues[0].reason


def test_the_token_counts_vscode_writes_in_each_request_s_result_metadata() -> None:
    def counted(prompt: int, output: int) -> dict[str, Any]:
        return {"timings": {"totalElapsed": 2000}, "metadata": {"promptTokens": prompt, "outputTokens": output}}

    data = export(
        request(1, "first", md("One."), result=counted(18_234, 412)),
        request(2, "second", md("Two."), result=counted(20_100, 95)),
        # usage parts already count this reply: the metadata does not add to them
        request(3, "third", md("Three."), {"kind": "usage", "promptTokens": 1200, "completionTokens": 80},
                result=counted(1200, 80)),
        request(4, "hostile", md("Four."), result=counted("many", -5)),  # type: ignore[arg-type]
    )  # fmt: skip
    session = parse_bytes(data, "chat.json").sessions[0]
    replies = [(m.input_tokens, m.output_tokens) for m in session.messages if m.role == "assistant"]
    assert replies == [(18_234, 412), (20_100, 95), (1200, 80), (0, 0)]


def test_the_chat_session_store_s_token_counts_are_read() -> None:
    """The store fixture (tests/fixtures/vscode_chat/) as VS Code writes it: its counts summed here from the JSON."""
    store = FIXTURES / "vscode_chat" / "5f0c3a2e-7d41-4b8e-9a0c-2f6d1e8b7c90.jsonl"
    lines = store.read_bytes().splitlines()[:-1]  # the last line was cut while VS Code appended
    entries = [orjson.loads(line) for line in lines if line.strip()]
    metadata = [e["v"]["metadata"] for e in entries if e.get("kind") == 1 and e.get("k", [])[-1:] == ["result"]]
    expected = (sum(m.get("promptTokens", 0) for m in metadata), sum(m.get("outputTokens", 0) for m in metadata))
    (session,) = parse_file(store).sessions
    replies = [m for m in session.messages if m.role == "assistant"]
    assert (sum(m.input_tokens for m in replies), sum(m.output_tokens for m in replies)) == expected
    assert expected[0] > 0 and expected[1] > 0
