"""The derivation rules shared by every origin: paths, fenced code, run statuses, event order and
delivery, dispatch states, ids and refs, and the vocabularies the ingest boundary enforces."""

from __future__ import annotations

import hashlib

import pytest

from quarry.core import refs
from quarry.ingest.derive import normalize_path
from quarry.ingest.fences import split_fenced
from quarry.ingest.normalize import build_session
from quarry.ingest.sources import DraftBlock, DraftDispatch, DraftMessage, DraftSession
from quarry.ingest.sources.tool_calls import tool_use_block
from quarry.ingest.validate import session_problems
from quarry.v1 import units_pb2


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("/repo/src/a.py", "/repo", "src/a.py"),
        ("/repo/src/../lib//b.py", "/repo/", "lib/b.py"),
        ("/repo", "/repo", "."),
        ("/repository/a.py", "/repo", "/repository/a.py"),  # a sibling sharing the prefix is not under it
        ("/etc/hosts", "/repo", "/etc/hosts"),
        ("./src/a.py", "/repo", "src/a.py"),
        ("src/a.py", "", "src/a.py"),
        ("/repo/a.py", "/", "/repo/a.py"),
        ("C:\\Users\\dev\\App\\src\\main.rs", "c:\\users\\dev\\app", "src/main.rs"),
        ("D:\\other\\x.txt", "C:\\repo", "D:/other/x.txt"),
    ],
)
def test_normalize_path(path: str, root: str, expected: str) -> None:
    assert normalize_path(path, root) == expected


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("no fence here", [("text", "no fence here", "")]),
        (
            "Run:\n\n```bash\npytest -q\n```\n\nThen commit.",
            [("text", "Run:", ""), ("code", "pytest -q", "bash"), ("text", "Then commit.", "")],
        ),
        ("~~~\nplain\n~~~", [("code", "plain", "")]),
        ("````md\n```py\nx\n```\n````", [("code", "```py\nx\n```", "md")]),  # a longer fence holds a shorter
        ("   ```py title=a.py\nx = 1\n", [("code", "x = 1", "py")]),  # indented, unclosed: to the end
        ("use ``` inline, not as a fence", [("text", "use ``` inline, not as a fence", "")]),
        ("```not`a`fence\nx\n", [("text", "```not`a`fence\nx", "")]),  # backticks in a backtick info string
        ("```\n```", []),  # an empty block leaves nothing
    ],
)
def test_split_fenced(text: str, pieces: list[tuple[str, str, str]]) -> None:
    assert split_fenced(text) == pieces


def test_fenced_text_becomes_blocks_and_actions_still_find_their_tool_use() -> None:
    draft = DraftSession("claude-code-session", "s", "x.jsonl", cwd="/repo")
    reply = draft.add_message(DraftMessage("assistant", True))
    draft.add_block(reply, DraftBlock("text", text="Before:\n```py\na = 1\n```\nAfter."))
    draft.add_block(reply, tool_use_block("Read", "t1", {"file_path": "/repo/a.py"}))
    session = build_session(draft)
    assert [(b.id, b.type) for b in session.messages[0].blocks] == [
        ("claude-code-session:s:m0:0", "text"),
        ("claude-code-session:s:m0:1", "code"),
        ("claude-code-session:s:m0:2", "text"),
        ("claude-code-session:s:m0:3", "tool_use"),
    ]
    assert session.actions[0].block_id == "claude-code-session:s:m0:3"
    assert session.files[0].first_ref == "block:claude-code-session:s:m0:3"


def _draft(*messages: tuple[str, list[DraftBlock]], authored: bool = True) -> DraftSession:
    draft = DraftSession("codex-session", "s", "x.jsonl")
    for role, blocks in messages:
        message = draft.add_message(DraftMessage(role, authored))
        for block in blocks:
            draft.add_block(message, block)
    return draft


TEXT = [DraftBlock("text", text="hi")]


def test_main_status_without_turn_signals() -> None:
    def status(draft: DraftSession) -> str:
        return build_session(draft).runs[0].status

    assert status(_draft(("user", TEXT), ("assistant", TEXT))) == "completed"
    assert status(_draft(("user", TEXT), ("assistant", [tool_use_block("shell", "c", {"cmd": "ls"})]))) == "unknown"
    assert status(_draft(("user", TEXT))) == "unknown"
    errored = _draft(("user", TEXT))
    errored.record("api_error", text="API error 500", failed=True)
    assert status(errored) == "failed"
    retried = _draft(("user", TEXT))
    retried.record("api_error", text="API error 529", failed=True)
    retried.add_block(retried.add_message(DraftMessage("assistant", True)), DraftBlock("text", text="done"))
    assert status(retried) == "completed"  # a reply came after the error: the retry worked


