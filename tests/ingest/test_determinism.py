"""Same bytes, same sessions; a longer copy of an append-only log keeps the ids it shared, derived units
(files, runs, events, snapshots, delegations) included."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from quarry.core import vocab
from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.support import FIXTURES
from tests.shared_paths import REAL_LOGS, needs_shared

APPEND_ONLY = [
    FIXTURES / "claude_code" / "session.jsonl",
    FIXTURES / "claude_code" / "delegating.jsonl",
    FIXTURES / "claude_code" / "compacted.jsonl",
    FIXTURES / "claude_code" / "sidechains.jsonl",
    FIXTURES / "codex" / "rollout.jsonl",
    FIXTURES / "codex" / "resumed_rollout.jsonl",
]
ALL_FIXTURES = sorted(path for path in FIXTURES.rglob("*") if path.is_file())


def _serialized(path: Path) -> list[bytes]:
    return [s.SerializeToString(deterministic=True) for s in parse_file(path).sessions]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_reparsing_gives_byte_identical_sessions(path: Path) -> None:
    assert _serialized(path) == _serialized(path)


def test_fixtures_exercise_every_derived_unit() -> None:
    """The determinism checks above cover derived units: the fixtures hold each of them."""
    sessions = [s for path in ALL_FIXTURES for s in parse_file(path).sessions]
    assert all(len(s.runs) >= 1 and len(s.events) >= 1 and len(s.snapshots) >= 1 for s in sessions)
    assert sum(len(s.files) for s in sessions) and sum(len(s.delegations) for s in sessions)
    kinds = {e.kind for s in sessions for e in s.events}
    assert kinds == set(vocab.EVENT_KINDS)


def test_content_hash_covers_the_content_and_nothing_else() -> None:
    session = parse_file(APPEND_ONLY[0]).sessions[0]
    unhashed = units_pb2.Session()
    unhashed.CopyFrom(session)
    unhashed.content_hash = ""
    assert session.content_hash == hashlib.sha256(unhashed.SerializeToString(deterministic=True)).hexdigest()
    edited = APPEND_ONLY[0].read_bytes().replace(b"never re-reads", b"never rereads")
    assert parse_bytes(edited, str(APPEND_ONLY[0])).sessions[0].content_hash != session.content_hash


def _assert_prefixes_keep_ids(path: Path) -> None:
    data = path.read_bytes()
    full = {s.id: s for s in parse_bytes(data, str(path)).sessions}
    cuts = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    cuts += [cut - 7 for cut in cuts if cut > 7]  # and mid-line, as a file still being written
    for cut in cuts:
        for session in parse_bytes(data[:cut], str(path)).sessions:
            whole = full[session.id]
            for message in session.messages:
                same = whole.messages[message.seq]
                assert (same.id, same.role) == (message.id, message.role)
                assert [(b.id, b.type, b.text) for b in same.blocks[: len(message.blocks)]] == [
                    (b.id, b.type, b.text) for b in message.blocks
                ]
            for action in session.actions:
                assert whole.actions[action.seq].block_id == action.block_id
            _assert_units_kept(session, whole)


def _assert_units_kept(part: units_pb2.Session, whole: units_pb2.Session) -> None:
    """The derived units of a prefix are the whole file's units of the same ids, in the same order."""
    assert [(e.id, e.kind, e.source_ref) for e in part.events] == [
        (e.id, e.kind, e.source_ref) for e in whole.events[: len(part.events)]
    ]
    assert [(s.id, s.boundary) for s in part.snapshots] == [
        (s.id, s.boundary) for s in whole.snapshots[: len(part.snapshots)]
    ]
    assert [(r.id, r.role) for r in part.runs] == [(r.id, r.role) for r in whole.runs[: len(part.runs)]]
    assert [(d.id, d.tool_use_ref) for d in part.delegations] == [
        (d.id, d.tool_use_ref) for d in whole.delegations[: len(part.delegations)]
    ]
    files = {f.id: f.first_ref for f in whole.files}
    assert all(files[f.id] == f.first_ref for f in part.files)


@pytest.mark.parametrize("path", APPEND_ONLY, ids=lambda p: p.name)
def test_prefix_of_an_append_only_file_keeps_shared_ids(path: Path) -> None:
    _assert_prefixes_keep_ids(path)


@needs_shared
@pytest.mark.shared
def test_prefixes_of_real_append_only_logs_keep_shared_ids() -> None:
    for path in sorted((REAL_LOGS / "claude_code").glob("*.jsonl")) + sorted((REAL_LOGS / "codex").glob("*.jsonl")):
        if path.stat().st_size < 40_000:
            _assert_prefixes_keep_ids(path)
