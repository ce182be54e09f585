"""ARCHITECTURE.md names only files that exist, and answers where a search is fused, where a partition
commits and where an error gets its gRPC status."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAP = (REPO / "ARCHITECTURE.md").read_text()
_PATH = re.compile(r"`((?:src|proto|tests|bench|deploy|docs|scripts)/[\w./-]+)`")
_FOLDER_FILE = re.compile(r"^### `(src/quarry/[\w/]+)/`")


def named_paths() -> list[str]:
    return sorted(set(_PATH.findall(MAP)))


def test_every_path_the_map_names_exists() -> None:
    missing = [path for path in named_paths() if not (REPO / path.rstrip("/")).exists()]
    assert named_paths() and missing == []


def test_every_module_a_room_names_exists_in_that_room() -> None:
    """Inside a room's section, a bare `name.py` is a module of that room (or of a subfolder it names)."""
    missing = []
    for section in re.split(r"\n(?=### )", MAP):
        folder = _FOLDER_FILE.match(section)
        if not folder:
            continue
        room = REPO / folder.group(1)
        for name in set(re.findall(r"`([\w/]+\.(?:py|lark))`", section)):
            if not (room / name).exists() and not any(room.rglob(Path(name).name)):
                missing.append(f"{folder.group(1)}: {name}")
    assert missing == []


def test_the_map_answers_the_three_questions_with_files() -> None:
    for question, path in (
        ("The channels are fused in", "src/quarry/query/fusion.py"),
        ("a partition commits in", "src/quarry/index/lexical/partition.py"),
        ("turns it into its gRPC status", "src/quarry/core/node.py"),
    ):
        at = MAP.index(question)
        assert path in MAP[at - 400 : at + 400], question
