"""The BEIR quality harness: metrics against hand-computed values, the loader and the document sessions
on our own tiny BEIR folder, and one end-to-end run of bench/quality.py through a real cluster."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import beir, quality
from quarry.core.dialogue import dialogue_items
from quarry.ingest.validate import session_problems

TINY = Path(__file__).resolve().parent.parent / "fixtures" / "beir_tiny"


# ----- metrics ------------------------------------------------------------------------------------


def test_ndcg_uses_graded_gains_and_log2_discount_against_the_ideal_order():
    judged = {"a": 2, "b": 1, "c": 0}
    # DCG = 1/log2(2) [b at rank 1] + 2/log2(4) [a at rank 3] = 1 + 1 = 2
    # IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.63093
    expected = 2 / (2 + 1 / math.log2(3))
    assert beir.ndcg_at(["b", "x", "a"], judged, 10) == pytest.approx(expected)
    assert beir.ndcg_at(["a", "b"], judged, 10) == pytest.approx(1.0)
    assert beir.ndcg_at(["x", "c"], judged, 10) == 0.0


def test_ndcg_cuts_the_ranking_but_not_the_ideal_at_k():
    judged = {"a": 1, "b": 1}
    # k = 1: only rank 1 counts; the ideal DCG@1 is 1
    assert beir.ndcg_at(["x", "a"], judged, 1) == 0.0
    assert beir.ndcg_at(["a", "x"], judged, 1) == pytest.approx(1.0)
    # k = 2, one of two relevant at rank 2: (1/log2 3) / (1 + 1/log2 3)
    assert beir.ndcg_at(["x", "a"], judged, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_recall_counts_relevant_documents_in_the_top_k():
    judged = {"a": 1, "b": 2, "c": 0}
    assert beir.recall_at(["a", "c", "x"], judged, 100) == 0.5
    assert beir.recall_at(["x", "b", "a"], judged, 2) == 0.5
    assert beir.recall_at(["b", "a"], judged, 100) == 1.0
    assert beir.recall_at([], judged, 100) == 0.0


def test_mean_metrics_scores_a_missing_answer_as_empty_and_skips_unjudged_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    means = beir.mean_metrics({"q1": ["a"], "q3": ["c"]}, qrels)
    assert means == {"ndcg@10": 0.5, "recall@100": 0.5}


# ----- loader, sessions, queries --------------------------------------------------------------------


def test_loader_reads_corpus_judged_queries_and_graded_qrels():
    dataset = beir.load_dataset(TINY)
    assert dataset.name == "beir_tiny"
    assert len(dataset.docs) == 36
    assert dataset.docs[1] == beir.Doc("d02", "When a starter smells like acetone", dataset.docs[1].text)
    # q10 is in queries.jsonl but has no judgment in the test split: it is not asked
    assert list(dataset.queries) == [f"q{i}" for i in range(1, 10)]
    assert dataset.qrels["q1"] == {"d02": 2, "d01": 1}


def test_qrels_accept_crlf_line_ends(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\r\n1\t31715818\t1\r\n1\t42\t2\r\n")
    assert beir.read_qrels(path) == {"1": {"31715818": 1, "42": 2}}


def test_a_document_becomes_one_valid_session_whose_id_gives_the_document_back():
    doc = beir.Doc("31715818", "A title", "Body text of the abstract.")
    session = beir.doc_session(doc)
    assert session_problems(session) == []
    assert session.origin == "chatgpt-export" and session.repo == ""
    assert beir.doc_id(session.id) == "31715818"
    assert [m.role for m in session.messages] == ["user"]
    # the vector node embeds exactly "title\n\ntext" for it
    assert [i.text for i in dialogue_items(session)] == ["A title\n\nBody text of the abstract."]
    with pytest.raises(ValueError):
        beir.doc_id("claude-code-session:abc")


# ----- end to end -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("quality") / "quality.json"
    assert quality.main(["--dataset", str(TINY), "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_run_writes_the_issue_shape(tiny_run):
    assert tiny_run["dataset"] == "beir_tiny"
    assert (tiny_run["docs"], tiny_run["queries"]) == (36, 9)
    assert set(tiny_run["lanes"]) == {"default", "dialogue", "semantic", "hybrid", "hybrid_minmax"}
    for metrics in tiny_run["lanes"].values():
        assert set(metrics) == {"ndcg@10", "recall@100"}
        assert all(0.0 <= v <= 1.0 for v in metrics.values())
    assert tiny_run["failed"] == {lane: {} for lane in tiny_run["lanes"]}
    assert tiny_run["timings"]["embed_s"] > 0
    # the fusion method each hybrid lane asked for is the one the server ran
    assert tiny_run["effective_controls"]["hybrid"]["fusion"]["method"] == "rrf"
    assert tiny_run["effective_controls"]["hybrid_minmax"]["fusion"]["method"] == "minmax"
    # a claim is prose: with no lane and no controls it is searched on the hybrid lane, fused by min-max
    assert tiny_run["effective_controls"]["default"]["fusion"]["method"] == "minmax"


def test_dialogue_finds_documents_by_their_words_only(tiny_run):
    per_query = tiny_run["per_query"]
    assert tiny_run["lanes"]["dialogue"]["ndcg@10"] > 0.5
    # q1 "Starter smells like acetone": every word is in d02 (grade 2), ranked first
    assert per_query["q1"]["dialogue"]["ndcg@10"] >= beir.ndcg_at(["d02"], {"d02": 2, "d01": 1})
    # q2 "honeybee deaths during frost" shares no word with d08, its only relevant document
    assert per_query["q2"]["dialogue"]["recall@100"] == 0.0


def test_semantic_finds_documents_that_share_no_word_with_the_query(tiny_run):
    per_query = tiny_run["per_query"]
    for query in ("q2", "q4"):  # frost-killed honeybees -> d08; a creature replacing limbs -> d19
        assert per_query[query]["semantic"]["ndcg@10"] >= 0.5  # the relevant document in the top 3
    assert tiny_run["lanes"]["semantic"]["ndcg@10"] > 0.7


def test_hybrid_lanes_keep_what_either_channel_finds(tiny_run):
    per_query = tiny_run["per_query"]
    for lane in ("hybrid", "hybrid_minmax"):
        assert per_query["q1"][lane]["ndcg@10"] >= 0.6  # d02 first (or second behind d01)
        assert per_query["q2"][lane]["recall@100"] == 1.0 and per_query["q4"][lane]["recall@100"] == 1.0
        assert tiny_run["lanes"][lane]["ndcg@10"] > tiny_run["lanes"]["dialogue"]["ndcg@10"]
