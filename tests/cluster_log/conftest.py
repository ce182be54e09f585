"""A cluster on the log for the package's tests: three NATS servers (JetStream, the log on all three), three index
nodes holding 16 partitions twice each, and the vector (no embedder), ingest and query nodes, every one
a real process on free loopback ports. Tests may kill nodes; each leaves the cluster whole again
(`heal`), so they can run in any order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.nodes import Item
from _pytest.runner import CallInfo

from quarry.cli.local import LocalCluster, process_alive
from quarry.client.client import QuarryClient
from quarry.cluster.nats_permissions import ADMIN
from quarry.core.config import ClusterInfo
from tests.cluster_log import log_state
from tests.cluster_log.inspect import heal
from tests.cluster_log.native_stacks import native_stacks
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

# How long a node may be silent before its partitions are copied elsewhere (a production cluster waits a
# minute). A node catching up partitions on a loaded 2-core CI machine has been seen silent for 5.5 s
# with every heartbeat put succeeding (each put slow, not failing), so the tests' cluster leaves it
# three times that: short enough for the failover tests, long enough not to drop a busy joiner.
NODE_LEFT_DELAY_MS = 15_000
LOG_LINES_ON_FAILURE = 80
_started: list[LocalCluster] = []  # the package's cluster, for the failure report


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
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    _started.append(local)
    yield local
    local.stop()


_unhealed: list[str] = []  # why the package's cluster could not be made whole, once it could not


@pytest.fixture
def whole(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The cluster with every node up and every partition fully replicated, before and after the test.
    Once it could not be made whole, the tests after fail at once with why, rather than each waiting
    out the same timeout again."""
    _heal_or_fail(cluster)
    yield cluster
    _heal_or_fail(cluster)


def _heal_or_fail(cluster: LocalCluster) -> None:
    if _unhealed:
        pytest.fail(f"the cluster was not whole again after an earlier test: {_unhealed[0]}")
    try:
        heal(cluster)
    except AssertionError as failure:
        _unhealed.append(str(failure))
        raise


@pytest.fixture(scope="package")
def client(cluster: LocalCluster) -> Iterator[QuarryClient]:
    info = cluster.info()
    with QuarryClient(info.query, info.ingest) as quarry:
        yield quarry


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: Item, call: CallInfo[None]) -> object:
    """A failed test's report carries the last warnings of every node's log (each whole, with the lines
    that continue it: a stack, a traceback): what the cluster did is the cause to look for (a node
    taken for gone, a heartbeat that failed, a loop held), and under CI the logs are gone with the run."""
    report = yield
    if report.failed and _started:
        home = _started[0].home
        info = ClusterInfo.load(home)
        pids = info.pids if info is not None else {}
        for log in sorted((home / "logs").glob("*.log")):
            lines = _warnings(log.read_text(errors="replace").splitlines())
            if lines:
                report.sections.append((f"{log.stem} log (warnings)", "\n".join(lines[-LOG_LINES_ON_FAILURE:])))
            pid = pids.get(log.stem, 0)
            if any(line.startswith("Timeout (") for line in lines) and process_alive(pid):
                report.sections.append((f"{log.stem} native stacks (its watchdog fired)", native_stacks(pid)))
        if info is not None and info.nats:
            access = _started[0].nats_access(ADMIN)
            report.sections.append(
                ("heartbeats as each log server answers", log_state.describe(list(info.nats), access))
            )
    return report


# Said every second per peer while a log server is down: the records around it say more.
_NOISE = ("Error trying to connect to route",)
_RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\[\d+\] \d{4}/")  # a node's or a NATS server's line


def _warnings(lines: list[str]) -> list[str]:
    """The warning and error records of a log, each with its continuation lines, and any traceback."""
    kept: list[str] = []
    keeping = False
    for line in lines:
        if _RECORD_START.match(line):
            keeping = any(mark in line for mark in (" WARNING ", " ERROR ", "[WRN]", "[ERR]"))
        elif line.startswith(("Traceback", "Timeout (", "Fatal Python error", "Current thread", "Thread 0x")):
            keeping = True  # a traceback, or faulthandler's dump of a stopped or crashed interpreter
        if keeping and not any(noise in line for noise in _NOISE):
            kept.append(line)
    return kept
