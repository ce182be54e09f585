"""Seed 000's per-hit evidence and tie order through the query node of a two-partition cluster: what a
hit says about why it matched is the query's words as found, a marked snippet, and a ref to the
message, and equal scores order by session id (in pages too)."""

from __future__ import annotations

import re

import pytest

from quarry.client.client import QuarryClient
from quarry.core.routing import partition_for
from tests.index.sessions import Msg, session

pytestmark = pytest.mark.cluster

TWIN_TEXT = "The nightly export stalls on a deadlock between the archiver and the compactor."


def twin_ids() -> list[str]:
    """Native ids of two identical sessions on one partition: BM25's statistics are per partition, so only
    there do identical texts score exactly alike."""
    natives = [f"twin-{n:02d}" for n in range(20)]
    on_zero = [n for n in natives if partition_for(f"claude-code-session:{n}", 2) == 0]
    return on_zero[:2]


@pytest.fixture(scope="module")
def archive(light_client: QuarryClient) -> QuarryClient:
    sessions = [
        session(
            "evidence-pool",
            [
                Msg("user", "Why does the worker hang?"),
                Msg("assistant", "The Connection Pool is exhausted: every connection waits on a Timeout."),
            ],
        ),
        *(session(native, [Msg("user", TWIN_TEXT)]) for native in twin_ids()),
    ]
    report = light_client.ingest_sessions(sessions)
    assert report.sessions_written == len(sessions), report
    return light_client


def test_matched_terms_are_the_words_found_without_operators_once_each(archive: QuarryClient) -> None:
    envelope = archive.search('"connection pool" OR Timeout OR timeout OR timeo*', limit=5)
    hit = envelope.hits[0]
    assert hit.session.id == "claude-code-session:evidence-pool"
    terms = list(hit.match.matched_terms)
    assert terms, hit.match
    assert not any(re.search(r'["():*~]', t) for t in terms), terms
    assert len({t.lower() for t in terms}) == len(terms), terms
    assert {"connection", "pool", "timeout"} <= {t.lower() for t in terms}


def test_a_hit_points_at_its_message_with_a_marked_snippet(archive: QuarryClient) -> None:
    match = archive.search("exhausted pool", limit=5).hits[0].match
    assert match.match_surface == "message" and match.score_kind == "bm25"
    assert match.message_id == "claude-code-session:evidence-pool:m1"
    assert match.target_ref == f"message:{match.message_id}"
    assert "[exhausted]" in match.snippet.lower() and "[pool]" in match.snippet.lower(), match.snippet


def test_equal_scores_order_by_session_id(archive: QuarryClient) -> None:
    envelope = archive.search("deadlock archiver compactor", limit=10)
    ids = [h.session.id for h in envelope.hits]
    twins = [f"claude-code-session:{native}" for native in twin_ids()]
    assert ids == twins, ids
    assert envelope.hits[0].match.score == envelope.hits[1].match.score
    walked = archive.search("deadlock archiver compactor", limit=1)
    second = archive.search("deadlock archiver compactor", limit=1, cursor=walked.next_cursor)
    assert [walked.hits[0].session.id, second.hits[0].session.id] == twins