def _dispatch(result: DraftBlock | None, facts: DraftDispatch | None) -> tuple[units_pb2.Run, units_pb2.Delegation]:
    call = tool_use_block("Task", "t1", {"prompt": "look", "subagent_type": "Explore"})
    draft = _draft(("user", TEXT), ("assistant", [call]), *([("user", [result])] if result else []))
    if facts is not None:
        draft.dispatches["t1"] = facts
    session = build_session(draft)
    return session.runs[1], session.delegations[0]


@pytest.mark.parametrize(
    ("result", "facts", "run_status", "result_state"),
    [
        (None, None, "unknown", "missing"),
        (DraftBlock("tool_result", text="done", tool_use_id="t1"), None, "completed", "completed"),
        (DraftBlock("tool_result", text="boom", tool_use_id="t1", is_error=True), None, "failed", "failed"),
        (
            DraftBlock("tool_result", text="launched", tool_use_id="t1"),
            DraftDispatch(status="async_launched"),
            "running",
            "completed",
        ),
        (
            DraftBlock("tool_result", text="[Request interrupted by user]", tool_use_id="t1", is_error=True),
            DraftDispatch(status="interrupted"),
            "interrupted",
            "failed",
        ),
        (DraftBlock("tool_result", text="?", tool_use_id="t1"), DraftDispatch(status="weird"), "unknown", "completed"),
    ],
)
def test_dispatch_states(
    result: DraftBlock | None, facts: DraftDispatch | None, run_status: str, result_state: str
) -> None:
    run, delegation = _dispatch(result, facts)
    assert (run.status, delegation.result_state, delegation.mapping_state) == (run_status, result_state, "unresolved")
    assert (run.agent, delegation.agent, delegation.instruction) == ("Explore", "Explore", "look")
    assert bool(delegation.result_sha256) == (result is not None)


def test_result_preview_is_bounded_and_the_hash_covers_the_complete_result() -> None:
    long = "x" * 100_000  # beyond the 64 KiB kept for the action output
    _, delegation = _dispatch(DraftBlock("tool_result", text=long, tool_use_id="t1"), None)
    assert delegation.result_preview == "x" * 280
    assert delegation.result_sha256 == hashlib.sha256(long.encode()).hexdigest()


def test_events_follow_the_message_stream_and_delivery() -> None:
    draft = _draft(("user", TEXT))
    draft.record("turn_started", text="turn started")
    use = draft.add_message(DraftMessage("assistant", True))
    draft.add_block(use, tool_use_block("shell", "c1", {"cmd": "ls"}))
    result = draft.add_message(DraftMessage("tool", False))
    draft.add_block(result, DraftBlock("tool_result", text="a.py", tool_name="shell", tool_use_id="c1"))
    draft.record("command", text="/status", message_seq=result.seq)  # at the result's message: after it
    draft.add_block(draft.add_message(DraftMessage("assistant", True)), DraftBlock("text", text="done"))
    draft.record("turn_completed", text="turn completed")
    session = build_session(draft)
    assert [(e.seq, e.kind, e.delivery_state) for e in session.events] == [
        (0, "session_started", "recorded"),
        (1, "turn_started", "recorded"),
        (2, "tool_finished", "acted_on"),
        (3, "command", "acted_on"),
        (4, "turn_completed", "recorded"),
    ]
    assert [e.id for e in session.events] == [refs.event_id("codex-session:s", n) for n in range(5)]


def test_refs() -> None:
    assert refs.file_id("s", "a/b.py") == "s:file:a/b.py"
    assert (refs.run_id("s"), refs.run_id("s", 2)) == ("s:run:main", "s:run:2")
    assert (refs.event_id("s", 3), refs.snapshot_id("s", 0)) == ("s:event:3", "s:snapshot:0")
    assert refs.delegation_id("s", 1) == "s:delegation:1"
    assert refs.ref("block", "s:m1:0") == "block:s:m1:0"


def test_derived_units_outside_their_vocabulary_are_rejected() -> None:
    session = build_session(_draft(("user", TEXT), ("assistant", TEXT)))
    assert session_problems(session) == []
    session.runs[0].status = "done"
    session.events[0].kind = "started"
    session.snapshots[0].boundary = "start"
    session.delegations.add(id="d", mapping_state="linked", result_state="ok")
    assert session_problems(session) == [
        "run codex-session:s:run:main: status 'done' is not one of completed, failed, interrupted, running, unknown",
        "event codex-session:s:event:0: kind 'started' is not one of session_started, turn_started, turn_completed, "
        "turn_aborted, tool_finished, subagent_finished, compaction, api_error, command",
        "snapshot codex-session:s:snapshot:0: boundary 'start' is not one of session_start, subagent_start, compaction",
        "delegation d: mapping_state 'linked' is not one of resolved, unresolved",
        "delegation d: result_state 'ok' is not one of completed, failed, missing",
    ]
