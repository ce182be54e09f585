"""Retrieval lanes: three-lane RRF fusion as a pure function, then the actions, auto, semantic and hybrid
lanes through a real coordinator over in-process partitions (no vector node), and the CLI's lane options."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import orjson
import pytest
from typer.testing import CliRunner, Result

from quarry.cli.main import app
from quarry.cli.search import search_lane
from quarry.core.errors import QuarryError
from quarry.core.lanes import RRF_K
from quarry.query.fusion import rrf
from quarry.query.root import Coordinator
from quarry.v1 import errors_pb2, index_pb2, query_pb2, vector_pb2, vector_pb2_grpc
from tests.query.fused import hybrid_hits
from tests.query.inprocess import Cluster

# ----- fusion over three lanes (pure) --------------------------------------------------------------


def partition_hit(session_id: str, surface: str, snippet: str) -> index_pb2.PartitionHit:
    hit = index_pb2.PartitionHit(
        score=3.5,
        ranked=True,
        message_id=f"{session_id}:m2",
        matched_terms=["pytest"],
        match_surface=surface,
        snippet=snippet,
    )
    hit.session.id = session_id
    hit.session.origin = "claude-code"
    return hit


def vector_hit(session_id: str) -> vector_pb2.VectorHit:
    return vector_pb2.VectorHit(session_id=session_id, message_id=f"{session_id}:m0", distance=0.4)


def test_rrf_over_three_lanes_sums_each_lanes_term_and_names_every_lane() -> None:
    fused = {h.session_id: h for h in rrf({"text": ["a", "b"], "action": ["b", "c"], "vector": ["c", "b"]})}
    b = fused["b"]
    assert b.components == {
        "text_rank": 2.0,
        "text_rrf": 1 / (RRF_K + 2),
        "action_rank": 1.0,
        "action_rrf": 1 / (RRF_K + 1),
        "vector_rank": 2.0,
        "vector_rrf": 1 / (RRF_K + 2),
    }
    assert b.score == pytest.approx(2 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert set(fused["a"].components) == {"text_rank", "text_rrf"}


def test_hybrid_hits_take_the_best_evidence_each_session_has() -> None:
    hits = hybrid_hits(
        text=[partition_hit("s:t", "message", "ran [pytest] by hand")],
        action=[partition_hit("s:a", "action", "Bash: [pytest] -k slow"), partition_hit("s:t", "action", "x")],
        vector=[vector_hit("s:v"), vector_hit("s:t")],
    )
    by_id = {h.session.id: h for h in hits}
    assert hits[0].session.id == "s:t"  # in all three lanes: the strongest consensus
    assert {h.match.score_kind for h in hits} == {"rrf"}
    both = by_id["s:t"].match
    assert (both.match_surface, both.snippet) == ("message", "ran [pytest] by hand")
    assert both.score == pytest.approx(
        both.score_components["text_rrf"] + both.score_components["action_rrf"] + both.score_components["vector_rrf"]
    )
    action_only = by_id["s:a"].match
    assert action_only.match_surface == "action"
    assert action_only.snippet == "Bash: [pytest] -k slow"
    assert action_only.target_ref == "message:s:a:m2"
    assert dict(action_only.score_components) == {"action_rank": 1.0, "action_rrf": 1 / (RRF_K + 1)}
    assert by_id["s:a"].session.origin == "claude-code"  # the partition's summary comes along
    vector_only = by_id["s:v"]
    assert dict(vector_only.match.score_components) == {"vector_rank": 1.0, "vector_rrf": 1 / (RRF_K + 1)}
    assert vector_only.match.message_id == "s:v:m0" and not vector_only.session.origin


def test_hybrid_ties_break_on_session_id_whichever_lane_found_them() -> None:
    hits = hybrid_hits(
        text=[partition_hit("s:c", "message", "")],
        action=[partition_hit("s:a", "action", "")],
        vector=[vector_hit("s:b")],
    )
    assert [h.session.id for h in hits] == ["s:a", "s:b", "s:c"]
    assert len({h.match.score for h in hits}) == 1


def test_hybrid_with_no_lexical_lanes_ranks_by_the_vector_lane_alone() -> None:
    hits = hybrid_hits(text=[], action=[], vector=[vector_hit("s:2"), vector_hit("s:1")])
    assert [h.session.id for h in hits] == ["s:2", "s:1"]
    assert hits[0].match.score > hits[1].match.score


# ----- lanes through the coordinator ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Nine sessions whose only `pytest` is in a Bash command: action text, never dialogue."""
    cluster = Cluster(tmp_path_factory.mktemp("lanes"), 2)
    yield cluster
    cluster.close()


def search(coordinator: Coordinator, query: str, lane: str, **kwargs: object) -> query_pb2.SearchEnvelope:
    return coordinator.search(query_pb2.SearchRequest(query=query, lane=lane, **kwargs))  # type: ignore[arg-type]


def test_the_actions_lane_finds_commands_the_dialogue_lane_does_not(cluster: Cluster) -> None:
    envelope = search(cluster.coordinator, "pytest", "actions", limit=20)
    assert (envelope.requested_lane, envelope.retrieval_lane) == ("actions", "actions")
    assert len(envelope.hits) == 9
    for rank, hit in enumerate(envelope.hits, start=1):
        match = hit.match
        assert match.rank == rank
        assert match.match_surface == "action"
        assert match.score_kind == "" and not match.HasField("score")  # null: rank only (docs/search-api.md)
        assert "[pytest]" in match.snippet  # the term marked, in the action text
        assert match.message_id.startswith(hit.session.id) and match.target_ref == f"message:{match.message_id}"
        assert "pytest" in match.matched_terms
    assert search(cluster.coordinator, "pytest", "dialogue").hits == []


