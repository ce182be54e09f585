"""Fixtures for the vector node: one loaded MiniLM per test session, a small corpus of sessions,
and a local OpenAI-compatible /embeddings server (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from quarry.v1 import index_pb2, units_pb2
from quarry.vector.embed import Embedder, load_embedder
from quarry.vector.node import VectorNode
from tests.partition_servers import PartitionServer

# session -> message texts; each session keeps to one topic.
CORPUS: dict[str, list[str]] = {
    "claude-code:sqlite": [
        "sqlite database is locked error when two processes write at once",
        "raise the busy_timeout pragma so the second writer waits for the lock",
        "WAL journal mode lets readers continue while a writer commits",
    ],
    "codex:css": [
        "center the login form with flexbox and align-items",
        "the submit button is invisible in dark mode because of its color",
    ],
    "codex:git": [
        "rebase the feature branch onto main and resolve the merge conflicts",
        "force push after the rebase rewrote the branch history",
    ],
    "gemini:docker": [
        "the docker image build fails because the base image tag was removed",
        "mount the source directory as a volume in docker compose",
    ],
    "chatgpt:recipe": [
        "how long should I bake banana bread at 180 degrees",
        "replace the eggs in a cake recipe with apple sauce",
    ],
}
SQLITE_QUERY = "database lock timeout in sqlite"


def message_id(session_id: str, seq: int) -> str:
    return f"{session_id}:m{seq}"


def corpus_items(corpus: dict[str, list[str]] = CORPUS) -> list[index_pb2.EmbedItem]:
    return [
        index_pb2.EmbedItem(message_id=message_id(sid, seq), session_id=sid, text=text)
        for sid, texts in corpus.items()
        for seq, text in enumerate(texts)
    ]


def corpus_size(corpus: dict[str, list[str]] = CORPUS) -> int:
    return sum(len(texts) for texts in corpus.values())


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The process-wide MiniLM, loaded once; every node opened with "minilm" shares it."""
    embedder = load_embedder("minilm")
    assert embedder is not None
    embedder.embed(["load the model"])
    return embedder


@pytest.fixture
def open_node(tmp_path: Path) -> Iterator:
    """Opens vector nodes on tmp_path (a reopened node reuses the directory) and closes them at the end."""
    opened: list[VectorNode] = []

    def opener(spec: str | None, data_dir: Path = tmp_path / "vectors", batch_size: int = 64) -> VectorNode:
        node = VectorNode(data_dir, spec, batch_size=batch_size)
        node.start()
        opened.append(node)
        return node

    yield opener
    for node in opened:
        node.close()


@pytest.fixture(scope="session")
def corpus_node_dir(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """A vector node directory holding the embedded CORPUS (built once; tests reopen it read-mostly)."""
    data_dir = tmp_path_factory.mktemp("corpus") / "vectors"
    node = VectorNode(data_dir, "minilm")
    node.start()
    node.enqueue(corpus_items())
    assert node.wait_idle(60), node.stats()
    node.close()
    return data_dir


@pytest.fixture
def corpus_node(corpus_node_dir: Path) -> Iterator[VectorNode]:
    node = VectorNode(corpus_node_dir, "minilm")
    node.start()
    yield node
    node.close()


@dataclass
class EmbeddingsServer:
    """Answers POST /embeddings with deterministic vectors (a hash of each text), like OpenAI's API."""

    dimension: int = 8
    failing: bool = False
    requests: list[dict] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    url: str = ""

    def vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return (np.random.default_rng(seed).normal(size=self.dimension) * 3).tolist()


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    state = EmbeddingsServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.authorizations.append(self.headers.get("Authorization", ""))
            if state.failing or self.path != "/v1/embeddings":
                self.send_response(503)
                self.end_headers()
                self.wfile.write(b'{"error": "overloaded"}')
                return
            data = [{"index": i, "embedding": state.vector(t)} for i, t in enumerate(body["input"])]
            payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


class FeedServer(PartitionServer):
    """One index node holding partition `partition` of `count`, served over gRPC on 127.0.0.1, stoppable
    and restartable on the same port."""

    def __init__(self, data_dir: Path, partition: int = 0, count: int = 1) -> None:
        self.partition = partition
        super().__init__(data_dir, [partition], count)

    def upsert(self, sessions: list[units_pb2.Session]) -> None:
        self.lexical(self.partition).upsert(sessions)


@pytest.fixture
def partitions(tmp_path: Path) -> Iterator[list[FeedServer]]:
    servers = [FeedServer(tmp_path / f"index-{i}", i, 2) for i in range(2)]
    yield servers
    for server in servers:
        server.stop()
