"""A real local cluster (separate node processes on free localhost ports) for the module."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.telemetry import setup_telemetry
from tests.cluster.corpus import write_corpus
from tests.cluster.otlp_sink import OtlpSink
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

CLIENT_SPANS = InMemorySpanExporter()
setup_telemetry("quarry-test-client", exporter="none", extra=CLIENT_SPANS)


@pytest.fixture(scope="session")
def otlp_sink() -> Iterator[OtlpSink]:
    sink = OtlpSink()
    yield sink
    sink.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, otlp_sink: OtlpSink) -> Iterator[LocalCluster]:
    home = tmp_path_factory.mktemp("quarry-home")
    env = {
        "QUARRY_OTEL_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_sink.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "HF_HUB_OFFLINE": "1",
    }
    local = LocalCluster(home, partitions=2, embedder="minilm", env=env, ingest_roots=INGEST_ROOTS)
    local.start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[QuarryClient]:
    info = cluster.info()
    with QuarryClient(info.query, info.ingest) as quarry:
        yield quarry


@pytest.fixture(scope="module")
def corpus(client: QuarryClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The test archive ingested through IngestPaths, with its vectors embedded."""
    paths = write_corpus(tmp_path_factory.mktemp("archive"))
    events = list(client.ingest_paths([next(iter(paths.values())).parent]))
    report = events[-1].report
    assert report.sessions_written == len(paths), report
    wait_for_embeddings(client)
    return paths


def wait_for_embeddings(client: QuarryClient, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        vector = next(n for n in client.status().nodes if n.role == "vector")
        if vector.up and vector.vectors_pending == 0 and vector.vectors > 0:
            return
        time.sleep(0.25)
    raise AssertionError(f"embedding backlog did not drain: {vector}")


@pytest.fixture(scope="module")
def light_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The home of a cluster with two partitions and no embedder, for tests that need no vectors."""
    path = tmp_path_factory.mktemp("quarry-light")
    local = LocalCluster(path, partitions=2, embedder="none", ingest_roots=INGEST_ROOTS)
    local.start()
    yield path
    local.stop()


@pytest.fixture(scope="module")
def light_client(light_home: Path) -> Iterator[QuarryClient]:
    with QuarryClient.for_home(light_home) as quarry:
        yield quarry
