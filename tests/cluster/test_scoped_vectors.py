"""Scope isolation in the vector lanes, on a cluster with the MiniLM embedder and two scopes.

The vector node restricts every search to the scopes the call carries, and the query node sends it no
list of the caller's sessions: a token of team A must still never get a session of team B from the
semantic or hybrid lane, or from prose (which goes to the hybrid lane), with or without a filter.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from quarry.cli.push import Pusher
from tests.cluster.corpus import SESSIONS, write_session
from tests.cluster.test_scopes import leaks
from tests.cluster.token_cluster import TokenCluster, token_cluster

pytestmark = pytest.mark.cluster

EMBEDDED_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenCluster]:
    grants = {
        "admin": {"team-a": ["admin"], "team-b": ["admin"]},
        "a": {"team-a": ["read", "write"]},
        "b": {"team-b": ["read", "write"]},
    }
    with token_cluster(tmp_path_factory.mktemp("quarry-scoped-vectors"), grants, embedder="minilm") as cluster:
        for team in ("a", "b"):
            folder = tmp_path_factory.mktemp(f"team-{team}")
            for key, (repo, turns) in SESSIONS.items():
                write_session(folder, f"team-{team}/{key}", repo, turns)
            with cluster.client(team) as client, Pusher(client, state_home=folder / ".state") as pusher:
                assert pusher.push([folder]).sessions_written == len(SESSIONS)
        with cluster.client("admin") as admin:
            deadline = time.monotonic() + EMBEDDED_TIMEOUT_S
            while True:
                vector = next(n for n in admin.status().nodes if n.role == "vector")
                if vector.vectors > 0 and vector.vectors_pending == 0:
                    break
                assert time.monotonic() < deadline, f"not embedded: {vector}"
                time.sleep(0.5)
        yield cluster


@pytest.mark.parametrize("lane", ["semantic", "hybrid", "auto"])
def test_vector_lanes_answer_only_from_the_callers_scope(teams: TokenCluster, lane: str) -> None:
    with teams.client("a") as client:
        for query in ("why is the sqlite database locked", "repo:ledger database migration", "deploy failure"):
            envelope = client.search(query, lane=lane, limit=50)
            assert leaks(envelope) == [], (lane, query)
        found = client.search("why is the sqlite database locked", lane=lane, limit=50)
        assert found.hits and leaks(found, "team-a"), "A's own sessions are found"
    with teams.client("b") as client:
        assert leaks(client.search("why is the sqlite database locked", lane=lane, limit=50), "team-a") == []


def test_semantic_leaves_answer_only_from_the_callers_scope(teams: TokenCluster) -> None:
    with teams.client("a") as client:
        own = client.search("why is the sqlite database locked", lane="semantic", limit=5).hits[0].session.id
        for query in ('sessions where semantic:"sqlite database locked"', f"sessions where near:id:{own}"):
            envelope = client.search(query, limit=50)
            assert envelope.hits and leaks(envelope) == [], query
            assert leaks(envelope, "team-a"), query
