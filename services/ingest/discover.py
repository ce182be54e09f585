"""Expand the paths a user gives (files and folders) into the files to parse.

A file named explicitly is always a candidate: if it is not a session log, parsing says so. Inside
a folder, names prove nothing either (formats are recognized from content), so a regular file is a
candidate when its first non-blank byte opens a JSON value, when it is a SQLite database, or when its
start is a Markdown transcript of a tool Quarry reads; other binaries, lock files and notes are
passed over without a read beyond their first bytes. Hidden entries below a folder are skipped and
symlinked folders are not followed (no cycles). Files come out sorted, so runs are reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from quarry.ingest.detect import UNKNOWN, text_format
from quarry.ingest.sources.sqlite_snapshot import is_sqlite

SNIFF_BYTES = 4096
_JSON_OPENERS = frozenset(b"{[")
_BLANK = frozenset(b" \t\r\n")
_BOM = b"\xef\xbb\xbf"
DATABASE, LOG = "database", "log"  # source_kind's answers
_CLINE = "saoudrizwan.claude-dev"
_ROO_CODE = "rooveterinaryinc.roo-cline"


def standard_locations() -> list[Path]:
    """The agents' default log folders and databases that exist on this machine: Claude Code, Codex,
    Gemini CLI, Cursor (its global and workspace databases), Cline and Roo Code (their VS Code
    extensions' task folders), OpenCode's storage and Goose's sessions. CLAUDE_CONFIG_DIR, CODEX_HOME and
    XDG_CONFIG_HOME / XDG_DATA_HOME move them as they do for the tools themselves; macOS keeps the
    editors' folders under ~/Library/Application Support."""
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    editors = [config, home / "Library" / "Application Support"]
    candidates = [claude / "projects", codex / "sessions", home / ".gemini" / "tmp"]
    for folder in editors:
        cursor = folder / "Cursor" / "User"
        candidates += [cursor / "globalStorage" / "state.vscdb", *sorted(cursor.glob("workspaceStorage/*/state.vscdb"))]
    for folder in editors:
        for editor in ("Code", "Cursor"):
            extensions = folder / editor / "User" / "globalStorage"
            candidates += [extensions / _CLINE / "tasks", extensions / _ROO_CODE / "tasks"]
    candidates += [data / "opencode" / "storage", data / "goose" / "sessions"]
    return [path for path in candidates if path.exists()]


def project_locations(project: Path) -> list[Path]:
    """The session files tools keep inside a project folder that exist in `project`: SpecStory's history
    (Cursor), Aider's chat history, Crush's and OpenCode (Go)'s databases."""
    candidates = (
        project / ".specstory" / "history",
        project / ".aider.chat.history.md",
        project / ".crush" / "crush.db",
        project / ".opencode" / "opencode.db",
    )
    return [path for path in candidates if path.exists()]


def iter_source_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Files to parse under `paths`, each once, folders expanded recursively and in sorted order."""
    seen: set[Path] = set()
    for root in paths:
        root = Path(root)
        files = _walk(root) if root.is_dir() else iter([root])
        for path in files:
            if path not in seen:
                seen.add(path)
                yield path


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(folder, name)
            if path.is_file() and source_kind(path):
                yield path


def source_kind(path: Path) -> str:
    """What the file's start says it is: DATABASE (SQLite), LOG (a JSON object or array, a known Markdown
    transcript, or a file that cannot be read: parsing reports why), or "" (no session log)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return LOG
    if is_sqlite(head):
        return DATABASE
    head = head.removeprefix(_BOM)
    first = next((byte for byte in head if byte not in _BLANK), None)
    if first is None:
        return ""
    if first in _JSON_OPENERS or text_format(head.decode("utf-8", errors="ignore")) != UNKNOWN:
        return LOG
    return ""
