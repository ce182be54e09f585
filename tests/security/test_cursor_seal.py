"""Cursors are sealed with a key of the cluster: opaque (nothing of the walk can be read from one),
tamper-evident (an edited or cut cursor, or one of another cluster, is INVALID_CURSOR), deterministic
(the same page request seals the same bytes, on every query node of the cluster) and bound to their
caller (replayed by a token of another scope: STALE_CURSOR).

Beside the cluster's own query node run two more, as an operator would start them: one with the
cluster's key (`--cluster-key-file`), one with another key."""

from __future__ import annotations

import base64
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from quarry.client.client import QuarryClient
from quarry.core.auth import CLUSTER_KEY_FILE, ensure_cluster_key
from quarry.core.errors import QuarryError
from quarry.query import cursor_seal
from tests.cluster.corpus import write_corpus
from tests.security.team_cluster import TeamCluster

pytestmark = pytest.mark.cluster

SEARCH = "messages:>=1"  # every session: a walk of several pages
UNITS = "messages where role:user"
START_S = 60.0


@dataclass
class QueryNodes:
    teams: TeamCluster
    same_key: str  # a second query node of the cluster
    other_key: str  # a query node given another cluster key

    def client(self, who: str, address: str | None = None) -> QuarryClient:
        return QuarryClient(address or self.teams.local.info().query, token=self.teams.tokens[who])


def _start_query_node(teams: TeamCluster, key_file: Path, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    info = teams.local.info()
    run_file = folder / "run.json"
    command = [
        sys.executable, "-m", "quarry.cli", "node", "query", "--index", ",".join(info.index),
        "--vector", info.vector, "--ingest", info.ingest, "--host", "127.0.0.1", "--run-file", str(run_file),
        "--tokens", str(teams.local.tokens.path), "--cluster-key-file", str(key_file),
    ]  # fmt: skip
    with open(folder / "node.log", "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_S
    while not run_file.exists():
        assert process.poll() is None, (folder / "node.log").read_text()
        assert time.monotonic() < deadline, "the query node did not start"
        time.sleep(0.05)
    return process, str(orjson.loads(run_file.read_bytes())["address"])


@pytest.fixture(scope="module")
def nodes(teams: TeamCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryNodes]:
    archive = teams.root / "cursor-seal"
    write_corpus(archive)
    with teams.client("operator") as operator:
        assert list(operator.ingest_paths([archive], scope="team-a"))[-1].report.sessions_written
    other_key = tmp_path_factory.mktemp("other-cluster") / CLUSTER_KEY_FILE
    ensure_cluster_key(other_key)
    started = [
        _start_query_node(teams, teams.local.home / "auth" / CLUSTER_KEY_FILE, tmp_path_factory.mktemp("same")),
        _start_query_node(teams, other_key, tmp_path_factory.mktemp("other")),
    ]
    try:
        yield QueryNodes(teams, started[0][1], started[1][1])
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(timeout=30)


# Each kind of cursor: how to get a first page's cursor, and how to ask for the page after a cursor.
Walk = Callable[[QuarryClient, str], Any]
WALKS: dict[str, Walk] = {
    "search": lambda client, cursor: client.search(SEARCH, lane="dialogue", limit=1, cursor=cursor),
    "units": lambda client, cursor: client.query_units(UNITS, limit=1, cursor=cursor),
    "sessions": lambda client, cursor: client.sessions.list(limit=1, cursor=cursor),
}


def _cursor_of(page: Any) -> str:
    assert page.next_cursor, page
    return str(page.next_cursor)


def _rejected(walk: Walk, client: QuarryClient, cursor: str) -> QuarryError:
    with pytest.raises(QuarryError) as caught:
        walk(client, cursor)
    assert caught.value.parameter == "cursor", caught.value
    return caught.value


@pytest.mark.parametrize("kind", WALKS)
def test_a_cursor_reveals_nothing_of_the_walk(nodes: QueryNodes, kind: str) -> None:
    with nodes.client("a") as a:
        page = WALKS[kind](a, "")
        raw = base64.urlsafe_b64decode(_cursor_of(page) + "==")
    ids = [h.session.id for h in getattr(page, "hits", [])] + [r.session_id for r in getattr(page, "rows", [])]
    ids += [item.header.id for item in getattr(page, "items", [])]
    assert ids
    for visible in [*ids, "served", "after", "limit", "partitions"]:
        assert visible.encode() not in raw, visible
    # Not JSON (two bytes such as `{"` turn up by chance in ciphertext: one cursor in a few hundred)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)


@pytest.mark.parametrize("kind", WALKS)
def test_another_query_node_of_the_cluster_continues_a_walk_with_the_same_bytes(nodes: QueryNodes, kind: str) -> None:
    walk = WALKS[kind]
    with nodes.client("a") as a, nodes.client("a", nodes.same_key) as same:
        cursor = _cursor_of(walk(a, ""))
        second, again, elsewhere = walk(a, cursor), walk(a, cursor), walk(same, cursor)
    assert second.next_cursor and second.next_cursor == again.next_cursor == elsewhere.next_cursor
    for page in (again, elsewhere):
        assert _ids(page) == _ids(second)


@pytest.mark.parametrize("kind", WALKS)
def test_a_cursor_of_a_cluster_with_another_key_is_invalid(nodes: QueryNodes, kind: str) -> None:
    walk = WALKS[kind]
    with nodes.client("a") as a, nodes.client("a", nodes.other_key) as other:
        cursor = _cursor_of(walk(a, ""))
        assert _rejected(walk, other, cursor).code_name == "INVALID_CURSOR"


@pytest.mark.parametrize("kind", WALKS)
def test_an_edited_or_cut_cursor_is_invalid(nodes: QueryNodes, kind: str) -> None:
    walk = WALKS[kind]
    with nodes.client("a") as a:
        cursor = _cursor_of(walk(a, ""))
        middle = len(cursor) // 2
        flipped = "B" if cursor[middle] == "A" else "A"
        for damaged in (
            cursor[:middle] + flipped + cursor[middle + 1 :],  # one character edited
            cursor[:-6],  # cut
            cursor[:middle],
            cursor + "AAAA",  # lengthened
        ):
            assert _rejected(walk, a, damaged).code_name == "INVALID_CURSOR", damaged


@pytest.mark.parametrize("kind", WALKS)
def test_a_cursor_replayed_by_another_scopes_token_is_stale(nodes: QueryNodes, kind: str) -> None:
    walk = WALKS[kind]
    with nodes.client("a") as a, nodes.client("b") as b:
        cursor = _cursor_of(walk(a, ""))
        assert _rejected(walk, b, cursor).code_name == "STALE_CURSOR"


def _ids(page: Any) -> list[str]:
    hits = [h.session.id for h in getattr(page, "hits", [])]
    return hits + [r.ref for r in getattr(page, "rows", [])] + [i.header.id for i in getattr(page, "items", [])]


def test_a_query_node_without_a_cluster_key_says_its_cursors_open_only_there(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(cursor_seal, "_current", None)
    with caplog.at_level(logging.WARNING, logger=cursor_seal.__name__):
        cursor_seal.configure(None)
    assert "another query node will not accept them" in caplog.text and "restart" in caplog.text
    token = cursor_seal.current().seal(b'{"v":2}')
    cursor_seal.configure(None)  # the same node, restarted
    assert cursor_seal.current().open(token) is None
    cursor_seal.configure("k" * 43)
    minted = cursor_seal.current().seal(b'{"v":2}')
    cursor_seal.configure("k" * 43)  # another node, or a restart, with the cluster's key
    assert cursor_seal.current().open(minted) == b'{"v":2}'
