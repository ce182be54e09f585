"""Folders expand to the files worth parsing; the agents' default folders are found."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from quarry.ingest.discover import iter_source_files, project_locations, standard_locations
from quarry.ingest.parse import iter_parse
from tests.ingest.support import FIXTURES
from tests.ingest.test_opencode import write_storage
from tests.shared_paths import REAL_LOGS, needs_shared


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


def _lay_out_home(home: Path, project: Path) -> None:
    """A home folder and a project folder laid out as each tool lays them out, from the real logs."""

    def put(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)

    claude = next((REAL_LOGS / "claude_code").glob("Xu-Wentao__dotfile__0286*.jsonl"))
    put(claude, home / ".claude" / "projects" / "-home-dev-dotfile" / "0286dfe3.jsonl")
    codex = next((REAL_LOGS / "codex").glob("aneesh*.jsonl"))
    put(codex, home / ".codex" / "sessions" / "2025" / "12" / "09" / codex.name.split("__")[-1])
    put(next((REAL_LOGS / "gemini").iterdir()), home / ".gemini" / "tmp" / "ab12" / "chats" / "session-1.json")
    cursor = home / ".config" / "Cursor" / "User"
    put(next((REAL_LOGS / "cursor").glob("slevin48*.vscdb")), cursor / "globalStorage" / "state.vscdb")
    put(next((REAL_LOGS / "cursor").glob("choigoyoon*.vscdb")), cursor / "workspaceStorage" / "9f1c" / "state.vscdb")
    extensions = home / ".config" / "Code" / "User" / "globalStorage"
    for tool, folder in (("cline", "saoudrizwan.claude-dev"), ("roo_code", "rooveterinaryinc.roo-cline")):
        for part in ("api_conversation_history", "ui_messages", "task_metadata"):
            for source in (REAL_LOGS / tool).glob(f"*__{part}.json"):
                put(source, extensions / folder / "tasks" / "task-1" / f"{part}.json")
    export = orjson.loads(next((REAL_LOGS / "opencode").glob("rajsingh*.json")).read_bytes())
    write_storage(home / ".local" / "share" / "opencode", export)
    put(
        next((REAL_LOGS / "goose").glob("*sessions.db")),
        home / ".local" / "share" / "goose" / "sessions" / "sessions.db",
    )
    for history in (REAL_LOGS / "cursor").glob("edobry__minsky__.specstory__history__*.md"):
        put(history, project / ".specstory" / "history" / history.name.split("history__")[-1])
    for suffix in (".aider.chat.history.md", ".aider.input.history"):
        put(next((REAL_LOGS / "aider").glob(f"AdrianGhazvini*{suffix}")), project / suffix)
    put(next((REAL_LOGS / "opencode_go").glob("*crush.db")), project / ".crush" / "crush.db")
    put(next((REAL_LOGS / "opencode_go").glob("*opencode.db")), project / ".opencode" / "opencode.db")


@needs_shared
def test_no_path_finds_every_tool_s_sessions_where_each_tool_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`quarry ingest` with no path: the ingest node reads the standard locations, the CLI adds its folder's files.
    Exports a user downloads (ChatGPT, Claude.ai, Copilot Chat) have no standard place."""
    home, project = tmp_path / "home", tmp_path / "project"
    _lay_out_home(home, project)
    monkeypatch.setenv("HOME", str(home))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(variable, raising=False)
    results = list(iter_parse([*standard_locations(), *project_locations(project)]))
    found = {r.format for r in results if r.sessions}
    assert found == {
        "claude-code", "codex", "gemini", "cursor", "cline", "roo-code", "opencode", "goose", "aider", "crush",
    }  # fmt: skip
    assert not [issue for r in results for issue in r.issues if issue.code == "unknown_format"]
