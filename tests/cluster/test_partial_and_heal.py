"""The embedded default (`quarry up`: one copy of each partition) when an index node dies: searches
answer at once with what the live partitions hold and name the missing one (or fail typed when a
complete answer is required), deletes remove a session everywhere, and a supervised cluster restarts
the dead node by itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.config import ClusterInfo
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.v1 import errors_pb2
from tests.cluster_log.load import make_session
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, QuarryClient]]:
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-partial"),
        partitions=2,
        embedder="none",
        ingest_roots=INGEST_ROOTS,
        colocate=False,  # an index node per partition: one of them dies
    )
    local.start()
    info = local.info()
    with QuarryClient(info.query, info.ingest) as client:
        sessions = [make_session("pair", n) for n in range(40)]
        assert client.ingest_sessions(sessions).sessions_written == 40
        yield local, client
    local.stop()


def test_a_dead_partition_is_named_missing_at_once_and_a_complete_search_fails_typed(
    pair: tuple[LocalCluster, QuarryClient],
) -> None:
    cluster, client = pair
    on_zero = {s for n in range(40) if partition_for(s := f"codex-session:pair-{n}", 2) == 0}
    cluster.kill("index-1")
    try:
        began = time.perf_counter()
        envelope = client.search("pair", limit=100)
        assert time.perf_counter() - began < 1.5  # not the 5 s deadline: the node refused at once
        assert envelope.partial
        assert [(m.partition, "index-1" in m.reason) for m in envelope.missing] == [(1, True)]
        assert {h.session.id for h in envelope.hits} == on_zero
        rows = client.query_units("messages where text:pair", limit=200)
        assert rows.partial and [m.partition for m in rows.missing] == [1]
        with pytest.raises(QuarryError) as refused:
            client.search("pair", require_complete=True)
        assert (refused.value.code, refused.value.partitions) == (errors_pb2.PARTITION_UNAVAILABLE, [1])
    finally:
        cluster.restart("index-1")
    deadline = time.monotonic() + 10  # the query node's channel reconnects within its backoff (at most 1 s)
    while (whole := client.search("pair", limit=100)).partial:
        assert time.monotonic() < deadline, "the restarted node's partition stayed missing"
        time.sleep(0.1)
    assert len(whole.hits) == 40


def test_a_deleted_session_is_gone_from_search_and_a_second_delete_finds_nothing(
    pair: tuple[LocalCluster, QuarryClient], tmp_path: Path
) -> None:
    cluster, client = pair
    home = cluster.home
    command = [sys.executable, "-m", "quarry.cli", "--home", str(home), "--format", "json", "delete"]
    done = subprocess.run([*command, "session:codex-session:pair-7"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert report["deleted"] == ["codex-session:pair-7"] and report["searchable"] is True
    assert [h.session.id for h in client.search("pairx7").hits] == []
    assert len(client.search("pair", limit=100).hits) == 39
    again = client.delete(["codex-session:pair-7"])
    assert (list(again.deleted), list(again.not_found)) == ([], ["codex-session:pair-7"])
    with pytest.raises(QuarryError) as refused:
        client.delete(["message:codex-session:pair-8:m0"])
    assert refused.value.code == errors_pb2.INVALID_REQUEST


def test_a_supervised_cluster_restarts_a_killed_node_and_status_counts_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cluster = LocalCluster(
        home, partitions=1, embedder="none", supervise=True, ingest_roots=INGEST_ROOTS, colocate=False
    )
    cluster.start()
    try:
        info = cluster.info()
        with QuarryClient(info.query, info.ingest) as client:
            assert client.ingest_sessions([make_session("heal", 1)]).searchable
            killed = cluster.procs["index-0"].pid
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while True:
                envelope = client.search("heal")
                if not envelope.partial and cluster.procs["index-0"].pid != killed:
                    break
                assert time.monotonic() < deadline, "the killed node was not restarted"
                time.sleep(0.2)
            assert [h.session.id for h in envelope.hits] == ["codex-session:heal-1"]
        recorded = ClusterInfo.load(home)
        assert recorded is not None and recorded.restarts == {"index-0": 1}
        assert recorded.pids["index-0"] == cluster.procs["index-0"].pid
        status = subprocess.run(
            [sys.executable, "-m", "quarry.cli", "--home", str(home), "--format", "json", "status"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        nodes = {n["name"]: n for n in orjson.loads(status.stdout)["nodes"]}
        assert nodes["index-0"]["restarts"] == 1 and nodes["index-0"]["up"]
    finally:
        cluster.stop()
