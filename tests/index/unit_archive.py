"""A hand-built archive for unit sources and session predicates: every unit present, counts and
token values straddling a boundary, action orders that tell `seq` from `exists`, a session family."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.index.lexical.assertions import AssertionStore
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.unit_tables import ASSERTIONS_FILE
from quarry.v1 import units_pb2
from tests.index.sessions import BASE_MS, Msg, Tool, session

DAY = 86_400_000
EDIT = Tool("Edit", "file_edit", path="src/pool.py", output="edited")
SHELL = Tool("Bash", "shell", command="pytest -x", output="1 failed, 3 passed", failed=True)
READ = Tool("Read", "file_read", path="docs/notes.md", output="notes")


def sid(native_id: str) -> str:
    """The id of an archive session (`quiet` is the one Codex session)."""
    return f"{'codex-session' if native_id == 'quiet' else 'claude-code-session'}:{native_id}"


def _with_tokens(s: units_pb2.Session, tokens: int) -> units_pb2.Session:
    for m in s.messages:
        if m.role == "assistant":
            m.input_tokens = tokens
    return s


def archive() -> list[units_pb2.Session]:
    # edit -> shell -> edit: seq(file_edit -> shell) and seq(shell -> file_edit) both hold
    edit_run = session(
        "edit-run",
        [Msg("user", "fix the pool timeout"), Msg("assistant", "Editing.", tools=[EDIT, SHELL, EDIT])],
        title="Pool timeout",
        start_ms=BASE_MS,
    )
    edit_run.counts.messages = 4
    edit_run.duration_ms = 59_999
    edit_run.files.add(
        id=f"{edit_run.id}:file:src/pool.py",
        session_id=edit_run.id,
        path="src/pool.py",
        actions=2,
        categories={"file_edit": 2},
        first_time_ms=BASE_MS + 60_000,
        last_time_ms=BASE_MS + 60_000,
    )
    edit_run.runs.add(id=f"{edit_run.id}:run:main", session_id=edit_run.id, role="main", status="completed")
    edit_run.runs.add(
        id=f"{edit_run.id}:run:1",
        session_id=edit_run.id,
        role="subagent",
        status="completed",
        agent="Explore",
        child_session_id=sid("edit-run/agent-1"),
        started_ms=BASE_MS + 90_000,
        model="opus",
    )
    edit_run.delegations.add(
        id=f"{edit_run.id}:delegation:1",
        session_id=edit_run.id,
        child_session_id=sid("edit-run/agent-1"),
        mapping_state="resolved",
        tool="Task",
        agent="Explore",
        instruction="Review the pool module for leaks",
        time_ms=BASE_MS + 90_000,
    )
    # shell -> edit only: seq(file_edit -> shell) fails, though both actions exist
    run_edit = session(
        "run-edit",
        [Msg("user", "run then fix"), Msg("assistant", "Running.", tools=[SHELL, EDIT])],
        repo="other",
        start_ms=BASE_MS + DAY,
    )
    run_edit.counts.messages = 5
    run_edit.duration_ms = 60_000
    run_edit.files.add(
        id=f"{run_edit.id}:file:src/pool.py",
        session_id=run_edit.id,
        path="src/pool.py",
        actions=1,
        categories={"file_edit": 1},
        first_time_ms=BASE_MS + DAY + 60_000,
        last_time_ms=BASE_MS + DAY + 60_000,
    )
    run_edit.events.add(
        id=f"{run_edit.id}:event:0",
        session_id=run_edit.id,
        kind="tool_finished",
        text="Bash finished: pytest #2100",
        object_ref="bash",
        delivery_state="acted_on",
        time_ms=BASE_MS + DAY + 60_000,
    )
    # no actions; a read-only code session with a snapshot
    quiet = session(
        "quiet",
        [Msg("user", "explain sqlite locking"), Msg("assistant", "Here:", code="PRAGMA journal_mode=WAL;")],
        origin="codex-session",
        start_ms=BASE_MS + 2 * DAY,
    )
    quiet.counts.messages = 6
    quiet.duration_ms = 60_001
    quiet.snapshots.add(
        id=f"{quiet.id}:snapshot:0",
        session_id=quiet.id,
        boundary="session_start",
        preview="explain sqlite locking",
        tokens_before=1200,
        time_ms=BASE_MS + 2 * DAY,
    )
    child = session(
        "edit-run/agent-1",
        [Msg("user", "Review the pool module"), Msg("assistant", "Reading.", tools=[READ])],
        start_ms=BASE_MS + 3 * DAY,
    )
    child.parent_session_id = edit_run.id
    child.counts.messages = 3
    return [_with_tokens(edit_run, 999), _with_tokens(run_edit, 1000), _with_tokens(quiet, 1001), child]


def write_assertions(directory: Path) -> None:
    store = AssertionStore(directory / ASSERTIONS_FILE)
    try:
        store.write(
            units_pb2.Assertion(
                id="a-decision",
                kind="decision",
                author="user",
                target_ref=f"session:{sid('edit-run')}",
                body="Keep the pool timeout at 30s after review",
            )
        )
        store.write(
            units_pb2.Assertion(
                id="a-caveat",
                kind="caveat",
                author="agent",  # lands as a candidate
                target_ref=f"session:{sid('run-edit')}",
                body="pytest is flaky here",
            )
        )
    finally:
        store.close()


def open_partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    """The archive in a fresh partition, with its assertions, for a module fixture."""
    partition = LexicalPartition(Path(tmp_path_factory.mktemp("units")), 0)
    partition.upsert(archive())
    write_assertions(partition.directory)
    yield partition
    partition.close()