def test_an_actions_cursor_walks_every_hit_once_and_binds_its_lane(cluster: Cluster) -> None:
    seen: list[str] = []
    cursor = ""
    while True:
        page = search(cluster.coordinator, "pytest", "actions", limit=4, cursor=cursor)
        seen.extend(h.session.id for h in page.hits)
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen)) == 9
    first = search(cluster.coordinator, "pytest", "actions", limit=4)
    with pytest.raises(QuarryError) as raised:
        search(cluster.coordinator, "pytest", "dialogue", limit=4, cursor=first.next_cursor)
    assert raised.value.code == errors_pb2.STALE_CURSOR and "actions → dialogue" in str(raised.value)


def test_auto_runs_the_dialogue_lane_when_the_vector_node_does_not_answer(cluster: Cluster) -> None:
    # a vector node that never answers: waiting for it would cost the whole deadline
    unreachable = Coordinator(cluster.coordinator.cluster.topology, "127.0.0.1:9", None)
    for query, reading in (("tests", "prose"), ("tests repo:repo-1", "query")):
        started = time.perf_counter()
        envelope = search(unreachable, query, "", deadline_ms=3000)
        assert time.perf_counter() - started < 2.0
        assert (envelope.requested_lane, envelope.retrieval_lane, envelope.reading) == ("auto", "dialogue", reading)
        assert envelope.hits and {h.match.score_kind for h in envelope.hits} == {"bm25"}


class RecordingVectorNode(vector_pb2_grpc.VectorServiceServicer):
    """A vector node that holds vectors and finds nothing, recording the texts it is asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def Stats(self, request: vector_pb2.VectorStatsRequest, context: object) -> vector_pb2.VectorStats:
        return vector_pb2.VectorStats(vectors=9, embedder="minilm-int8", ready=True)

    def Search(self, request: vector_pb2.VectorSearchRequest, context: object) -> vector_pb2.VectorSearchResponse:
        self.texts.append(request.text)
        return vector_pb2.VectorSearchResponse()


def test_prose_is_embedded_as_written_and_the_language_as_its_words(cluster: Cluster) -> None:
    node = RecordingVectorNode()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    vector_pb2_grpc.add_VectorServiceServicer_to_server(node, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        coordinator = Coordinator(cluster.coordinator.cluster.topology, f"127.0.0.1:{port}", None)
        prose = "why won't   settings.page.ts compile: TS2307?"
        assert search(coordinator, prose, "").retrieval_lane == "hybrid"  # and its empty answer's probes
        assert set(node.texts) == {"why won't settings.page.ts compile: TS2307?"}
        node.texts.clear()
        search(coordinator, "tests repo:repo-1", "semantic")
        assert node.texts[0] == "tests"
    finally:
        server.stop(None)


@pytest.mark.parametrize("lane", ["semantic", "hybrid"])
def test_vector_lanes_without_vectors_fail_typed_rather_than_fall_back(cluster: Cluster, lane: str) -> None:
    with pytest.raises(QuarryError) as raised:
        search(cluster.coordinator, "pytest", lane)
    assert raised.value.code == errors_pb2.SEMANTIC_UNAVAILABLE


def test_an_unknown_lane_is_rejected_naming_the_lanes(cluster: Cluster) -> None:
    with pytest.raises(QuarryError) as raised:
        search(cluster.coordinator, "pytest", "action")
    assert raised.value.code == errors_pb2.INVALID_REQUEST and "actions" in str(raised.value)


# ----- the CLI's lane options ----------------------------------------------------------------------


def test_lane_shortcuts_resolve_and_contradictions_are_typed_errors() -> None:
    assert search_lane(None, lexical=False, semantic=False) == "auto"
    assert search_lane("actions", lexical=False, semantic=False) == "actions"
    assert search_lane(None, lexical=True, semantic=False) == "dialogue"
    assert search_lane("dialogue", lexical=True, semantic=False) == "dialogue"
    assert search_lane(None, lexical=False, semantic=True) == "semantic"
    for lane, lexical, semantic in [(None, True, True), ("hybrid", True, False), ("actions", False, True)]:
        with pytest.raises(QuarryError) as raised:
            search_lane(lane, lexical=lexical, semantic=semantic)
        assert raised.value.code == errors_pb2.INVALID_REQUEST


def test_the_cli_searches_the_lane_it_is_given(cluster: Cluster, tmp_path: Path) -> None:
    cluster.record(tmp_path)

    def run(*args: str) -> Result:
        return CliRunner().invoke(app, ["--home", str(tmp_path), "--format", "json", "search", *args])

    actions = run("--lane", "actions", "pytest")
    assert actions.exit_code == 0, actions.output
    envelope = orjson.loads(actions.output)
    assert envelope["retrievalLane"] == "actions" and len(envelope["hits"]) == 9
    lexical = run("--lexical", "pytest")
    assert lexical.exit_code == 0, lexical.output
    assert orjson.loads(lexical.output)["retrievalLane"] == "dialogue"
    contradicted = run("--lexical", "--semantic", "pytest")
    assert isinstance(contradicted.exception, QuarryError)
    assert contradicted.exception.code == errors_pb2.INVALID_REQUEST
