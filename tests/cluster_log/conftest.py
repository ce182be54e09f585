"""A cluster on the log for the package's tests: three NATS servers (JetStream, the log on all three), three index
nodes holding 16 partitions twice each, and the vector (no embedder), ingest and query nodes, every one
a real process on free loopback ports. Tests may kill nodes; each leaves the cluster whole again
(`heal`), so they can run in any order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.client.client import QuarryClient
from quarry.client.local import LocalCluster
from tests.cluster_log.inspect import heal

pytestmark = pytest.mark.cluster

NODE_LEFT_DELAY_MS = 4_000  # the cluster's; a production cluster waits a minute before copying a gone node's partitions


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-log"),
        embedder="none",
        log="nats",
        index_nodes=3,
        replicas=2,
        partitions=16,
        nats_servers=3,
        node_left_delay_ms=NODE_LEFT_DELAY_MS,
    )
    local.start()
    yield local
    local.stop()


@pytest.fixture
def whole(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The cluster with every node up and every partition fully replicated, before and after the test."""
    heal(cluster)
    yield cluster
    heal(cluster)


@pytest.fixture(scope="package")
def client(cluster: LocalCluster) -> Iterator[QuarryClient]:
    info = cluster.info()
    with QuarryClient(info.query, info.ingest) as quarry:
        yield quarry


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path
