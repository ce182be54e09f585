"""Logs written on Windows, read on Linux: the session's repo is its folder's name, not the whole
`c:\\Users\\…\\app` (a Linux basename does not split backslashes), and an edit's file under the Windows
working directory is named relative to it, as on any other machine."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from quarry.ingest.parse import parse_bytes
from quarry.ingest.sources.paths import folder_name

WINDOWS_CWD = "c:\\Users\\dev\\copilot-chat-analyzer"
REPO = "copilot-chat-analyzer"
T0 = 1_770_000_000_000


@pytest.mark.parametrize(
    ("path", "name"),
    [
        (WINDOWS_CWD, REPO),
        (WINDOWS_CWD + "\\", REPO),
        ("C:/Users/dev/app/", "app"),
        ("\\\\server\\share\\team\\app", "app"),
        ("/home/dev/app/", "app"),
        ("app", "app"),
        ("c:\\", ""),
        ("", ""),
    ],
)
def test_a_folder_s_name_on_any_os(path: str, name: str) -> None:
    assert folder_name(path) == name


def windows_uri(path: str) -> dict[str, Any]:
    posix = "/" + path.replace("\\", "/")
    return {"$mid": 1, "fsPath": path, "external": f"file://{posix}", "path": posix, "scheme": "file"}


def copilot_export() -> bytes:
    """A Copilot Chat export from Windows: a terminal call in the workspace, then an edit of a file in it."""
    terminal = {"kind": "toolInvocationSerialized", "toolId": "run_in_terminal", "toolCallId": "t1",
                "invocationMessage": "", "isComplete": True, "isConfirmed": {"type": 4},
                "toolSpecificData": {"kind": "terminal", "commandLine": {"original": "npm test"},
                                     "cwd": windows_uri(WINDOWS_CWD),
                                     "terminalCommandState": {"exitCode": 0, "timestamp": T0 + 1000},
                                     "terminalCommandOutput": {"text": "ok"}}}  # fmt: skip
    edit = {"kind": "textEditGroup", "uri": windows_uri(WINDOWS_CWD + "\\src\\parser.ts"), "done": True,
            "edits": [[{"text": "x = 1;\n", "range": {"startLineNumber": 1, "endLineNumber": 1}}]]}  # fmt: skip
    request = {"requestId": "request_1", "timestamp": T0, "modelId": "copilot/gpt-4.1",
               "message": {"text": "run the tests", "parts": [{"kind": "text", "text": "run the tests"}]},
               "variableData": {"variables": []}, "response": [terminal, edit, {"value": "Done."}],
               "agent": {"id": "github.copilot.editsAgent"}, "result": {"metadata": {}}}  # fmt: skip
    return orjson.dumps({"responderUsername": "GitHub Copilot", "initialLocation": "panel", "requests": [request]})


def claude_code_log() -> bytes:
    records = [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None, "cwd": WINDOWS_CWD,
         "timestamp": "2026-01-01T10:00:00Z", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1", "cwd": WINDOWS_CWD,
         "timestamp": "2026-01-01T10:00:01Z",
         "message": {"role": "assistant", "model": "claude", "content": [{"type": "text", "text": "hello"}]}},
    ]  # fmt: skip
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def codex_rollout() -> bytes:
    records = [
        {"timestamp": "2026-01-01T10:00:00Z", "type": "session_meta",
         "payload": {"id": "abc", "timestamp": "2026-01-01T10:00:00Z", "cwd": WINDOWS_CWD}},
        {"timestamp": "2026-01-01T10:00:01Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
    ]  # fmt: skip
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def aider_history() -> bytes:
    banner = f"> Aider v0.86.1  \n> Main model: gpt-4.1 with diff edit format  \n> Cur working dir: {WINDOWS_CWD}  \n"
    return f"\n# aider chat started at 2026-03-01 10:00:00\n\n{banner}\n#### hi  \n\nhello\n\n".encode()


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (copilot_export(), "chat.json"),
        (claude_code_log(), "s1.jsonl"),
        (codex_rollout(), "rollout-2026-01-01T10-00-00-abc.jsonl"),
        (aider_history(), ".aider.chat.history.md"),
    ],
    ids=["copilot", "claude-code", "codex", "aider"],
)
def test_a_windows_working_directory_names_its_repo(data: bytes, name: str) -> None:
    (session,) = parse_bytes(data, name).sessions
    assert (session.cwd, session.repo) == (WINDOWS_CWD, REPO)


def test_a_copilot_edit_under_the_windows_workspace_is_named_relative_to_it() -> None:
    (session,) = parse_bytes(copilot_export(), "chat.json").sessions
    edit = next(a for a in session.actions if a.category == "file_edit")
    assert edit.path == "src/parser.ts"
    assert [f.path for f in session.files] == ["src/parser.ts"]
