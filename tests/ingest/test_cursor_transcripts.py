"""Cursor's agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/`, issue 28), on files written
as Cursor writes them (tests/fixtures/cursor_transcripts/: the JSON Lines layout with a subagent, a
damaged line, a duplicate record and no trailing newline; the older plain-text `.txt` layout). Counts are
checked against the files read here, straight from their JSON or text."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from quarry.ingest.discover import iter_source_files
from quarry.ingest.locations import LINUX, MACOS, WINDOWS, look
from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.ingest_node import IngestNode, ingest_node
from tests.ingest.support import FIXTURES, roles

PROJECTS = FIXTURES / "cursor_transcripts" / "projects"
PARENT_ID = "5b0e7d8c-3f1a-4c2e-9d6b-2a7f1e4c8b90"
CHILD_ID = "a1c3e5f7-2b4d-4f6a-8c0e-1d3f5a7b9c2e"
TEXT_ID = "0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b"
FOLDER = PROJECTS / "Users-me-demo-app" / "agent-transcripts" / PARENT_ID
MAIN = FOLDER / f"{PARENT_ID}.jsonl"
CHILD = FOLDER / "subagents" / f"{CHILD_ID}.jsonl"
TEXT = PROJECTS / "1769488977462" / "agent-transcripts" / f"{TEXT_ID}.txt"
IST = timezone(timedelta(hours=5, minutes=30))


def _records(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The JSON records of a transcript and the 1-based lines that are not JSON."""
    records, damaged = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            damaged.append(number)
    return records, damaged


