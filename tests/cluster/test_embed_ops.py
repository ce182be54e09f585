"""Embedding operations on a real cluster whose vector node embeds only on request (`--embed-mode
manual`): status before and after a backfill, preflight's window, the EmbeddingService over gRPC, the
`quarry embed` CLI's json, and a cluster without an embedder."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.v1 import embedding_pb2, embedding_pb2_grpc, errors_pb2
from quarry.vector import embed
from tests.cluster.corpus import SESSIONS, write_corpus
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

TEXTS = {key: len(turns) for key, (_, turns) in SESSIONS.items()}  # every turn is embeddable prose
TOTAL_TEXTS = sum(TEXTS.values())


@pytest.fixture(scope="module")
def manual_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A manual-mode cluster (two partitions, MiniLM) holding the test corpus, nothing embedded yet."""
    home = tmp_path_factory.mktemp("quarry-manual")
    local = LocalCluster(
        home,
        partitions=2,
        embedder="minilm",
        embed_mode="manual",
        env={"HF_HUB_OFFLINE": "1"},
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    try:
        info = local.info()
        with QuarryClient(info.query, info.ingest) as client:
            archive = write_corpus(tmp_path_factory.mktemp("archive"))
            report = list(client.ingest_paths([next(iter(archive.values())).parent]))[-1].report
            assert report.sessions_written == len(SESSIONS), report
        yield home
    finally:
        local.stop()


@pytest.fixture(scope="module")
def embedding(manual_home: Path) -> Iterator[embedding_pb2_grpc.EmbeddingServiceStub]:
    with QuarryClient.for_home(manual_home) as client:
        yield embedding_pb2_grpc.EmbeddingServiceStub(client._query_channel)


def status_of(stub: embedding_pb2_grpc.EmbeddingServiceStub) -> embedding_pb2.EmbeddingStatus:
    return stub.Status(embedding_pb2.EmbeddingStatusRequest(), timeout=30)


def settled(stub: embedding_pb2_grpc.EmbeddingServiceStub, timeout: float = 60.0) -> embedding_pb2.EmbeddingStatus:
    """The status once the vector node has pulled every feed into its queue and its embedder is loaded."""
    deadline = time.monotonic() + timeout
    while True:
        status = status_of(stub)
        if status.vector.ready and status.vector.feed_backlog_texts == 0 and status.vector.queued_texts:
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def window(stub: embedding_pb2_grpc.EmbeddingServiceStub, method: str, max_sessions: int):  # type: ignore[no-untyped-def]
    try:
        return getattr(stub, method)(embedding_pb2.EmbeddingWindowRequest(max_sessions=max_sessions), timeout=120)
    except grpc.RpcError as error:
        raise from_rpc_error(error) from None


def quarry(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_manual_mode_status_preflight_backfill(embedding: embedding_pb2_grpc.EmbeddingServiceStub) -> None:
    before = settled(embedding)
    time.sleep(1.0)  # the node would have embedded something by now in the auto mode
    before = status_of(embedding)
    vector = before.vector
    assert (vector.embedder, vector.model, vector.dimension, vector.mode) == (
        embed.MINILM_DEFAULT,
        embed.MINILM_MODELS[embed.MINILM_DEFAULT],
        384,
        "manual",
    )
    assert (vector.vectors, vector.embedded_sessions, before.coverage) == (0, 0, 0.0)
    assert (vector.queued_texts, vector.queued_sessions, before.backlog_texts) == (
        TOTAL_TEXTS,
        len(SESSIONS),
        TOTAL_TEXTS,
    )
    assert (before.archive_sessions, before.archive_messages) == (len(SESSIONS), TOTAL_TEXTS)
    assert not before.semantic_usable
    assert before.next_action.code == "run_backfill"
    assert before.next_action.command == f"quarry embed backfill --max-sessions {len(SESSIONS)}"

    preflight = window(embedding, "Preflight", 2)
    assert list(preflight.backfill_args) == ["quarry", "embed", "backfill", "--max-sessions", "2"]
    planned = preflight.window
    assert (planned.sessions, len(planned.session_ids)) == (2, 2)
    assert (planned.sessions_left, planned.texts_left) == (len(SESSIONS) - 2, TOTAL_TEXTS - planned.texts)
    assert status_of(embedding).vector.vectors == 0  # a preflight embeds nothing

    backfill = window(embedding, "Backfill", 2)
    assert backfill.result.window == planned
    assert (backfill.result.sessions, backfill.result.texts) == (2, planned.texts)

    after = status_of(embedding)
    assert (after.vector.vectors, after.vector.embedded_sessions) == (planned.texts, 2)
    assert after.coverage == pytest.approx(2 / len(SESSIONS))
    assert after.backlog_texts == TOTAL_TEXTS - planned.texts
    assert after.vector.last_run.trigger == "backfill" and after.vector.last_run.texts == planned.texts
    assert after.semantic_usable
    assert backfill.next_action == after.next_action
    # Newest first: the two sessions embedded were active no earlier than any session still queued.
    assert 0 < after.vector.covered_after_ms <= after.vector.embedded_oldest_ms <= after.vector.embedded_newest_ms

    rest = window(embedding, "Backfill", 100_000)
    assert not set(rest.result.window.session_ids) & set(planned.session_ids)
    assert (rest.result.sessions, rest.result.texts_left) == (len(SESSIONS) - 2, 0)
    done = status_of(embedding)
    assert (done.coverage, done.backlog_texts, done.next_action.code) == (1.0, 0, "none")
    assert done.vector.covered_after_ms == 0 and done.vector.embedded_oldest_ms <= after.vector.covered_after_ms


@pytest.mark.parametrize("max_sessions", [0, 100_001])
def test_out_of_range_windows_are_invalid_requests(
    embedding: embedding_pb2_grpc.EmbeddingServiceStub, max_sessions: int
) -> None:
    for method in ("Preflight", "Backfill"):
        with pytest.raises(QuarryError) as caught:
            window(embedding, method, max_sessions)
        assert (caught.value.code, caught.value.parameter) == (errors_pb2.INVALID_REQUEST, "max_sessions")


def test_the_cli_writes_the_status_and_the_window_as_json(manual_home: Path) -> None:
    status = orjson.loads(quarry(manual_home, "--format", "json", "embed", "status").stdout)
    assert status["vector"]["mode"] == "manual"
    assert int(status["archiveSessions"]) == len(SESSIONS)  # int64: a string in proto3 JSON
    # proto3 JSON leaves out a field at its default: the action names no command here
    assert {"code", "reason"} <= set(status["nextAction"]) <= {"code", "reason", "command"}

    preflight = orjson.loads(
        quarry(manual_home, "--format", "json", "embed", "preflight", "--max-sessions", "3").stdout
    )
    assert preflight["backfillArgs"] == ["quarry", "embed", "backfill", "--max-sessions", "3"]
    assert preflight["window"]["maxSessions"] == 3

    failed = quarry(manual_home, "--format", "json", "embed", "backfill", "--max-sessions", "0")
    assert failed.returncode == 2
    error = orjson.loads(failed.stdout)["error"]
    assert (error["code"], error["parameter"]) == ("INVALID_REQUEST", "max_sessions")

    plain = quarry(manual_home, "embed", "status")
    assert plain.returncode == 0 and "mode manual" in plain.stdout and "next " in plain.stdout


def test_a_cluster_without_an_embedder(light_home: Path) -> None:
    with QuarryClient.for_home(light_home) as client:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(client._query_channel)
        status = status_of(stub)
        assert (status.vector_reachable, status.vector.embedder, status.semantic_usable) == (True, "", False)
        assert (status.next_action.code, status.next_action.command) == (
            "configure_embedder",
            "quarry up --embedder minilm",
        )
        with pytest.raises(QuarryError) as caught:
            window(stub, "Backfill", 1)
        assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
