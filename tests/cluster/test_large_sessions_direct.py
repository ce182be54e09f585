"""Sessions of 30 MB logs in the embedded default: streamed to the ingest node through IngestSessions (as
`quarry push` sends what it parsed), then pushed to their partition's index node. Three of them (about
116 MB each once parsed) routed to one partition are more than one gRPC message may carry (256 MiB), so
the ingest node's batches to the index nodes are bounded by bytes as well as by messages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.large_sessions import MB, LargeLog
from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.routing import partition_for
from quarry.core.telemetry import MAX_MESSAGE_BYTES
from quarry.ingest.parse import parse_file
from quarry.ingest.router import BATCH_BYTES
from quarry.v1 import units_pb2

pytestmark = pytest.mark.cluster

PARTITIONS = 2


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuarryClient]:
    local = LocalCluster(tmp_path_factory.mktemp("quarry-large-direct"), partitions=PARTITIONS, embedder="none")
    local.start()
    try:
        info = local.info()
        with QuarryClient(info.query, info.ingest) as quarry:
            yield quarry
    finally:
        local.stop()


def same_partition_logs(folder: Path, count: int) -> list[LargeLog]:
    """`count` logs of 30 MB whose sessions all route to partition 0, each closing on its own word."""
    logs: list[LargeLog] = []
    n = 0
    while len(logs) < count:
        n += 1
        native_id = f"large-direct-{n}"
        if partition_for(f"claude-code-session:{native_id}", PARTITIONS) == 0:
            log = LargeLog(folder / f"{native_id}.jsonl", native_id, seed=n)
            log.grow(30 * MB, marker(len(logs)))
            logs.append(log)
    return logs


def marker(index: int) -> str:
    return f"xyzzyquokkadirect{'xq' * (index + 1)}"


def test_30_mb_sessions_go_through_ingest_sessions_and_the_embedded_default(
    client: QuarryClient, tmp_path: Path
) -> None:
    logs = same_partition_logs(tmp_path, 3)
    sessions: list[units_pb2.Session] = [parse_file(log.path).sessions[0] for log in logs]
    assert sum(s.ByteSize() for s in sessions) > BATCH_BYTES  # the ingest node sends them in several requests
    assert max(s.ByteSize() for s in sessions) < MAX_MESSAGE_BYTES  # each one a message of the call
    report = client.ingest_sessions(sessions)
    assert (report.sessions_written, list(report.issues), report.searchable) == (3, [], True), report
    for index, log in enumerate(logs):
        assert [h.session.id for h in client.search(marker(index)).hits] == [log.session_id]
        header, events = client.sessions.read(log.session_id)
        assert header.id == log.session_id
        assert len(events) == log.lines and marker(index) in events[-1].text
