"""ChatGPT exports: derived units of a conversation with a python call and a replaced (shadowed) branch."""

from __future__ import annotations

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES, row, rows

EXPORT = FIXTURES / "chatgpt" / "conversations.json"
SID = "chatgpt-export:conv-0001"
T0 = 1733000000500  # the conversation's create_time


def test_conversation_units() -> None:
    first, second = parse_file(EXPORT).sessions
    assert row(first.counts) == {  # the replaced reply was on the surface once: counted
        "messages": 5,
        "words": 20,
        "user_messages": 1,
        "authored_user_messages": 1,
        "assistant_messages": 3,
        "tool_messages": 1,
        "user_words": 8,
        "authored_user_words": 8,
        "assistant_words": 12,
        "tool_use_messages": 1,
    }
    assert [(e.seq, e.kind, e.time_ms, e.text, e.source_ref, e.object_ref, e.delivery_state) for e in first.events] == [
        (0, "session_started", T0, "session started", f"message:{SID}:m0", f"session:{SID}", "recorded"),
        (
            1,
            "tool_finished",
            1733000003000,
            "python finished: df.groupby('month').sales.sum().plot()",
            f"block:{SID}:m2:0",
            "python",
            "acted_on",
        ),
    ]
    assert rows(first.runs) == [
        {
            "id": f"{SID}:run:main",
            "session_id": SID,
            "role": "main",
            "status": "completed",
            "started_ms": T0,
            "ended_ms": 1733000100250,
            "duration_ms": 99_750,
            "tool_uses": 1,
            "model": "gpt-4o",
            "provider": "openai",
        }
    ]
    assert rows(first.snapshots) == [
        {
            "id": f"{SID}:snapshot:0",
            "session_id": SID,
            "boundary": "session_start",
            "time_ms": T0,
            "message_ref": f"message:{SID}:m0",
            "preview": "Plot the sales by month from this screenshot",
            "model": "gpt-4o",
            "inheritance": "fresh",
        }
    ]
    assert list(first.files) == [] and list(first.delegations) == []
    # The custom instructions are context, not the first prompt.
    assert [(s.message_ref, s.preview) for s in second.snapshots] == [
        ("message:chatgpt-export:conv-0002:m1", "Hello there")
    ]
    assert row(second.counts) == {
        "messages": 3,
        "words": 14,
        "user_messages": 2,
        "authored_user_messages": 1,
        "assistant_messages": 1,
        "user_words": 9,
        "authored_user_words": 2,
        "assistant_words": 5,
    }
