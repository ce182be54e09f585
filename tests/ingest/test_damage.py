"""A damaged file never costs another file anything (issue 28).

Every real log of every format under ../shared/real-logs is damaged (cut at a random byte, bit-flipped,
emptied, or given another format's file name; hypothesis, seeded) and ingested in one call with
undamaged logs, as `quarry ingest FOLDER` does (IngestPaths over a real partition, in this process): the
call never fails as a whole nor hangs, every damaged file that gave no session is named with its path
and why, and the undamaged files' sessions are all stored.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from quarry.client.ingest_outcome import failures
from quarry.core.session_ids import scoped_id
from quarry.ingest.parse import parse_file
from tests.ingest.ingest_node import IngestNode, ingest_node, within
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = needs_shared

REAL = sorted(path for path in REAL_LOGS.rglob("*") if path.is_file() and path.name != "README.md")
# Names each tool gives its files: a damaged file renamed to another format's (formats are read from content).
NAMES = (
    "state.vscdb",
    "crush.db",
    "sessions.db",
    "opencode.db",
    "store.db",
    "conversations.json",
    "api_conversation_history.json",
    "ui_messages.json",
    "chat.json",
    "rollout-2025-01-01T00-00-00-0000.jsonl",
    "0000-session.jsonl",
    ".aider.chat.history.md",
    "2025-01-01_00-00-transcript.md",
)
GOOSE = REAL_LOGS / "goose" / "jwp23__dotfiles__.local__share__goose__sessions__sessions.db"
CALL_SECONDS = 120


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IngestNode]:
    root = tmp_path_factory.mktemp("damage")
    with ingest_node(root / "data", root) as started:
        started.root = root  # type: ignore[attr-defined]
        yield started


def _sessions(path: Path) -> list[str]:
    return [session.id for session in parse_file(path).sessions]


def _named(report: object, path: Path) -> bool:
    paths = {issue.path for issue in report.issues} | {skip.path for skip in report.skipped}  # type: ignore[attr-defined]
    return str(path) in paths


def test_a_database_with_a_damaged_table_name_fails_alone(node: IngestNode) -> None:
    folder = node.root / "sqlite"  # type: ignore[attr-defined]
    intact = folder / "a-intact"
    shutil.copytree(REAL_LOGS, intact, ignore=shutil.ignore_patterns("README.md"))
    data = bytearray(GOOSE.read_bytes())
    at = data.index(b"tablesessionssessions") + len(b"table")  # the `sessions` table's name in sqlite_master
    data[at] = 0xFF
    damaged = folder / "b-damaged" / "sessions.db"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(bytes(data))

    report = node.ingest(folder, scope="sqlite")
    assert [(issue.path, issue.code) for issue in failures(report)] == [(str(damaged), "unreadable")]
    assert "not a readable SQLite database" in failures(report)[0].reason
    expected = [
        scoped_id("sqlite", sid) for path in sorted(intact.rglob("*")) if path.is_file() for sid in _sessions(path)
    ]
    assert len(expected) > 50
    stored = node.server.lexical(0).get_sessions(expected)
    assert sorted(session.id for session in stored) == sorted(set(expected))


def _damage(data: bytes, kind: str, fraction: float, flips: list[int]) -> bytes:
    if kind == "empty" or not data:
        return b""
    if kind == "truncate":
        return data[: int(len(data) * fraction)]
    if kind == "flip":
        damaged = bytearray(data)
        for bit in flips:
            damaged[(bit // 8) % len(damaged)] ^= 1 << (bit % 8)
        return bytes(damaged)
    return data  # "rename": the content is whole, the name another format's


DAMAGE = st.tuples(
    st.sampled_from(("truncate", "flip", "empty", "rename")),
    st.floats(0.0, 1.0, exclude_max=True),
    st.lists(st.integers(0, 1 << 40), min_size=1, max_size=4),
    st.sampled_from(NAMES),
)


@seed(28)
@settings(
    max_examples=12,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    damages=st.lists(DAMAGE, min_size=len(REAL), max_size=len(REAL)), intact=st.sets(st.sampled_from(REAL), max_size=4)
)
def test_every_real_log_damaged_costs_no_other_file_anything(
    node: IngestNode, damages: list[tuple[str, float, list[int], str]], intact: set[Path]
) -> None:
    example = getattr(node, "examples", 0) + 1
    node.examples = example  # type: ignore[attr-defined]
    folder = node.root / f"example-{example}"  # type: ignore[attr-defined]
    kept = []
    for source in sorted(intact):  # read first: a damaged copy of one of them is the copy refused
        kept.append(folder / "a-intact" / source.parent.name / source.name)
        kept[-1].parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, kept[-1])
    damaged = {}
    for n, (source, (kind, fraction, flips, name)) in enumerate(zip(REAL, damages, strict=True)):
        path = folder / "b-damaged" / f"{n:03d}" / (name if kind == "rename" else source.name)
        path.parent.mkdir(parents=True)
        path.write_bytes(_damage(source.read_bytes(), kind, fraction, flips))
        damaged[path] = kind

    scope = f"damage{example}"
    report = within(CALL_SECONDS, lambda: node.ingest(folder, scope=scope))
    for path, kind in damaged.items():
        progress = node.progress.get(str(path))
        gave = progress is not None and progress.sessions > 0
        assert gave or _named(report, path), f"{kind}: {path} gave no session and is not named"
        if kind == "empty":
            assert [skip.code for skip in report.skipped if skip.path == str(path)] == ["empty"]
    assert not [issue for issue in failures(report) if Path(issue.path) in kept]
    expected = {scoped_id(scope, sid) for path in kept for sid in _sessions(path)}
    stored = node.server.lexical(0).get_sessions(sorted(expected))
    assert {session.id for session in stored} == expected
