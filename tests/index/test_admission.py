"""Lexical admission (docs/search-api.md#admission) on a real partition: m of the query's n items, per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.index.lexical import admission, fts, schema
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import index_pb2, plan_pb2
from tests.index import plans as p
from tests.index.conftest import sid
from tests.index.sessions import BASE_MS, Msg, Tool, session

WORDS = ("alpha", "bravo", "charlie", "delta")


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    partition = LexicalPartition(Path(tmp_path_factory.mktemp("admission")), 0)
    partition.upsert(
        [
            session("all4", [Msg("user", "alpha bravo charlie delta")], start_ms=BASE_MS),
            session("three", [Msg("user", "alpha bravo charlie")], start_ms=BASE_MS + 1),
            session("two", [Msg("user", "alpha bravo notes")], start_ms=BASE_MS + 2),
            session("one", [Msg("user", "alpha only here")], start_ms=BASE_MS + 3),
            # three items, each in its own message: admission counts per session
            session(
                "split3",
                [Msg("user", "alpha first"), Msg("assistant", "bravo second"), Msg("user", "charlie third")],
                start_ms=BASE_MS + 4,
            ),
            session("none", [Msg("user", "echo foxtrot golf")], start_ms=BASE_MS + 5),
            session(
                "tool",
                [Msg("assistant", "ran it", tools=[Tool("Bash", "shell", command="alpha bravo --charlie")])],
                start_ms=BASE_MS + 6,
            ),
        ]
    )
    yield partition
    partition.close()


def admitted(
    where: plan_pb2.Predicate, coverage: float | None = None, min_terms: int = 2, **kwargs: object
) -> index_pb2.PartitionSearchRequest:
    request = p.search(where, limit=20, **kwargs)  # type: ignore[arg-type]
    if coverage is not None:
        request.admission.CopyFrom(index_pb2.LexicalAdmission(coverage=coverage, min_matched_terms=min_terms))
    return request


def found(partition: LexicalPartition, request: index_pb2.PartitionSearchRequest) -> set[str]:
    return {h.session.id.split(":", 1)[1] for h in partition.search(request).hits}


@pytest.mark.parametrize(
    ("n", "coverage", "min_terms", "m"),
    [
        (1, 1.0, 64, 1),
        (2, 1.0, 64, 1),  # at most two items: one is enough
        (3, 0.25, 2, 2),
        (4, 0.25, 2, 2),
        (4, 0.75, 2, 3),
        (8, 0.25, 1, 2),
        (8, 0.0, 1, 1),
        (5, 0.5, 9, 5),  # capped at n
        (7, 1.0, 1, 7),
    ],
)
def test_the_required_count_follows_the_admission_rule(n: int, coverage: float, min_terms: int, m: int) -> None:
    assert admission.required_matches(n, coverage, min_terms) == m


def test_without_admission_every_word_must_match_in_one_message(partition: LexicalPartition) -> None:
    assert found(partition, admitted(p.text(*WORDS))) == {"all4"}


@pytest.mark.parametrize(
    ("coverage", "min_terms", "expected"),
    [
        (0.25, 2, {"all4", "three", "two", "split3"}),  # m = 2
        (0.75, 2, {"all4", "three", "split3"}),  # m = 3: split3 holds three items across messages
        (0.0, 1, {"all4", "three", "two", "one", "split3"}),  # m = 1: any word
        (1.0, 1, {"all4"}),  # m = n: the AND, in one message
    ],
)
def test_coverage_admits_sessions_holding_m_of_n_words(
    partition: LexicalPartition, coverage: float, min_terms: int, expected: set[str]
) -> None:
    assert found(partition, admitted(p.text(*WORDS), coverage, min_terms)) == expected


def test_two_words_need_only_one_whatever_the_coverage(partition: LexicalPartition) -> None:
    assert found(partition, admitted(p.text("alpha", "delta"), 1.0, 64)) == {"all4", "three", "two", "one", "split3"}


def test_admitted_sessions_rank_by_bm25_of_the_words_they_hold(partition: LexicalPartition) -> None:
    hits = partition.search(admitted(p.text(*WORDS), 0.0, 1)).hits
    assert hits[0].session.id == sid("all4")
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(h.ranked for h in hits)
    assert set(hits[0].matched_terms) == set(WORDS)


def test_a_negated_word_still_excludes_its_messages(partition: LexicalPartition) -> None:
    words = p.fts(p.fts_all(*(p.term(w) for w in WORDS[:3]), p.fts_not(p.term("delta"))))
    # all4's only message holds delta: it is out, the others keep two of alpha / bravo / charlie
    assert found(partition, admitted(words, 0.25, 2)) == {"three", "two", "split3"}
    assert found(partition, admitted(words)) == {"three"}


def test_a_phrase_is_one_item(partition: LexicalPartition) -> None:
    words = p.fts(p.fts_all(p.phrase("alpha bravo"), p.term("charlie"), p.term("delta")))
    # n = 3, m = 2: the phrase and charlie (three), or the phrase, charlie and delta (all4)
    assert found(partition, admitted(words, 0.25, 2)) == {"all4", "three"}


def test_separate_leaves_are_one_item_each(partition: LexicalPartition) -> None:
    leaves = p.all_(p.text("alpha", "bravo"), p.text("charlie"))
    assert found(partition, admitted(leaves)) == {"all4", "three"}  # both leaves, each in some message
    # two items: one is enough (a message with alpha and bravo, or one with charlie)
    assert found(partition, admitted(leaves, 1.0, 64)) == {"all4", "three", "two", "split3"}


def test_role_clauses_hold_in_the_message_an_item_matches(partition: LexicalPartition) -> None:
    with_role = p.all_(p.text(*WORDS), p.field("role", "user"))
    # split3's bravo is the assistant's: as a user it holds alpha and charlie, still two
    assert found(partition, admitted(with_role, 0.75, 2)) == {"all4", "three"}
    assert found(partition, admitted(with_role, 0.25, 2)) == {"all4", "three", "two", "split3"}


def test_the_actions_lane_admits_on_action_text(partition: LexicalPartition) -> None:
    assert found(partition, admitted(p.text(*WORDS), lane="actions")) == set()
    assert found(partition, admitted(p.text(*WORDS), 0.75, 2, lane="actions")) == {"tool"}


def test_a_cursor_walk_with_admission_serves_every_admitted_session_once(partition: LexicalPartition) -> None:
    full = [h.session.id for h in partition.search(admitted(p.text(*WORDS), 0.25, 2)).hits]
    walked: list[str] = []
    request = admitted(p.text(*WORDS), 0.25, 2)
    request.limit = 1
    anchor = None
    while True:
        hits = partition.search(request, anchor).hits
        if not hits:
            break
        walked.extend(h.session.id for h in hits)
        anchor = index_pb2.PartitionAnchor(
            has_after=True, after_score=hits[-1].score, after_session_id=hits[-1].session.id
        )
    assert walked == full and len(full) == 4


def test_relax_leaves_a_required_and_alone() -> None:
    leaf = fts.compile_fts(p.fts_all(*(p.term(w) for w in WORDS)))
    assert admission.relax([leaf], index_pb2.LexicalAdmission(coverage=1.0, min_matched_terms=1), schema.TEXT) is None
    relaxed = admission.relax([leaf], index_pb2.LexicalAdmission(coverage=0.5, min_matched_terms=1), schema.TEXT)
    assert relaxed is not None and relaxed.required == 2 and relaxed.ranking.kind == "any"
    any_word = index_pb2.LexicalAdmission(coverage=0.0, min_matched_terms=1)
    repeated = fts.compile_fts(p.fts_all(p.term("alpha"), p.term("alpha"), p.term("bravo"), p.term("charlie")))
    assert len(admission.relax([repeated], any_word, schema.TEXT).items) == 3
    forms = fts.compile_fts(p.fts_all(p.term("neurons"), p.term("neuron"), p.term("bravo")))
    assert len(admission.relax([forms], any_word, schema.TEXT).items) == 2  # one stem: one term
    assert len(admission.relax([forms], any_word, schema.ACTIONS).items) == 3  # exact there: two terms
