import pytest
from hypothesis import given
from hypothesis import strategies as st

from quarry.core.lanes import RRF_K
from quarry.query.cursors import Anchor
from quarry.query.fusion import (
    FUSION_DEPTH,
    FusedHit,
    FusionSpec,
    bm25_retrieval,
    minmax,
    rrf,
    similarity,
    vector_retrieval,
)
from quarry.query.paging import Ordered, after_anchor, fusion_depth
from quarry.v1 import index_pb2, vector_pb2
from tests.query.fused import hybrid_hits


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


# ----- search controls: weights, minmax, normalized retrieval scores -------------------------------------


def test_weights_scale_each_channels_term_and_reorder() -> None:
    rankings = {"text": ["a", "b"], "vector": ["b", "a"]}
    even = rrf(rankings, k=60)
    assert even[0].score == even[1].score  # a tie, broken on id
    favour_vector = rrf(rankings, k=60, weights={"text": 1.0, "vector": 3.0})
    assert [h.session_id for h in favour_vector] == ["b", "a"]
    b = favour_vector[0]
    assert b.components == {"text_rank": 2.0, "text_rrf": 1 / 62, "vector_rank": 1.0, "vector_rrf": 3 / 61}
    assert b.score == pytest.approx(1 / 62 + 3 / 61)
    assert b.retrieval == pytest.approx(b.score / (1 / 61 + 3 / 61))


def test_the_rank_constant_is_k() -> None:
    (hit,) = rrf({"text": ["a"]}, k=1)
    assert hit.score == 0.5 and hit.retrieval == 1.0  # first everywhere: 1.0


def test_a_hit_only_zero_weight_channels_found_is_dropped_but_its_components_stay_elsewhere() -> None:
    fused = rrf({"text": ["a", "b"], "vector": ["c", "a"]}, weights={"text": 1.0, "vector": 0.0})
    assert [h.session_id for h in fused] == ["a", "b"]
    a = fused[0]
    assert a.components["vector_rank"] == 2.0 and a.components["vector_rrf"] == 0.0


def test_minmax_normalises_each_channel_and_averages_by_weight() -> None:
    fused = minmax(
        {"text": [("a", 9.0), ("b", 5.0), ("c", 1.0)], "vector": [("c", 0.9), ("a", 0.5)]},
        weights={"text": 1.0, "vector": 3.0},
    )
    by_id = {h.session_id: h for h in fused}
    assert by_id["a"].components == {"text_rank": 1.0, "text_norm": 1.0, "vector_rank": 2.0, "vector_norm": 0.0}
    assert by_id["a"].score == pytest.approx(1 / 4)
    assert by_id["b"].score == pytest.approx(0.5 / 4)  # absent from vector: adds 0 there
    assert by_id["c"].score == pytest.approx(3 / 4)
    assert [h.session_id for h in fused] == ["c", "a", "b"]
    assert all(h.retrieval == h.score for h in fused)


def test_minmax_gives_a_lone_or_flat_channel_full_marks() -> None:
    (lone,) = minmax({"text": [("a", 3.2)]})
    assert lone.score == 1.0
    flat = minmax({"text": [("a", 2.0), ("b", 2.0)]})
    assert [h.score for h in flat] == [1.0, 1.0] and [h.session_id for h in flat] == ["a", "b"]


def test_minmax_normalises_over_the_top_fusion_depth_only() -> None:
    deep = [(f"s{i:03}", float(1000 - i)) for i in range(FUSION_DEPTH + 20)]
    fused = {h.session_id: h for h in minmax({"text": deep})}
    assert fused["s000"].score == 1.0
    assert fused[f"s{FUSION_DEPTH - 1:03}"].score == 0.0
    assert fused[f"s{FUSION_DEPTH + 10:03}"].score == 0.0  # below the window's minimum: clipped


def test_hybrid_minmax_uses_similarity_for_the_vector_channel() -> None:
    text = [partition_hit("s:a", 4.0), partition_hit("s:b", 2.0)]
    vector = [
        vector_pb2.VectorHit(session_id="s:b", distance=0.2),
        vector_pb2.VectorHit(session_id="s:a", distance=1.0),
    ]
    hits = hybrid_hits(text, None, vector, FusionSpec(method="minmax", weights={"text": 1.0, "vector": 1.0}))
    assert {h.match.score_kind for h in hits} == {"minmax"}
    assert [h.match.score for h in hits] == [0.5, 0.5] and [h.session.id for h in hits] == ["s:a", "s:b"]
    b = hits[1].match
    assert b.score_components["vector_norm"] == 1.0 and b.score_components["text_norm"] == 0.0
    assert set(b.scores.channels) == {"text", "vector"}
    assert b.scores.channels["vector"].raw == pytest.approx(0.2)
    assert b.scores.channels["vector"].metric == "l2_distance" and not b.scores.channels["vector"].higher_is_better


