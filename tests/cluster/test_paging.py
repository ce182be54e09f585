"""Cursor paging through the query node of a two-partition cluster (issue 5's acceptance on paging)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2, units_pb2
from tests.index.sessions import BASE_MS, Msg, session
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
WORD = "zorblax"
BEFORE = 1_200
DURING = 200
PAGE = 25


def paging_session(prefix: str, n: int) -> units_pb2.Session:
    """A session matching WORD whose BM25 differs from its neighbours' (repetitions and length vary),
    so the walk depends on each partition's ranking staying put while IDF and average length move."""
    filler = " ".join(f"word{(n * 7 + i) % 97}" for i in range(n % 23))
    text = " ".join([WORD] * (1 + n % 4)) + " " + filler
    messages = [Msg("user", text), Msg("assistant", f"answer {n % 11}")]
    return session(f"{prefix}-{n:05d}", messages, repo="paging", start_ms=BASE_MS + (n % 300) * 1000)


INGESTER = f"""
import sys, time
from quarry.client.client import QuarryClient
from tests.cluster.test_paging import paging_session
with QuarryClient.for_home(sys.argv[1]) as client:
    for batch in range(0, {DURING}, 10):
        client.ingest_sessions(paging_session("late", n) for n in range(batch, batch + 10))
        print("batch", batch, flush=True)
        time.sleep(0.05)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A two-partition cluster without an embedder (like `light_home`), its own so that a test can restart
    every node, with BEFORE sessions that match WORD."""
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-paging"), partitions=2, embedder="none", ingest_roots=INGEST_ROOTS
    )
    local.start()
    try:
        with QuarryClient.for_home(local.home) as client:
            report = client.ingest_sessions(paging_session("early", n) for n in range(BEFORE))
        assert report.sessions_written == BEFORE, report
        yield local
    finally:
        local.stop()


@pytest.fixture
def home(cluster: LocalCluster) -> Path:
    return cluster.home


def walk(client: QuarryClient, query: str, cursor: str = "") -> Iterator[query_pb2.SearchEnvelope]:
    while True:
        envelope = client.search(query, lane="dialogue", limit=PAGE, cursor=cursor)
        yield envelope
        cursor = envelope.next_cursor
        if not cursor:
            return


def test_paging_while_another_process_ingests_has_no_duplicate_and_no_gap(home: Path) -> None:
    with QuarryClient.for_home(home) as client:
        first = client.search(WORD, lane="dialogue", limit=PAGE)
        ingester = subprocess.Popen(
            [sys.executable, "-c", INGESTER, str(home)], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        try:
            assert ingester.stdout is not None
            assert ingester.stdout.readline().startswith("batch")  # ingesting while the walk runs
            seen = [h.session.id for h in first.hits]
            ranks = [h.match.rank for h in first.hits]
            overlapped = []
            for envelope in walk(client, WORD, first.next_cursor):
                seen.extend(h.session.id for h in envelope.hits)
                ranks.extend(h.match.rank for h in envelope.hits)
                overlapped.append(ingester.poll() is None)
                time.sleep(0.02)
        finally:
            ingester.wait(timeout=120)
        assert ingester.returncode == 0
    assert overlapped[0], "the ingest ended before page 2: the walk did not overlap it"
    assert any(":late-" in h for h in seen)  # sessions ingested during the walk may appear
    assert len(seen) == len(set(seen)), "a session was served twice"
    early = {h for h in seen if ":early-" in h}
    assert early == {paging_session("early", n).id for n in range(BEFORE)}, "a session was skipped"
    assert ranks == list(range(1, len(seen) + 1))


def test_an_unranked_list_pages_by_time_without_duplicate_or_gap(home: Path) -> None:
    with QuarryClient.for_home(home) as client:
        envelopes = list(walk(client, "repo:paging"))
    seen = [h.session.id for e in envelopes for h in e.hits]
    assert len(seen) == len(set(seen))
    assert {h for h in seen if ":early-" in h} == {paging_session("early", n).id for n in range(BEFORE)}
    times = [h.session.updated_ms for e in envelopes for h in e.hits]
    assert times == sorted(times, reverse=True)
    assert not envelopes[-1].next_cursor and envelopes[-2].next_cursor


def test_a_cursor_survives_a_restart_of_every_node(cluster: LocalCluster, home: Path) -> None:
    with QuarryClient.for_home(home) as client:
        page = client.search(WORD, lane="dialogue", limit=PAGE)
        page = client.search(WORD, lane="dialogue", limit=PAGE, cursor=page.next_cursor)
        cursor = page.next_cursor
        expected = [h.session.id for h in client.search(WORD, lane="dialogue", limit=PAGE, cursor=cursor).hits]
    cluster.stop()  # every node: the query node, ingest, vector and both partitions
    cluster.start()
    with QuarryClient.for_home(home) as client:
        after = client.search(WORD, lane="dialogue", limit=PAGE, cursor=cursor)
    assert [h.session.id for h in after.hits] == expected
    assert after.hits[0].match.rank == 2 * PAGE + 1


def test_a_cursor_for_another_query_lane_or_limit_is_stale(home: Path) -> None:
    with QuarryClient.for_home(home) as client:
        cursor = client.search(WORD, lane="dialogue", limit=PAGE).next_cursor
        for query, lane, limit, named in [
            ("answer", "dialogue", PAGE, "the query"),
            (WORD, "hybrid", PAGE, "the lane (dialogue → hybrid)"),
            (WORD, "dialogue", 10, "the limit"),
        ]:
            with pytest.raises(QuarryError) as caught:
                client.search(query, lane=lane, limit=limit, cursor=cursor)
            assert caught.value.code == errors_pb2.STALE_CURSOR, (query, lane, caught.value)
            assert named in caught.value.message
        client.search(WORD, lane="auto", limit=PAGE, cursor=cursor)  # auto resolves to dialogue: the same walk
        with pytest.raises(QuarryError) as caught:
            client.search(WORD, lane="dialogue", limit=PAGE, cursor=cursor[:-3] + "AAA")
        assert caught.value.code == errors_pb2.INVALID_CURSOR
        with pytest.raises(QuarryError) as caught:
            client.search(WORD, lane="dialogue", limit=PAGE, offset=PAGE, cursor=cursor)
        assert caught.value.code == errors_pb2.INVALID_REQUEST
        assert caught.value.parameter == "offset"
