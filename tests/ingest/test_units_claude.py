"""Claude Code: the derived units (files, runs, events, snapshots, delegations) of hand-written sessions
that exercise each record type, asserted row by row, with every aggregate count.

Fixtures (tests/fixtures/claude_code/): `delegating.jsonl` + `delegating/subagents/agent-a1b2.jsonl`
(2.x layout: an Agent dispatch linked by toolUseResult.agentId, an interrupted Task, a slash command,
a failed and a repeated Edit, fenced code, turn_duration), `compacted.jsonl` (api_error, a manual
compact_boundary and its summary, a microcompaction, a synthetic API-error reply) and
`sidechains.jsonl` (1.0.x layout: two Task dispatches, one answered by an interleaved sidechain).
"""

from __future__ import annotations

import hashlib

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.support import FIXTURES, row, rows

CLAUDE = FIXTURES / "claude_code"
MAIN = "claude-code-session:sess-3"
CHILD = f"{MAIN}/agent-a1b2"
T3 = 1772445600000  # 2026-03-02T10:00:00Z, the first record of sess-3 (and its child)
T4 = 1772535600000  # 2026-03-03T11:00:00Z, the first record of sess-4 and sess-5
ANSWER = "acquire() is called from db/pool.py and db/retry.py."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _one(name: str) -> units_pb2.Session:
    (session,) = parse_file(CLAUDE / name).sessions
    return session


def test_delegating_session_counts_and_fenced_code() -> None:
    session = _one("delegating.jsonl")
    assert (session.id, session.title, session.agent, session.parent_session_id) == (
        MAIN,
        "Skip the tests and explain the fix",
        "",
        "",
    )
    # 9 user rows (command, its isMeta expansion, 5 tool results, the interruption, the prompt), 6 replies.
    # Words: user 3 + 9 + 7 + 7, assistant 5 ("I'll map the callers first.") + 2 + 5 (the code) + 7.
    assert row(session.counts) == {
        "messages": 15,
        "words": 45,
        "user_messages": 9,
        "authored_user_messages": 1,
        "assistant_messages": 6,
        "user_words": 26,
        "authored_user_words": 7,
        "assistant_words": 19,
        "tool_use_messages": 5,
    }
    reply = session.messages[14]
    assert [(b.type, b.language, b.text) for b in reply.blocks] == [
        ("text", "", "The fix:"),
        ("code", "python", "while time.monotonic() < deadline:\n    self._retry()"),
        ("text", "", "The loop now ends at the deadline."),
    ]
    assert reply.duration_ms == 2500  # system/turn_duration


def test_delegating_files_runs_and_delegations() -> None:
    session = _one("delegating.jsonl")
    # Read, a failed Edit and an Edit of ./db/../db/pool.py: one normalized path, relative to the cwd.
    assert rows(session.files) == [
        {
            "id": f"{MAIN}:file:db/pool.py",
            "session_id": MAIN,
            "path": "db/pool.py",
            "actions": 3,
            "categories": {"file_read": 1, "file_edit": 2},
            "failed": 1,
            "first_ref": f"block:{MAIN}:m4:0",
            "last_ref": f"block:{MAIN}:m8:0",
            "first_time_ms": T3 + 7000,
            "last_time_ms": T3 + 11000,
        }
    ]
    result = ANSWER + "\nagentId: a1b2 (use SendMessage with to: 'a1b2' to continue this agent)"
    interrupted = "[Request interrupted by user for tool use]"
    assert rows(session.delegations) == [
        {
            "id": f"{MAIN}:delegation:1",
            "session_id": MAIN,
            "child_session_id": CHILD,
            "mapping_state": "resolved",
            "tool": "Agent",
            "agent": "Explore",
            "description": "Map the pool callers",
            "instruction": "List every caller of acquire() in db/",
            "tool_use_ref": f"block:{MAIN}:m2:1",
            "result_state": "completed",
            "result_preview": result,
            "result_sha256": _sha(result),
            "time_ms": T3 + 1000,
        },
        {
            "id": f"{MAIN}:delegation:2",
            "session_id": MAIN,
            "mapping_state": "unresolved",
            "tool": "Task",
            "agent": "general-purpose",
            "description": "Run the tests",
            "instruction": "Run tests/test_pool.py and report failures",
            "tool_use_ref": f"block:{MAIN}:m10:0",
            "result_state": "failed",
            "result_preview": interrupted,
            "result_sha256": _sha(interrupted),
            "time_ms": T3 + 13000,
            "is_error": True,
        },
    ]
    # usage per reply: 5 input + 100 cache read + output (30 for the merged msg_1, 10 x 4, 40) -> 740
    assert rows(session.runs) == [
        {
            "id": f"{MAIN}:run:main",
            "session_id": MAIN,
            "role": "main",
            "status": "completed",
            "started_ms": T3,
            "ended_ms": T3 + 33000,
            "duration_ms": 33000,
            "tool_uses": 5,
            "total_tokens": 740,
            "model": "claude-sonnet-4-6",
            "provider": "anthropic",
            "branch": "main",
        },
        {
            "id": f"{MAIN}:run:1",
            "session_id": MAIN,
            "role": "subagent",
            "status": "completed",
            "agent": "Explore",
            "child_session_id": CHILD,
            "delegation_id": f"{MAIN}:delegation:1",
            "started_ms": T3 + 1000,
            "ended_ms": T3 + 6000,
            "duration_ms": 4000,  # toolUseResult.totalDurationMs, not the 5 s between the records
            "tool_uses": 1,
            "total_tokens": 1234,
            "provider": "anthropic",
            "branch": "main",
        },
        {
            "id": f"{MAIN}:run:2",
            "session_id": MAIN,
            "role": "subagent",
            "status": "interrupted",
            "agent": "general-purpose",
            "delegation_id": f"{MAIN}:delegation:2",
            "started_ms": T3 + 13000,
            "ended_ms": T3 + 20000,
            "duration_ms": 7000,
            "provider": "anthropic",
            "branch": "main",
        },
    ]