def test_rrf_ties_are_ordered_by_the_evidence_before_the_id() -> None:
    fused = rrf({"text": ["a", "b"], "vector": ["b", "a"]}, tiebreak={"a": 0.2, "b": 0.9})
    assert [h.session_id for h in fused] == ["b", "a"] and fused[0].score == fused[1].score


def test_a_hybrid_tie_goes_to_the_session_its_channels_scored_closer_to_their_best() -> None:
    # s:a first in text, far behind in vector; s:b a close second in text, first in vector by far: equal
    # RRF sums (ranks 1 and 2 against 2 and 1), and s:b's evidence is the stronger
    text = [partition_hit("s:a", 5.0), partition_hit("s:b", 4.9), partition_hit("s:c", 1.0)]
    vector = [
        vector_pb2.VectorHit(session_id="s:b", distance=0.1),
        vector_pb2.VectorHit(session_id="s:a", distance=1.2),
        vector_pb2.VectorHit(session_id="s:c", distance=1.3),
    ]
    hits = hybrid_hits(text, None, vector)
    assert hits[0].match.score == hits[1].match.score
    assert [h.session.id for h in hits] == ["s:b", "s:a", "s:c"]


def test_a_cursor_inside_a_tie_resumes_after_its_session() -> None:
    ordered = [Ordered(sid, score, 0.0, FusedHit(sid, score)) for sid, score in [("z", 2.0), ("b", 1.0), ("a", 1.0)]]
    assert [o.session_id for o in after_anchor(ordered, Anchor(1.0, "b"), lower_is_better=False)] == ["a"]
    # the anchor's session gone from the order: by the score and the id
    assert [o.session_id for o in after_anchor(ordered, Anchor(1.0, "aa"), lower_is_better=False)] == ["b"]


def test_hybrid_retrieval_is_one_when_first_in_every_channel_that_ran() -> None:
    hits = hybrid_hits([partition_hit("s:a", 3.0)], None, [vector_pb2.VectorHit(session_id="s:a", distance=0.1)])
    assert hits[0].match.scores.retrieval == pytest.approx(1.0)
    assert set(hits[0].match.scores.channels) == {"text", "vector"}  # the action channel did not run
    ran_empty = hybrid_hits([partition_hit("s:a", 3.0)], [], [vector_pb2.VectorHit(session_id="s:a", distance=0.1)])
    assert ran_empty[0].match.scores.retrieval == pytest.approx(2 / 3)


def partition_hit(session_id: str, score: float) -> index_pb2.PartitionHit:
    hit = index_pb2.PartitionHit(score=score, ranked=True, message_id=f"{session_id}:m0")
    hit.session.id = session_id
    return hit


@given(st.floats(min_value=0.0, max_value=1e12, allow_nan=False))
def test_bm25_retrieval_is_within_zero_and_one(bm25: float) -> None:
    assert 0.0 <= bm25_retrieval(bm25) <= 1.0


@given(st.floats(min_value=0.0, max_value=4.0, allow_nan=False))
def test_vector_retrieval_is_within_zero_and_one_and_falls_with_distance(distance: float) -> None:
    score = vector_retrieval(distance)
    assert 0.0 <= score <= 1.0
    assert vector_retrieval(distance + 0.01) <= score
    assert -1.0 <= similarity(distance) <= 1.0


channel_lists = st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8)
channel_weights = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)


@given(
    st.dictionaries(st.sampled_from(["text", "action", "vector"]), channel_lists, min_size=1),
    st.dictionaries(st.sampled_from(["text", "action", "vector"]), channel_weights),
    st.integers(min_value=1, max_value=10_000),
)
def test_rrf_retrieval_is_within_zero_and_one_and_orders_like_the_score(
    rankings: dict[str, list[str]], weights: dict[str, float], k: int
) -> None:
    fused = rrf(rankings, k=k, weights=weights)
    assert all(0.0 <= h.retrieval <= 1.0 for h in fused)
    assert [h.retrieval for h in fused] == sorted((h.retrieval for h in fused), reverse=True)


@given(
    st.dictionaries(
        st.sampled_from(["text", "action", "vector"]),
        st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(-50, 50, allow_nan=False)), max_size=8).map(
            lambda pairs: sorted(dict(pairs).items(), key=lambda p: -p[1])
        ),
        min_size=1,
    ),
    st.dictionaries(st.sampled_from(["text", "action", "vector"]), channel_weights),
)
def test_minmax_retrieval_is_within_zero_and_one(
    scored: dict[str, list[tuple[str, float]]], weights: dict[str, float]
) -> None:
    fused = minmax(scored, weights=weights)
    assert all(0.0 <= h.retrieval <= 1.0 for h in fused)


def test_each_hybrid_channel_contributes_twice_the_hits_wanted_and_never_fewer_than_the_fusion_depth() -> None:
    assert fusion_depth(21) == FUSION_DEPTH
    assert fusion_depth(101) == 202
