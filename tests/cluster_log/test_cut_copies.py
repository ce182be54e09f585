"""Two copies of one session on a cluster on the log: the complete copy is what every replica stores, in one
call or across calls whichever copy came first, and the cut copy is named as `cut_copy` (issue 28). The
log keeps one record per session, so the ingest node judges the copies before it publishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.routing import partition_for
from quarry.v1 import ingest_pb2, sessions_pb2, sessions_pb2_grpc
from tests.cluster_log.inspect import replicas
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = [pytest.mark.cluster, needs_shared, pytest.mark.shared]

PARTITIONS = 16
ONE_CALL = "bba7ac89-419c-401d-a0c2-f9352555f545"
ACROSS_CALLS = "814710e0-c005-483c-bcb2-727b2e09f73c"


def _log(uuid: str) -> bytes:
    return (REAL_LOGS / "claude_code" / f"Xu-Wentao__dotfile__{uuid}.jsonl").read_bytes()


def _records(data: bytes) -> int:
    """The file's JSON records, counted here (not by the parser): its complete copy's log events."""
    return sum(1 for line in data.splitlines() if line.strip() and json.loads(line) is not None)


def _cut(data: bytes, lines: int, mid_line: bool = True) -> bytes:
    """The first `lines` lines, and half of the next one when `mid_line`: a copy taken mid-write."""
    kept = data.split(b"\n")
    return b"\n".join(kept[:lines]) + b"\n" + (kept[lines][: len(kept[lines]) // 2] if mid_line else b"")


def _ingest(client: QuarryClient, path: Path, data: bytes) -> ingest_pb2.IngestReport:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return list(client.ingest_paths([path]))[-1].report


def _held_by_every_replica(cluster: LocalCluster, uuid: str) -> list[tuple[str, int]]:
    """(source path, event count) of the session as each replica of its partition stores it."""
    session_id = f"claude-code-session:{uuid}"
    partition = partition_for(session_id, PARTITIONS)
    held = []
    for replica in replicas(cluster)[partition]:
        with cluster.node_channel(replica.node) as channel:
            stub = sessions_pb2_grpc.SessionStoreServiceStub(channel)
            read = sessions_pb2.PartitionReadEvents(partition=partition, session_id=session_id, full=True)
            stored = stub.ReadEvents(read, timeout=30)
        held.append((stored.session.source_path, stored.event_count))
    assert len(held) == 2, held
    return held


def _issues(report: ingest_pb2.IngestReport) -> list[tuple[str, str]]:
    """Every issue of the report, by code and path (a copy cut mid-line also has its `truncated_line`)."""
    return [(issue.code, issue.path) for issue in report.issues]


def test_the_complete_copy_wins_in_one_call(whole: LocalCluster, client: QuarryClient, tmp_path: Path) -> None:
    data = _log(ONE_CALL)
    full, cut = tmp_path / "logs" / "a.jsonl", tmp_path / "logs" / "b.jsonl"  # the cut copy is read last
    cut.parent.mkdir()
    cut.write_bytes(_cut(data, 5))
    full.write_bytes(data)
    report = list(client.ingest_paths([full.parent]))[-1].report
    assert sorted(_issues(report)) == [("cut_copy", str(cut)), ("truncated_line", str(cut))]
    assert f"read from {full}" in next(issue.reason for issue in report.issues if issue.code == "cut_copy")
    assert report.sessions_written == 1 and report.searchable
    assert _held_by_every_replica(whole, ONE_CALL) == [(str(full), _records(data))] * 2


def test_the_complete_copy_wins_across_calls_in_either_order(
    whole: LocalCluster, client: QuarryClient, tmp_path: Path
) -> None:
    data = _log(ACROSS_CALLS)
    complete = [(str(tmp_path / "full.jsonl"), _records(data))] * 2
    first = _ingest(client, tmp_path / "cut.jsonl", _cut(data, 6))
    assert (first.sessions_written, _issues(first)) == (1, [("truncated_line", str(tmp_path / "cut.jsonl"))])
    second = _ingest(client, tmp_path / "full.jsonl", data)  # the complete copy replaces the cut one
    assert (second.sessions_written, _issues(second)) == (1, [])
    assert _held_by_every_replica(whole, ACROSS_CALLS) == complete
    later = _ingest(client, tmp_path / "later-cut.jsonl", _cut(data, 4, mid_line=False))  # never replaces it
    assert (later.sessions_written, _issues(later)) == (0, [("cut_copy", str(tmp_path / "later-cut.jsonl"))])
    lines = data.split(b"\n")
    changed = json.loads(lines[3])
    changed["cwd"] = "/elsewhere"
    lines[3] = json.dumps(changed).encode()
    disagreeing = _ingest(client, tmp_path / "other.jsonl", b"\n".join(lines))
    assert _issues(disagreeing) == [("source_conflict", str(tmp_path / "other.jsonl"))]
    assert "its event 3 differs" in disagreeing.issues[0].reason
    assert _held_by_every_replica(whole, ACROSS_CALLS) == complete
