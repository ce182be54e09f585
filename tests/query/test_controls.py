"""Search controls (docs/search-api.md#search-controls): every validation rule names its parameter path;
effective defaults; then through a real coordinator over in-process partitions (no vector node): validation
before any partition, min_score, include_scores, the echo, and cursors bound to the controls."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner, Result

from quarry.cli.main import app
from quarry.core.errors import QuarryError
from quarry.query import controls
from quarry.query.topology import StaticTopology
from quarry.v1 import errors_pb2, query_pb2
from tests.query.inprocess import Cluster

SearchControls = query_pb2.SearchControls


def rejected(value: SearchControls, lane: str = "hybrid", has_text: bool = True) -> QuarryError:
    with pytest.raises(QuarryError) as raised:
        controls.validate(value, lane, has_text)
    assert raised.value.code == errors_pb2.INVALID_REQUEST
    return raised.value


def admission(**fields: object) -> SearchControls:
    return SearchControls(admission=query_pb2.Admission(**fields))  # type: ignore[arg-type]


def weights(method: str = "", rank_constant: int | None = None, **channel_weights: float) -> SearchControls:
    params = query_pb2.FusionParams(weights=channel_weights)
    if rank_constant is not None:
        params.rank_constant = rank_constant
    return SearchControls(fusion=query_pb2.Fusion(method=method, params=params))


# ----- ranges -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (admission(lexical_coverage=-0.01), "controls.admission.lexical_coverage"),
        (admission(lexical_coverage=1.5), "controls.admission.lexical_coverage"),
        (admission(lexical_coverage=math.nan), "controls.admission.lexical_coverage"),
        (admission(lexical_min_matched_terms=0), "controls.admission.lexical_min_matched_terms"),
        (admission(lexical_min_matched_terms=65), "controls.admission.lexical_min_matched_terms"),
        (admission(min_semantic_similarity=-1.01), "controls.admission.min_semantic_similarity"),
        (admission(min_semantic_similarity=math.inf), "controls.admission.min_semantic_similarity"),
        (SearchControls(min_score=1.01), "controls.min_score"),
        (SearchControls(min_score=-0.1), "controls.min_score"),
        (SearchControls(min_score=math.nan), "controls.min_score"),
        (weights(rank_constant=0), "controls.fusion.params.rank_constant"),
        (weights(rank_constant=10_001), "controls.fusion.params.rank_constant"),
        (weights(vector=100.5), "controls.fusion.params.weights.vector"),
        (weights(text=-1.0), "controls.fusion.params.weights.text"),
        (weights(text=math.inf), "controls.fusion.params.weights.text"),
        (weights(method="weighted_score"), "controls.fusion.method"),
        (weights(method="RRF"), "controls.fusion.method"),
    ],
)
def test_out_of_range_values_are_rejected_naming_the_parameter(value: SearchControls, path: str) -> None:
    assert rejected(value).parameter == path


@pytest.mark.parametrize(
    "value",
    [
        admission(lexical_coverage=0.0, lexical_min_matched_terms=1, min_semantic_similarity=-1.0),
        admission(lexical_coverage=1.0, lexical_min_matched_terms=64, min_semantic_similarity=1.0),
        SearchControls(min_score=0.0),
        SearchControls(min_score=1.0),
        weights(rank_constant=1, text=0.0, action=100.0, vector=0.0),
        weights(rank_constant=10_000),
        weights(method="minmax", text=2.0),
    ],
)
def test_boundary_values_are_accepted(value: SearchControls) -> None:
    controls.validate(value, "hybrid", True)


def test_a_rank_constant_with_minmax_is_a_contradiction() -> None:
    error = rejected(weights(method="minmax", rank_constant=60))
    assert error.parameter == "controls.fusion.params.rank_constant" and "rrf" in error.message


# ----- channels per lane ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lane", "value", "path"),
    [
        ("dialogue", weights(vector=0.0), "controls.fusion.params.weights.vector"),
        ("dialogue", weights(action=1.0), "controls.fusion.params.weights.action"),
        ("actions", weights(text=1.0), "controls.fusion.params.weights.text"),
        ("semantic", weights(text=0.0), "controls.fusion.params.weights.text"),
        ("semantic", weights(action=2.0), "controls.fusion.params.weights.action"),
        ("hybrid", weights(topic_fts=1.0), "controls.fusion.params.weights.topic_fts"),
        ("dialogue", admission(min_semantic_similarity=0.3), "controls.admission.min_semantic_similarity"),
        ("actions", admission(min_semantic_similarity=0.0), "controls.admission.min_semantic_similarity"),
        ("semantic", admission(lexical_coverage=0.25), "controls.admission.lexical_coverage"),
        ("semantic", admission(lexical_min_matched_terms=2), "controls.admission.lexical_min_matched_terms"),
    ],
)
def test_a_control_for_a_channel_the_lane_lacks_is_rejected_even_at_its_default(
    lane: str, value: SearchControls, path: str
) -> None:
    assert rejected(value, lane).parameter == path


@pytest.mark.parametrize(
    ("lane", "value"),
    [
        ("dialogue", weights(text=0.0)),
        ("semantic", weights(vector=0.0)),
        ("hybrid", weights(text=0.0, action=0.0, vector=0.0)),
    ],
)
def test_enabled_channels_weighing_zero_in_total_are_rejected(lane: str, value: SearchControls) -> None:
    assert rejected(value, lane).parameter == "controls.fusion.params.weights"


def test_min_score_on_a_query_that_cannot_rank_is_rejected() -> None:
    for lane in ("dialogue", "actions"):
        error = rejected(SearchControls(min_score=0.2), lane, has_text=False)
        assert error.parameter == "controls.min_score" and "unranked" in error.message
    controls.validate(SearchControls(min_score=0.2), "dialogue", True)


def test_unknown_fields_of_a_newer_schema_are_rejected_with_their_path() -> None:
    known = query_pb2.FusionParams(rank_constant=30).SerializeToString()
    params = query_pb2.FusionParams.FromString(known + bytes([(9 << 3) | 0, 1]))  # field 9, varint 1
    value = SearchControls(fusion=query_pb2.Fusion(params=params))
    assert rejected(value).parameter == "controls.fusion.params.#9"
    top = SearchControls.FromString(SearchControls(min_score=0.5).SerializeToString() + bytes([(12 << 3) | 0, 1]))
    assert rejected(top).parameter == "controls.#12"


# ----- effective values ---------------------------------------------------------------------------------


def test_omitted_controls_take_the_defaults_of_their_lane() -> None:
    hybrid = controls.validate(None, "hybrid", True)
    assert (hybrid.method, hybrid.rank_constant) == ("rrf", 60)
    assert hybrid.weights == {"text": 1.0, "action": 1.0, "vector": 1.0}
    assert hybrid.lexical_admission is None and hybrid.min_similarity is None and hybrid.min_score is None
    assert hybrid.partition_admission() is None
    assert hybrid.vector_requirement == "lane"
    dialogue = controls.validate(None, "dialogue", False)
    assert dialogue.weights == {"text": 1.0} and dialogue.vector_requirement == ""


def test_one_lexical_field_brings_the_other_default() -> None:
    effective = controls.validate(admission(lexical_coverage=0.5), "dialogue", True)
    assert effective.lexical_admission == (0.5, 2)
    partition = effective.partition_admission()
    assert partition is not None and (partition.coverage, partition.min_matched_terms) == (0.5, 2)
    assert controls.validate(admission(lexical_min_matched_terms=3), "actions", True).lexical_admission == (0.25, 3)


def test_the_echo_fills_every_default_and_round_trips() -> None:
    supplied = SearchControls(
        admission=query_pb2.Admission(lexical_coverage=0.5, min_semantic_similarity=0.3),
        fusion=query_pb2.Fusion(params=query_pb2.FusionParams(weights={"text": 2.0})),
        min_score=0.1,
    )
    echoed = controls.validate(supplied, "hybrid", True).to_proto()
    assert echoed.admission.lexical_coverage == 0.5 and echoed.admission.lexical_min_matched_terms == 2
    assert echoed.admission.min_semantic_similarity == pytest.approx(0.3)
    assert echoed.fusion.method == "rrf" and echoed.fusion.params.rank_constant == 60
    assert dict(echoed.fusion.params.weights) == {"text": 2.0, "action": 1.0, "vector": 1.0}
    assert echoed.min_score == pytest.approx(0.1) and echoed.HasField("include_scores")
    # the echo is itself a valid request with the same effect
    assert controls.validate(echoed, "hybrid", True) == controls.validate(supplied, "hybrid", True)
    minmax = controls.validate(weights(method="minmax"), "hybrid", True).to_proto()
    assert minmax.fusion.method == "minmax" and not minmax.fusion.params.HasField("rank_constant")


def test_the_digest_ignores_include_scores_and_nothing_else() -> None:
    base = controls.validate(None, "dialogue", True).digest()
    assert controls.validate(SearchControls(include_scores=True), "dialogue", True).digest() == base
    assert controls.validate(SearchControls(min_score=0.0), "dialogue", True).digest() != base
    assert controls.validate(admission(lexical_coverage=0.25), "dialogue", True).digest() != base
    assert controls.validate(weights(text=2.0), "dialogue", True).digest() != base


# ----- through the coordinator --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("controls"), 2)
    yield cluster
    cluster.close()


def search(cluster: Cluster, query: str, lane: str = "dialogue", **kwargs: object) -> query_pb2.SearchEnvelope:
    request = query_pb2.SearchRequest(query=query, lane=lane, **kwargs)  # type: ignore[arg-type]
    return cluster.coordinator.search(request)


def test_validation_comes_before_the_vector_capability() -> None:
    # no partition and no vector node answers at these addresses: only validation can reply in time
    from quarry.query.root import Coordinator

    nowhere = Coordinator(StaticTopology.index_nodes(["127.0.0.1:9"]), None, None)
    request = query_pb2.SearchRequest(query="tests", lane="semantic", deadline_ms=500, controls=weights(text=1.0))
    with pytest.raises(QuarryError) as raised:
        nowhere.search(request)
    assert raised.value.parameter == "controls.fusion.params.weights.text"
    request.ClearField("controls")
    with pytest.raises(QuarryError) as raised:
        nowhere.search(request)
    assert raised.value.code == errors_pb2.SEMANTIC_UNAVAILABLE and raised.value.parameter == "lane"


def test_min_score_drops_hits_without_back_filling_and_ends_the_walk(cluster: Cluster) -> None:
    any_word = query_pb2.Admission(lexical_coverage=0.0, lexical_min_matched_terms=1)
    every = search(cluster, "done 4", limit=20, controls=SearchControls(admission=any_word, include_scores=True))
    retrieval = [h.match.scores.retrieval for h in every.hits]
    assert len(every.hits) == 9 and retrieval == sorted(retrieval, reverse=True)
    assert all(0 < r < 1 for r in retrieval) and retrieval[0] > retrieval[1]
    cut = (retrieval[0] + retrieval[1]) / 2
    kept = [h.session.id for h in every.hits if h.match.scores.retrieval >= cut]
    assert kept == ["claude-code-session:s4"]
    cutting = SearchControls(admission=any_word, min_score=cut)
    page = search(cluster, "done 4", limit=20, controls=cutting)
    assert [h.session.id for h in page.hits] == kept and not page.next_cursor  # no back-fill
    # pages of one: the walk ends at the cut
    walked, cursor = [], ""
    while True:
        one = search(cluster, "done 4", limit=1, cursor=cursor, controls=cutting)
        walked.extend(h.session.id for h in one.hits)
        if not one.next_cursor:
            break
        cursor = one.next_cursor
    assert walked == kept


def test_include_scores_adds_metadata_only(cluster: Cluster) -> None:
    plain = search(cluster, "tests", limit=20)
    scored = search(cluster, "tests", limit=20, controls=SearchControls(include_scores=True))
    assert [h.session.id for h in plain.hits] == [h.session.id for h in scored.hits]
    assert [h.match.score for h in plain.hits] == [h.match.score for h in scored.hits]
    assert not any(h.match.HasField("scores") for h in plain.hits)
    for hit in scored.hits:
        channels = hit.match.scores.channels
        assert set(channels) == {"text"}
        assert channels["text"].metric == "tantivy_bm25" and channels["text"].higher_is_better
        assert channels["text"].raw == pytest.approx(-hit.match.score)  # the bm25 score_kind is negated
        raw = channels["text"].raw
        assert hit.match.scores.retrieval == pytest.approx(raw / (1 + raw))
    actions = search(cluster, "pytest", "actions", controls=SearchControls(include_scores=True))
    assert actions.hits and all(set(h.match.scores.channels) == {"action"} for h in actions.hits)


def test_the_envelope_echoes_the_effective_controls(cluster: Cluster) -> None:
    envelope = search(cluster, "tests", controls=admission(lexical_coverage=0.5))
    echoed = envelope.controls
    assert (echoed.admission.lexical_coverage, echoed.admission.lexical_min_matched_terms) == (0.5, 2)
    assert echoed.fusion.method == "rrf" and dict(echoed.fusion.params.weights) == {"text": 1.0}
    assert not echoed.include_scores and not echoed.HasField("min_score")


def test_coverage_admission_reaches_the_partitions(cluster: Cluster) -> None:
    # Read as the query language, every word is needed: nothing holds zzzabsent.
    assert search(cluster, "tests number 4 zzzabsent", reading="query").hits == []
    admitted = search(cluster, "tests number 4 zzzabsent", controls=admission(lexical_coverage=0.75))
    # m = 3 of 4: every session says "tests number"; only s4's message adds "4"
    assert [h.session.id for h in admitted.hits] == ["claude-code-session:s4"]


def test_a_cursor_under_other_controls_is_stale_but_include_scores_may_change(cluster: Cluster) -> None:
    first = search(cluster, "tests", limit=3, controls=SearchControls(min_score=0.0))
    assert first.next_cursor
    with pytest.raises(QuarryError) as raised:
        search(cluster, "tests", limit=3, cursor=first.next_cursor)
    assert raised.value.code == errors_pb2.STALE_CURSOR and "search controls" in raised.value.message
    same = SearchControls(min_score=0.0, include_scores=True)
    second = search(cluster, "tests", limit=3, cursor=first.next_cursor, controls=same)
    assert second.hits and all(h.match.HasField("scores") for h in second.hits)
    assert not {h.session.id for h in second.hits} & {h.session.id for h in first.hits}


def test_min_score_on_a_filter_only_query_is_rejected_before_the_partitions(cluster: Cluster) -> None:
    with pytest.raises(QuarryError) as raised:
        search(cluster, "repo:repo-1", controls=SearchControls(min_score=0.1))
    assert raised.value.parameter == "controls.min_score"


def test_the_cli_sends_controls_from_json_and_flags(cluster: Cluster, tmp_path: Path) -> None:
    cluster.record(tmp_path)

    def run(*args: str) -> Result:
        return CliRunner().invoke(app, ["--home", str(tmp_path), "--format", "json", "search", *args])

    result = run("tests number 4 zzzabsent", "--controls", '{"include_scores": true}', "--coverage", "0.75")
    assert result.exit_code == 0, result.output
    envelope = orjson.loads(result.output)
    assert [h["session"]["id"] for h in envelope["hits"]] == ["claude-code-session:s4"]
    assert envelope["hits"][0]["match"]["scores"]["channels"]["text"]["metric"] == "tantivy_bm25"
    assert envelope["controls"]["admission"]["lexicalCoverage"] == 0.75
    plain = CliRunner().invoke(app, ["--home", str(tmp_path), "search", "tests", "--include-scores", "--limit", "1"])
    assert plain.exit_code == 0, plain.output
    assert "retrieval 0." in plain.output and "text tantivy_bm25" in plain.output
    assert "--controls" in plain.output  # the next page's command repeats them
    clash = run("tests", "--controls", '{"min_score": 0.1}', "--min-score", "0.2")
    assert isinstance(clash.exception, QuarryError) and clash.exception.parameter == "--min-score"
