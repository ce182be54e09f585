"""The vector node of a cluster on the log follows the log itself: what is ingested is embedded and found
by the semantic lane (its hits filled in from the partitions), and a deleted session loses its vectors."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from tests.cluster.conftest import wait_for_embeddings
from tests.index.sessions import Msg, session
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

TOPICS = {
    "pool": "the database connection pool times out under load and requests queue up",
    "css": "the button colour and the page margins look wrong on narrow phone screens",
    "auth": "users cannot log in after the password reset token expires",
}


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuarryClient]:
    cluster = LocalCluster(
        tmp_path_factory.mktemp("quarry-log-vectors"),
        embedder="minilm",
        log="nats",
        index_nodes=1,
        replicas=1,
        partitions=4,
        nats_servers=1,
        env={"HF_HUB_OFFLINE": "1"},
        ingest_roots=INGEST_ROOTS,
    )
    cluster.start()
    try:
        info = cluster.info()
        with QuarryClient(info.query, info.ingest) as client:
            sessions = [
                session(name, [Msg("user", text), Msg("assistant", "Let me look into it.")], origin="codex-session")
                for name, text in TOPICS.items()
            ]
            assert client.ingest_sessions(sessions).searchable
            wait_for_embeddings(client)
            yield client
    finally:
        cluster.stop()


def test_the_semantic_lane_finds_what_the_log_carried(semantic: QuarryClient) -> None:
    envelope = semantic.search("slow database connections", lane="semantic", limit=3)
    assert envelope.hits[0].session.id == "codex-session:pool"
    assert envelope.hits[0].session.origin == "codex-session"  # filled in from its partition


def test_a_deleted_sessions_vectors_go_with_it(semantic: QuarryClient) -> None:
    assert semantic.delete(["codex-session:css"]).searchable
    deadline = time.monotonic() + 30
    while True:
        ids = [h.session.id for h in semantic.search("phone screen layout", lane="semantic", limit=3).hits]
        if "codex-session:css" not in ids:
            break
        assert time.monotonic() < deadline, "the deleted session is still found by its vectors"
        time.sleep(0.25)
    assert set(ids) == {"codex-session:pool", "codex-session:auth"}