def _blocks(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [block for record in records for block in record["message"]["content"] if block["type"] == kind]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _session(path: Path) -> units_pb2.Session:
    (session,) = parse_file(path).sessions
    return session


def _prompts(session: units_pb2.Session) -> list[units_pb2.Message]:
    return [message for message in session.messages if message.role == "user"]


def test_a_transcript_is_a_session_named_by_its_file_and_a_damaged_line_costs_only_itself() -> None:
    records, damaged = _records(MAIN)
    assert not MAIN.read_bytes().endswith(b"\n") and damaged == [6]  # as Cursor leaves them
    result = parse_file(MAIN)
    assert result.format == "cursor-transcript"
    assert [(found.line, found.code) for found in result.issues] == [(6, "malformed_json")]
    (session,) = result.sessions
    assert session.id == f"cursor-agent-transcript:{PARENT_ID}" and session.parent_session_id == ""
    assert roles(session) == Counter(record["role"] for record in records)
    last = records[-1]["message"]["content"][0]["text"]  # the line with no newline after it is read
    assert session.messages[-1].blocks[-1].text == last


def test_prompt_times_are_read_in_their_own_utc_offset() -> None:
    session = _session(MAIN)
    first = _ms(datetime(2026, 5, 8, 6, 5, tzinfo=IST))
    evening = _ms(datetime(2026, 5, 8, 19, 42, tzinfo=timezone(timedelta(hours=-4))))
    assert [prompt.time_ms for prompt in _prompts(session)] == [
        first,
        _ms(datetime(2026, 5, 8, 6, 9, tzinfo=IST)),
        evening,
    ]
    assert (session.created_ms, session.updated_ms) == (first, evening)


def test_the_user_s_words_are_the_query_without_injected_text() -> None:
    session = _session(MAIN)
    prompts = _prompts(session)
    assert [prompt.authored for prompt in prompts] == [True, False, True]  # the continuation is Cursor's
    assert session.title == "add a health check endpoint and wire it into the router"
    screenshot = prompts[2].blocks[0].text
    assert screenshot == "match the button colour in the screenshot, the <module> error aside"
    words = " ".join(block.text for prompt in prompts if prompt.authored for block in prompt.blocks)
    assert "provdied" not in words and "timestamp" not in words and "subagent result" not in words


def test_every_tool_call_is_an_action_with_its_input_and_duplicates_are_kept() -> None:
    records, _ = _records(MAIN)
    calls = _blocks(records, "tool_use")
    lines = Counter(MAIN.read_text(encoding="utf-8").split("\n"))
    assert max(lines.values()) == 2  # one record written twice, byte for byte
    session = _session(MAIN)
    assert [action.tool for action in session.actions] == [call["name"].lower() for call in calls]
    patch = next(action for action in session.actions if action.tool == "applypatch")
    assert (patch.category, patch.path) == ("file_edit", "/Users/me/demo_app/src/health.ts")
    assert json.loads(patch.input_json) == next(call["input"] for call in calls if call["name"] == "ApplyPatch")
    assert Counter(action.category for action in session.actions)["shell"] == 2
    assert next(action.category for action in session.actions if action.tool == "subagent") == "subagent"


def test_a_subagent_is_linked_to_its_parent_and_its_first_prompt_is_the_dispatcher_s() -> None:
    records, _ = _records(CHILD)
    session = _session(CHILD)
    assert session.id == f"cursor-agent-transcript:{CHILD_ID}"
    assert session.parent_session_id == f"cursor-agent-transcript:{PARENT_ID}"
    assert not session.messages[0].authored
    assert roles(session) == Counter(record["role"] for record in records)
    # `Grep path\n/Users/…`: the model ran an argument into the name; the tool is Grep, a search
    assert [(action.tool, action.category) for action in session.actions] == [("grep", "search")]


def test_the_older_plain_text_layout_reads_prompts_replies_calls_and_results() -> None:
    lines = TEXT.read_text(encoding="utf-8").split("\n")
    calls = [line.removeprefix("[Tool call] ") for line in lines if line.startswith("[Tool call] ")]
    results = [line for line in lines if line.startswith("[Tool result] ")]
    result = parse_file(TEXT)
    assert result.format == "cursor-transcript" and not result.issues
    (session,) = result.sessions
    assert session.id == f"cursor-agent-transcript:{TEXT_ID}"
    assert [action.tool for action in session.actions] == [call.lower() for call in calls]
    assert roles(session)["tool"] == len(results)
    assert [prompt.blocks[0].text for prompt in _prompts(session)] == [
        "why does the build fail on Windows?",
        "thanks, run it",
    ]
    assert _prompts(session)[0].time_ms == _ms(datetime(2026, 5, 4, 0, 47, tzinfo=IST))
    read, patch, shell = session.actions
    assert json.loads(read.input_json) == {"path": "C:\\Users\\me\\app\\package.json"}
    assert (patch.category, patch.path) == ("file_edit", "package.json")
    assert json.loads(shell.input_json) == {"command": "npm run build"}
    thinking = [block.text for message in session.messages for block in message.blocks if block.type == "thinking"]
    assert thinking == ["The user asks about the build.\nCheck the scripts first."]


@pytest.mark.parametrize(
    "stamp",
    [
        "Friday, Febtember 31, 2026, 6:05 AM (UTC+5:30)",  # no such month
        "Friday, May 8, 2026, 6:05 AM (UTC+99:00)",  # no such offset
        "Friday, May 48, 2026, 6:05 AM (UTC)",
    ],
)
def test_a_hostile_timestamp_is_no_time_and_costs_nothing_else(stamp: str) -> None:
    prompt = f"<timestamp>{stamp}</timestamp>\n<user_query>\nhello\n</user_query>"
    data = "\n".join(
        json.dumps(record)
        for record in (
            {"role": "user", "message": {"content": [{"type": "text", "text": prompt}]}},
            {"role": "assistant", "message": {"content": 7}},  # content of the wrong type
            {"role": "assistant", "message": {"content": [{"type": "tool_use", "name": 3, "input": None}]}},
        )
    ).encode()
    result = parse_bytes(data, f"/x/agent-transcripts/{PARENT_ID}.jsonl")
    (session,) = result.sessions
    assert session.messages[0].time_ms == 0 and session.messages[0].blocks[0].text == "hello"
    assert roles(session) == {"user": 1, "assistant": 2}


@pytest.mark.parametrize(
    ("platform", "home", "env"),
    [
        (LINUX, "home/me", {}),
        (MACOS, "Users/me", {}),
        (WINDOWS, "Users/me", {"USERPROFILE": "Users/me"}),
    ],
)
def test_transcripts_are_found_under_the_home_folder_on_every_platform(
    tmp_path: Path, platform: str, home: str, env: dict[str, str]
) -> None:
    user = tmp_path / home
    shutil.copytree(PROJECTS, user / ".cursor" / "projects")
    (user / ".cursor" / "projects" / "empty-window").mkdir()  # a window with no folder: nothing there
    environment = {name: str(tmp_path / value) for name, value in env.items()}
    places = [place for place in look(home=user, env=environment, platform=platform) if "transcripts" in place.tool]
    found = set(iter_source_files(path for place in places for path in place.found))
    assert {path.name for path in found} == {MAIN.name, CHILD.name, TEXT.name}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[IngestNode]:
    with ingest_node(tmp_path / "data", tmp_path) as started:
        yield started


def test_a_projects_folder_is_ingested_with_the_subagent_stored_under_its_parent(
    node: IngestNode, tmp_path: Path
) -> None:
    projects = tmp_path / ".cursor" / "projects"
    shutil.copytree(PROJECTS, projects)
    report = node.ingest(projects)
    assert report.sessions_written == 3
    assert [(Path(found.path).name, found.line) for found in report.issues] == [(MAIN.name, 6)]
    child = node.stored(f"cursor-agent-transcript:{CHILD_ID}")
    assert child is not None and child.parent_session_id == f"cursor-agent-transcript:{PARENT_ID}"
