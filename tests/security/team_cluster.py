"""A cluster with tokens shared by two teams, as the security tests attack it: team-a and team-b each
hold a `read,write` token, an operator an `admin` token on both, and the ingest node may read only the
folder `roots/` below the test's temporary folder (`--ingest-root`). The server's own secrets (its
token file, its cluster key) live under the cluster's home, outside that root."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.tokens import TokenStore


@dataclass
class TeamCluster:
    local: LocalCluster
    root: Path  # the one folder the ingest node may read
    outside: Path  # a folder of the server's machine outside it
    tokens: dict[str, str]

    def client(self, who: str) -> QuarryClient:
        info = self.local.info()
        return QuarryClient(info.query, info.ingest, token=self.tokens[who])


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamCluster]:
    base = tmp_path_factory.mktemp("teams")
    home, root, outside = base / "home", base / "roots", base / "outside"
    root.mkdir()
    outside.mkdir()
    store = TokenStore.in_home(home)
    grants = {
        "a": {"team-a": ["read", "write"]},
        "b": {"team-b": ["read", "write"]},
        "operator": {"team-a": ["admin"], "team-b": ["admin"]},
    }
    tokens = {who: store.create(f"{who}-token", held)[0] for who, held in grants.items()}
    local = LocalCluster(home, partitions=2, embedder="none", ingest_roots=[root])
    local.start()
    try:
        yield TeamCluster(local, root, outside, tokens)
    finally:
        local.stop()
