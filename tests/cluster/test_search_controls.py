"""Seed 003's search controls on a real multi-process cluster (two partitions): validated on an empty
archive, lexical admission, min_score without back-fill, include_scores as metadata only, cursors
bound to the controls, and fusion weights on the hybrid lane (the cluster with vectors)."""

from __future__ import annotations

import pytest

from quarry.client.client import QuarryClient
from quarry.client.controls_json import controls_from_json
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.v1 import errors_pb2, query_pb2
from tests.index.sessions import BASE_MS, Msg, session

pytestmark = pytest.mark.cluster

WORDS = "alpha bravo charlie delta"
GROUPS = {"w4": WORDS, "w3": "alpha bravo charlie", "w2": "alpha bravo", "w1": "alpha"}


def ids(envelope: query_pb2.SearchEnvelope) -> list[str]:
    return [h.session.id for h in envelope.hits]


def group_of(session_id: str) -> str:
    return session_id.split(":", 1)[1].split("-", 1)[0]


def controls(**document: object) -> query_pb2.SearchControls:
    return controls_from_json(document)


def test_controls_are_validated_on_an_empty_archive(light_client: QuarryClient) -> None:
    assert light_client.search(WORDS).caveats[0].startswith("the archive is empty")  # really empty
    cases = [
        ("dialogue", {"fusion": {"params": {"weights": {"vector": 0}}}}, "controls.fusion.params.weights.vector"),
        ("dialogue", {"admission": {"min_semantic_similarity": 0.3}}, "controls.admission.min_semantic_similarity"),
        ("auto", {"min_score": 1.5}, "controls.min_score"),
        ("actions", {"admission": {"lexical_coverage": 2}}, "controls.admission.lexical_coverage"),
        ("semantic", {"admission": {"lexical_coverage": 0.25}}, "controls.admission.lexical_coverage"),
        (
            "hybrid",
            {"fusion": {"method": "minmax", "params": {"rank_constant": 60}}},
            "controls.fusion.params.rank_constant",
        ),
        (
            "hybrid",
            {"fusion": {"params": {"weights": {"text": 0, "action": 0, "vector": 0}}}},
            "controls.fusion.params.weights",
        ),
    ]
    for lane, document, path in cases:
        with pytest.raises(QuarryError) as raised:
            light_client.search(WORDS, lane=lane, controls=controls(**document))
        assert (raised.value.code, raised.value.parameter) == (errors_pb2.INVALID_REQUEST, path), (lane, document)
    with pytest.raises(QuarryError) as raised:
        light_client.search("repo:quarry", controls=controls(min_score=0.1))  # nothing to rank
    assert raised.value.parameter == "controls.min_score"
    # no embedder: a vector lane is unavailable, even where the archive would answer "nothing"
    for lane, document in [("semantic", {}), ("hybrid", {"admission": {"min_semantic_similarity": 0.3}})]:
        with pytest.raises(QuarryError) as raised:
            light_client.search(WORDS, lane=lane, controls=controls(**document))
        assert raised.value.code == errors_pb2.SEMANTIC_UNAVAILABLE and raised.value.parameter == "lane"
    valid = light_client.search(WORDS, controls=controls(admission={"lexical_coverage": 0.5}))
    assert not valid.hits and valid.controls.admission.lexical_min_matched_terms == 2


@pytest.fixture(scope="module")
def archive(light_client: QuarryClient) -> list[str]:
    """Three sessions per group, spread over both partitions."""
    sessions = [
        session(f"{group}-{i}", [Msg("user", f"{text} notes"), Msg("assistant", "noted")], start_ms=BASE_MS + i)
        for group, text in GROUPS.items()
        for i in range(3)
    ]
    report = light_client.ingest_sessions(sessions)
    assert report.sessions_written == len(sessions)
    assert {partition_for(s.id, 2) for s in sessions} == {0, 1}
    return [s.id for s in sessions]


def test_coverage_admission_changes_which_sessions_come_back(light_client: QuarryClient, archive: list[str]) -> None:
    def groups(**admission: object) -> set[str]:
        chosen = controls(admission=admission) if admission else None
        found = light_client.search(WORDS, limit=50, controls=chosen, reading="query")
        return {group_of(sid) for sid in ids(found)}

    assert groups() == {"w4"}  # the query language: every word
    prose = ids(light_client.search(WORDS, limit=50))  # prose: any word, the sessions holding most first
    assert {group_of(sid) for sid in prose} == set(GROUPS) and group_of(prose[0]) == "w4"
    assert groups(lexical_coverage=0.75) == {"w4", "w3"}  # 3 of 4
    assert groups(lexical_coverage=0.5) == {"w4", "w3", "w2"}  # max(2, 2) of 4
    assert groups(lexical_coverage=0.0, lexical_min_matched_terms=1) == set(GROUPS)
    assert len(ids(light_client.search(WORDS, limit=50, controls=controls(admission={"lexical_coverage": 0.5})))) == 9


