"""Errors a user can cause: the code, where it points, the token, and what was expected."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.core.vocab import ACTION_CATEGORIES, BLOCK_TYPES, ORIGINS, ROLES
from quarry.dsl import MAX_QUERY_CHARS, compile_query, parse
from quarry.v1 import errors_pb2


def _fail(query: str) -> QuarryError:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    return caught.value


def _code(error: QuarryError) -> str:
    return errors_pb2.ErrorCode.Name(error.code)


# ---------------------------------------------------------------- syntax


def test_unfinished_group_points_at_the_end_and_lists_what_could_follow() -> None:
    query = "sessions where repo:x AND ("
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    assert (error.offset, error.line, error.column) == (len(query), 1, len(query) + 1)
    assert error.token == ""
    assert {"field:value", '~"full-text"', "(", "NOT"} <= set(error.expected)
    # a `where` predicate holds no bare text, so a word is not offered
    assert "word" not in error.expected


@pytest.mark.parametrize("query", ["messages where", "sessions where", "actions where  ", "blocks where"])
def test_where_with_nothing_after_is_an_error_not_text(query: str) -> None:
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    assert error.offset == len(query)


def test_misspelled_where_after_a_unit_names_the_token() -> None:
    error = _fail("messages wher x")
    assert _code(error) == "INVALID_QUERY"
    assert (error.offset, error.token, error.expected) == (9, "wher", ["where"])


@pytest.mark.parametrize(("query", "token"), [("sessions where )", ")"), ("messages where AND x", "AND")])
def test_where_followed_by_junk_is_an_error(query: str, token: str) -> None:
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    assert error.token == token
    assert error.offset == query.index(token, len("messages where") - 1)


def test_bare_text_after_where_is_refused_with_a_hint() -> None:
    error = _fail("sessions where repo:x AND timeout")
    assert _code(error) == "INVALID_QUERY"
    assert (error.offset, error.token) == (26, "timeout")
    assert '~"timeout"' in error.message and "text:timeout" in error.message


def test_position_is_line_and_column_on_multi_line_queries() -> None:
    error = _fail("sessions where repo:x\n  AND foo:bar")
    assert _code(error) == "UNKNOWN_FIELD"
    assert (error.offset, error.line, error.column, error.token) == (28, 2, 7, "foo")


def test_unclosed_quote_points_at_the_quote() -> None:
    error = _fail('repo:x "null pointer')
    assert _code(error) == "INVALID_QUERY"
    assert (error.offset, error.token) == (7, '"')
    assert "not closed" in error.message


def test_error_inside_a_fts_leaf_points_into_the_query() -> None:
    query = 'sessions where ~"a \\"b"'
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    # the unclosed inner phrase starts at the escaped quote
    assert query[error.offset : error.offset + 2] == '\\"'


def test_unfinished_fts_leaf_points_at_its_closing_quote() -> None:
    query = 'sessions where ~"a AND (" AND repo:x'
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    assert error.offset == query.index('" AND repo')


@pytest.mark.parametrize(
    ("query", "offset"),
    [("a - b", 2), ("foo | bar", 4), ("repo: x", 0), ("*", 0), ("messages where role:user | frob", 27)],
)
def test_other_syntax_errors_are_typed_and_positioned(query: str, offset: int) -> None:
    error = _fail(query)
    assert _code(error) == "INVALID_QUERY"
    assert error.offset == offset


def test_a_lone_star_is_not_a_prefix() -> None:
    assert "word before" in _fail("refactor *").message


def test_overlong_and_overdeep_queries_are_refused() -> None:
    assert _code(_fail("a " * (MAX_QUERY_CHARS // 2 + 1))) == "INVALID_QUERY"
    assert "nests deeper" in _fail("NOT " * 100 + "repo:x").message
    assert "nests deeper" in _fail('~"' + "NOT " * 100 + 'a"').message
    # redundant parentheses add no depth
    assert compile_query("(" * 100 + "a" + ")" * 100).has_text


def test_parse_reports_syntax_errors_the_same_way() -> None:
    with pytest.raises(QuarryError) as caught:
        parse("messages where")
    assert _code(caught.value) == "INVALID_QUERY"


def test_error_detail_carries_position_token_and_expected() -> None:
    detail = _fail("messages wher x").to_detail()
    assert (detail.position.offset, detail.position.line, detail.position.column) == (9, 1, 10)
    assert (detail.token, list(detail.expected)) == ("wher", ["where"])


# ---------------------------------------------------------------- fields


def test_unknown_field_points_at_the_field() -> None:
    error = _fail("repo:x foo:bar")
    assert _code(error) == "UNKNOWN_FIELD"
    assert (error.offset, error.token) == (7, "foo")
    assert "repo" in error.expected


def test_unknown_field_alone() -> None:
    error = _fail("foo:bar")
    assert (_code(error), error.offset, error.token) == ("UNKNOWN_FIELD", 0, "foo")


def test_session_field_in_a_unit_query_suggests_session_prefix() -> None:
    error = _fail("messages where repo:polylogue")
    assert _code(error) == "UNKNOWN_FIELD"
    assert "session.repo" in error.message


def test_session_id_in_a_unit_query_is_spelled_session_id() -> None:
    error = _fail("messages where session:codex-session:abc")
    assert _code(error) == "UNKNOWN_FIELD"
    assert "session.id" in error.message


def test_unknown_session_scoped_field() -> None:
    error = _fail("messages where session.colour:red")
    assert (_code(error), error.token) == ("UNKNOWN_FIELD", "session.colour")
    assert "session.id" in error.expected


@pytest.mark.parametrize(
    "query",
    [
        "sessions where session.repo:x",
        'messages where session.text:"x"',
        "messages where session.role:user",
        "messages where exists action(tool:bash)",
        "sessions where exists message(exists block(type:code))",
        "sessions where seq(session.repo:x -> tool:bash)",
        "actions where lineage:id:codex-session:a",
    ],
)
def test_forms_not_available_here_are_unsupported(query: str) -> None:
    assert _code(_fail(query)) in {"UNSUPPORTED_FORM", "UNKNOWN_FIELD"}


@pytest.mark.parametrize(
    ("query", "offset", "allowed"),
    [
        ("origin:claude_code", 7, ORIGINS),
        ("messages where role:admin", 20, ROLES),
        ("blocks where type:pdf", 18, BLOCK_TYPES),
        ("actions where action:edit", 21, ACTION_CATEGORIES),
        ("origin:(codex-session|claude_code)", 22, ORIGINS),
    ],
)
def test_closed_vocabulary_value_is_bad_value_naming_the_allowed(
    query: str, offset: int, allowed: tuple[str, ...]
) -> None:
    error = _fail(query)
    assert _code(error) == "BAD_VALUE"
    assert error.offset == offset
    assert error.expected == list(allowed)
    assert all(value in error.message for value in allowed)


@pytest.mark.parametrize("query", ["session:abc123", "session:claude_code:abc", "session:codex-session:"])
def test_session_id_must_name_an_origin(query: str) -> None:
    error = _fail(query)
    assert (_code(error), error.offset) == ("BAD_VALUE", 8)


@pytest.mark.parametrize("query", ['title:""', "messages where text:*", 'sessions where semantic:"  "'])
def test_empty_values_are_bad_values(query: str) -> None:
    assert _code(_fail(query)) == "BAD_VALUE"


# ---------------------------------------------------------------- negation


@pytest.mark.parametrize(
    ("query", "offset", "token"),
    [
        ("-title:x", 1, "title"),
        ("sessions where NOT path:src", 19, "path"),
        ("actions where NOT (tool:bash OR command:rm)", 32, "command"),
        ("messages where NOT session.title:x", 19, "session.title"),
        ("-session:codex-session:a", 1, "session"),
    ],
)
def test_negating_an_unsafe_field_is_refused(query: str, offset: int, token: str) -> None:
    error = _fail(query)
    assert _code(error) == "UNSUPPORTED_NEGATION"
    assert (error.offset, error.token) == (offset, token)
    assert "tag" in error.expected or "tool" in error.expected


def test_double_negation_is_not_negation() -> None:
    assert compile_query("sessions where NOT NOT title:x").plan.where.negate.negate.field.field == "title"


def test_semantic_leaf_cannot_be_negated() -> None:
    assert _code(_fail('-semantic:"x"')) == "UNSUPPORTED_NEGATION"


# ---------------------------------------------------------------- semantic, units, stages


def test_semantic_leaf_in_a_session_scope_stage_is_unsupported() -> None:
    query = 'sessions where semantic:"flaky test" | messages where role:user'
    error = _fail(query)
    assert (_code(error), error.offset) == ("UNSUPPORTED_FORM", 15)


def test_near_text_in_a_session_scope_stage_is_unsupported() -> None:
    assert _code(_fail("sessions where near:text:retry | actions where tool:bash")) == "UNSUPPORTED_FORM"


def test_two_semantic_leaves_are_unsupported() -> None:
    error = _fail('sessions where semantic:"a" AND near:text:b')
    assert (_code(error), error.offset) == ("UNSUPPORTED_FORM", 32)


def test_count_after_a_row_stage_points_at_the_count() -> None:
    query = "sessions where repo:x | runs where role:main | sort by time | count"
    error = _fail(query)
    assert (_code(error), error.offset) == ("UNSUPPORTED_FORM", query.index("count"))
    assert error.expected == ["group by"]


@pytest.mark.parametrize(
    "query",
    ["messages where role:user | limit 0", "messages where role:user | limit 99999999999"],
)
def test_limit_out_of_range_is_bad_value(query: str) -> None:
    error = _fail(query)
    assert _code(error) == "BAD_VALUE"
    assert error.offset == query.index("limit") + len("limit ")


def test_offset_zero_is_fine() -> None:
    assert compile_query("messages where role:user | offset 0").plan.stages[0].offset == 0