def test_delegating_events_and_snapshot() -> None:
    session = _one("delegating.jsonl")
    got = [(e.seq, e.kind, e.time_ms, e.text, e.source_ref, e.object_ref, e.delivery_state) for e in session.events]
    assert got == [
        (
            0,
            "session_started",
            T3,
            "session started in /home/dev/projects/quarry on main",
            f"message:{MAIN}:m0",
            f"session:{MAIN}",
            "recorded",
        ),
        (1, "command", T3, "/review pool", f"message:{MAIN}:m0", "/review", "acted_on"),
        (
            2,
            "tool_finished",
            T3 + 6000,
            "Agent finished: Map the pool callers",
            f"block:{MAIN}:m3:0",
            "Agent",
            "acted_on",
        ),
        (
            3,
            "subagent_finished",
            T3 + 6000,
            "Explore subagent completed: Map the pool callers",
            f"block:{MAIN}:m3:0",
            f"session:{CHILD}",
            "acted_on",
        ),
        (
            4,
            "tool_finished",
            T3 + 8000,
            "Read finished: /home/dev/projects/quarry/db/pool.py",
            f"block:{MAIN}:m5:0",
            "Read",
            "acted_on",
        ),
        (
            5,
            "tool_finished",
            T3 + 10000,
            "Edit failed: /home/dev/projects/quarry/db/pool.py",
            f"block:{MAIN}:m7:0",
            "Edit",
            "failed",
        ),
        (
            6,
            "tool_finished",
            T3 + 12000,
            "Edit finished: /home/dev/projects/quarry/./db/../db/pool.py",
            f"block:{MAIN}:m9:0",
            "Edit",
            "acted_on",
        ),
        (7, "tool_finished", T3 + 20000, "Task failed: Run the tests", f"block:{MAIN}:m11:0", "Task", "failed"),
        (
            8,
            "subagent_finished",
            T3 + 20000,
            "general-purpose subagent interrupted: Run the tests",
            f"block:{MAIN}:m11:0",
            "",
            "failed",
        ),
        # The interruption is written twice (tool result, then a user row): one event.
        (
            9,
            "turn_aborted",
            T3 + 20000,
            "[Request interrupted by user for tool use]",
            f"message:{MAIN}:m11",
            "",
            "recorded",
        ),
        (10, "turn_completed", T3 + 33000, "turn completed in 2.5 s", "", "", "recorded"),
    ]
    assert [e.id for e in session.events] == [f"{MAIN}:event:{n}" for n in range(11)]
    # The first prompt a human wrote (the command and its expansion were not typed as prose).
    assert rows(session.snapshots) == [
        {
            "id": f"{MAIN}:snapshot:0",
            "session_id": MAIN,
            "boundary": "session_start",
            "time_ms": T3,
            "message_ref": f"message:{MAIN}:m13",
            "preview": "Skip the tests and explain the fix",
            "cwd": "/home/dev/projects/quarry",
            "branch": "main",
            "model": "claude-sonnet-4-6",
            "inheritance": "fresh",
        }
    ]


