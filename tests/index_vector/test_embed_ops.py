"""Embedding operations on a vector node following real lexical partitions over gRPC: the manual embed
mode, status, preflight and backfill (seed 000 "Embedding Activation And Catch-Up"); and the query
node's EmbeddingService over a cluster without a vector node."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from quarry.core.dialogue import dialogue_items
from quarry.core.errors import QuarryError
from quarry.query.cluster_client import ClusterClient
from quarry.query.embedding import EmbeddingOps, next_action
from quarry.query.topology import StaticTopology
from quarry.v1 import embedding_pb2, errors_pb2, units_pb2, vector_pb2
from quarry.vector.follower import POLL_S
from quarry.vector.node import VectorNode
from tests.index_vector.test_follower import embedded_texts, topic, wait_for

from .conftest import EmbeddingsServer, FeedServer

Opener = Callable[..., VectorNode]


@pytest.fixture
def open_vector(tmp_path: Path, partitions: list[FeedServer], embeddings_server: EmbeddingsServer) -> Iterator[Opener]:
    """Opens vector partitions following `partitions` (the test embedder, manual mode by default)."""
    opened: list[VectorNode] = []

    def opener(spec: str | None = None, mode: str = "manual", batch_size: int = 4) -> VectorNode:
        node = VectorNode(
            tmp_path / "vectors",
            spec or f"openai:{embeddings_server.url}#embed-small",
            batch_size=batch_size,
            index_addresses=[s.address for s in partitions],
            embed_mode=mode,
        )
        node.start()
        opened.append(node)
        return node

    yield opener
    for node in opened:
        node.close()


def archive() -> list[units_pb2.Session]:
    """Ten sessions of two to four texts each (and one tool output, which is not embedded)."""
    return [
        topic(f"s{i:02d}", *(f"session {i} says thing {j}" for j in range(2 + i % 3)), tool_output="not dialogue")
        for i in range(10)
    ]


def texts_of(sessions: list[units_pb2.Session]) -> dict[str, list[str]]:
    return {s.id: [item.text for item in dialogue_items(s)] for s in sessions}


def ingest(partitions: list[FeedServer], sessions: list[units_pb2.Session]) -> None:
    partitions[0].upsert(sessions[::2])
    partitions[1].upsert(sessions[1::2])


def pulled(node: VectorNode) -> vector_pb2.EmbedStatusResponse:
    """The status once the follower has pulled every feed into the local queue."""
    wait_for(lambda: node.embed_status().feed_backlog_texts == 0)
    return node.embed_status()


def test_manual_mode_queues_everything_and_embeds_nothing_until_a_backfill(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    sessions = archive()
    ingest(partitions, sessions)
    node = open_vector()
    status = pulled(node)
    time.sleep(3 * POLL_S)
    status = node.embed_status()
    total = sum(len(t) for t in texts_of(sessions).values())
    assert (status.mode, status.embedder, status.model) == ("manual", "openai", "embed-small")
    assert (status.vectors, status.embedded_sessions) == (0, 0)
    assert (status.queued_texts, status.queued_sessions, status.feed_backlog_texts) == (total, len(sessions), 0)
    assert embedded_texts(embeddings_server) == []  # only the warm-up call reached the embedder
    assert status.ready
    assert not status.HasField("last_run")
    assert node.stats().pending == total  # the existing Stats agree


def test_preflight_names_exactly_the_window_the_backfill_embeds(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    sessions = archive()
    ingest(partitions, sessions)
    node = open_vector()
    pulled(node)
    texts = texts_of(sessions)
    total = sum(len(t) for t in texts.values())

    window = node.preflight(3)
    assert (window.max_sessions, window.sessions, len(window.session_ids)) == (3, 3, 3)
    expected = [t for sid in window.session_ids for t in texts[sid]]
    assert window.texts == len(expected)
    assert window.characters == sum(len(t) for t in expected)
    assert (window.sessions_left, window.texts_left) == (len(sessions) - 3, total - len(expected))
    assert not window.HasField("estimated_seconds")
    assert "no measured embed rate" in window.estimate_basis
    assert node.preflight(3) == window  # a preflight changes nothing

    result = node.backfill(3)
    assert result.window == window
    assert sorted(embedded_texts(embeddings_server)) == sorted(expected)
    assert (result.sessions, result.texts, result.cancelled) == (3, len(expected), False)
    assert (result.sessions_left, result.texts_left) == (len(sessions) - 3, total - len(expected))
    assert (result.run.trigger, result.run.texts, result.run.sessions) == ("backfill", len(expected), 3)
    assert result.run.finished_ms >= result.run.started_ms > 0 and not result.run.running

    status = node.embed_status()
    assert (status.vectors, status.embedded_sessions) == (len(expected), 3)
    assert (status.queued_texts, status.queued_sessions) == (total - len(expected), len(sessions) - 3)
    assert status.last_run == result.run

    after = node.preflight(2)  # the next window starts after the one embedded, and is estimated
    assert not set(after.session_ids) & set(window.session_ids)
    assert after.estimated_seconds == pytest.approx(after.texts / result.run.texts_per_second)
    assert "backfill run" in after.estimate_basis


def test_a_backfill_is_bounded_by_max_sessions_and_the_last_one_drains_the_queue(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    sessions = archive()
    ingest(partitions, sessions)
    node = open_vector()
    pulled(node)
    total = sum(len(t) for t in texts_of(sessions).values())

    first = node.backfill(4)
    assert first.sessions == 4 and node.embed_status().embedded_sessions == 4
    rest = node.backfill(100_000)
    assert (rest.window.sessions, rest.sessions, rest.sessions_left, rest.texts_left) == (6, 6, 0, 0)
    assert first.texts + rest.texts == total
    assert Counter(embedded_texts(embeddings_server)).most_common(1)[0][1] == 1  # nothing embedded twice

    empty = node.backfill(5)
    assert (empty.window.sessions, empty.sessions, empty.texts) == (0, 0, 0)
    assert node.embed_status().last_run == rest.run  # a run that embedded nothing is not the last run


def test_preflight_pulls_its_window_from_the_feeds_itself(partitions: list[FeedServer], open_vector: Opener) -> None:
    node = open_vector("none")  # no embedder: no follower thread pulls anything
    late = topic("late", "one", "two", "three")
    partitions[1].upsert([late])
    before = node.embed_status()
    assert (before.queued_texts, before.feed_backlog_texts) == (0, 3)
    window = node.preflight(10)
    assert (window.sessions, list(window.session_ids), window.texts, window.texts_left) == (1, [late.id], 3, 0)
    after = node.embed_status()
    assert (after.queued_texts, after.queued_sessions, after.feed_backlog_texts, after.vectors) == (3, 1, 0, 0)


@pytest.mark.parametrize("max_sessions", [0, -1, 100_001])
def test_max_sessions_out_of_range_is_an_invalid_request(open_vector: Opener, max_sessions: int) -> None:
    node = open_vector()
    for operation in (node.preflight, node.backfill):
        with pytest.raises(QuarryError) as caught:
            operation(max_sessions)
        assert caught.value.code == errors_pb2.INVALID_REQUEST
        assert caught.value.parameter == "max_sessions"


def test_without_an_embedder_backfill_is_unavailable_and_status_says_so(
    partitions: list[FeedServer], open_vector: Opener
) -> None:
    ingest(partitions, archive()[:2])
    node = open_vector("none")
    with pytest.raises(QuarryError) as caught:
        node.backfill(1)
    assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    status = node.embed_status()
    assert (status.embedder, status.model, status.ready, status.vectors) == ("", "", False, 0)
    assert status.feed_backlog_texts == sum(len(t) for t in texts_of(archive()[:2]).values())


def test_auto_mode_backfill_does_not_race_the_background_worker(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    sessions = archive()
    ingest(partitions, sessions)
    node = open_vector(mode="auto", batch_size=2)
    result = node.backfill(5)
    assert result.sessions == result.window.sessions
    assert node.wait_idle(20)
    embedded = embedded_texts(embeddings_server)
    assert sorted(embedded) == sorted(t for ts in texts_of(sessions).values() for t in ts)  # each exactly once
    status = node.embed_status()
    assert (status.mode, status.embedded_sessions, status.queued_texts, status.feed_backlog_texts) == (
        "auto",
        len(sessions),
        0,
        0,
    )
    # Which run ends last (auto or backfill) depends on who took the lock first: the worker may embed the
    # other five sessions before the backfill takes its window, or after. Either way no run stays open.
    wait_for(lambda: not node.embed_status().last_run.running)


def test_the_last_run_survives_a_restart(partitions: list[FeedServer], open_vector: Opener) -> None:
    ingest(partitions, archive())
    node = open_vector()
    pulled(node)
    run = node.backfill(2).run
    node.close()
    reopened = open_vector()
    assert reopened.embed_status().last_run == run
    assert reopened.preflight(1).HasField("estimated_seconds")


def test_an_unknown_embed_mode_is_a_bad_value(tmp_path: Path) -> None:
    with pytest.raises(QuarryError) as caught:
        VectorNode(tmp_path / "v", "none", embed_mode="sometimes")
    assert (caught.value.code, caught.value.parameter) == (errors_pb2.BAD_VALUE, "embed_mode")


# ---- the query node's EmbeddingService, without and with a vector node's answer --------------------


def cluster(partitions: list[FeedServer]) -> ClusterClient:
    return ClusterClient(StaticTopology.index_nodes([s.address for s in partitions]))


def test_without_a_vector_node_status_answers_and_operations_are_unavailable(partitions: list[FeedServer]) -> None:
    ingest(partitions, archive())
    ops = EmbeddingOps(cluster(partitions), None, "")
    status = ops.status()
    assert (status.archive_sessions, status.vector_reachable, status.coverage) == (10, False, 0.0)
    assert status.next_action.code == "start_vector_node"
    for operation in (ops.preflight, ops.backfill):
        with pytest.raises(QuarryError) as caught:
            operation(5, None)
        assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
        with pytest.raises(QuarryError) as caught:
            operation(0, None)  # a bad request is named first, whatever the cluster
        assert (caught.value.code, caught.value.parameter) == (errors_pb2.INVALID_REQUEST, "max_sessions")


def vector_status(**fields: object) -> embedding_pb2.EmbeddingStatus:
    status = embedding_pb2.EmbeddingStatus(vector_address="127.0.0.1:1", vector_reachable=True, archive_sessions=10)
    status.vector.CopyFrom(vector_pb2.EmbedStatusResponse(embedder="minilm", model="m", ready=True, **fields))
    status.backlog_texts = status.vector.queued_texts + status.vector.feed_backlog_texts
    return status


def test_next_action_follows_the_state() -> None:
    unreachable = embedding_pb2.EmbeddingStatus(vector_address="127.0.0.1:1")
    assert next_action(unreachable).code == "start_vector_node"
    none = vector_status()
    none.vector.embedder = ""
    assert (next_action(none).code, next_action(none).command) == ("configure_embedder", "quarry up --embedder minilm")
    failing = vector_status(mode="auto", queued_texts=5, last_error="HTTP 503")
    failing.vector.ready = False
    assert next_action(failing).code == "fix_embedder" and "HTTP 503" in next_action(failing).reason
    manual = next_action(vector_status(mode="manual", queued_texts=7, queued_sessions=3, embedded_sessions=2))
    assert (manual.code, manual.command) == ("run_backfill", "quarry embed backfill --max-sessions 3")
    assert "2 of 10 sessions" in manual.reason
    many = next_action(vector_status(mode="manual", queued_texts=9000, queued_sessions=5000))
    assert many.command == "quarry embed backfill --max-sessions 100"  # a bounded slice
    assert next_action(vector_status(mode="auto", feed_backlog_texts=4)).code == "wait"
    done = next_action(vector_status(mode="manual", vectors=30, embedded_sessions=10))
    assert (done.code, done.command) == ("none", "")
