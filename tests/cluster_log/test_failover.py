"""A cluster on the log keeps answering when index nodes die, and loses nothing it acknowledged.

The acceptance scenarios of the scale-out work, each on the module's real cluster (three NATS servers,
three index nodes, 16 partitions on two replicas each), with separate processes ingesting and querying
as clients would."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.index.partition_set import partition_dir
from quarry.v1 import errors_pb2
from tests.cluster_log.inspect import (
    converged,
    digest,
    finished,
    held,
    live_replicas,
    load,
    out_file,
    partitions_only_on,
    replicas,
    status,
    wait_for,
    wait_until_converged,
)
from tests.cluster_log.load import make_session, read_lines

PARTITIONS = 16


def acked_ids(path: str) -> list[str]:
    return [sid for line in read_lines(Path(path)) if "acked" in line for sid in line["acked"]]  # type: ignore[union-attr]


def assert_every_live_replica_holds(cluster: LocalCluster, sessions: list[str]) -> None:
    """Every session on every live replica of its partition, once; no session in two partitions."""
    seen: dict[str, int] = {}
    for partition, nodes in live_replicas(cluster).items():
        wanted = {s for s in sessions if partition_for(s, PARTITIONS) == partition}
        assert nodes, f"partition {partition} has no live replica"
        for node in nodes:
            ids = held(cluster, node, partition)
            assert len(ids) == len(set(ids)), f"{node} holds a session of partition {partition} twice"
            assert wanted <= set(ids), f"{node} lost {sorted(wanted - set(ids))[:5]} of partition {partition}"
            for session_id in ids:
                assert seen.setdefault(session_id, partition) == partition, f"{session_id} is in two partitions"


def test_a_killed_index_node_loses_no_acknowledged_session_and_fails_no_query(
    whole: LocalCluster, scratch: Path
) -> None:
    info = whole.info()
    ingested, queried = out_file(scratch, "ingest"), out_file(scratch, "query")
    with load("query", info.query, queried, "--rate", "20"):
        feed = ["--prefix", "kill", "--sessions", "600", "--batch", "20"]
        with load("ingest", info.query, info.ingest, ingested, *feed) as feeder:
            wait_for(lambda: len(acked_ids(ingested)) >= 100, 60, "the ingest did not start")
            whole.kill("index-1")
            finished(feeder, 300)
        time.sleep(1.0)
    acked = acked_ids(ingested)
    assert len(acked) == len(set(acked)) == 600
    lines = read_lines(Path(queried))
    assert len(lines) > 50
    assert [q for q in lines if "failed" in q or q.get("partial")] == []
    # index-1 stays down: once the cluster's delay passed, its partitions were copied to the others.
    wait_for(lambda: all(len(nodes) == 2 for nodes in live_replicas(whole).values()), 120, "no re-replication")
    wait_for(lambda: all(r.lag == 0 for rs in replicas(whole).values() for r in rs if r.alive), 60, "replicas lag")
    assert_every_live_replica_holds(whole, acked)


def test_a_partition_without_a_live_replica_is_named_missing_or_fails_a_complete_search(
    whole: LocalCluster, client: QuarryClient
) -> None:
    first = replicas(whole)[0]
    doomed = {r.node for r in first}
    lost = partitions_only_on(whole, doomed)
    assert 0 in lost
    for node in sorted(doomed):
        whole.kill(node)
    began = time.perf_counter()
    envelope = client.search("steady", limit=5)
    assert time.perf_counter() - began < 2.0  # a dead node costs a refused connection, not the deadline
    assert envelope.partial
    assert [m.partition for m in envelope.missing] == lost
    assert all(m.reason for m in envelope.missing)
    with pytest.raises(QuarryError) as refused:
        client.search("steady", limit=5, require_complete=True)
    assert refused.value.code == errors_pb2.PARTITION_UNAVAILABLE
    assert refused.value.partitions == lost
    assert re.search(r"partitions? 0\b", refused.value.message), refused.value.message


def test_a_cursor_walk_of_a_thousand_sessions_survives_a_failover(whole: LocalCluster, client: QuarryClient) -> None:
    sessions = [make_session("walk", n) for n in range(1000)]
    for start in range(0, 1000, 250):
        report = client.ingest_sessions(sessions[start : start + 250])
        assert report.searchable
    walked: list[str] = []
    cursor = ""
    pages = 0
    while True:
        envelope = client.search("walk", limit=25, cursor=cursor)
        assert not envelope.partial
        walked.extend(hit.session.id for hit in envelope.hits)
        pages += 1
        if pages == 12:
            whole.kill("index-0")  # the walk's replicas there are gone: their partitions go on elsewhere
        cursor = envelope.next_cursor
        if not cursor:
            break
    assert len(walked) == len(set(walked)), "a session was served twice"
    assert set(walked) == {s.id for s in sessions}, "a session was skipped"


def test_killing_the_logs_leader_during_ingest_loses_and_duplicates_nothing(whole: LocalCluster, scratch: Path) -> None:
    info = whole.info()
    ingested = out_file(scratch, "ingest")
    feed = ["--prefix", "leader", "--sessions", "400", "--batch", "20"]
    with load("ingest", info.query, info.ingest, ingested, *feed) as feeder:
        wait_for(lambda: len(acked_ids(ingested)) >= 60, 60, "the ingest did not start")
        leader = status(whole).log.leader
        assert leader.startswith("nats-")
        whole.kill(leader)
        finished(feeder, 300)
    lines = read_lines(Path(ingested))
    assert [line for line in lines if "failed" in line] == []  # the ingest resumed by itself
    acked = acked_ids(ingested)
    assert len(acked) == len(set(acked)) == 400
    whole.restart(leader)
    wait_until_converged(whole, 120, "the cluster did not converge")
    assert_every_live_replica_holds(whole, acked)


def test_a_fourth_node_takes_partitions_under_load_with_the_same_contents(whole: LocalCluster, scratch: Path) -> None:
    info = whole.info()
    queried = out_file(scratch, "query")
    with load("query", info.query, queried, "--rate", "20"):
        joined = whole.add_index_node()
        wait_for(
            lambda: any(r.node == joined for rs in replicas(whole).values() for r in rs) and converged(whole),
            120,
            "the new node's partitions did not become active",
        )
        time.sleep(1.0)
    lines = read_lines(Path(queried))
    assert [q for q in lines if "failed" in q or q.get("partial")] == []
    moved = sorted(p for p, rs in replicas(whole).items() if any(r.node == joined for r in rs))
    assert moved, "the new node holds nothing"
    for partition in moved:
        others = [r.node for r in replicas(whole)[partition] if r.node != joined]
        assert {digest(whole, node, partition).content_digest for node in [joined, *others]} == {
            digest(whole, others[0], partition).content_digest
        }


def _wipe(cluster: LocalCluster, nodes: list[str], partition: int) -> None:
    for node in nodes:
        cluster.kill(node)
    for node in nodes:
        shutil.rmtree(partition_dir(cluster.home / "nodes" / node, partition))
    for node in nodes:
        cluster.restart(node)


def test_a_partition_wiped_on_both_replicas_is_rebuilt_from_the_log(whole: LocalCluster, client: QuarryClient) -> None:
    partition = 5
    nodes = [r.node for r in replicas(whole)[partition]]
    before = {
        node: (sorted(held(whole, node, partition)), digest(whole, node, partition).content_digest) for node in nodes
    }
    assert before[nodes[0]][0], "the partition holds nothing to rebuild"
    searched = [(h.session.id, h.match.score) for h in client.search("steady", limit=1000).hits]
    _wipe(whole, nodes, partition)
    wait_until_converged(whole, 120, "the wiped partition was not rebuilt")
    for node in nodes:
        assert (sorted(held(whole, node, partition)), digest(whole, node, partition).content_digest) == before[node]
        assert digest(whole, node, partition).applied_seq > 0
    assert [(h.session.id, h.match.score) for h in client.search("steady", limit=1000).hits] == searched


def test_a_deleted_session_is_gone_from_every_replica_and_from_a_rebuilt_one(
    whole: LocalCluster, client: QuarryClient
) -> None:
    doomed, kept = make_session("deleted", 1), make_session("deleted", 2)
    assert client.ingest_sessions([doomed, kept]).searchable
    partition = partition_for(doomed.id, PARTITIONS)
    nodes = [r.node for r in replicas(whole)[partition]]
    assert all(doomed.id in held(whole, node, partition) for node in nodes)
    report = client.delete([f"session:{doomed.id}"])
    assert (list(report.deleted), list(report.not_found), report.searchable) == ([doomed.id], [], True)
    assert all(doomed.id not in held(whole, node, partition) for node in nodes)
    assert [h.session.id for h in client.search("deletedx1").hits] == []
    assert [h.session.id for h in client.search("deletedx2").hits] == [kept.id]
    _wipe(whole, nodes[:1], partition)
    wait_until_converged(whole, 120, "the wiped replica was not rebuilt")
    assert doomed.id not in held(whole, nodes[0], partition)
    assert list(client.delete([doomed.id]).not_found) == [doomed.id]