def test_subagent_file_is_a_child_session_with_lineage() -> None:
    child = _one("delegating/subagents/agent-a1b2.jsonl")
    assert (child.id, child.parent_session_id) == (CHILD, MAIN)
    # Its records do not name their subagent type: that comes from the parent, stored elsewhere.
    assert child.agent == ""
    assert row(child.counts) == {
        "messages": 4,
        "words": 14,
        "user_messages": 2,
        "assistant_messages": 2,
        "user_words": 7,
        "assistant_words": 7,
        "tool_use_messages": 1,
    }
    assert rows(child.snapshots) == [
        {
            "id": f"{CHILD}:snapshot:0",
            "session_id": CHILD,
            "boundary": "subagent_start",
            "time_ms": T3 + 2000,
            "message_ref": f"message:{CHILD}:m0",
            "preview": "List every caller of acquire() in db/",
            "cwd": "/home/dev/projects/quarry",
            "branch": "main",
            "model": "claude-haiku-4-5",
            "inheritance": "prompt",
        }
    ]
    assert rows(child.runs) == [
        {
            "id": f"{CHILD}:run:main",
            "session_id": CHILD,
            "role": "main",
            "status": "completed",
            "started_ms": T3 + 2000,
            "ended_ms": T3 + 5000,
            "duration_ms": 3000,
            "tool_uses": 1,
            "total_tokens": 26,
            "model": "claude-haiku-4-5",
            "provider": "anthropic",
            "branch": "main",
        }
    ]
    assert [(f.path, dict(f.categories)) for f in child.files] == [("db", {"search": 1})]  # Grep over db/
    assert [(e.kind, e.delivery_state) for e in child.events] == [
        ("session_started", "recorded"),
        ("tool_finished", "acted_on"),
    ]
    assert list(child.delegations) == []


def test_compaction_shadows_and_snapshots() -> None:
    session = _one("compacted.jsonl")
    sid = "claude-code-session:sess-4"
    # The summary row replaced the four messages before the boundary; the boundary, the microcompaction
    # notice and the runtime's synthetic API-error reply are log-only (never sent to the model).
    assert [m.surface for m in session.messages] == ["shadowed"] * 4 + ["log-only", "current"] * 2 + ["log-only"]
    # Words: user 6 + 30 (the summary) + 5, assistant 4 + 7.
    assert row(session.counts) == {
        "messages": 6,
        "words": 52,
        "user_messages": 4,
        "authored_user_messages": 2,
        "assistant_messages": 2,
        "user_words": 41,
        "authored_user_words": 11,
        "assistant_words": 11,
        "tool_use_messages": 1,
    }
    summary = session.messages[5]
    assert summary.blocks[0].text.startswith("This session is being continued") and not summary.authored
    assert rows(session.snapshots) == [
        {
            "id": f"{sid}:snapshot:0",
            "session_id": sid,
            "boundary": "session_start",
            "time_ms": T4,
            "message_ref": f"message:{sid}:m0",
            "preview": "Refactor the retry loop in db/pool.py",
            "cwd": "/home/dev/projects/quarry",
            "branch": "main",
            "model": "claude-opus-4-5",
            "inheritance": "fresh",
        },
        {
            "id": f"{sid}:snapshot:1",
            "session_id": sid,
            "seq": 1,
            "boundary": "compaction",
            "time_ms": T4 + 60000,
            "message_ref": f"message:{sid}:m5",
            "trigger": "manual",
            "tokens_before": 48000,
            "preview": summary.blocks[0].text,
            "cwd": "/home/dev/projects/quarry",
            "branch": "main",
            "model": "claude-opus-4-5",
            "inheritance": "summary",
        },
    ]
    got = [(e.kind, e.time_ms, e.text, e.source_ref, e.delivery_state) for e in session.events]
    assert got == [
        (
            "session_started",
            T4,
            "session started in /home/dev/projects/quarry on main",
            f"message:{sid}:m0",
            "recorded",
        ),
        ("tool_finished", T4 + 9000, "Bash finished: pytest -q tests/test_pool.py", f"block:{sid}:m2:0", "acted_on"),
        ("api_error", T4 + 10000, "API error 529: Overloaded (retry 1/10)", "", "failed"),
        # No model reply follows the compactions (the last reply is the runtime's synthetic error).
        ("compaction", T4 + 60000, "context compacted (manual, 48000 tokens before)", f"message:{sid}:m4", "recorded"),
        ("compaction", T4 + 61000, "microcompaction (auto, 12000 tokens saved)", f"message:{sid}:m6", "recorded"),
        (
            "api_error",
            T4 + 75000,
            'API error: server_error: API Error: 500 {"type":"error","error":{"type":"api_error",'
            '"message":"Internal server error"}}',
            f"message:{sid}:m8",
            "failed",
        ),
    ]
    # The session ended on an API error: its main run failed. 2 replies x (8 + 20 + 50 tokens): the
    # runtime's synthetic error reply is log-only, not a reply of the model.
    (main,) = session.runs
    assert (main.status, main.total_tokens, main.tool_uses, main.duration_ms) == ("failed", 156, 1, 75000)
    assert list(session.delegations) == [] and [f.path for f in session.files] == []


