"""VS Code's chat session store as current VS Code writes it: `chatSessions/<sessionId>.jsonl`, a mutation log.

No public real log exists, so the fixture (tests/fixtures/vscode_chat/) is written entry by entry as VS Code's
`ObjectMutationLog` writes it (microsoft/vscode src/vs/workbench/contrib/chat/common/model/objectMutationLog.ts at
ce1580aa66c166f369325f5dcaa55db7701cf6cc, its schema in chatSessionOperationLog.ts at
98227ed5a5f50a4ef316aa545f8606850e41778a): the snapshot line (kind 0, its keys in the schema's order, undefined
ones left out), property sets (kind 1), array pushes that first cut the array at `i` (kind 2: a markdown part
that grew, a tool call that completed, a request the user removed) and a last line cut while VS Code appended.
"""

from __future__ import annotations

from typing import Any

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES

SESSION_ID = "5f0c3a2e-7d41-4b8e-9a0c-2f6d1e8b7c90"
LOG = FIXTURES / "vscode_chat" / f"{SESSION_ID}.jsonl"
T0 = 1767225600000


def lines(*entries: Any) -> bytes:
    return b"".join(orjson.dumps(entry) + b"\n" for entry in entries)


def snapshot(*requests: Any, **extra: Any) -> dict[str, Any]:
    chat = {"version": 3, "creationDate": T0, "initialLocation": "panel", "responderUsername": "GitHub Copilot",
            "sessionId": "c1", "hasPendingEdits": False, "requests": list(requests), **extra}  # fmt: skip
    return {"kind": 0, "v": chat}


def request(rid: str, text: str, *response: Any) -> dict[str, Any]:
    return {"requestId": rid, "timestamp": T0 + 1000, "modelId": "copilot/gpt-4.1", "responseId": f"r-{rid}",
            "modelState": {"value": 1, "completedAt": T0 + 2000}, "response": list(response),
            "message": {"text": text, "parts": [{"kind": "text", "text": text}]},
            "variableData": {"variables": []}}  # fmt: skip


def md(value: str) -> dict[str, Any]:
    return {"value": value, "supportThemeIcons": False, "supportHtml": False}


def test_the_log_replays_to_the_chat_vs_code_shows() -> None:
    result = parse_file(LOG)
    assert result.format == "vscode-chat-log"
    (session,) = result.sessions
    # the same id as the chat's `.json` store file had before VS Code moved it to the log
    assert session.id == f"copilot-chat-export:{SESSION_ID}"
    assert session.title == "Fix the day-first date test"  # set by a later entry (kind 1, k: ["customTitle"])
    prompts = [m.blocks[0].text for m in session.messages if m.role == "user"]
    # "also update the docs" was pushed, then cut away (kind 2, i: 1) before "run the whole suite" replaced it
    assert prompts == ["the date test fails: fix it", "run the whole suite"]
    text = "\n".join(b.text for m in session.messages for b in m.blocks)
    assert "also update the docs" not in text
    first_reply = session.messages[1]
    # the markdown part grew in place (pushed again from i: 0): its last text only, once
    assert [b.text for b in first_reply.blocks if b.type == "text"] == [
        "I'll read the failing test first.",
        "The test fails because the day comes first: `05/06/2025` is 5 June.",
    ]
    assert (first_reply.time_ms, first_reply.duration_ms) == (T0 + 1000 + 900, 14000)
    actions = [
        (a.tool, a.category, a.failed, a.exit_code if a.HasField("exit_code") else None) for a in session.actions
    ]
    # the read completed in place (its running copy cut at i: 1); the test run exited 1
    assert actions == [("read_file", "file_read", False, None), ("run_in_terminal", "shell", True, 1)]
    assert session.actions[0].path.endswith("tests/test_dates.py")
    assert "1 failed" in session.actions[1].output
    ends = [e.kind for e in session.events if e.kind.startswith("turn_")]
    assert ends == ["turn_started", "turn_completed", "turn_started", "turn_aborted"]  # modelState 2: cancelled
    # VS Code stopped while appending the second result: that entry alone is lost, and said so
    assert [(i.line, i.code) for i in result.issues] == [(16, "truncated_line")]


