"""Two copies of one session: the complete copy is stored whichever was read first, in one call or across
calls, and a cut copy is named as such; two copies that disagree are a `source_conflict` (issue 28)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.client.ingest_outcome import failures
from tests.ingest.ingest_node import IngestNode, ingest_node
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = needs_shared

LOG = REAL_LOGS / "claude_code" / "Xu-Wentao__dotfile__bba7ac89-419c-401d-a0c2-f9352555f545.jsonl"
SESSION = "claude-code-session:bba7ac89-419c-401d-a0c2-f9352555f545"


def _records(data: bytes) -> int:
    """The file's JSON records, counted here (not by the parser): its complete copy's log events."""
    return sum(1 for line in data.splitlines() if line.strip() and json.loads(line) is not None)


def _cut(data: bytes, lines: int) -> bytes:
    """The first `lines` lines and half of the next one: a copy taken mid-write."""
    kept = data.split(b"\n")
    return b"\n".join(kept[:lines]) + b"\n" + kept[lines][: len(kept[lines]) // 2]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[IngestNode]:
    with ingest_node(tmp_path / "data", tmp_path) as started:
        yield started


def _copies(folder: Path, first: bytes, second: bytes) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (a := folder / "a.jsonl").write_bytes(first)
    (b := folder / "b.jsonl").write_bytes(second)
    return a, b


def _stored_from(node: IngestNode) -> str:
    stored = node.stored(SESSION)
    assert stored is not None
    return stored.source_path


def test_the_complete_copy_wins_in_one_call_whichever_path_comes_last(node: IngestNode, tmp_path: Path) -> None:
    data = LOG.read_bytes()
    assert _records(data) == 10
    full, cut = _copies(tmp_path / "logs", data, _cut(data, 5))  # the cut copy is read last
    report = node.ingest(tmp_path / "logs")
    assert _stored_from(node) == str(full)
    assert not failures(report)
    assert [(issue.code, issue.path) for issue in report.issues if issue.code == "cut_copy"] == [("cut_copy", str(cut))]
    assert f"read from {full}" in next(issue.reason for issue in report.issues if issue.code == "cut_copy")


def test_the_complete_copy_wins_when_the_cut_one_was_read_first(node: IngestNode, tmp_path: Path) -> None:
    data = LOG.read_bytes()
    cut, full = _copies(tmp_path / "logs", _cut(data, 5), data)
    first = node.ingest(cut)
    assert _stored_from(node) == str(cut)
    assert not failures(first)
    report = node.ingest(full)
    assert not failures(report), [(issue.code, issue.reason) for issue in report.issues]
    assert report.sessions_written == 1
    assert _stored_from(node) == str(full)


def test_a_cut_copy_read_after_the_complete_one_never_replaces_it(node: IngestNode, tmp_path: Path) -> None:
    data = LOG.read_bytes()
    full, cut = _copies(tmp_path / "logs", data, b"\n".join(data.split(b"\n")[:4]) + b"\n")  # cut at a line end
    node.ingest(full)
    report = node.ingest(cut)
    assert _stored_from(node) == str(full)
    assert [issue.code for issue in report.issues] == ["cut_copy"]
    assert report.sessions_written == 0


def test_copies_that_disagree_are_a_source_conflict_and_the_first_is_kept(node: IngestNode, tmp_path: Path) -> None:
    data = LOG.read_bytes()
    lines = data.split(b"\n")
    changed = json.loads(lines[3])
    changed["cwd"] = "/elsewhere"
    lines[3] = json.dumps(changed).encode()
    first, second = _copies(tmp_path / "logs", data, b"\n".join(lines))
    report = node.ingest(tmp_path / "logs")
    assert _stored_from(node) == str(first)
    conflicts = [issue for issue in report.issues if issue.code == "source_conflict"]
    assert [issue.path for issue in conflicts] == [str(second)]
    assert "its event 3 differs" in conflicts[0].reason
