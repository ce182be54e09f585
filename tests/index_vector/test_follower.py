"""The vector node follows real lexical partitions over gRPC: it embeds what they hold, drops what they no
longer hold, resumes from its cursor after a restart, and counts their backlog as pending."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from quarry.core.dialogue import dialogue_items
from quarry.v1 import units_pb2
from quarry.vector.follower import POLL_S
from quarry.vector.node import VectorNode
from quarry.vector.worker import WARM_UP_TEXT
from tests.index.sessions import Msg, session

from .conftest import EmbeddingsServer, FeedServer

Opener = Callable[..., VectorNode]


@pytest.fixture
def open_vector(tmp_path: Path, partitions: list[FeedServer], embeddings_server: EmbeddingsServer) -> Iterator[Opener]:
    """Opens vector partitions following `partitions` (the test embedder by default) and closes them at the end."""
    opened: list[VectorNode] = []

    def opener(spec: str | None = None, batch_size: int = 8) -> VectorNode:
        node = VectorNode(
            tmp_path / "vectors",
            spec or f"openai:{embeddings_server.url}#embed-small",
            batch_size=batch_size,
            index_addresses=[s.address for s in partitions],
        )
        node.start()
        opened.append(node)
        return node

    yield opener
    for node in opened:
        node.close()


def topic(name: str, *texts: str, tool_output: str = "") -> units_pb2.Session:
    messages = [Msg("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(texts)]
    if tool_output:
        messages.append(Msg("system", tool_output))
    return session(name, messages)


def first_batch() -> list[units_pb2.Session]:
    return [
        topic("sqlite", "database is locked", "raise busy_timeout", "use WAL mode", tool_output="not dialogue"),
        topic("css", "center the form", "use flexbox"),
        topic("git", "rebase onto main", "force push after the rebase"),
        topic("docker", "the image build fails", "pin the base image tag"),
        *(topic(f"filler-{i}", f"filler question {i}", f"filler answer {i}") for i in range(12)),
    ]


def embedded_texts(server: EmbeddingsServer) -> list[str]:
    return [text for request in server.requests for text in request["input"] if text != WARM_UP_TEXT]


def vector_ids(node: VectorNode) -> set[str]:
    hits = node.exact_search(np.ones(8, dtype=np.float32) / np.sqrt(8), 1000)
    return {h.message_id for h in hits}


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_every_dialogue_item_of_every_partition_gets_a_vector(
    partitions: list[FeedServer], open_vector: Opener
) -> None:
    sessions = first_batch()
    partitions[0].upsert(sessions[::2])
    partitions[1].upsert(sessions[1::2])
    node = open_vector()
    assert node.wait_idle(30), node.stats()
    expected = {item.message_id for s in sessions for item in dialogue_items(s)}
    assert vector_ids(node) == expected
    stats = node.stats()
    assert (stats.vectors, stats.pending, stats.last_error) == (len(expected), 0, "")

    later = topic("later", "a session written while the node runs")
    partitions[1].upsert([later])
    assert node.wait_idle(10)
    assert vector_ids(node) == expected | {item.message_id for item in dialogue_items(later)}


def test_a_changed_session_loses_the_vectors_of_removed_messages(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    partitions[0].upsert(first_batch())
    node = open_vector()
    assert node.wait_idle(30)
    before = len(embedded_texts(embeddings_server))

    partitions[0].upsert([topic("sqlite", "database is locked", "a new answer"), topic("css")])
    assert node.wait_idle(10)
    ids = vector_ids(node)
    sqlite, css = "claude-code-session:sqlite", "claude-code-session:css"
    assert {i for i in ids if i.startswith(sqlite + ":")} == {f"{sqlite}:m0", f"{sqlite}:m1"}
    assert not any(i.startswith(css + ":") for i in ids)  # no dialogue left: no vectors left
    assert embedded_texts(embeddings_server)[before:] == ["a new answer"]  # the unchanged text is not re-embedded


def test_a_restarted_node_resumes_from_its_cursor(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    sessions = first_batch()
    partitions[0].upsert(sessions)
    node = open_vector()
    assert node.wait_idle(30)
    texts = sum(len(dialogue_items(s)) for s in sessions)
    assert len(embedded_texts(embeddings_server)) == texts
    node.close()

    # Without an embedder nothing is pulled: pending is exactly the partitions' backlog after the cursor.
    idle = open_vector("none")
    assert idle.stats().pending == 0
    new = [topic("new-a", "one", "two"), topic("new-b", "three")]
    partitions[0].upsert(new[:1])
    partitions[1].upsert(new[1:])
    assert idle.stats().pending == 3  # counted as soon as the partitions acknowledged it
    time.sleep(3 * POLL_S)
    assert idle.stats().pending == 3  # and nothing was taken
    idle.close()

    resumed = open_vector()
    assert resumed.wait_idle(30)
    assert sorted(embedded_texts(embeddings_server)[texts:]) == ["one", "three", "two"]  # only what is new
    assert resumed.stats().vectors == texts + 3


def test_an_unreachable_partition_is_reported_and_followed_again_when_back(
    partitions: list[FeedServer], open_vector: Opener
) -> None:
    partitions[0].upsert([topic("a", "from the first partition")])
    partitions[1].upsert([topic("b", "from the second partition")])
    node = open_vector()
    assert node.wait_idle(30)
    known = node.stats().pending  # 0: the second partition's backlog is known
    assert known == 0
    partitions[1].upsert([topic("c", "written just before the partition went away", "and one more")])
    assert node.stats().pending == 2
    partitions[1].stop()
    partitions[0].upsert([topic("d", "the first partition keeps being followed")])
    wait_for(lambda: partitions[1].address in node.stats().last_error)
    wait_for(lambda: "claude-code-session:d:m0" in vector_ids(node))
    assert node.stats().pending == 2  # the silent partition counts with the backlog it last reported

    partitions[1].start()
    assert node.wait_idle(20)
    wait_for(lambda: node.stats().last_error == "")
    assert {"claude-code-session:c:m0", "claude-code-session:c:m1"} <= vector_ids(node)


def test_a_rebuilt_partition_is_followed_from_the_start_without_embedding_again(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer, tmp_path: Path
) -> None:
    sessions = first_batch()
    partitions[0].upsert(sessions)
    node = open_vector()
    assert node.wait_idle(30)
    before = len(embedded_texts(embeddings_server))

    partitions[0].stop()
    partitions[0].data_dir = tmp_path / "index-0-rebuilt"  # a new store (new uuid) on the same address
    partitions[0].start()
    partitions[0].upsert([*sessions, topic("only-in-the-rebuild", "fresh text")])
    # The node may still hold the old store's backlog (none) from a poll during the restart: wait for
    # the embedding itself, then for quiet.
    wait_for(lambda: "fresh text" in embedded_texts(embeddings_server))
    assert node.wait_idle(20)
    assert embedded_texts(embeddings_server)[before:] == ["fresh text"]


def test_an_archive_is_embedded_the_most_recently_active_sessions_first(
    partitions: list[FeedServer], open_vector: Opener, embeddings_server: EmbeddingsServer
) -> None:
    # Written oldest and newest interleaved, across both partitions, so neither the write order nor the
    # partition order is the activity order.
    days = [3, 11, 0, 7, 14, 5, 9, 1, 12, 4, 8, 2, 13, 6, 10]
    sessions = [
        session(f"day-{day}", [Msg("user", f"question of day {day}")], start_ms=1_700_000_000_000 + day * 86_400_000)
        for day in days
    ]
    partitions[0].upsert(sessions[::2])
    partitions[1].upsert(sessions[1::2])
    embeddings_server.failing = True  # hold the worker until the node has pulled both feeds
    node = open_vector(batch_size=4)
    wait_for(lambda: node.embed_status().queued_texts == len(days) and node.embed_status().feed_backlog_texts == 0)
    status = node.embed_status()
    assert status.covered_after_ms == max(s.updated_ms for s in sessions)  # nothing is covered yet
    embeddings_server.failing = False
    assert node.wait_idle(30), node.stats()
    order = [int(text.rsplit(" ", 1)[1]) for text in embedded_texts(embeddings_server)]
    assert order == sorted(days, reverse=True)

    done = node.embed_status()
    assert (done.covered_after_ms, done.embedded_oldest_ms, done.embedded_newest_ms) == (
        0,
        min(s.updated_ms for s in sessions),
        max(s.updated_ms for s in sessions),
    )