def test_a_log_of_one_line_is_a_chat_that_never_changed() -> None:
    data = lines(snapshot(request("q1", "explain the pool", md("It keeps 8 connections."))))
    result = parse_bytes(data, "c1.jsonl")
    assert result.format == "vscode-chat-log" and not result.issues
    (session,) = result.sessions
    assert session.id == "copilot-chat-export:c1"
    assert [(m.role, m.blocks[0].text) for m in session.messages] == [
        ("user", "explain the pool"),
        ("assistant", "It keeps 8 connections."),
    ]


def test_the_same_chat_in_the_json_store_and_in_the_log_is_one_session() -> None:
    chat = snapshot(request("q1", "explain the pool", md("It keeps 8 connections.")), customTitle="Pool")
    from_log = parse_bytes(lines(chat), "c1.jsonl").sessions[0]
    from_json = parse_bytes(orjson.dumps(chat["v"]), "c1.json").sessions[0]
    assert (from_log.id, from_log.title) == (from_json.id, from_json.title) == ("copilot-chat-export:c1", "Pool")
    assert list(from_log.messages) == list(from_json.messages)


def test_entries_that_do_not_fit_the_chat_are_issues_and_the_rest_is_read() -> None:
    data = lines(
        {"kind": 1, "k": ["customTitle"], "v": "too early"},  # 1: before the snapshot
        snapshot(request("q1", "first", md("one"))),  # 2
        {"kind": 1, "k": ["requests", 7, "result"], "v": {}},  # 3: no request 7
        {"kind": 2, "k": ["requests", 0, "message", "text"], "v": ["x"]},  # 4: a push onto a string
        {"kind": 9, "k": ["requests"], "v": []},  # 5: no such kind
        {"kind": 1, "k": ["x"] * 500, "v": 1},  # 6: a path deeper than the chat's
        {"kind": 1, "k": ["requests", True, "result"], "v": {}},  # 7: true is not an index
        {"kind": 2, "k": ["requests"], "v": [request("q2", "second", md("two"))], "i": 10**12},  # 8: cut past the end
        {"kind": 3, "k": ["requests", 0, "customNothing"]},  # 9: deleting what is not there is harmless
        "not an entry",  # 10
    )
    result = parse_bytes(data, "c1.jsonl")
    assert [issue.line for issue in result.issues] == [1, 3, 4, 5, 6, 7, 10]
    assert all(issue.path == "c1.jsonl" and issue.code == "invalid_record" for issue in result.issues)
    assert "requests/7/result" in result.issues[1].reason
    (session,) = result.sessions
    assert [m.blocks[0].text for m in session.messages if m.role == "user"] == ["first", "second"]
    assert session.title != "too early"


def test_a_log_whose_snapshot_is_lost_has_no_session_and_says_why() -> None:
    data = lines(snapshot(request("q1", "hi", md("hello"))), {"kind": 1, "k": ["customTitle"], "v": "t"})
    changes = data[data.index(b"\n") + 1 :]
    damaged = data[:40] + b"\n" + changes  # the snapshot line cut short
    for log in (changes, damaged):
        result = parse_bytes(log, "c1.jsonl")
        assert (result.format, result.sessions) == ("vscode-chat-log", [])
        assert [i.reason for i in result.issues if i.line == 0] == [
            "no snapshot entry (kind 0): the log's 1 change(s) have no chat to apply to"
        ]
        assert all(issue.path == "c1.jsonl" for issue in result.issues)
    assert (1, "malformed_json") in [(i.line, i.code) for i in parse_bytes(damaged, "c1.jsonl").issues]
