from quarry.query.fusion import RRF_K, rrf


def test_a_hit_in_both_lanes_scores_the_sum_of_its_rrf_terms():
    fused = rrf({"text": ["a", "b"], "vector": ["b", "c"]})
    by_id = {h.session_id: h for h in fused}
    b = by_id["b"]
    assert b.components == {
        "text_rank": 2.0,
        "text_rrf": 1 / (RRF_K + 2),
        "vector_rank": 1.0,
        "vector_rrf": 1 / (RRF_K + 1),
    }
    assert b.score == b.components["text_rrf"] + b.components["vector_rrf"]
    assert fused[0].session_id == "b"
    assert set(by_id["a"].components) == {"text_rank", "text_rrf"}


def test_ties_break_on_session_id():
    fused = rrf({"text": ["z", "y"], "vector": ["y", "z"]})
    assert [h.session_id for h in fused] == ["y", "z"]
    assert fused[0].score == fused[1].score
