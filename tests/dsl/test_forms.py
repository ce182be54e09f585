"""The forms of the full language: comparisons, dates, exists, seq, lineage / near, unit sources and
aggregate pipelines; what each lowers to and how each fails."""

from __future__ import annotations

import time

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import UNIT_SOURCES, compile_query
from quarry.dsl.fields import EXISTS_UNITS, GROUP_FIELDS, planned_name
from quarry.v1 import errors_pb2, plan_pb2
from tests.dsl.plans import all_, cmp, count, exists, field, group_by, lineage, neg, sort_by

NOW = 1_767_312_000_000  # 2026-01-02T00:00:00Z
DAY = 86_400_000
JAN_1 = NOW - DAY  # start of 2026-01-01


def _where(query: str) -> plan_pb2.Predicate:
    return compile_query(query, now_ms=NOW).plan.where


def _fail(query: str) -> QuarryError:
    with pytest.raises(QuarryError) as caught:
        compile_query(query, now_ms=NOW)
    return caught.value


def _code(query: str) -> str:
    return errors_pb2.ErrorCode.Name(_fail(query).code)


# ---------------------------------------------------------------- counts and numbers


@pytest.mark.parametrize("op", [">", ">=", "<", "<=", "="])
def test_each_comparison_operator_is_distinct(op: str) -> None:
    assert _where(f"sessions where messages {op} 5") == cmp("messages", op, 5)
    assert _where(f"messages:{op}5") == all_(cmp("messages", op, 5))


def test_compact_count_without_operator_is_equality() -> None:
    assert _where("tool_messages:0") == all_(cmp("tool_messages", "=", 0))


def test_comparisons_negate_as_a_whole() -> None:
    assert _where("sessions where NOT messages > 5") == neg(cmp("messages", ">", 5))


def test_message_numbers_belong_to_messages_and_exists_message() -> None:
    assert _where("messages where output_tokens < 10") == cmp("output_tokens", "<", 10)
    assert _where("sessions where exists message(cache_read_tokens:>=1)") == exists(
        "messages", cmp("cache_read_tokens", ">=", 1)
    )
    error = _fail("sessions where input_tokens >= 5")
    assert (errors_pb2.ErrorCode.Name(error.code), error.token) == ("UNKNOWN_FIELD", "input_tokens")


def test_session_counts_inside_a_unit_query_are_session_scoped() -> None:
    assert _where("messages where session.words between 1 and 9") == cmp("words", "between", 1, 9, scoped=True)
    assert "session.words" in _fail("actions where words >= 5").message
    # a message has words of its own (issue 14)
    assert _where("messages where words >= 5") == cmp("words", ">=", 5)


def test_costs_compare_with_decimals_and_whole_numbers_stay_whole() -> None:
    assert _where("runs where cost_usd > 0.25") == cmp("cost_usd", ">", 0.25)
    assert _where("messages where cost_usd:>=1") == cmp("cost_usd", ">=", 1.0)
    assert _where("runs where cost_usd between 0.001 and 2.5") == cmp("cost_usd", "between", 0.001, 2.5)
    error = _fail("runs where total_tokens > 0.5")
    assert error.code == errors_pb2.BAD_VALUE and "not a whole number" in error.message
    assert _code("runs where cost_usd > 1.2.3") == "BAD_VALUE"


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("messages:>=many", "BAD_VALUE"),
        ("sessions where words between 500 and 100", "BAD_VALUE"),
        ("sessions where messages >= -1", "BAD_VALUE"),
        ("messages:>=99999999999999999999", "BAD_VALUE"),
        ("messages:(1|2)", "UNSUPPORTED_FORM"),
        ("since:>=7d", "BAD_VALUE"),
    ],
)
def test_bad_comparison_values_are_typed(query: str, code: str) -> None:
    assert _code(query) == code


