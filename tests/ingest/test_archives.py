"""Data exports as downloaded: a ZIP archive is read member by member, its session logs parsed as files of
their own (Claude.ai's and ChatGPT's exports hold `conversations.json` beside account files)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from quarry.ingest.parse import parse_file
from tests.shared_paths import REAL_LOGS, needs_shared


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@needs_shared
def test_a_claude_ai_export_zip_gives_its_conversations(tmp_path: Path) -> None:
    conversations = (REAL_LOGS / "claude_ai" / "Artem-SCM-AI__life-builder-os__conversations.subset.json").read_bytes()
    archive = _zip(
        tmp_path / "data-2026-04-16.zip",
        {"users.json": b'[{"uuid": "u"}]', "conversations.json": conversations, "projects.json": b"[]"},
    )
    result = parse_file(archive)
    assert result.format == "claude-ai" and not result.issues
    assert len(result.sessions) == 8  # as the file alone (tests/ingest/test_claude_ai.py)
    assert {s.source_path for s in result.sessions} == {f"{archive}!conversations.json"}
    assert result.skipped_record_types["zip:other-member"] == 2


@needs_shared
def test_a_chatgpt_export_zip_gives_its_conversations(tmp_path: Path) -> None:
    source = next((REAL_LOGS / "chatgpt").glob("*.json"))
    archive = _zip(tmp_path / "chatgpt.zip", {"chat.html": b"<html/>", "conversations.json": source.read_bytes()})
    result = parse_file(archive)
    assert result.format == "chatgpt"
    assert [s.id for s in result.sessions] == [s.id for s in parse_file(source).sessions]


def test_an_archive_without_a_session_log_or_unreadable_is_an_issue(tmp_path: Path) -> None:
    empty = parse_file(_zip(tmp_path / "other.zip", {"users.json": b"[]"}))
    assert empty.sessions == [] and [i.code for i in empty.issues] == ["unknown_format"]
    assert "no session log among its 1 JSON members" in empty.issues[0].reason
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    result = parse_file(broken)
    assert result.sessions == [] and [i.code for i in result.issues] == ["unreadable"]
