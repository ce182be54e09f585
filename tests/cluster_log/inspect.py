"""Looking into a cluster on the log from a test: the map as the query node sees it, what each replica
holds (asked of its index node directly), and waiting for the cluster to be whole again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.cluster.nats_permissions import ADMIN
from quarry.v1 import index_pb2, index_pb2_grpc, query_pb2
from tests.cluster_log import log_state
from tests.shared_paths import REPO

WAIT_S = 120.0


def status(cluster: LocalCluster) -> query_pb2.ClusterStatusResponse:
    with QuarryClient(cluster.node_addresses["query"]) as client:
        return client.status()


def replicas(cluster: LocalCluster) -> dict[int, list[query_pb2.ReplicaStatus]]:
    return {p.partition: list(p.replicas) for p in status(cluster).map.partition_replicas}


@contextmanager
def node_stub(cluster: LocalCluster, node: str) -> Iterator[index_pb2_grpc.IndexServiceStub]:
    """The index node's IndexService as another node calls it (with the cluster key)."""
    with cluster.node_channel(node) as channel:
        yield index_pb2_grpc.IndexServiceStub(channel)


def held(cluster: LocalCluster, node: str, partition: int) -> list[str]:
    """Every session id the node's replica of the partition holds (with repeats, were there any)."""
    with node_stub(cluster, node) as stub:
        response = stub.MatchSessionIds(index_pb2.MatchSessionIdsRequest(partitions=[partition]), timeout=30)
    assert not response.failures, response.failures
    return list(response.partitions[0].session_ids)


def digest(cluster: LocalCluster, node: str, partition: int) -> index_pb2.PartitionStats:
    with node_stub(cluster, node) as stub:
        response = stub.Stats(index_pb2.PartitionStatsRequest(partitions=[partition], content_digest=True), timeout=30)
    assert not response.failures, response.failures
    return response.partitions[0]


def live_replicas(cluster: LocalCluster) -> dict[int, list[str]]:
    """Per partition, the nodes whose replica is active (or draining) and alive."""
    return {
        p: [r.node for r in listed if r.alive and r.state in ("active", "draining")]
        for p, listed in replicas(cluster).items()
    }


def not_converged(cluster: LocalCluster) -> str:
    """Why the cluster is not whole yet (every node up, every partition on `replicas` active replicas
    with no lag and equal contents), or "" when it is."""
    stopped = sorted(name for name, proc in cluster.procs.items() if proc.poll() is not None)
    if stopped:
        return f"stopped: {', '.join(stopped)}"
    current = status(cluster)
    wanted = current.map.replicas
    for entry in current.map.partition_replicas:
        listed = list(entry.replicas)
        shown = ", ".join(f"{r.node} {r.state} alive={r.alive} lag={r.lag}" for r in listed)
        if len(listed) != wanted or any(r.state != "active" or not r.alive or r.lag > 0 for r in listed):
            return f"partition {entry.partition} (map generation {current.map.generation}): {shown or 'no replica'}"
        digests = {}
        for replica in listed:
            with node_stub(cluster, replica.node) as stub:
                answer = stub.Stats(
                    index_pb2.PartitionStatsRequest(partitions=[entry.partition], content_digest=True), timeout=30
                )
            if answer.failures:
                error = answer.failures[0].error
                return f"partition {entry.partition} on {replica.node}: {error.code} {error.message}"
            digests[replica.node] = answer.partitions[0].content_digest
        if len(set(digests.values())) != 1:
            return f"partition {entry.partition}: contents differ ({digests})"
    return ""


def converged(cluster: LocalCluster) -> bool:
    return not not_converged(cluster)


def wait_until_converged(cluster: LocalCluster, timeout: float, what: str) -> None:
    """Wait for the cluster to be whole; the failure says what was still missing at the last look."""
    last = ["not asked yet"]

    def check() -> bool:
        try:
            last[0] = not_converged(cluster)
        except grpc.RpcError as error:
            last[0] = f"status failed: {error.code().name} {error.details()}"
        return not last[0]

    try:
        wait_for(check, timeout, what)
    except AssertionError as failure:
        raise AssertionError(f"{failure}; at the last look: {last[0]}") from None


def heal(cluster: LocalCluster, timeout: float = WAIT_S) -> None:
    """Restart every stopped node and wait until the cluster has converged and its log is whole again
    (a restarted log server caught up on every stream): a test after a log failover starts from a
    cluster as whole as the ones before it."""
    for name, proc in list(cluster.procs.items()):
        if proc.poll() is not None:
            cluster.restart(name)
    wait_until_converged(cluster, timeout, "the cluster did not converge")
    urls, access = list(cluster.nats_urls), cluster.nats_access(ADMIN)
    wait_for(lambda: log_state.whole(urls, access), timeout, "the log's streams did not all have every replica current")


def wait_for(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:.0f} s")
        time.sleep(0.25)


def partitions_only_on(cluster: LocalCluster, nodes: set[str]) -> list[int]:
    """The partitions all of whose replicas are on `nodes`."""
    return sorted(p for p, listed in replicas(cluster).items() if {r.node for r in listed} <= nodes)


@contextmanager
def load(kind: str, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """A load process (tests/cluster_log/load.py) for the duration of the block."""
    command = [sys.executable, "-m", "tests.cluster_log.load", kind, *args]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def finished(proc: subprocess.Popen[bytes], timeout: float) -> None:
    proc.wait(timeout=timeout)
    assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else proc.returncode


def out_file(directory: Path, name: str) -> str:
    return str(directory / f"{name}.jsonl")
