"""GitHub Copilot CLI sessions, both layouts (`<id>.jsonl` and `<id>/events.jsonl`), on real logs: counts are
checked against the events counted here, straight from the JSON."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from quarry.ingest.discover import iter_source_files
from quarry.ingest.parse import parse_file
from tests.ingest.support import roles
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = needs_shared
LOGS = REAL_LOGS / "copilot_cli"
LEGACY = LOGS / "Tokisaki7-Dev__HAWZX-AI__.copilot__session-state__27d7ef99-f7c7-43eb-8599-cb469623c8f7.jsonl"
EVENTS = LOGS / "XEFF09__dotfiles__.copilot__session-state__b87feda8-379e-4f8c-aa42-b4f7d12f253a__events.jsonl"


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_legacy_layout_reads_prompts_calls_outcomes_and_model_errors() -> None:
    events = _events(LEGACY)
    kinds = Counter(event["type"] for event in events)
    started = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"}
    failed = [e for e in events if e["type"] == "tool.execution_complete" and not e["data"]["success"]]
    result = parse_file(LEGACY)
    assert result.format == "copilot-cli" and result.issues == []
    (session,) = result.sessions
    assert session.id == "copilot-cli-session:27d7ef99-f7c7-43eb-8599-cb469623c8f7"
    assert roles(session) == {
        "user": kinds["user.message"],
        "system": kinds["system.message"],
        "assistant": kinds["assistant.message"],
        "tool": kinds["tool.execution_complete"],
    }
    assert len(session.actions) == len(started) == 28
    assert [a.output for a in session.actions if a.failed] == [f["data"]["error"]["message"] for f in failed]
    errors = [e for e in session.events if e.kind == "api_error"]
    assert len(errors) == kinds["session.error"] == 13 and "400 Bad Request" in errors[0].text
    # the CLI's trailing <current_datetime> tag is not the user's words
    assert session.title.startswith("qual é melhor") and "current_datetime" not in session.messages[0].blocks[0].text
    assert Counter(a.category for a in session.actions) == {"file_edit": 17, "shell": 11}  # powershell is a shell


def test_directory_layout_reads_context_model_tokens_and_abort() -> None:
    events = _events(EVENTS)
    start = next(e["data"] for e in events if e["type"] == "session.start")
    totals = next(e["data"]["tokenDetails"] for e in events if e["type"] == "session.shutdown")
    kinds = Counter(event["type"] for event in events)
    (session,) = parse_file(EVENTS).sessions
    assert session.id == f"copilot-cli-session:{start['sessionId']}"
    assert (session.cwd, session.branch, session.repo) == ("/Users/thatpong/.dotfiles/.copilot", "main", ".dotfiles")
    assert session.model == "claude-sonnet-4.6"
    assert len(session.actions) == kinds["tool.execution_start"]
    assert roles(session)["tool"] == kinds["tool.execution_complete"]  # one started call never completed
    messages = session.messages
    assert sum(m.input_tokens for m in messages) == totals["input"]["tokenCount"]
    assert sum(m.output_tokens for m in messages) == totals["output"]["tokenCount"]
    assert sum(m.cache_read_tokens for m in messages) == totals["cache_read"]["tokenCount"]
    assert sum(m.cache_write_tokens for m in messages) == totals["cache_write"]["tokenCount"]
    assert [e.kind for e in session.events].count("turn_aborted") == kinds["abort"] == 1
    thinking = sum(b.type == "thinking" for m in messages for b in m.blocks)
    assert thinking == sum(1 for e in events if e["type"] == "assistant.message" and e["data"].get("reasoningText"))


WORKSPACE = LOGS / "XEFF09__dotfiles__.copilot__session-state__b87feda8-379e-4f8c-aa42-b4f7d12f253a__workspace.yaml"


def _workspace_name() -> str:
    """The `name:` line of the real workspace.yaml, read as text (not with the parser's YAML reader)."""
    line = next(line for line in WORKSPACE.read_text(encoding="utf-8").splitlines() if line.startswith("name: "))
    return line.removeprefix("name: ").strip()


def _session_folder(tmp_path: Path, workspace: str) -> Path:
    """A `<id>/` folder as the CLI writes it: the real events.jsonl and the given workspace.yaml."""
    folder = tmp_path / "session-state" / "b87feda8-379e-4f8c-aa42-b4f7d12f253a"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_bytes(EVENTS.read_bytes())
    (folder / "workspace.yaml").write_text(workspace, encoding="utf-8")
    return folder


def test_the_title_is_the_workspace_name_not_the_first_prompt() -> None:
    name = _workspace_name()
    first_prompt = next(e["data"]["content"] for e in _events(EVENTS) if e["type"] == "user.message")
    (session,) = parse_file(EVENTS).sessions
    assert session.title == name == "Initialize Project Setup" and first_prompt.startswith("/init")
    assert (session.title_snapshot.title, session.title_snapshot.kind) == (name, "ai-title")  # user_named: false


def test_workspace_yaml_is_recognized_not_an_unknown_format(tmp_path: Path) -> None:
    result = parse_file(WORKSPACE)
    assert (result.format, result.issues, result.sessions) == ("copilot-cli", [], [])
    assert result.skipped_record_types == {"copilot-cli:workspace": 1}
    folder = _session_folder(tmp_path, WORKSPACE.read_text(encoding="utf-8"))
    skipped: list[Path] = []
    files = list(iter_source_files([folder.parent], lambda path, code, reason: skipped.append(path)))
    assert skipped == [] and sorted(path.name for path in files) == ["events.jsonl", "workspace.yaml"]


def test_a_user_named_title_is_the_users_and_another_sessions_name_is_not_taken(tmp_path: Path) -> None:
    text = WORKSPACE.read_text(encoding="utf-8").replace("user_named: false", "user_named: true")
    folder = _session_folder(tmp_path, text.replace(_workspace_name(), "My own title"))
    (session,) = parse_file(folder / "events.jsonl").sessions
    assert (session.title, session.title_snapshot.kind) == ("My own title", "custom-title")
    other = text.replace("b87feda8-379e-4f8c-aa42-b4f7d12f253a", "00000000-0000-4000-8000-000000000000")
    (folder / "workspace.yaml").write_text(other.replace(_workspace_name(), "Someone else's"), encoding="utf-8")
    (session,) = parse_file(folder / "events.jsonl").sessions
    assert session.title.startswith("/init")


@pytest.mark.parametrize("workspace", ["id: [unclosed\nname: {\x00", "id: " + "[" * 20_000], ids=["broken", "nested"])
def test_a_damaged_workspace_yaml_is_named_and_the_session_still_read(tmp_path: Path, workspace: str) -> None:
    folder = _session_folder(tmp_path, workspace)
    result = parse_file(folder / "events.jsonl")
    (session,) = result.sessions
    assert session.title.startswith("/init")
    (problem,) = result.issues
    assert problem.path == str(folder / "workspace.yaml") and problem.code == "invalid_record"