def test_min_score_cuts_without_back_fill_and_ends_the_walk(light_client: QuarryClient, archive: list[str]) -> None:
    any_word = {"lexical_coverage": 0.0, "lexical_min_matched_terms": 1}
    full = light_client.search(WORDS, limit=50, controls=controls(admission=any_word, include_scores=True))
    assert len(full.hits) == 12
    retrieval = [h.match.scores.retrieval for h in full.hits]
    assert retrieval == sorted(retrieval, reverse=True) and all(0.0 < r < 1.0 for r in retrieval)
    w3_best = max(r for h, r in zip(full.hits, retrieval, strict=True) if group_of(h.session.id) == "w3")
    w2_best = max(r for h, r in zip(full.hits, retrieval, strict=True) if group_of(h.session.id) == "w2")
    cut = (w3_best + w2_best) / 2
    above = [h.session.id for h, r in zip(full.hits, retrieval, strict=True) if r >= cut]
    assert {group_of(s) for s in above} <= {"w4", "w3"}

    cutting = controls(admission=any_word, min_score=cut)
    page = light_client.search(WORDS, limit=50, controls=cutting)
    assert ids(page) == above and not page.next_cursor  # nothing below the cut fills the page
    walked: list[str] = []
    cursor = ""
    while True:
        one = light_client.search(WORDS, limit=2, cursor=cursor, controls=cutting)
        walked.extend(ids(one))
        if not one.next_cursor:
            break
        cursor = one.next_cursor
    assert walked == above


def test_include_scores_adds_metadata_only(light_client: QuarryClient, archive: list[str]) -> None:
    admission = {"lexical_coverage": 0.5}
    plain = light_client.search(WORDS, limit=50, controls=controls(admission=admission))
    scored = light_client.search(WORDS, limit=50, controls=controls(admission=admission, include_scores=True))
    assert ids(plain) == ids(scored) and [h.match.score for h in plain.hits] == [h.match.score for h in scored.hits]
    assert not any(h.match.HasField("scores") for h in plain.hits)
    for hit in scored.hits:
        assert set(hit.match.scores.channels) == {"text"}
        text = hit.match.scores.channels["text"]
        assert (text.metric, text.higher_is_better) == ("tantivy_bm25", True) and text.raw > 0
        assert hit.match.scores.retrieval == pytest.approx(text.raw / (1 + text.raw))
    assert scored.controls.include_scores and not plain.controls.include_scores


def test_a_cursor_minted_under_other_controls_is_stale(light_client: QuarryClient, archive: list[str]) -> None:
    half = controls(admission={"lexical_coverage": 0.5})
    first = light_client.search(WORDS, limit=4, controls=half)
    assert first.next_cursor
    for other in (
        None,
        controls(admission={"lexical_coverage": 0.75}),
        controls(admission={"lexical_coverage": 0.5}, min_score=0.0),
    ):
        with pytest.raises(QuarryError) as raised:
            light_client.search(WORDS, limit=4, cursor=first.next_cursor, controls=other)
        assert raised.value.code == errors_pb2.STALE_CURSOR and "search controls" in raised.value.message
    # include_scores changes only metadata: the walk goes on
    rest = light_client.search(
        WORDS,
        limit=4,
        cursor=first.next_cursor,
        controls=controls(admission={"lexical_coverage": 0.5}, include_scores=True),
    )
    assert rest.hits and not set(ids(rest)) & set(ids(first))


# ----- the hybrid lane, on the cluster with vectors ----------------------------------------------------


def test_weights_change_the_hybrid_order(client: QuarryClient, corpus: dict[str, object]) -> None:
    query = "database locked writers"
    only = {
        channel: controls(
            fusion={"method": "rrf", "params": {"weights": {"text": 0, "action": 0, "vector": 0, channel: 1}}}
        )
        for channel in ("text", "vector")
    }
    by_text = client.search(query, lane="hybrid", controls=only["text"])
    by_vector = client.search(query, lane="hybrid", controls=only["vector"])
    assert ids(by_text) == ids(client.search(query, lane="dialogue"))
    assert ids(by_vector) == ids(client.search(query, lane="semantic"))
    assert ids(by_text) != ids(by_vector)
    assert {h.match.score_kind for h in by_vector.hits} == {"rrf"}
    assert by_vector.hits[0].match.score_components["text_rrf"] == 0.0  # found by text too, weighing 0

    scored = client.search(query, lane="hybrid", controls=controls(include_scores=True))
    first = scored.hits[0].match.scores
    assert 0.0 < first.retrieval <= 1.0 and {"text", "vector"} <= set(first.channels)
    assert (first.channels["vector"].metric, first.channels["vector"].higher_is_better) == ("l2_distance", False)
    # prose fuses by min-max and leaves the actions channel out when it does not speak of tools' work; the
    # query language fuses by RRF and weighs every channel
    prose = scored.controls.fusion
    assert (prose.method, dict(prose.params.weights)) == ("minmax", {"text": 1.0, "action": 0.0, "vector": 1.0})
    syntax = client.search(query, lane="hybrid", controls=controls(include_scores=True), reading="query").controls
    assert (syntax.fusion.method, dict(syntax.fusion.params.weights)) == (
        "rrf",
        {"text": 1.0, "action": 1.0, "vector": 1.0},
    )

    minmax = client.search(query, lane="hybrid", controls=controls(fusion={"method": "minmax"}, include_scores=True))
    assert {h.match.score_kind for h in minmax.hits} == {"minmax"}
    assert all(h.match.score == pytest.approx(h.match.scores.retrieval) for h in minmax.hits)


def test_the_semantic_threshold_removes_the_vector_channels_weak_hits(
    client: QuarryClient, corpus: dict[str, object]
) -> None:
    query = "two processes write the same database file at once"
    every = client.search(query, lane="semantic", limit=50, controls=controls(include_scores=True))
    similarities = [h.match.scores.retrieval for h in every.hits]
    assert len(similarities) > 1 and similarities[0] > similarities[-1]
    threshold = (similarities[0] + similarities[-1]) / 2
    strict = client.search(
        query, lane="semantic", limit=50, controls=controls(admission={"min_semantic_similarity": threshold})
    )
    assert ids(strict) == [h.session.id for h, s in zip(every.hits, similarities, strict=True) if s >= threshold]
