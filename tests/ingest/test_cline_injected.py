"""Text Cline writes into the user's messages is not the user's words: `<environment_details>` (every
turn), the task-resumption notice and the to-do reminder are neither authored words nor the title, and
no search for their boilerplate ("Visible Files") finds every task. The real task of ../shared/real-logs/cline
is counted independently here, with json and a regex over the wrappers that hold the human's words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.shared_paths import REAL_LOGS, needs_shared

TASK = (
    REAL_LOGS / "cline" / "gmfstu__Online-Card-Architecture__exported_task_1769064454592__api_conversation_history.json"
)
# The wrappers Cline puts around what the human typed (the task, feedback, answers, a resumption's message).
HUMAN = re.compile(r"<(task|feedback|answer|user_message)>(.*?)</\1>", re.DOTALL)
INJECTED_MARKS = ("Visible Files", "<environment_details>", "[TASK RESUMPTION]", "task_progress RECOMMENDED")
ENV = (
    "<environment_details>\n# Visual Studio Code Visible Files\napp.py\n\n# Current Time\n1/1/2026\n\n"
    "# Current Working Directory (/home/dev/shop) Files\napp.py\n\n# Current Mode\nACT MODE\n</environment_details>"
)
TODO = "\n# task_progress RECOMMENDED\n\nWhen starting a new task, it is recommended to include a todo list."
RESUMED = (
    "[TASK RESUMPTION] This task was interrupted 10 minutes ago. It may or may not be complete, so please "
    "reassess the task context. The current working directory is now '/home/dev/shop'."
)


def searchable(session: units_pb2.Session) -> str:
    """Every text a search reads in the session's messages (dialogue and tool traffic)."""
    return "\n".join(b.text for m in session.messages for b in m.blocks)


@needs_shared
def test_the_real_task_counts_only_the_words_inside_the_human_wrappers() -> None:
    history = json.loads(TASK.read_bytes())
    human = [
        match.group(2).strip()
        for message in history
        if message["role"] == "user"
        for block in message["content"]
        if block["type"] == "text" and not block["text"].startswith("[")  # `[tool for 'x'] Result:` blocks
        for match in HUMAN.finditer(block["text"])
    ]
    (session,) = parse_file(TASK).sessions
    assert session.counts.authored_user_messages == len(human) == 1
    assert session.counts.authored_user_words == sum(len(text.split()) for text in human)
    assert human[0].startswith(session.title.removesuffix("…"))
    # every user turn carries the environment details; none of it is the session's text
    assert sum("<environment_details>" in b["text"] for m in history for b in m["content"] if b["type"] == "text") == 36
    text = searchable(session)
    assert not any(mark in text for mark in INJECTED_MARKS)
    assert session.cwd == "/workspaces/Online-Card-Architecture"


def task(tmp_path: Path, *history: dict[str, object]) -> units_pb2.Session:
    folder = tmp_path / "1767000000000"
    folder.mkdir()
    (folder / "api_conversation_history.json").write_bytes(orjson.dumps(list(history)))
    (session,) = parse_file(folder / "api_conversation_history.json").sessions
    return session


def user(*texts: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_a_resumed_task_s_title_and_words_are_the_human_s_only(tmp_path: Path) -> None:
    session = task(
        tmp_path,
        user(
            f"{RESUMED}\n\nNew instructions for task continuation:\n<user_message>\nfix the cart\n</user_message>",
            TODO,
            ENV,
        ),
        assistant("Fixing it."),
        user("[read_file for 'app.py'] Result:\nprint(1)", ENV),
        assistant("Done."),
    )
    assert session.title == "fix the cart"
    assert (session.counts.authored_user_messages, session.counts.authored_user_words) == (1, 3)
    assert not any(mark in searchable(session) for mark in INJECTED_MARKS)
    assert "New instructions for task continuation" not in searchable(session)
    # what the extension wrote still names the working directory, and stays in the raw events
    assert (session.cwd, session.repo) == ("/home/dev/shop", "shop")
    assert any(b"Visible Files" in event.raw_json for event in session.log_events)


def test_a_turn_of_only_injected_text_is_no_one_s_words(tmp_path: Path) -> None:
    session = task(tmp_path, user(RESUMED, TODO, ENV), assistant("Resuming."))
    assert session.counts.authored_user_messages == 0
    assert session.counts.authored_user_words == 0
    assert not any(mark in session.title for mark in INJECTED_MARKS)


def test_the_ui_transcript_alone_keeps_the_injected_text_out_too(tmp_path: Path) -> None:
    request = {"request": f"<task>\nadd a cart\n</task>\n\n{ENV}", "tokensIn": 3}
    ui = [
        {"ts": 1_767_000_000_010, "type": "say", "say": "text", "text": "add a cart"},
        {"ts": 1_767_000_000_011, "type": "say", "say": "api_req_started", "text": orjson.dumps(request).decode()},
        {"ts": 1_767_000_000_012, "type": "say", "say": "text", "text": "Added."},
    ]
    (session,) = parse_bytes(orjson.dumps(ui), str(tmp_path / "1767000000000" / "ui_messages.json")).sessions
    assert session.title == "add a cart"
    assert session.counts.authored_user_words == 3
    assert "Visible Files" not in searchable(session)
