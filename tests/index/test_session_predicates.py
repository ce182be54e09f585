"""Session predicates on a partition: comparisons, dates, exists per unit, seq, lineage; aggregates; and
negation that splits a set in two disjoint halves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, index_pb2, plan_pb2
from tests.index import plans as p
from tests.index.sessions import BASE_MS
from tests.index.unit_archive import DAY, open_partition, sid

Predicate = plan_pb2.Predicate
ALL = sorted(sid(n) for n in ("edit-run", "run-edit", "quiet", "edit-run/agent-1"))


@pytest.fixture(scope="module")
def units_partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    yield from open_partition(tmp_path_factory)


def sessions(partition: LexicalPartition, where: Predicate) -> list[str]:
    return partition.match_session_ids(where)


def names(*native: str) -> list[str]:
    return sorted(sid(n) for n in native)


def exists(unit: str, where: Predicate | None = None) -> Predicate:
    predicate = plan_pb2.ExistsPredicate(unit=unit)
    if where is not None:
        predicate.where.CopyFrom(where)
    return Predicate(exists=predicate)


def seq(*steps: Predicate) -> Predicate:
    return Predicate(seq=plan_pb2.SeqPredicate(steps=list(steps)))


def action(category: str) -> Predicate:
    return p.field("action", category)


# messages: edit-run 4, run-edit 5, quiet 6, child 3
@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        (plan_pb2.COMPARISON_UNSPECIFIED, ["5"], ["run-edit"]),
        (plan_pb2.GE, ["5"], ["run-edit", "quiet"]),
        (plan_pb2.GT, ["5"], ["quiet"]),
        (plan_pb2.LE, ["5"], ["edit-run", "run-edit", "edit-run/agent-1"]),
        (plan_pb2.LT, ["5"], ["edit-run", "edit-run/agent-1"]),
        (plan_pb2.BETWEEN, ["4", "5"], ["edit-run", "run-edit"]),
    ],
)
def test_count_comparisons_are_distinct_at_the_boundary(
    units_partition: LexicalPartition, op: int, values: list[str], expected: list[str]
) -> None:
    assert sessions(units_partition, p.field("messages", *values, op=op)) == names(*expected)


def test_numeric_fields_of_sessions_and_messages(units_partition: LexicalPartition) -> None:
    assert sessions(units_partition, p.field("duration_ms", "60000", op=plan_pb2.GE)) == names("run-edit", "quiet")
    assert sessions(units_partition, p.field("duration_ms", "60000", op=plan_pb2.GT)) == names("quiet")
    assistant_ids = {
        op: [
            r.session_id
            for r in units_partition.query_units(p.units("messages", p.field("input_tokens", "1000", op=op))).rows
        ]
        for op in (plan_pb2.GT, plan_pb2.GE, plan_pb2.COMPARISON_UNSPECIFIED, plan_pb2.LT)
    }
    assert assistant_ids[plan_pb2.GT] == [sid("quiet")]
    assert assistant_ids[plan_pb2.GE] == [sid("run-edit"), sid("quiet")]
    assert assistant_ids[plan_pb2.COMPARISON_UNSPECIFIED] == [sid("run-edit")]
    below = p.all_(p.field("role", "assistant"), p.field("input_tokens", "1000", op=plan_pb2.LT))
    assert [r.session_id for r in units_partition.query_units(p.units("messages", below)).rows] == [
        sid("edit-run"),
        sid("edit-run/agent-1"),  # no token counts: 0
    ]


def test_dates_compare_the_session_update_time(units_partition: LexicalPartition) -> None:
    # updated_ms: the last message; edit-run's is BASE + 4 min, run-edit's DAY + 3 min, quiet's 2 DAY + 1 min
    day1 = str(BASE_MS + DAY)
    assert sessions(units_partition, p.field("date", day1, op=plan_pb2.LT)) == names("edit-run")
    assert sessions(units_partition, p.field("date", day1, op=plan_pb2.GE)) == names(
        "run-edit", "quiet", "edit-run/agent-1"
    )
    between = p.field("date", day1, str(BASE_MS + 2 * DAY + 60_000), op=plan_pb2.BETWEEN)
    assert sessions(units_partition, between) == names("run-edit", "quiet")
    assert sessions(units_partition, p.field("date", "2025-06-15")) == names("edit-run")  # BASE_MS is on that day (UTC)


@pytest.mark.parametrize(
    ("unit", "where", "expected"),
    [
        ("message", p.all_(p.field("role", "assistant"), p.text("editing")), ["edit-run"]),
        ("messages", p.field("input_tokens", "1001", op=plan_pb2.GE), ["quiet"]),
        ("action", p.all_(p.field("tool", "bash"), p.text("pytest")), ["edit-run", "run-edit"]),
        ("block", p.all_(p.field("type", "code"), p.text("wal")), ["quiet"]),
        ("file", p.all_(p.field("repo", "other", session_scoped=True), p.field("path", "pool")), ["run-edit"]),
        ("assertion", p.field("kind", "decision"), ["edit-run"]),
        ("run", p.field("role", "subagent"), ["edit-run"]),
        ("observed-event", p.field("kind", "tool_finished"), ["run-edit"]),
        ("context-snapshot", None, ["quiet"]),
        ("delegation", p.field("agent", "explore"), ["edit-run"]),
    ],
)
def test_exists_for_every_unit(
    units_partition: LexicalPartition, unit: str, where: Predicate | None, expected: list[str]
) -> None:
    assert sessions(units_partition, exists(unit, where)) == names(*expected)


def test_exists_joins_other_session_clauses_and_scopes_session_search(units_partition: LexicalPartition) -> None:
    both = p.all_(p.field("origin", "claude-code-session"), exists("action", action("shell")))
    assert sessions(units_partition, both) == names("edit-run", "run-edit")
    hits = units_partition.search(p.search(p.all_(p.text("pool"), exists("delegation")))).hits
    assert [h.session.id for h in hits] == [sid("edit-run")]


def test_seq_matches_an_ordered_subsequence(units_partition: LexicalPartition) -> None:
    assert sessions(units_partition, seq(action("file_edit"), action("shell"))) == names("edit-run")
    assert sessions(units_partition, seq(action("shell"), action("file_edit"))) == names("edit-run", "run-edit")
    # both actions, any order: what exists alone says
    unordered = p.all_(exists("action", action("file_edit")), exists("action", action("shell")))
    assert sessions(units_partition, unordered) == names("edit-run", "run-edit")
    # three steps, not adjacent, a step with two clauses
    failed_shell = p.all_(action("shell"), p.field("output", "failed"))
    assert sessions(units_partition, seq(action("file_edit"), failed_shell, action("file_edit"))) == names("edit-run")
    assert sessions(units_partition, seq(action("file_edit"), action("file_edit"), action("shell"))) == []
    # a step never matches the same action twice
    assert sessions(units_partition, seq(action("shell"), action("shell"))) == []


def test_lineage_selects_the_whole_family(units_partition: LexicalPartition) -> None:
    family = names("edit-run", "edit-run/agent-1")
    assert sessions(units_partition, Predicate(lineage=sid("edit-run/agent-1"))) == family
    assert sessions(units_partition, Predicate(lineage=sid("edit-run"))) == family
    scoped = p.units("messages", p.field("role", "user"), scope=Predicate(lineage=sid("edit-run")))
    assert {r.session_id for r in units_partition.query_units(scoped).rows} == set(family)


def groups(partition: LexicalPartition, unit: str, field: str, where: Predicate | None = None) -> dict[str, int]:
    plan = plan_pb2.QueryPlan(unit=unit)
    if where is not None:
        plan.where.CopyFrom(where)
    plan.stages.add(group_by=field)
    plan.stages.add(count=True)
    response = partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan))
    assert not response.rows
    return {g.key: g.count for g in response.groups}


def test_group_by_count(units_partition: LexicalPartition) -> None:
    assert groups(units_partition, "messages", "role") == {"user": 4, "assistant": 4, "tool": 6}
    assert groups(units_partition, "messages", "role", p.text("pool")) == {"user": 2}
    assert groups(units_partition, "actions", "tool") == {"edit": 3, "bash": 2, "read": 1}
    assert groups(units_partition, "actions", "action") == {"file_edit": 3, "shell": 2, "file_read": 1}
    assert groups(units_partition, "blocks", "type", p.field("type", "code")) == {"code": 1}
    assert groups(units_partition, "files", "path") == {"src/pool.py": 2}
    assert groups(units_partition, "assertions", "kind") == {"decision": 1, "caveat": 1}
    assert groups(units_partition, "assertions", "status") == {"active": 1, "candidate": 1}
    assert groups(units_partition, "messages", "session.origin", p.field("role", "user")) == {
        "claude-code-session": 3,
        "codex-session": 1,
    }
    assert groups(units_partition, "actions", "session.repo") == {"quarry": 4, "other": 2}
    assert groups(units_partition, "actions", "is_error") == {"false": 4, "true": 2}  # unit_archive's SHELL fails
    with pytest.raises(QuarryError) as error:
        groups(units_partition, "runs", "colour")
    assert error.value.code == errors_pb2.UNKNOWN_FIELD


X_Y_PAIRS = [
    (p.field("origin", "claude-code-session"), p.field("tool", "bash")),
    (p.field("messages", "4", op=plan_pb2.GE), exists("action", action("file_edit"))),
    (exists("message", p.field("role", "assistant")), seq(action("file_edit"), action("shell"))),
    (Predicate(lineage=sid("edit-run")), p.text("pool")),
    (p.field("repo", "quarry"), exists("assertion", p.field("status", "active"))),
]


@pytest.mark.parametrize(("x", "y"), X_Y_PAIRS)
def test_x_and_not_y_and_x_and_y_split_x(units_partition: LexicalPartition, x: Predicate, y: Predicate) -> None:
    with_y = set(sessions(units_partition, p.all_(x, y)))
    without_y = set(sessions(units_partition, p.all_(x, p.not_(y))))
    assert not with_y & without_y
    assert with_y | without_y == set(sessions(units_partition, x))


@pytest.mark.parametrize(
    ("unit", "x", "y"),
    [
        ("messages", p.field("role", "assistant"), p.text("pool")),
        ("actions", p.field("tool", "edit"), p.field("repo", "other", session_scoped=True)),
        ("blocks", p.not_(p.field("type", "text")), p.field("tool", "bash")),
        ("delegations", p.field("agent", "explore"), p.field("instruction", "leaks")),
        ("assertions", p.text("pool"), p.field("status", "active")),
    ],
)
def test_unit_negation_splits_rows(units_partition: LexicalPartition, unit: str, x: Predicate, y: Predicate) -> None:
    def rows(where: Predicate) -> set[str]:
        return {r.sort_id for r in units_partition.query_units(p.units(unit, where, limit=1000)).rows}

    with_y, without_y = rows(p.all_(x, y)), rows(p.all_(x, p.not_(y)))
    assert not with_y & without_y
    assert with_y | without_y == rows(x)


def test_everything_is_every_session(units_partition: LexicalPartition) -> None:
    assert sessions(units_partition, Predicate()) == ALL