# ---------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("date:>=2026-01-01", cmp("date", ">=", JAN_1)),
        ("date:>2026-01-01", cmp("date", ">", JAN_1 + DAY - 1)),
        ("date:<=2026-01-01", cmp("date", "<=", JAN_1 + DAY - 1)),
        ("date:<2026-01-01", cmp("date", "<", JAN_1)),
        ("date:2026-01-01", cmp("date", "between", JAN_1, JAN_1 + DAY - 1)),
        ("date between 2026-01-01 and 2026-01-02", cmp("date", "between", JAN_1, NOW + DAY - 1)),
        ("since:2026-01-01", cmp("date", ">=", JAN_1)),
        ("until:2026-01-01", cmp("date", "<=", JAN_1 + DAY - 1)),
        ("since:7d", cmp("date", ">=", NOW - 7 * DAY)),
        ("since:24h", cmp("date", ">=", NOW - DAY)),
        ("since:2w", cmp("date", ">=", NOW - 14 * DAY)),
        ("date:yesterday", cmp("date", "between", JAN_1, JAN_1 + DAY - 1)),
        ("date:today", cmp("date", "between", NOW, NOW + DAY - 1)),
        ("until:yesterday", cmp("date", "<=", JAN_1 + DAY - 1)),
        ("date:>=2026-01-01T12:00Z", cmp("date", ">=", JAN_1 + DAY // 2)),
        ("date:>=2026-01-01T12:00+02:00", cmp("date", ">=", JAN_1 + DAY // 2 - 2 * 3_600_000)),
        ("date >= 2026-01-01T12:00", cmp("date", ">=", JAN_1 + DAY // 2)),
    ],
)
def test_dates_resolve_to_epoch_ms_bounds(query: str, expected: plan_pb2.Predicate) -> None:
    assert _where(query) == all_(expected)


def test_relative_dates_default_to_the_current_time() -> None:
    before = int(time.time() * 1000)
    bound = int(compile_query("since:1d").plan.where.all.items[0].field.values[0])
    assert before - DAY <= bound <= int(time.time() * 1000) - DAY


def test_unit_rows_compare_their_own_time_and_session_dates_are_scoped() -> None:
    assert _where("actions where since:1d") == cmp("date", ">=", NOW - DAY)
    assert _where("runs where session.until:2026-01-01") == cmp("date", "<=", JAN_1 + DAY - 1, scoped=True)


@pytest.mark.parametrize("value", ["2026-13-01", "2026-02-30", "tomorrow", "7y", "last-week", "2026-1-1"])
def test_bad_dates_are_bad_values_naming_the_forms(value: str) -> None:
    error = _fail(f"date:>={value}")
    assert errors_pb2.ErrorCode.Name(error.code) == "BAD_VALUE"
    assert "yesterday" in error.message


# ---------------------------------------------------------------- exists, seq, lineage, near


_SAMPLE_CLAUSE = {
    "message": "role:user",
    "action": "tool:bash",
    "block": "type:code",
    "file": "path:src",
    "assertion": "kind:caveat",
    "run": "agent:Explore",
    "observed-event": "object_ref:pytest",
    "context-snapshot": "boundary:compaction",
    "delegation": "mapping_state:unresolved",
}


@pytest.mark.parametrize(("singular", "unit"), sorted(EXISTS_UNITS.items()))
def test_exists_accepts_every_unit_in_the_singular(singular: str, unit: str) -> None:
    where = _where(f"sessions where exists {singular}(session.repo:x AND {_SAMPLE_CLAUSE[singular]})")
    assert where.exists.unit == unit
    assert where.exists.where.all.items[0] == field("repo", "x", scoped=True)
    assert where.exists.where.all.items[1].field.field == _SAMPLE_CLAUSE[singular].split(":")[0]


def test_exists_negates_and_nests_in_boolean_structure() -> None:
    assert _where("sessions where repo:x AND NOT exists run(status:failed)") == all_(
        field("repo", "x"), neg(exists("runs", field("status", "failed")))
    )


@pytest.mark.parametrize(
    ("query", "code", "needle"),
    [
        ("sessions where exists messages(role:user)", "UNSUPPORTED_FORM", "exists message("),
        ("sessions where exists widget(role:user)", "UNSUPPORTED_FORM", "observed-event"),
        ("sessions where exists message(repo:x)", "UNKNOWN_FIELD", "session.repo"),
        ('sessions where exists message(semantic:"x")', "UNSUPPORTED_FORM", "exists body"),
        ("sessions where exists message(exists block(type:code))", "UNSUPPORTED_FORM", "session predicate"),
        ("messages where role:user AND exists action(tool:bash)", "UNSUPPORTED_FORM", "sessions where exists"),
        ("sessions where seq(role:user -> action:shell)", "UNKNOWN_FIELD", "actions have no field"),
        ("sessions where seq(session.repo:x -> action:shell)", "UNSUPPORTED_FORM", "seq step"),
        ("sessions where NOT near:id:codex-session:a", "UNSUPPORTED_NEGATION", "near:id"),
        ("near:codex-session:a", "BAD_VALUE", "near:id:"),
        ("lineage:id:Codex_X:a", "BAD_VALUE", "origin"),  # not spelled as an origin is
        ("actions where lineage:id:codex-session:a", "UNSUPPORTED_FORM", "session predicate"),
    ],
)
def test_session_predicates_fail_typed_where_they_do_not_apply(query: str, code: str, needle: str) -> None:
    error = _fail(query)
    assert errors_pb2.ErrorCode.Name(error.code) == code
    assert needle in error.message


def test_lineage_negates_and_session_id_is_checked() -> None:
    assert _where("-lineage:id:claude-code-session:root") == all_(neg(lineage("claude-code-session:root")))
    assert _where('sessions where near:id:"codex-session:a b"').near_session == "codex-session:a b"


# ---------------------------------------------------------------- unit sources and aggregates


def test_every_unit_source_compiles() -> None:
    assert set(UNIT_SOURCES) == set(EXISTS_UNITS.values())
    for unit in UNIT_SOURCES:
        compiled = compile_query(f"{unit} where session.origin:codex-session | sort by time desc | limit 5")
        assert (compiled.kind, compiled.plan.unit) == ("units", unit)


@pytest.mark.parametrize(("unit", "fields"), sorted(GROUP_FIELDS.items()))
def test_aggregate_units_group_by_their_closed_fields(unit: str, fields: tuple[str, ...]) -> None:
    for name in fields:
        stages = compile_query(f"{unit} where session.repo:x | group by {name} | count | sort by key desc").plan.stages
        planned = planned_name(unit, name)  # another name for a field groups by that field
        assert list(stages) == [group_by(planned), count(), sort_by("key", descending=True)]


def test_every_unit_aggregates() -> None:
    assert set(GROUP_FIELDS) == set(UNIT_SOURCES)


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("messages where role:user | group by colour | count", "UNKNOWN_FIELD"),
        ("messages where role:user | group by text | count", "UNSUPPORTED_FORM"),
        ("messages where role:user | group by session.title | count", "UNSUPPORTED_FORM"),
        ("messages where role:user | group by role", "UNSUPPORTED_FORM"),
        ("messages where role:user | sort by count", "UNSUPPORTED_FORM"),
        ("messages where role:user | group by role | count | sort by time", "UNSUPPORTED_FORM"),
        ("messages where role:user | limit 5 | group by role | count", "UNSUPPORTED_FORM"),
        ("messages where role:user | group by role | count | group by role | count", "UNSUPPORTED_FORM"),
        ("messages where role:user | open", "UNSUPPORTED_FORM"),
    ],
)
def test_malformed_pipelines_fail_typed(query: str, code: str) -> None:
    assert _code(query) == code


@pytest.mark.parametrize(
    ("unit", "query"),
    [
        ("files", "files where path:src AND NOT action:file_read"),
        ("assertions", "assertions where author:user AND NOT status:deleted"),
        ("runs", "runs where NOT role:main AND duration_ms > 1000"),
        ("observed-events", "observed-events where kind:api_error AND date:>=2026-01-01"),
        ("context-snapshots", 'context-snapshots where trigger:auto AND text:"summary"'),
        ("delegations", "delegations where result_state:failed AND tool:Task AND agent:Explore"),
    ],
)
def test_unit_specific_fields_lower(unit: str, query: str) -> None:
    assert compile_query(query, now_ms=NOW).plan.unit == unit


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("assertions where kind:opinion", "BAD_VALUE"),
        ("runs where status:done", "BAD_VALUE"),
        ("delegations where NOT instruction:x", "UNSUPPORTED_NEGATION"),
        ("files where tool:bash", "UNKNOWN_FIELD"),
    ],
)
def test_unit_specific_fields_validate(query: str, code: str) -> None:
    assert _code(query) == code
