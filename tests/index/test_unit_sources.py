"""Every unit source (docs/query-language.md#unit-queries) as terminal rows: its own fields, text,
session scope, time order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, index_pb2, plan_pb2
from tests.index import plans as p
from tests.index.sessions import BASE_MS
from tests.index.unit_archive import DAY, open_partition, sid


@pytest.fixture(scope="module")
def units_partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    yield from open_partition(tmp_path_factory)


def ids(partition: LexicalPartition, request: index_pb2.PartitionUnitsRequest) -> list[str]:
    return [r.sort_id for r in partition.query_units(request).rows]


@pytest.mark.parametrize(
    ("unit", "where", "expected"),
    [
        (
            "messages",
            p.field("role", "assistant"),
            [f"{sid(n)}:m1" for n in ("edit-run", "run-edit", "quiet", "edit-run/agent-1")],
        ),
        ("actions", p.field("action", "shell"), [f"{sid('edit-run')}:action:1", f"{sid('run-edit')}:action:0"]),
        ("blocks", p.all_(p.field("type", "code"), p.text("journal_mode")), [f"{sid('quiet')}:m1:1"]),
        (
            "files",
            p.all_(p.field("action", "file_edit"), p.field("path", "src/pool")),
            [f"{sid(n)}:file:src/pool.py" for n in ("edit-run", "run-edit")],
        ),
        ("assertions", p.all_(p.field("kind", "decision"), p.text("review")), ["a-decision"]),
        (
            "runs",
            p.all_(p.field("role", "subagent"), p.field("status", "completed"), p.field("agent", "Explore")),
            [f"{sid('edit-run')}:run:1"],
        ),
        (
            "observed-events",
            p.all_(p.field("delivery_state", "acted_on"), p.text("#2100")),
            [f"{sid('run-edit')}:event:0"],
        ),
        ("context-snapshots", p.field("boundary", "session_start"), [f"{sid('quiet')}:snapshot:0"]),
        (
            "delegations",
            p.all_(p.field("mapping_state", "resolved"), p.field("instruction", "review")),
            [f"{sid('edit-run')}:delegation:1"],
        ),
    ],
)
def test_each_unit_source_filters_its_rows(
    units_partition: LexicalPartition, unit: str, where: plan_pb2.Predicate, expected: list[str]
) -> None:
    rows = units_partition.query_units(p.units(unit, where)).rows
    assert [r.sort_id for r in rows] == expected
    assert all(r.WhichOneof("row") is not None and r.session_id for r in rows)
    assert [r.sort_time_ms for r in rows] == sorted(r.sort_time_ms for r in rows)


def test_rows_carry_the_unit_payload(units_partition: LexicalPartition) -> None:
    run = units_partition.query_units(p.units("runs", p.field("agent", "explore"))).rows[0]
    assert run.run.child_session_id == sid("edit-run/agent-1") and run.run.model == "opus"
    assert run.sort_time_ms == BASE_MS + 90_000 and run.session_id == sid("edit-run")
    assertion = units_partition.query_units(p.units("assertions", p.field("status", "candidate"))).rows[0]
    assert assertion.assertion.body == "pytest is flaky here" and assertion.session_id == sid("run-edit")
    file = units_partition.query_units(p.units("files", p.field("path", "pool"), limit=1)).rows[0]
    assert file.file.categories["file_edit"] == 2


def test_sort_by_time_descending_and_limit(units_partition: LexicalPartition) -> None:
    for unit in ("files", "runs", "delegations", "assertions", "messages"):
        ascending = ids(units_partition, p.units(unit))
        descending = ids(units_partition, p.units(unit, descending=True))
        assert ascending, unit
        assert [r.sort_time_ms for r in units_partition.query_units(p.units(unit, descending=True)).rows] == sorted(
            (r.sort_time_ms for r in units_partition.query_units(p.units(unit)).rows), reverse=True
        )
        assert set(descending) == set(ascending)
        assert ids(units_partition, p.units(unit, descending=True, limit=1)) == descending[:1]


def test_session_scope_and_session_fields_on_derived_units(units_partition: LexicalPartition) -> None:
    # `files where session.repo:other`, `sessions where repo:quarry | files where …`
    scoped = p.all_(p.field("repo", "other", session_scoped=True), p.field("path", "pool"))
    assert ids(units_partition, p.units("files", scoped)) == [f"{sid('run-edit')}:file:src/pool.py"]
    assert ids(units_partition, p.units("files", p.field("path", "pool"), scope=p.field("repo", "quarry"))) == [
        f"{sid('edit-run')}:file:src/pool.py"
    ]
    # assertions link to their session by id
    assert ids(units_partition, p.units("assertions", scope=p.field("repo", "other"))) == ["a-caveat"]
    on_count = p.field("messages", "5", op=plan_pb2.GE, session_scoped=True)
    assert ids(units_partition, p.units("context-snapshots", on_count)) == [f"{sid('quiet')}:snapshot:0"]
    # a session predicate with exists as the scope of a unit query
    has_snapshot = plan_pb2.Predicate(exists=plan_pb2.ExistsPredicate(unit="context-snapshot"))
    assert ids(units_partition, p.units("messages", p.field("role", "user"), scope=has_snapshot)) == [
        f"{sid('quiet')}:m0"
    ]


def test_numeric_and_date_fields_of_units(units_partition: LexicalPartition) -> None:
    assert ids(units_partition, p.units("context-snapshots", p.field("tokens_before", "1200", op=plan_pb2.LE))) == [
        f"{sid('quiet')}:snapshot:0"
    ]
    assert ids(units_partition, p.units("context-snapshots", p.field("tokens_before", "1200", op=plan_pb2.LT))) == []
    since = p.field("date", str(BASE_MS + DAY), op=plan_pb2.GE)
    assert ids(units_partition, p.units("files", since)) == [f"{sid('run-edit')}:file:src/pool.py"]
    assert ids(units_partition, p.units("runs", p.field("model", "OPUS"))) == [f"{sid('edit-run')}:run:1"]


def test_unit_field_negation_is_the_complement_within_the_unit(units_partition: LexicalPartition) -> None:
    every = ids(units_partition, p.units("runs"))
    sub = ids(units_partition, p.units("runs", p.field("role", "subagent")))
    rest = ids(units_partition, p.units("runs", p.not_(p.field("role", "subagent"))))
    assert sub and rest and not set(sub) & set(rest) and sorted(sub + rest) == sorted(every)


def test_unknown_fields_of_derived_units_fail_typed(units_partition: LexicalPartition) -> None:
    with pytest.raises(QuarryError) as error:
        units_partition.query_units(p.units("runs", p.field("boundary", "x")))
    assert error.value.code == errors_pb2.UNKNOWN_FIELD
    with pytest.raises(QuarryError) as unit:
        units_partition.query_units(p.units("sessions"))
    assert unit.value.code == errors_pb2.INVALID_REQUEST
