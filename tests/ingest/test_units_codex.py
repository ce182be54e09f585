"""Codex rollouts: the derived units of a resumed session (two session_meta records), asserted row by row.

`tests/fixtures/codex/resumed_rollout.jsonl`: turn t1 (developer and injected context rows,
reasoning, exec_command with its exec_command_end, an apply_patch, a reply with a fenced diff,
task_complete), then a resume: a second session_meta, a new model in turn_context, turn t2 with a
call that never got its output, a stream_error, a `compacted` record followed by its
`context_compacted` event, turn_aborted, and an event type no parser knows.
"""

from __future__ import annotations

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES, row, rows

ROLLOUT = FIXTURES / "codex" / "resumed_rollout.jsonl"
SID = "codex-session:019ad000-1111-7222-8333-444455556666"
T0 = 1764576000000  # 2025-12-01T08:00:00Z


def test_resumed_rollout_is_one_session_with_every_count() -> None:
    result = parse_file(ROLLOUT)
    assert result.issues == []
    assert dict(result.skipped_record_types) == {
        "codex:event_msg/user_message": 1,  # the event copies of the dialogue
        "codex:event_msg/agent_reasoning": 1,
        "codex:event_msg/agent_message": 1,
        "codex:event_msg/mystery_event": 1,
    }
    (session,) = result.sessions
    assert (session.id, session.repo, session.branch, session.cwd, session.title) == (
        SID,
        "app",
        "fix/login",
        "/w/app",
        "Fix the login bug",
    )
    # The developer row is system; the injected <environment_context> and the compaction summary are user
    # rows nobody typed. Words: system 8; user 3 + 4 + 4 + 12; assistant 3 (reasoning) + 6 + 8 (the diff).
    assert row(session.counts) == {
        "messages": 12,
        "words": 48,
        "user_messages": 4,
        "authored_user_messages": 2,
        "assistant_messages": 5,
        "system_messages": 1,
        "tool_messages": 2,
        "user_words": 23,
        "authored_user_words": 8,
        "assistant_words": 17,
        "tool_use_messages": 3,
        "thinking_messages": 1,
    }
    # turn_context sets each turn's model; the compaction shadows everything before it.
    assert [m.model for m in session.messages if m.role == "assistant"] == ["gpt-5-codex"] * 4 + ["gpt-5.1-codex"]
    assert [m.surface for m in session.messages] == ["shadowed"] * 11 + ["current"]
    assert [(b.type, b.language) for b in session.messages[8].blocks] == [("text", ""), ("code", "diff")]


def test_resumed_rollout_events_runs_files_and_snapshots() -> None:
    (session,) = parse_file(ROLLOUT).sessions
    got = [(e.seq, e.kind, e.time_ms, e.text, e.source_ref, e.object_ref, e.delivery_state) for e in session.events]
    assert got == [
        (
            0,
            "session_started",
            T0,
            "session started in /w/app on fix/login",
            f"message:{SID}:m0",
            f"session:{SID}",
            "recorded",
        ),
        (1, "turn_started", T0 + 1000, "turn started", "", "t1", "recorded"),
        (
            2,
            "tool_finished",
            T0 + 5000,
            "exec_command finished: cat src/login.py",
            f"block:{SID}:m5:0",
            "exec_command",
            "acted_on",
        ),
        (
            3,
            "tool_finished",
            T0 + 7000,
            "apply_patch finished: /w/app/src/login.py",
            f"block:{SID}:m7:0",
            "apply_patch",
            "acted_on",
        ),
        (4, "turn_completed", T0 + 9000, "turn completed: Fixed: login now checks the password.", "", "t1", "recorded"),
        (5, "turn_started", T0 + 600_000, "turn started", "", "t2", "recorded"),
        (
            6,
            "api_error",
            T0 + 603_000,
            "API error: stream disconnected before completion; retrying 1/5",
            "",
            "",
            "failed",
        ),
        # `compacted` and the context_compacted event after it are one compaction.
        (7, "compaction", T0 + 610_000, "context compacted", f"message:{SID}:m11", "", "recorded"),
        (8, "turn_aborted", T0 + 611_000, "turn aborted (interrupted)", "", "t2", "recorded"),
    ]
    assert rows(session.runs) == [
        {
            "id": f"{SID}:run:main",
            "session_id": SID,
            "role": "main",
            "status": "interrupted",  # the last turn was aborted and nothing answered after it
            "started_ms": T0,
            "ended_ms": T0 + 611_000,
            "duration_ms": 611_000,
            "tool_uses": 3,
            "model": "gpt-5-codex",
            "provider": "openai",
            "branch": "fix/login",
        }
    ]
    assert rows(session.files) == [
        {
            "id": f"{SID}:file:src/login.py",
            "session_id": SID,
            "path": "src/login.py",  # the patch named /w/app/src/login.py; the cwd is /w/app
            "actions": 1,
            "categories": {"file_edit": 1},
            "first_ref": f"block:{SID}:m6:0",
            "last_ref": f"block:{SID}:m6:0",
            "first_time_ms": T0 + 6000,
            "last_time_ms": T0 + 6000,
        }
    ]
    base = {"session_id": SID, "cwd": "/w/app", "branch": "fix/login"}
    assert rows(session.snapshots) == [
        {
            "id": f"{SID}:snapshot:0",
            **base,
            "boundary": "session_start",
            "time_ms": T0,
            "message_ref": f"message:{SID}:m2",
            "preview": "Fix the login bug",
            "model": "gpt-5-codex",
            "inheritance": "fresh",
        },
        {
            "id": f"{SID}:snapshot:1",
            **base,
            "seq": 1,
            "boundary": "compaction",
            "time_ms": T0 + 610_000,
            "message_ref": f"message:{SID}:m11",
            "preview": "Summary: login fixed in src/login.py; a test for it is being written.",
            "model": "gpt-5.1-codex",  # the model in use when the context was compacted
            "inheritance": "summary",
        },
    ]
    assert list(session.delegations) == []


