"""Strict JSON search controls (docs/search-api.md#search-controls), their CLI flags, and how hits show
their scores."""

from __future__ import annotations

import pytest
from rich.console import Console

from quarry.cli import render
from quarry.cli.lines import RichLines
from quarry.cli.search import parse_weights, search_controls
from quarry.client.controls_json import controls_from_json, controls_to_json
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2

DOCUMENTED_EXAMPLE = """{
  "admission": {"lexical_coverage": 0.5, "lexical_min_matched_terms": 3, "min_semantic_similarity": -0.25},
  "fusion": {"method": "rrf", "params": {"rank_constant": 60, "weights": {"text": 2, "vector": 0.5}}},
  "min_score": 0.2,
  "include_scores": true
}"""


def rejected(source: object) -> QuarryError:
    with pytest.raises(QuarryError) as raised:
        controls_from_json(source)  # type: ignore[arg-type]
    assert raised.value.code == errors_pb2.INVALID_REQUEST
    return raised.value


def test_the_documented_example_parses_into_every_field() -> None:
    controls = controls_from_json(DOCUMENTED_EXAMPLE)
    assert controls.admission.lexical_coverage == 0.5
    assert controls.admission.lexical_min_matched_terms == 3
    assert controls.admission.min_semantic_similarity == -0.25
    assert controls.fusion.method == "rrf" and controls.fusion.params.rank_constant == 60
    assert dict(controls.fusion.params.weights) == {"text": 2.0, "vector": 0.5}
    assert controls.min_score == 0.2 and controls.include_scores is True
    assert controls_from_json(controls_to_json(controls)) == controls


def test_omitted_fields_stay_unset() -> None:
    controls = controls_from_json('{"include_scores": false}')
    assert controls.HasField("include_scores") and not controls.include_scores
    assert not controls.HasField("min_score") and not controls.HasField("fusion")
    assert not controls.admission.HasField("lexical_coverage")
    assert controls_from_json({}) == query_pb2.SearchControls()


@pytest.mark.parametrize(
    ("source", "path"),
    [
        ('{"min_scor": 0.2}', "controls.min_scor"),
        ('{"fusion": {"params": {"x": 1}}}', "controls.fusion.params.x"),
        ('{"admission": {"lexical_coverage": 0.5, "coverage": 1}}', "controls.admission.coverage"),
        ('{"min_score": null}', "controls.min_score"),
        ('{"fusion": null}', "controls.fusion"),
        ('{"fusion": {"params": {"weights": {"text": null}}}}', "controls.fusion.params.weights.text"),
        ('{"min_score": "0.2"}', "controls.min_score"),
        ('{"admission": {"lexical_coverage": "1"}}', "controls.admission.lexical_coverage"),
        ('{"fusion": {"params": {"weights": {"text": "2"}}}}', "controls.fusion.params.weights.text"),
        ('{"min_score": true}', "controls.min_score"),
        ('{"fusion": {"params": {"rank_constant": true}}}', "controls.fusion.params.rank_constant"),
        ('{"fusion": {"params": {"weights": {"vector": false}}}}', "controls.fusion.params.weights.vector"),
        ('{"fusion": {"params": {"rank_constant": 60.5}}}', "controls.fusion.params.rank_constant"),
        ('{"fusion": {"params": {"rank_constant": 60.0}}}', "controls.fusion.params.rank_constant"),
        ('{"admission": {"lexical_min_matched_terms": 2.5}}', "controls.admission.lexical_min_matched_terms"),
        ('{"fusion": {"params": {"rank_constant": 99999999999}}}', "controls.fusion.params.rank_constant"),
        ('{"include_scores": 1}', "controls.include_scores"),
        ('{"include_scores": "true"}', "controls.include_scores"),
        ('{"fusion": {"method": 1}}', "controls.fusion.method"),
        ('{"fusion": {"params": {"weights": [1]}}}', "controls.fusion.params.weights"),
        ('{"admission": 0.5}', "controls.admission"),
        ('{"min_score": NaN}', "controls"),
        ('{"min_score": Infinity}', "controls"),
        ('{"min_score": 0.1, "min_score": 0.2}', "controls.min_score"),
        ("[1]", "controls"),
        ("{not json", "controls"),
    ],
)
def test_malformed_controls_are_rejected_naming_the_path(source: str, path: str) -> None:
    assert rejected(source).parameter == path


def test_a_parsed_object_is_checked_alike() -> None:
    assert (
        rejected({"fusion": {"params": {"weights": {"text": True}}}}).parameter == "controls.fusion.params.weights.text"
    )


# ----- CLI flags ----------------------------------------------------------------------------------------


def test_flags_and_controls_json_merge() -> None:
    controls = search_controls(
        '{"fusion": {"params": {"weights": {"text": 2}}}}',
        {
            ("min_score",): ("--min-score", 0.3),
            ("fusion", "params", "weights", "vector"): ("--weight", 0.5),
            ("admission", "lexical_coverage"): ("--coverage", 0.5),
        },
    )
    assert controls is not None
    assert dict(controls.fusion.params.weights) == {"text": 2.0, "vector": 0.5}
    assert controls.min_score == 0.3 and controls.admission.lexical_coverage == 0.5
    assert search_controls(None, {}) is None


def test_a_flag_setting_what_controls_json_sets_is_a_contradiction() -> None:
    with pytest.raises(QuarryError) as raised:
        search_controls('{"min_score": 0.1}', {("min_score",): ("--min-score", 0.3)})
    assert raised.value.code == errors_pb2.INVALID_REQUEST and raised.value.parameter == "--min-score"
    with pytest.raises(QuarryError) as raised:
        search_controls(
            '{"fusion": {"params": {"weights": {"text": 2}}}}',
            {("fusion", "params", "weights", "text"): ("--weight", 1.0)},
        )
    assert raised.value.parameter == "--weight"


def test_weight_flags_parse_channel_equals_number() -> None:
    assert parse_weights(["text=2", "vector=0.5"]) == {"text": 2.0, "vector": 0.5}
    for bad in (["text"], ["=2"], ["text=two"], ["text=1", "text=2"]):
        with pytest.raises(QuarryError) as raised:
            parse_weights(bad)
        assert raised.value.parameter == "--weight"


# ----- rendering ----------------------------------------------------------------------------------------


def test_plain_output_shows_the_retrieval_score_and_each_channel() -> None:
    envelope = query_pb2.SearchEnvelope(query="x", retrieval_lane="hybrid", limit=1, next_cursor="CUR")
    envelope.controls.min_score = 0.2
    hit = envelope.hits.add()
    hit.session.id = "codex:s1"
    hit.match.rank, hit.match.score, hit.match.score_kind = 1, 0.03, "rrf"
    hit.match.scores.retrieval = 0.91
    hit.match.scores.channels["text"].CopyFrom(
        query_pb2.ChannelScore(raw=7.5, metric="tantivy_bm25", higher_is_better=True)
    )
    hit.match.scores.channels["vector"].CopyFrom(query_pb2.ChannelScore(raw=0.4, metric="l2_distance"))
    console = Console(record=True, width=200)
    render.search_envelope(envelope, "plain", RichLines(console))
    text = console.export_text()
    assert "retrieval 0.91 · text tantivy_bm25 7.5 ↑ · vector l2_distance 0.4 ↓" in text
    assert """--cursor CUR --controls '{"min_score":0.2}'""" in text  # the next page repeats the controls
    assert render.to_dict(envelope)["hits"][0]["match"]["scores"]["channels"]["vector"]["metric"] == "l2_distance"
