"""Seed 002's session API on the replicated log: events travel in the session's log record and every
replica of the session's partition applies them alike; reads and a family's lineage come back through the
query node."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.routing import partition_for
from quarry.v1 import sessions_pb2, sessions_pb2_grpc
from tests.cluster_log.inspect import replicas
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = [pytest.mark.cluster, needs_shared, pytest.mark.shared]

MAIN = "claude-code-session:d4fd5afb-e837-4595-a12a-6c44c0f09739"
A6 = "claude-code-session:198393f2-22db-477b-ac77-1825bea883ae"
PARTITIONS = 16


def test_events_through_the_log_on_every_replica(whole: LocalCluster, client: QuarryClient, tmp_path: Path) -> None:
    for path in (REAL_LOGS / "claude_code").glob("*"):
        if "a6_" in path.name or "d4fd5afb" in path.name:
            shutil.copy(path, tmp_path / path.name)
    report = list(client.ingest_paths([tmp_path]))[-1].report
    assert report.sessions_written == 4, report
    trace = client.sessions.trace_event(A6, 11)
    assert (trace.replaced_by, list(trace.source_event_seqs), list(trace.derived_event_seqs)) == (31, [10], [31])
    lineage = client.sessions.lineage(MAIN)
    assert len(lineage.descendants) == 2 and lineage.root.header.id == MAIN
    assert [h.record.header.id for h in client.sessions.search_sessions("RangeError").items] == [A6]
    partition = partition_for(A6, PARTITIONS)
    held = []
    for replica in replicas(whole)[partition]:
        with whole.node_channel(replica.node) as channel:
            stub = sessions_pb2_grpc.SessionStoreServiceStub(channel)
            read = sessions_pb2.PartitionReadEvents(partition=partition, session_id=A6, full=True)
            held.append(list(stub.ReadEvents(read, timeout=30).events))
    assert len(held) == 2 and held[0] == held[1] and len(held[0]) == 54
