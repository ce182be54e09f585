"""The shared normalization rules: tool categories, tool summaries, caps, titles, times."""

from __future__ import annotations

import pytest

from quarry.ingest.normalize import OUTPUT_CAP_BYTES, cap_output, trim_title
from quarry.ingest.sources import to_ms
from quarry.ingest.sources.tool_calls import action_category, describe_tool_input


@pytest.mark.parametrize(
    ("tool", "category"),
    [
        ("Edit", "file_edit"),
        ("MultiEdit", "file_edit"),
        ("apply_patch", "file_edit"),
        ("Write", "file_write"),
        ("Read", "file_read"),
        ("Bash", "shell"),
        ("shell", "shell"),
        ("exec_command", "shell"),
        ("run_shell_command", "shell"),
        ("Grep", "search"),
        ("Glob", "search"),
        ("WebFetch", "web"),
        ("WebSearch", "web"),
        ("Task", "subagent"),
        ("Agent", "subagent"),
        ("TodoWrite", "other"),
        ("mcp__github__create_issue", "other"),
    ],
)
def test_action_category(tool: str, category: str) -> None:
    assert action_category(tool) == category


def test_tool_input_summary_path_and_command() -> None:
    assert describe_tool_input({"command": ["bash", "-lc", "pytest -q"]}).command == "pytest -q"
    assert describe_tool_input({"command": ["git", "commit", "-m", "a b"]}).command == "git commit -m 'a b'"
    read = describe_tool_input({"file_path": "/repo/db/pool.py", "limit": 20})
    assert (read.summary, read.path, read.command) == ("/repo/db/pool.py", "/repo/db/pool.py", "")
    grep = describe_tool_input({"pattern": "TODO", "path": "/repo"})
    assert (grep.summary, grep.path) == ("TODO", "/repo")
    patch = describe_tool_input("*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** End Patch")
    assert patch.path == "docs/new.md"
    assert describe_tool_input(["not", "a", "dict"]).summary == ""
    assert len(describe_tool_input({"command": "x" * 1000}).summary) == 300


def test_output_cap_is_64_kib_on_a_character_boundary() -> None:
    assert cap_output("short") == "short"
    capped = cap_output("é" * 40_000)  # 80,000 bytes of UTF-8
    assert len(capped.encode()) == OUTPUT_CAP_BYTES and set(capped) == {"é"}


def test_titles_collapse_whitespace_and_trim() -> None:
    assert trim_title("  fix\n\n the   loop ") == "fix the loop"
    long = trim_title("word " * 100)
    assert len(long) == 120 and long.endswith("…")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-01-15T20:51:48.582Z", 1768510308582),
        ("2026-01-15T21:51:48.582+01:00", 1768510308582),
        (1733000000.5, 1733000000500),
        (1768510308582, 1768510308582),
        ("2026-01-15T20:51:48.582", 1768510308582),  # no zone: UTC, as the agents write
        ("yesterday", 0),
        (None, 0),
        (True, 0),
        (float("nan"), 0),
        (10**30, 0),
    ],
)
def test_to_ms(value: object, expected: int) -> None:
    assert to_ms(value) == expected
