"""The actions lane on a real two-partition cluster with no embedder: BM25 over tool calls and their output,
hits explained by the action text, cursors bound to the lane; the vector lanes fail typed there."""

from __future__ import annotations

import grpc
import pytest

from quarry.cli.synthetic import generate_sessions
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

QUERY = "pytest"


@pytest.fixture(scope="module")
def archive(light_client: QuarryClient) -> QuarryClient:
    report = light_client.ingest_sessions(generate_sessions(500, seed=3))
    assert report.sessions_written > 0, report
    return light_client


def test_action_hits_are_explained_by_the_command_text(archive: QuarryClient) -> None:
    envelope = archive.search(QUERY, lane="actions", limit=50)
    assert (envelope.requested_lane, envelope.retrieval_lane) == ("actions", "actions")
    assert envelope.hits, "the synthetic archive runs pytest in some sessions"
    assert [h.match.rank for h in envelope.hits] == list(range(1, len(envelope.hits) + 1))
    for hit in envelope.hits:
        match = hit.match
        assert match.match_surface == "action"
        assert match.score_kind == "" and not match.HasField("score")
        assert "[pytest]" in match.snippet.lower(), match.snippet
        assert match.message_id.startswith(f"{hit.session.id}:m")
        assert hit.session.origin  # the partition's summary, not a bare id
    dialogue = archive.search(QUERY, lane="dialogue", limit=50)
    assert dialogue.retrieval_lane == "dialogue"
    assert {h.session.id for h in dialogue.hits} != {h.session.id for h in envelope.hits}
    assert all(h.match.match_surface == "message" for h in dialogue.hits)


def test_an_actions_walk_serves_each_session_once_and_its_cursor_keeps_its_lane(archive: QuarryClient) -> None:
    whole = [h.session.id for h in archive.search(QUERY, lane="actions", limit=1000).hits]
    walked: list[str] = []
    page = archive.search(QUERY, lane="actions", limit=7)
    first_cursor = page.next_cursor
    while True:
        walked.extend(h.session.id for h in page.hits)
        if not page.next_cursor:
            break
        page = archive.search(QUERY, lane="actions", limit=7, cursor=page.next_cursor)
    assert walked == whole
    with pytest.raises(QuarryError) as raised:
        archive.search(QUERY, lane="dialogue", limit=7, cursor=first_cursor)
    assert raised.value.code == errors_pb2.STALE_CURSOR


def test_auto_is_lexical_on_a_cluster_without_embeddings(archive: QuarryClient) -> None:
    envelope = archive.search(QUERY)
    assert (envelope.requested_lane, envelope.retrieval_lane) == ("auto", "dialogue")
    assert envelope.hits and {h.match.score_kind for h in envelope.hits} == {"bm25"}


@pytest.mark.parametrize("lane", ["semantic", "hybrid"])
def test_vector_lanes_without_an_embedder_fail_with_semantic_unavailable(archive: QuarryClient, lane: str) -> None:
    with pytest.raises(QuarryError) as raised:
        archive.search(QUERY, lane=lane)
    assert raised.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert raised.value.status_code == grpc.StatusCode.FAILED_PRECONDITION