def _rollout(*records: tuple[str, dict]) -> list:
    lines = [{"timestamp": "2025-12-01T08:00:00.000Z", "type": "session_meta", "payload": {"id": "c-1", "cwd": "/w"}}]
    lines += [
        {"timestamp": f"2025-12-01T08:00:{n + 1:02d}.000Z", "type": t, "payload": p} for n, (t, p) in enumerate(records)
    ]
    return parse_bytes(b"\n".join(orjson.dumps(line) for line in lines), "rollout.jsonl").sessions


USER = ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]})
REPLY = ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]})


def test_context_compacted_before_or_without_its_compacted_record() -> None:
    (before,) = _rollout(
        USER, REPLY, ("event_msg", {"type": "context_compacted"}), ("compacted", {"message": "sum"}), REPLY
    )
    assert [(e.kind, e.source_ref, e.delivery_state) for e in before.events[1:]] == [
        ("compaction", "message:codex-session:c-1:m2", "acted_on")
    ]
    assert [(s.boundary, s.message_ref, s.preview) for s in before.snapshots[1:]] == [
        ("compaction", "message:codex-session:c-1:m2", "sum")
    ]
    (alone,) = _rollout(USER, REPLY, ("event_msg", {"type": "context_compacted"}))
    assert [(e.kind, e.source_ref, e.delivery_state) for e in alone.events[1:]] == [("compaction", "", "recorded")]
    assert [(s.boundary, s.message_ref, s.preview) for s in alone.snapshots[1:]] == [("compaction", "", "")]
    assert [m.surface for m in alone.messages] == ["current", "current"]  # no summary: nothing is replaced


def test_last_turn_signal_sets_the_main_run_status() -> None:
    started = ("event_msg", {"type": "task_started", "turn_id": "t"})
    complete = ("event_msg", {"type": "task_complete", "turn_id": "t"})
    error = ("event_msg", {"type": "error", "message": "unexpected status 401 Unauthorized"})
    statuses = {
        "completed": _rollout(started, USER, REPLY, complete),
        "running": _rollout(started, USER, REPLY),  # the log never closed the turn
        "failed": _rollout(started, USER, error),
    }
    assert {status: sessions[0].runs[0].status for status, sessions in statuses.items()} == {
        "completed": "completed",
        "running": "running",
        "failed": "failed",
    }
    assert statuses["failed"][0].events[-1].text == "API error: unexpected status 401 Unauthorized"


def test_a_second_session_meta_keeps_the_first_identity() -> None:
    resumed = (
        "session_meta",
        {"id": "c-2", "cwd": "/elsewhere", "git": {"branch": "other", "repository_url": "x/y.git"}},
    )
    (session,) = _rollout(USER, REPLY, resumed, USER, REPLY)
    assert (session.id, session.cwd, session.repo, session.branch) == ("codex-session:c-1", "/w", "w", "other")
    assert len(session.messages) == 4 and [e.kind for e in session.events] == ["session_started"]