def test_old_layout_sidechain_resolves_its_task_with_the_child_excerpt() -> None:
    result = parse_file(CLAUDE / "sidechains.jsonl")
    assert result.issues == [] and dict(result.skipped_record_types) == {}
    main, side = result.sessions
    sid, child = "claude-code-session:sess-5", "claude-code-session:sess-5/sidechain-s1"
    assert (side.id, side.parent_session_id, side.agent) == (child, sid, "general-purpose")
    excerpt = "tests/test_pool.py sleeps for a second on a real clock."
    failure = "Error: the CI logs are not available"
    assert rows(main.delegations) == [
        {
            "id": f"{sid}:delegation:1",
            "session_id": sid,
            "child_session_id": child,
            "mapping_state": "resolved",
            "tool": "Task",
            "agent": "general-purpose",
            "description": "Find flaky tests",
            "instruction": "Search tests/ for tests that sleep on a real clock",
            "tool_use_ref": f"block:{sid}:m1:0",
            "result_state": "completed",
            "result_preview": excerpt,
            "result_sha256": _sha(excerpt),
            "child_excerpt_preview": excerpt,
            "child_excerpt_sha256": _sha(excerpt),
            "time_ms": T4 + 2000,
            "child_model": "claude-haiku-4-5",
        },
        {  # no subagent_type, no sidechain answered it
            "id": f"{sid}:delegation:2",
            "session_id": sid,
            "mapping_state": "unresolved",
            "tool": "Task",
            "description": "Read CI logs",
            "instruction": "Summarize the last CI failure",
            "tool_use_ref": f"block:{sid}:m1:1",
            "result_state": "failed",
            "result_preview": failure,
            "result_sha256": _sha(failure),
            "time_ms": T4 + 2000,
            "is_error": True,
        },
    ]
    assert rows(main.runs)[1:] == [
        {
            "id": f"{sid}:run:1",
            "session_id": sid,
            "role": "subagent",
            "status": "completed",
            "agent": "general-purpose",
            "child_session_id": child,
            "delegation_id": f"{sid}:delegation:1",
            "started_ms": T4 + 2000,
            "ended_ms": T4 + 7000,
            "duration_ms": 3500,
            "tool_uses": 1,
            "total_tokens": 900,
            "model": "claude-haiku-4-5",  # the child's, seen in the same file
            "provider": "anthropic",
            "branch": "main",
        },
        {
            "id": f"{sid}:run:2",
            "session_id": sid,
            "role": "subagent",
            "status": "failed",
            "delegation_id": f"{sid}:delegation:2",
            "started_ms": T4 + 2000,
            "ended_ms": T4 + 8000,
            "duration_ms": 6000,
            "provider": "anthropic",
            "branch": "main",
        },
    ]
    assert [(e.kind, e.text, e.object_ref, e.delivery_state) for e in main.events[1:]] == [
        ("tool_finished", "Task finished: Find flaky tests", "Task", "acted_on"),
        ("subagent_finished", "general-purpose subagent completed: Find flaky tests", f"session:{child}", "acted_on"),
        ("tool_finished", "Task failed: Read CI logs", "Task", "failed"),
        ("subagent_finished", "subagent failed: Read CI logs", "", "failed"),
    ]
    assert [(s.boundary, s.preview) for s in side.snapshots] == [
        ("subagent_start", "Search tests/ for tests that sleep on a real clock")
    ]
    assert row(main.counts) == {
        "messages": 5,
        "words": 15,
        "user_messages": 3,
        "authored_user_messages": 1,
        "assistant_messages": 2,
        "user_words": 4,
        "authored_user_words": 4,
        "assistant_words": 11,
        "tool_use_messages": 1,
    }
    assert row(side.counts) == {
        "messages": 4,
        "words": 19,
        "user_messages": 2,
        "assistant_messages": 2,
        "user_words": 10,
        "assistant_words": 9,
        "tool_use_messages": 1,
    }


