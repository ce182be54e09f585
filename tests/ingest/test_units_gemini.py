"""Gemini CLI: the derived units of sessions with thoughts, tool calls, an image part, an unknown
message type and a quota error, asserted row by row."""

from __future__ import annotations

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES, row, rows

GEMINI = FIXTURES / "gemini"
SID = "gemini-cli-session:gem-0002"
T0 = 1768122000000  # 2026-01-11T09:00:00Z


def test_quota_error_session_counts_blocks_and_report() -> None:
    result = parse_file(GEMINI / "quota_error.json")
    assert result.issues == []
    assert dict(result.skipped_record_types) == {"gemini:message/compression": 1}
    (session,) = result.sessions
    assert [[(b.type, b.media_type) for b in m.blocks] for m in session.messages] == [
        [("text", ""), ("image", "image/png")],  # the inline data is referenced, not kept
        [("thinking", ""), ("text", ""), ("tool_use", ""), ("tool_result", "")],
        [("text", "")],
        [("text", "")],
    ]
    assert [(m.role, m.authored) for m in session.messages] == [
        ("user", True),
        ("assistant", True),
        ("user", True),
        ("system", False),
    ]
    # Words: user 7 + 5; assistant 9 (thought subject and description) + 3; the error notice is log-only.
    assert row(session.counts) == {
        "messages": 3,
        "words": 24,
        "user_messages": 2,
        "authored_user_messages": 2,
        "assistant_messages": 1,
        "user_words": 12,
        "authored_user_words": 12,
        "assistant_words": 12,
        "tool_use_messages": 1,
        "thinking_messages": 1,
    }
    assert all("iVBORw0KGgo" not in str(m) for m in session.messages)  # referenced (its raw record keeps it)


def test_quota_error_units() -> None:
    (session,) = parse_file(GEMINI / "quota_error.json").sessions
    assert rows(session.files) == [
        {
            "id": f"{SID}:file:notes/screen.md",
            "session_id": SID,
            "path": "notes/screen.md",  # no cwd in a Gemini session: paths stay as the tool named them
            "actions": 1,
            "categories": {"file_write": 1},
            "first_ref": f"block:{SID}:m1:2",
            "last_ref": f"block:{SID}:m1:2",
            "first_time_ms": T0 + 10_000,
            "last_time_ms": T0 + 10_000,
        }
    ]
    # tokens: (1200 - 200 cached) input + 200 cached + 40 output + 60 thoughts
    assert rows(session.runs) == [
        {
            "id": f"{SID}:run:main",
            "session_id": SID,
            "role": "main",
            "status": "failed",
            "started_ms": T0,
            "ended_ms": T0 + 120_000,
            "duration_ms": 120_000,
            "tool_uses": 1,
            "total_tokens": 1300,
            "model": "gemini-2.5-pro",
            "provider": "google",
        }
    ]
    error = "[API Error: You exceeded your current quota, please check your plan and billing details.]"
    assert [
        (e.seq, e.kind, e.time_ms, e.text, e.source_ref, e.object_ref, e.delivery_state) for e in session.events
    ] == [
        (0, "session_started", T0, "session started", f"message:{SID}:m0", f"session:{SID}", "recorded"),
        # The call and its result are in the reply itself; no later reply acted on it.
        (
            1,
            "tool_finished",
            T0 + 10_000,
            "write_file finished: notes/screen.md",
            f"block:{SID}:m1:3",
            "write_file",
            "recorded",
        ),
        (2, "api_error", T0 + 120_000, error, f"message:{SID}:m3", "", "failed"),
    ]
    assert rows(session.snapshots) == [
        {
            "id": f"{SID}:snapshot:0",
            "session_id": SID,
            "boundary": "session_start",
            "time_ms": T0,
            "message_ref": f"message:{SID}:m0",
            "preview": "Write what this screenshot shows to notes/screen.md",
            "model": "gemini-2.5-pro",
            "inheritance": "fresh",
        }
    ]
    assert list(session.delegations) == []


def test_tool_results_inside_a_reply_are_acted_on_by_the_next_reply() -> None:
    (session,) = parse_file(GEMINI / "chat.json").sessions
    assert [(e.kind, e.source_ref, e.delivery_state) for e in session.events] == [
        ("session_started", "message:gemini-cli-session:gem-0001:m0", "recorded"),
        ("tool_finished", "block:gemini-cli-session:gem-0001:m1:3", "failed"),  # Exit Code: 1
        ("tool_finished", "block:gemini-cli-session:gem-0001:m1:5", "failed"),  # status error
    ]
    assert [(f.path, f.failed) for f in session.files] == [("/home/dev/projects/quarry/Makefile", 1)]
    assert session.runs[0].status == "completed"  # it ends on the model's reply
