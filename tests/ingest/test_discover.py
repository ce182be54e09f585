"""Folders expand to the files worth parsing; the agents' default folders are found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quarry.ingest.discover import iter_source_files, standard_locations
from quarry.ingest.parse import iter_parse
from tests.ingest.support import FIXTURES


def test_folders_expand_to_json_files_sorted_and_once(tmp_path: Path) -> None:
    (tmp_path / "b" / "deep").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    shutil.copy(FIXTURES / "claude_code" / "session.jsonl", tmp_path / "b" / "deep" / "x.log")
    shutil.copy(FIXTURES / "gemini" / "chat.json", tmp_path / "a.json")
    (tmp_path / "README.md").write_text("# notes\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / ".git" / "config.json").write_text("{}")
    (tmp_path / ".hidden.jsonl").write_text("{}")
    files = list(iter_source_files([tmp_path, tmp_path / "a.json"]))
    assert files == [tmp_path / "a.json", tmp_path / "b" / "deep" / "x.log"]
    # A file named explicitly is always a candidate: parsing, not discovery, says what it is.
    assert list(iter_source_files([tmp_path / "README.md"])) == [tmp_path / "README.md"]
    assert [r.format for r in iter_parse([tmp_path / "README.md"])] == ["unknown"]


def test_standard_locations_are_the_existing_agent_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert standard_locations() == []
    (tmp_path / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / ".gemini" / "tmp").mkdir(parents=True)
    assert standard_locations() == [tmp_path / ".claude" / "projects", tmp_path / ".gemini" / "tmp"]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    (tmp_path / "codex-home" / "sessions").mkdir(parents=True)
    assert tmp_path / "codex-home" / "sessions" in standard_locations()