def _lines(*records: dict) -> units_pb2.Session:
    stamped = [
        {"sessionId": "v", "cwd": "/w", "timestamp": f"2026-03-04T12:00:{n:02d}.000Z", **record}
        for n, record in enumerate(records)
    ]
    result = parse_bytes(b"\n".join(orjson.dumps(record) for record in stamped), "variants.jsonl")
    assert result.issues == []
    (session,) = result.sessions
    return session


def _user(uuid: str, content: object, **fields: object) -> dict:
    return {"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **fields}


def _reply(uuid: str, content: list, model: str = "claude-sonnet-4-6") -> dict:
    return {"type": "assistant", "uuid": uuid, "message": {"id": f"msg-{uuid}", "model": model, "content": content}}


def test_local_commands_bash_mode_and_progress_records() -> None:
    session = _lines(
        {
            "type": "system",
            "subtype": "local_command",
            "uuid": "a",
            "content": "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
            "<command-args>opus</command-args>",
        },
        {
            "type": "system",
            "subtype": "local_command",
            "uuid": "b",
            "content": "<local-command-stdout>Set model to opus",
        },
        _user("c", "<bash-input>git status</bash-input>"),
        {"type": "progress", "data": {"type": "hook_progress"}, "toolUseID": "t", "parentToolUseID": "t"},
        _reply("d", [{"type": "text", "text": "Clean tree."}]),
    )
    commands = [(e.kind, e.text, e.object_ref, e.source_ref, e.delivery_state) for e in session.events[1:]]
    assert commands == [
        ("command", "/model opus", "/model", "message:claude-code-session:v:m0", "acted_on"),
        ("command", "! git status", "!", "message:claude-code-session:v:m2", "acted_on"),
    ]


def test_summary_row_without_a_boundary_and_microcompaction_without_text() -> None:
    # Older versions wrote no compact_boundary: the isCompactSummary row alone is the compaction.
    session = _lines(
        _user("a", "first prompt"),
        _reply("b", [{"type": "text", "text": "first answer"}]),
        _user("c", "Summary: first prompt answered.", isCompactSummary=True),
        {
            "type": "system",
            "subtype": "microcompact_boundary",
            "uuid": "d",
            "microcompactMetadata": {"trigger": "auto"},
        },
        _user("e", "next prompt"),
        _reply("f", [{"type": "text", "text": "next answer"}]),
    )
    assert [m.surface for m in session.messages] == ["shadowed", "shadowed", "current", "current", "current"]
    assert [(e.kind, e.text, e.source_ref, e.delivery_state) for e in session.events[1:]] == [
        ("compaction", "context compacted", "message:claude-code-session:v:m2", "acted_on"),
        ("compaction", "microcompaction (auto)", "", "acted_on"),
    ]
    assert [(s.boundary, s.message_ref, s.trigger, s.tokens_before) for s in session.snapshots] == [
        ("session_start", "message:claude-code-session:v:m0", "", 0),
        ("compaction", "message:claude-code-session:v:m2", "", 0),
    ]


def test_background_agent_and_result_shapes() -> None:
    launch = {"type": "tool_use", "id": "t1", "name": "Agent", "input": {"prompt": "watch CI", "subagent_type": "ci"}}
    plain = {"type": "tool_use", "id": "t2", "name": "Task", "input": {"prompt": "lint"}}
    session = _lines(
        _user("a", "watch CI and lint"),
        _reply("b", [launch, plain]),
        _user(
            "c",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "Async agent launched"}],
            toolUseResult={"status": "async_launched", "agentId": "bg1", "description": "watch CI"},
        ),
        # toolUseResult can be a list: nothing to read from it, nothing breaks.
        _user("d", [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}], toolUseResult=[{"type": "text"}]),
    )
    assert [(r.status, r.agent, r.child_session_id) for r in session.runs[1:]] == [
        ("running", "ci", "claude-code-session:v/agent-bg1"),
        ("completed", "", ""),
    ]
    assert [(d.mapping_state, d.result_state) for d in session.delegations] == [
        ("resolved", "completed"),
        ("unresolved", "completed"),
    ]
