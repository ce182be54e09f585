"""What users and operators see of a cluster on the log: assertions written once and held by every
replica, `ack log`, `quarry cluster status`, a node joining with `quarry node index --join`, and each
index node's readiness."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import orjson
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.core.session_ids import scoped_id
from quarry.v1 import assertions_pb2, assertions_pb2_grpc, errors_pb2, units_pb2
from tests.cluster_log.inspect import replicas, wait_for
from tests.cluster_log.load import make_session
from tests.cluster_log.native_stacks import native_stacks

PARTITIONS = 16


def assertion_on(cluster: LocalCluster, node: str, partition: int, assertion_id: str) -> units_pb2.Assertion | None:
    with cluster.node_channel(node) as channel:
        request = assertions_pb2.NodeGetAssertion(partitions=[partition], id=assertion_id)
        found = assertions_pb2_grpc.AssertionServiceStub(channel).GetAssertion(request, timeout=10)
    assert not found.failures
    return found.partitions[0].assertion if found.partitions[0].found else None


def test_an_assertion_is_written_once_through_the_log_and_held_alike_by_every_replica(
    whole: LocalCluster, client: QuarryClient
) -> None:
    target = make_session("claims", 1)
    assert client.ingest_sessions([target]).searchable
    partition = partition_for(target.id, PARTITIONS)
    nodes = [r.node for r in replicas(whole)[partition]]
    written = client.write_assertion(
        units_pb2.Assertion(kind="decision", author="agent", target_ref=f"session:{target.id}", body="retry twice")
    )
    assert written.status == "candidate" and written.session_id == target.id
    held = [assertion_on(whole, node, partition, written.id) for node in nodes]
    assert held == [written, written]  # the same timestamps too: the query node's clock travels in the record
    judged = client.judge_candidate(written.id, "accept")
    assert judged.candidate.status == "accepted" and judged.created.supersedes == written.id
    for node in nodes:
        assert assertion_on(whole, node, partition, written.id) == judged.candidate
        assert assertion_on(whole, node, partition, judged.created.id) == judged.created
    with pytest.raises(QuarryError) as again:
        client.judge_candidate(written.id, "reject", reason="changed my mind")
    assert again.value.code == errors_pb2.NOT_JUDGEABLE  # the same typed error every replica recorded


def test_ack_log_returns_once_in_the_log_and_the_sessions_become_searchable(client: QuarryClient) -> None:
    sessions = [make_session("logged", n) for n in range(30)]
    report = client.ingest_sessions(sessions, ack="log")
    assert (report.in_log, report.searchable, report.sessions_written) == (True, False, 30)
    assert {w.partition for w in report.watermarks} == {partition_for(s.id, PARTITIONS) for s in sessions}
    ids = {s.id for s in sessions}  # other tests' sessions may hold the word too
    wait_for(
        lambda: ids <= {h.session.id for h in client.search("logged", limit=100).hits},
        30,
        "the logged sessions were not applied",
    )


def test_quarry_cluster_status_shows_every_partitions_replicas_and_the_log(whole: LocalCluster) -> None:
    command = [sys.executable, "-m", "quarry.cli", "--home", str(whole.home)]
    plain = subprocess.run([*command, "cluster", "status"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    assert "16 partitions × 2 replicas" in plain.stdout and "p15" in plain.stdout and "leader" in plain.stdout
    document = orjson.loads(
        subprocess.run([*command, "--format", "json", "cluster", "status"], capture_output=True, timeout=60).stdout
    )
    cluster_map, log = document["map"], document["log"]
    assert (cluster_map["mode"], cluster_map["partitions"], cluster_map["replicas"]) == ("nats", 16, 2)
    assert int(cluster_map["generation"]) > 0
    assert all(len(p["replicas"]) == 2 for p in cluster_map["partitionReplicas"])
    assert {r["state"] for p in cluster_map["partitionReplicas"] for r in p["replicas"]} == {"active"}
    assert log["stream"] == "QUARRY" and len(log["servers"]) == 3 and log["leader"].startswith("nats-")


def test_every_index_node_is_ready_once_its_partitions_are_caught_up(whole: LocalCluster) -> None:
    def ready(name: str) -> bool:
        health = health_pb2_grpc.HealthStub(grpc.insecure_channel(whole.node_addresses[name]))
        answer = health.Check(health_pb2.HealthCheckRequest(service="quarry.v1.IndexService"), timeout=5)
        return answer.status == health_pb2.HealthCheckResponse.SERVING

    for name in sorted(n for n in whole.procs if n.startswith("index-")):
        wait_for(lambda name=name: ready(name), 10, f"{name} is not ready")


def test_a_node_joins_from_the_command_line_and_leaves_on_sigterm(whole: LocalCluster, tmp_path: Path) -> None:
    run_file = tmp_path / "joined.json"
    # Its log goes to a file beside the cluster's: a pipe nobody reads would fill and stop the node.
    with open(whole.home / "logs" / "joined-cli.log", "ab") as log:
        joined = subprocess.Popen(
            [sys.executable, "-m", "quarry.cli", "node", "index", "--join", "--home", str(whole.home),
             "--run-file", str(run_file)],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )  # fmt: skip
    try:
        wait_for(run_file.exists, 60, "the joining node did not start")
        name = orjson.loads(run_file.read_bytes())["name"]
        assert name not in whole.procs  # the first index-N the home has no node of
        wait_for(
            lambda: any(r.node == name and r.state == "active" for rs in replicas(whole).values() for r in rs),
            90,
            "the joined node got no active partition",
        )
        joined.send_signal(signal.SIGTERM)
        try:
            assert joined.wait(timeout=60) == 0
        except subprocess.TimeoutExpired:
            log_text = (whole.home / "logs" / "joined-cli.log").read_text(errors="replace")[-4000:]
            stacks = native_stacks(joined.pid)
            raise AssertionError(f"no exit 60 s after SIGTERM; its log:\n{log_text}\nits threads:\n{stacks}") from None
        wait_for(
            lambda: not any(r.node == name for rs in replicas(whole).values() for r in rs),
            60,
            "the node that left kept partitions",
        )
    finally:
        if joined.poll() is None:
            joined.kill()
        time.sleep(0)


def test_a_session_held_in_one_scope_is_not_taken_into_another_through_the_log(client: QuarryClient) -> None:
    first = make_session("scoped", 1)
    first.scope = "team-a"
    assert client.ingest_sessions([first]).sessions_written == 1
    taken = units_pb2.Session()
    taken.CopyFrom(first)
    taken.scope, taken.title = "team-b", "a copy another team ingested"
    copied = client.ingest_sessions([taken])
    assert (copied.sessions_written, list(copied.issues)) == (1, [])  # team-b's own copy, under its own id
    kept = client.resolve_ref(f"session:{scoped_id('team-a', first.id)}").session
    assert (kept.scope, kept.title) == ("team-a", first.title)
    copy = client.resolve_ref(f"session:{scoped_id('team-b', first.id)}").session
    assert (copy.scope, copy.title) == ("team-b", taken.title)
