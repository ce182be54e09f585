"""Every file looked at and not ingested is named with why (issue 28): a project folder's hidden agent
logs (Aider's `.aider.chat.history.md`, SpecStory's `.specstory/`) are read, other hidden entries are
named; a named pipe never hangs a call; a pretty-printed JSON file cut short says it is truncated JSON."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.ingest.parse import ParseResult, iter_parse
from tests.ingest.ingest_node import IngestNode, ingest_node, within
from tests.shared_paths import REAL_LOGS, needs_shared

AIDER = REAL_LOGS / "aider" / "0202alcc__luvatrix__.aider.chat.history.md"
SPECSTORY = next(REAL_LOGS.glob("cursor/edobry__minsky__.specstory__history__2025-04-27*.md"), AIDER)
COPILOT = REAL_LOGS / "copilot" / "dealenx__copilot-chat-analyzer__examples__parse-export-chat-json__chat.json"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[IngestNode]:
    with ingest_node(tmp_path / "data", tmp_path) as started:
        yield started


@needs_shared
def test_a_project_folder_s_hidden_agent_logs_are_ingested_and_other_hidden_entries_named(
    node: IngestNode, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".specstory" / "history").mkdir(parents=True)
    (project / ".git").mkdir()
    shutil.copy(AIDER, project / ".aider.chat.history.md")
    shutil.copy(SPECSTORY, project / ".specstory" / "history" / SPECSTORY.name.split("__")[-1])
    (project / ".aider.input.history").write_text("+/ask what now\n")
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    aider_sessions = sum(line.startswith("# aider chat started at") for line in AIDER.read_text().splitlines())

    report = node.ingest(project)
    assert report.sessions_written == aider_sessions + 1  # one SpecStory transcript
    assert not report.issues
    assert sorted((Path(skip.path).name, skip.code) for skip in report.skipped) == [
        (".aider.input.history", "hidden"),
        (".git", "hidden"),
    ]
    assert all("name it to include it" in skip.reason for skip in report.skipped)


def test_a_named_pipe_never_hangs_a_call_and_is_named(node: IngestNode, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "pipe.jsonl")
    (logs / "log.jsonl").write_text('{"type": "session_meta", "payload": {"id": "s1"}}\n')

    report = within(20, lambda: node.ingest(logs, logs / "pipe.jsonl"))
    assert [(issue.path, issue.code) for issue in report.issues] == [(str(logs / "pipe.jsonl"), "not_regular")]
    assert ("not_regular", str(logs / "pipe.jsonl")) in [(skip.code, skip.path) for skip in report.skipped]
    assert "named pipe" in report.issues[0].reason

    parsed: list[ParseResult] = within(20, lambda: list(iter_parse([logs / "pipe.jsonl"])))
    assert [(issue.code, issue.path) for issue in parsed[0].issues] == [("unreadable", str(logs / "pipe.jsonl"))]
    assert "named pipe" in parsed[0].issues[0].reason


@needs_shared
def test_a_cut_pretty_printed_json_file_is_reported_as_truncated_json(node: IngestNode, tmp_path: Path) -> None:
    data = COPILOT.read_bytes()
    assert data.count(b"\n") > 10  # pretty-printed
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "chat.json").write_bytes(data[: len(data) // 2])

    report = node.ingest(logs)
    assert [(issue.path, issue.code) for issue in report.issues] == [(str(logs / "chat.json"), "unreadable")]
    assert report.issues[0].reason.startswith("truncated JSON: the document ends after")
    assert "Claude Code or Codex" not in report.issues[0].reason
