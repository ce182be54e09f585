"""The query node's merge of unit queries: rows from every partition in one order, the window cut after the
merge, aggregate groups summed across partitions and ordered as the query asks."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from quarry.core import id_order
from quarry.query import units
from quarry.v1 import index_pb2, plan_pb2, units_pb2

SortStage = plan_pb2.SortStage
Stage = plan_pb2.PipelineStage


def message_row(session: str, seq: int, time_ms: int) -> index_pb2.UnitRow:
    mid = f"{session}:m{seq}"
    return index_pb2.UnitRow(
        message=units_pb2.Message(id=mid, session_id=session, seq=seq, time_ms=time_ms),
        session_id=session,
        sort_time_ms=time_ms,
        sort_id=mid,
    )


def partition_streams(
    rows: list[index_pb2.UnitRow], partitions: int, descending: bool
) -> list[list[index_pb2.UnitRow]]:
    """Rows dealt to partitions by session, each partition's stream sorted as a partition returns it."""
    streams: list[list[index_pb2.UnitRow]] = [[] for _ in range(partitions)]
    for row in rows:
        streams[int(row.session_id.rsplit("-", 1)[1]) % partitions].append(row)
    return [sorted(s, key=sort_key(descending)) for s in streams]


def sort_key(descending: bool) -> Callable[[index_pb2.UnitRow], tuple[int, object]]:
    """The partitions' row order: time (descending when asked), ties on the id ascending either way, in
    the ids' natural order (quarry.core.id_order: `s-5` before `s-31`)."""
    sign = -1 if descending else 1
    return lambda r: (sign * r.sort_time_ms, id_order.key(r.sort_id))


@pytest.fixture(scope="module")
def rows() -> list[index_pb2.UnitRow]:
    # 40 sessions on 4 distinct times: most rows tie on time with rows of other partitions
    generator = random.Random(7)
    out = []
    for n in range(40):
        session = f"claude-code-session:s-{n}"
        out.extend(message_row(session, seq, 1_000 * generator.randint(1, 4)) for seq in range(3))
    generator.shuffle(out)
    return out


def full_sort(rows: list[index_pb2.UnitRow], descending: bool) -> list[str]:
    return [r.sort_id for r in sorted(rows, key=sort_key(descending))]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("partitions", [1, 3])
def test_merged_rows_follow_time_then_id_across_partitions(
    rows: list[index_pb2.UnitRow], partitions: int, descending: bool
) -> None:
    merged, after = units.merge_rows(partition_streams(rows, partitions, descending), 1000, 0, descending)
    assert [r.message.id for r in merged] == full_sort(rows, descending)
    assert after is None  # nothing follows the last row


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(("limit", "offset"), [(5, 0), (7, 11), (50, 100), (10, 200)])
def test_offset_and_limit_cut_the_merged_stream(
    rows: list[index_pb2.UnitRow], limit: int, offset: int, descending: bool
) -> None:
    # each partition returned only its first offset + limit + 1 rows, as the query node asks it to
    streams = [s[: offset + limit + 1] for s in partition_streams(rows, 3, descending)]
    merged, after = units.merge_rows(streams, limit, offset, descending)
    expected = full_sort(rows, descending)
    assert [r.message.id for r in merged] == expected[offset : offset + limit]
    # a row follows the page exactly when the listing goes on; the next page starts after its last row
    assert (after is not None) == (len(expected) > offset + limit)
    if after is not None:
        assert after.id == expected[offset + limit - 1]


def test_every_unit_kind_keeps_its_payload_and_gets_its_public_ref() -> None:
    sid = "codex-session:abc"
    payloads = {
        "message": units_pb2.Message(id=f"{sid}:m1"),
        "action": units_pb2.Action(id=f"{sid}:action:2"),
        "block": units_pb2.Block(id=f"{sid}:m1:0"),
        "file": units_pb2.FileTouch(id=f"{sid}:file:src/a.py", path="src/a.py"),
        "assertion": units_pb2.Assertion(id="a1", kind="decision"),
        "run": units_pb2.Run(id=f"{sid}:run:main", role="main"),
        "observed_event": units_pb2.ObservedEvent(id=f"{sid}:event:3"),
        "context_snapshot": units_pb2.ContextSnapshot(id=f"{sid}:snapshot:0"),
        "delegation": units_pb2.Delegation(id=f"{sid}:delegation:1"),
    }
    refs = {}
    for kind, payload in payloads.items():
        row = index_pb2.UnitRow(session_id=sid, sort_id=payload.id, **{kind: payload})
        out = units.query_row(row)
        assert getattr(out, kind) == payload
        assert out.session_id == sid
        refs[kind] = out.ref
    assert refs == {
        "message": f"message:{sid}:m1",
        "action": f"action:{sid}:action:2",
        "block": f"block:{sid}:m1:0",
        "file": f"file:{sid}:file:src/a.py",
        "assertion": "assertion:a1",
        "run": f"run:{sid}:run:main",
        "observed_event": f"observed-event:{sid}:event:3",
        "context_snapshot": f"context-snapshot:{sid}:snapshot:0",
        "delegation": f"delegation:{sid}:delegation:1",
    }


# ----- aggregates --------------------------------------------------------------------------------

PARTITION_GROUPS = [
    {"assistant": 5, "user": 3, "tool": 1},
    {"user": 4, "system": 2},
    {"assistant": 2, "tool": 6, "": 1},
]  # totals: assistant 7, user 7, tool 7, system 2, "" 1


