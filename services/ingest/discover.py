"""Expand the paths a user gives (files and folders) into the files to parse.

A file named explicitly is always a candidate: if it is not a session log, parsing says so. Inside
a folder, names prove nothing either (formats are recognized from content), so every regular file
whose first non-blank byte opens a JSON value is a candidate; binaries, lock files and notes are
passed over without a read beyond their first bytes. Hidden entries below a folder are skipped and
symlinked folders are not followed (no cycles). Files come out sorted, so runs are reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

SNIFF_BYTES = 512
_JSON_OPENERS = frozenset(b"{[")
_BLANK = frozenset(b" \t\r\n")
_BOM = b"\xef\xbb\xbf"


def standard_locations() -> list[Path]:
    """The agents' default log folders that exist on this machine (CLAUDE_CONFIG_DIR and
    CODEX_HOME move the first two, as they do for the tools themselves)."""
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    candidates = (claude / "projects", codex / "sessions", home / ".gemini" / "tmp")
    return [path for path in candidates if path.is_dir()]


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
            if path.is_file() and looks_like_json(path):
                yield path


def looks_like_json(path: Path) -> bool:
    """Whether the file's first non-blank byte opens a JSON object or array."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return True  # let parsing report why it cannot be read
    head = head.removeprefix(_BOM)
    for byte in head:
        if byte not in _BLANK:
            return byte in _JSON_OPENERS
    return False
