"""What the compiler hands the query node: plan shape, ranking text, matched terms, semantic text."""

from __future__ import annotations

from quarry.dsl import FIELDS_BY_UNIT, compile_query
from tests.dsl.plans import (
    all_,
    any_,
    fall,
    fany,
    field,
    fneg,
    fts,
    neg,
    phrase,
    plan,
    prefix,
    semantic,
    term,
)


def test_matched_terms_strip_operators_quotes_and_stars() -> None:
    compiled = compile_query('"null pointer" AND refactor* NOT test')
    assert compiled.matched_terms == ("null", "pointer", "refactor")
    assert compiled.has_text


def test_matched_terms_dedupe_case_insensitively_keeping_the_first_spelling() -> None:
    compiled = compile_query('Retry retry "RETRY policy" text:(policy|Backoff)')
    assert compiled.matched_terms == ("Retry", "policy", "Backoff")


def test_matched_terms_strip_colons_and_parentheses_inside_terms() -> None:
    assert compile_query('sessions where ~"db:pool(size)"').matched_terms == ("db", "pool", "size")


def test_compact_free_text_is_one_fts_leaf_wherever_it_was_written() -> None:
    compiled = compile_query("pool repo:quarry timeout -flaky")
    expected = fall(term("pool"), term("timeout"), fneg(term("flaky")))
    assert compiled.plan == plan(
        "sessions",
        all_(fts(expected), field("repo", "quarry")),
        ranking=expected,
        semantic_text="pool timeout",
    )


def test_compact_or_between_text_and_field_keeps_both_sides() -> None:
    compiled = compile_query("timeout OR tag:flaky")
    assert compiled.plan.where == all_(any_(fts(term("timeout")), field("tag", "flaky")))
    assert compiled.plan.ranking_text == term("timeout")


def test_compact_explicit_fts_leaf_and_text_field_are_separate_leaves() -> None:
    compiled = compile_query('pool ~"retry OR backoff" text:socket')
    leaves = (term("pool"), fany(term("retry"), term("backoff")), term("socket"))
    assert compiled.plan.where == all_(*(fts(leaf) for leaf in leaves))
    assert compiled.plan.ranking_text == fany(*leaves)


def test_negated_text_alone_becomes_a_negated_predicate() -> None:
    assert compile_query("-flaky").plan.where == all_(neg(fts(term("flaky"))))
    assert compile_query("-flaky -slow").plan.where == all_(neg(fts(fany(term("flaky"), term("slow")))))
    assert not compile_query("-flaky").has_text


def test_negation_inside_or_is_lifted_out_of_the_fts_expression() -> None:
    where = compile_query('sessions where ~"retry OR -backoff"').plan.where
    assert where == any_(fts(term("retry")), neg(fts(term("backoff"))))


def test_ranking_text_ors_the_positive_leaves_and_skips_negated_ones() -> None:
    compiled = compile_query('sessions where ~"pool" AND (text:socket OR repo:x) AND NOT ~"flaky"')
    assert compiled.plan.ranking_text == fany(term("pool"), term("socket"))
    assert compiled.matched_terms == ("pool", "socket")


def test_text_field_values_lower_to_terms_phrases_and_prefixes() -> None:
    where = compile_query('messages where text:(timeout|"null pointer"|refact*)').plan.where
    assert where == fts(fany(term("timeout"), phrase("null pointer"), prefix("refact")))


def test_field_only_queries_have_no_text_to_rank() -> None:
    compiled = compile_query("repo:quarry tag:active")
    assert not compiled.has_text
    assert compiled.matched_terms == ()
    assert compiled.semantic_text == ""
    assert not compiled.plan.HasField("ranking_text")


def test_semantic_leaf_is_the_semantic_text_and_not_ranked_text() -> None:
    compiled = compile_query('sessions where semantic:"pool exhaustion" AND ~"postgres"')
    assert compiled.plan.where == all_(semantic("pool exhaustion"), fts(term("postgres")))
    assert compiled.semantic_text == "pool exhaustion"
    assert compiled.matched_terms == ("postgres",)


def test_semantic_text_falls_back_to_the_positive_free_text() -> None:
    assert compile_query('"connection pool" exhausted -flaky').semantic_text == "connection pool exhausted"


def test_empty_query_selects_every_session() -> None:
    compiled = compile_query("   ")
    assert compiled.kind == "sessions"
    assert compiled.plan == plan("sessions")


def test_closed_values_are_canonicalized_and_tools_lowercased() -> None:
    where = compile_query("origin:Codex-Session role:USER tool:Bash repo:MyRepo").plan.where
    assert where == all_(
        field("origin", "codex-session"),
        field("role", "user"),
        field("tool", "bash"),
        field("repo", "MyRepo"),
    )


def test_session_id_is_scoped_as_session_id_in_unit_queries() -> None:
    where = compile_query("messages where session.id:codex-session:abc AND role:user").plan.where
    assert where == all_(field("session", "codex-session:abc", scoped=True), field("role", "user"))


def test_session_scope_keeps_its_own_text_out_of_the_ranking() -> None:
    compiled = compile_query('sessions where ~"timeout" | messages where role:user AND text:retry')
    assert compiled.plan.session_scope == fts(term("timeout"))
    assert compiled.plan.ranking_text == term("retry")


def test_stages_are_recorded_in_order() -> None:
    stages = compile_query("actions where tool:bash | offset 5 | limit 3 | sort by time | limit 2").plan.stages
    assert [stage.WhichOneof("stage") for stage in stages] == ["offset", "limit", "sort", "limit"]
    assert not stages[2].sort.descending


def test_role_doc_says_it_groups_text_in_a_sessions_query() -> None:
    assert "AND-group" in FIELDS_BY_UNIT["sessions"]["role"].doc
