"""A running 2-partition cluster whose calls need tokens, with its HTTP JSON API: the tokens of `grants` made
in its home before it starts (`who -> {scope: [grant, …]}`), for the tests that read it as several callers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.cluster.local_nats import free_port
from quarry.core.tokens import TokenStore
from tests.shared_paths import INGEST_ROOTS


@dataclass
class TokenCluster:
    home: Path
    http: str  # http://127.0.0.1:PORT
    query: str
    ingest: str
    tokens: dict[str, str]  # who -> token

    def client(self, who: str) -> QuarryClient:
        return QuarryClient(self.query, self.ingest, token=self.tokens[who])


@contextmanager
def token_cluster(
    home: Path,
    grants: dict[str, dict[str, list[str]]],
    ingest_roots: list[Path] | None = None,
    embedder: str = "none",
) -> Iterator[TokenCluster]:
    """The cluster under `home` with a token per caller of `grants`, its ingest node reading below
    `ingest_roots` (default: the shared real logs and fixtures), its vector node embedding with
    `embedder`, stopped on leaving."""
    store = TokenStore.in_home(home)
    tokens = {who: store.create(who, held)[0] for who, held in grants.items()}
    port = free_port()
    roots = INGEST_ROOTS if ingest_roots is None else ingest_roots
    local = LocalCluster(home, partitions=2, embedder=embedder, http=f"127.0.0.1:{port}", ingest_roots=roots)
    local.start()
    try:
        info = local.info()
        yield TokenCluster(home, f"http://127.0.0.1:{port}", info.query, info.ingest, tokens)
    finally:
        local.stop()