def aggregate_plan(*stages: Stage, unit: str = "messages") -> plan_pb2.QueryPlan:
    return plan_pb2.QueryPlan(unit=unit, stages=[Stage(group_by="role"), Stage(count=True), *stages])


def responses() -> list[index_pb2.PartitionUnitsResponse]:
    return [
        index_pb2.PartitionUnitsResponse(
            partition=i, groups=[index_pb2.AggregateRow(key=k, count=n) for k, n in groups.items()]
        )
        for i, groups in enumerate(PARTITION_GROUPS)
    ]


def groups_of(plan: plan_pb2.QueryPlan, limit: int = 50, offset: int = 0) -> list[tuple[str, int]]:
    envelope = units.envelope("q", plan, responses(), limit, offset)
    assert envelope.aggregate and envelope.group_by == "role" and not envelope.rows
    return [(g.key, g.count) for g in envelope.groups]


def test_group_counts_are_summed_over_partitions_count_desc_then_key() -> None:
    assert groups_of(aggregate_plan()) == [("assistant", 7), ("tool", 7), ("user", 7), ("system", 2), ("", 1)]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        (SortStage(key="count", descending=False), ["", "system", "assistant", "tool", "user"]),
        (SortStage(key="count", descending=True), ["assistant", "tool", "user", "system", ""]),
        (SortStage(key="key", descending=False), ["", "assistant", "system", "tool", "user"]),
        (SortStage(key="key", descending=True), ["user", "tool", "system", "assistant", ""]),
    ],
)
def test_sort_stage_orders_the_groups(sort: SortStage, expected: list[str]) -> None:
    assert [k for k, _ in groups_of(aggregate_plan(Stage(sort=sort)))] == expected


def test_group_window_applies_after_sum_and_order() -> None:
    plan = aggregate_plan(Stage(sort=SortStage(key="key")), Stage(limit=2), Stage(offset=1))
    assert groups_of(plan) == [("assistant", 7), ("system", 2)]
    assert groups_of(aggregate_plan(), limit=2, offset=3) == [("system", 2), ("", 1)]


def test_no_groups_anywhere_is_an_empty_aggregate() -> None:
    empty = [index_pb2.PartitionUnitsResponse(partition=i) for i in range(3)]
    envelope = units.envelope("q", aggregate_plan(), empty, 50, 0)
    assert envelope.aggregate and envelope.group_by == "role" and list(envelope.groups) == []


# ----- the query's own window --------------------------------------------------------------------


def row_plan(*stages: Stage) -> plan_pb2.QueryPlan:
    return plan_pb2.QueryPlan(unit="messages", stages=list(stages))


def test_a_limit_in_the_query_narrows_the_callers_and_an_offset_adds(rows: list[index_pb2.UnitRow]) -> None:
    plan = row_plan(Stage(sort=SortStage(key="time", descending=True)), Stage(limit=4), Stage(offset=2))
    assert units.partition_limit(plan, 10, 1) == 3 + 4 + 1  # one more: whether more follow
    assert units.partition_limit(plan, 10, 1, continuing=True) == 4 + 1  # a cursor's page: offsets are behind it
    streams = [s[:8] for s in partition_streams(rows, 3, descending=True)]
    envelope = units.envelope("q", plan, [index_pb2.PartitionUnitsResponse(rows=s) for s in streams], 10, 1)
    assert (envelope.limit, envelope.offset, envelope.aggregate) == (4, 3, False)
    assert [r.message.id for r in envelope.rows] == full_sort(rows, descending=True)[3:7]
    # the caller's smaller limit wins over the query's
    assert units.envelope("q", plan, [], 2, 0).limit == 2


def test_agg_partials_merge_across_partitions_as_over_one() -> None:
    """sum, avg, min and max merge from each partition's partials; percentiles from every value (nearest
    rank); a field no row of a group has is empty, not 0."""
    pairs = [("count", ""), *((f, "x") for f in ("sum", "avg", "min", "max", "p50", "p90")), ("max", "y")]
    functions = [plan_pb2.AggregateFunction(function=f, field=field) for f, field in pairs]
    values = {"a": [[4.0, 1.0], [10.0, 2.0, 3.0]], "b": [[7.0], []]}

    def partition(i: int) -> list[index_pb2.AggregateRow]:
        rows = []
        for key, per_partition in values.items():
            xs = per_partition[i]
            row = index_pb2.AggregateRow(key=key, count=len(xs) + 1)  # one more row, without x
            if xs:
                row.fields.add(field="x", count=len(xs), sum=sum(xs), min=min(xs), max=max(xs), values=xs)
            rows.append(row)
        return rows

    groups, total = units.merge_groups([partition(0), partition(1)], 50, 0, "key", False, functions)
    assert total == 2
    got = {g.key: {v.name: None if v.empty else v.value for v in g.values} for g in groups}
    assert got["a"] == {
        "count": 7, "sum:x": 20, "avg:x": 4, "min:x": 1, "max:x": 10, "p50:x": 3, "p90:x": 10, "max:y": None
    }  # fmt: skip
    assert got["b"] == {
        "count": 3,
        "sum:x": 7,
        "avg:x": 7,
        "min:x": 7,
        "max:x": 7,
        "p50:x": 7,
        "p90:x": 7,
        "max:y": None,
    }
