"""ChatGPT exports: one session per conversation, the current thread, replaced branches kept as shadowed."""

from __future__ import annotations

from quarry.ingest.parse import parse_file
from tests.ingest.support import FIXTURES, roles

EXPORT = FIXTURES / "chatgpt" / "conversations.json"


def test_each_conversation_is_a_session() -> None:
    result = parse_file(EXPORT)
    assert result.format == "chatgpt" and result.issues == []
    assert [s.id for s in result.sessions] == ["chatgpt-export:conv-0001", "chatgpt-export:conv-0002"]
    assert [s.title for s in result.sessions] == ["Plot monthly sales", "Greeting"]
    assert result.skipped_record_types == {"chatgpt:empty-message": 1}  # the hidden empty system row


def test_current_thread_first_then_replaced_branches_shadowed() -> None:
    session = parse_file(EXPORT).sessions[0]
    assert [(m.role, m.surface) for m in session.messages] == [
        ("user", "current"),
        ("assistant", "current"),
        ("tool", "current"),
        ("assistant", "current"),
        ("assistant", "shadowed"),
    ]
    assert session.messages[-1].blocks[0].text == "I cannot read images yet."
    assert roles(session, "shadowed") == {"assistant": 1}
    # The replaced reply was the model's context once: counted, as messages a compaction replaced are.
    assert session.counts.messages == 5 and session.counts.assistant_messages == 3
    assert session.model == "gpt-4o"  # two replies by gpt-4o, one by gpt-4o-mini
    assert (session.created_ms, session.updated_ms) == (1733000000500, 1733000100250)


def test_python_call_and_execution_output_become_an_action() -> None:
    session = parse_file(EXPORT).sessions[0]
    user, call, output = session.messages[:3]
    assert [b.type for b in user.blocks] == ["image", "text"]
    assert call.blocks[0].type == "tool_use" and call.blocks[0].tool_name == "python"
    assert output.blocks[0].type == "tool_result" and output.blocks[0].tool_use_id == call.blocks[0].tool_use_id
    (action,) = session.actions
    assert (action.category, action.tool, action.command) == (
        "shell",
        "python",
        "df.groupby('month').sales.sum().plot()",
    )
    assert (action.output, action.failed) == ("<Axes: xlabel=month>", False)


def test_custom_instructions_are_not_authored() -> None:
    session = parse_file(EXPORT).sessions[1]
    context, prompt, _ = session.messages
    assert context.blocks[0].text == "I am a data analyst.\n\nAnswer briefly." and not context.authored
    assert prompt.authored and session.counts.authored_user_messages == 1
    assert session.title == "Greeting"
