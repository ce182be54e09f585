"""`has:FEATURE` finds the sessions holding the feature (and `session.has:` a unit row's owning session);
each feature is the same plan as the explicit form it stands for. `is_error:` selects failed tool calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl.compile import compile_query
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, index_pb2, units_pb2
from tests.index.sessions import Msg, Tool, session

EQUIVALENT = {
    "has:tools": "tool_use_messages > 0",
    "has:thinking": "thinking_messages > 0",
    "has:paste": "paste_messages > 0",
    "has:images": "exists block(type:image)",
    "has:errors": "exists action(is_error:true)",
    "has:subagents": "exists run(role:subagent)",
    "has:compaction": "exists context-snapshot(boundary:compaction)",
}


@pytest.mark.parametrize(("feature", "explicit"), EQUIVALENT.items())
def test_each_feature_is_the_plan_of_its_explicit_form(feature: str, explicit: str) -> None:
    assert compile_query(f"sessions where {feature}").plan == compile_query(f"sessions where {explicit}").plan


def archive() -> list[units_pb2.Session]:
    plain = session("plain", [Msg("user", "hello"), Msg("assistant", "hi")])
    plain.cwd = "/home/Dev/ledger"
    thinking = session("thinks", [Msg("user", "why"), Msg("assistant", "because", thinking="let me see")])
    tools = session(
        "tools", [Msg("user", "run it"), Msg("assistant", "ok", tools=[Tool("Bash", "shell", command="ls")])]
    )
    failing = session(
        "fails",
        [Msg("user", "run it"), Msg("assistant", "ok", tools=[Tool("Bash", "shell", command="false", failed=True)])],
    )
    failing.runs.add(id=f"{failing.id}:run:sub", session_id=failing.id, role="subagent", status="completed")
    # the counts ingest derives from the messages (quarry.ingest.normalize)
    thinking.counts.thinking_messages = 1
    tools.counts.tool_use_messages = failing.counts.tool_use_messages = 1
    return [plain, thinking, tools, failing]


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    made = LexicalPartition(Path(tmp_path_factory.mktemp("features")), 0)
    made.upsert(archive())
    yield made
    made.close()


def natives(partition: LexicalPartition, query: str) -> set[str]:
    plan = compile_query(query).plan
    hits = partition.search(index_pb2.PartitionSearchRequest(plan=plan, lane="dialogue", limit=50)).hits
    return {h.session.id.split(":", 1)[1] for h in hits}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("has:tools", {"tools", "fails"}),
        ("has:thinking", {"thinks"}),
        ("has:errors", {"fails"}),
        ("has:subagents", {"fails"}),
        ("has:(thinking|errors)", {"thinks", "fails"}),
        ("-has:tools", {"plain", "thinks"}),
        ("sessions where has:tools AND NOT has:errors", {"tools"}),
        ("has:images", set()),
        ("has:compaction", set()),
    ],
)
def test_has_finds_the_sessions_holding_the_feature(
    partition: LexicalPartition, query: str, expected: set[str]
) -> None:
    assert natives(partition, query) == expected


def test_session_has_scopes_unit_rows_by_their_session(partition: LexicalPartition) -> None:
    plan = compile_query("messages where role:user AND session.has:errors").plan
    rows = partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows
    assert {r.session_id.split(":", 1)[1] for r in rows} == {"fails"}


def test_is_error_selects_the_failed_tool_calls(partition: LexicalPartition) -> None:
    for value, expected in (("true", ["false"]), ("false", ["ls"])):
        plan = compile_query(f"actions where is_error:{value}").plan
        rows = partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows
        assert [r.action.command for r in rows] == expected


def test_an_unknown_feature_names_the_features() -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query("has:nonsense")
    assert caught.value.code == errors_pb2.BAD_VALUE and "tools, thinking" in caught.value.message


def test_has_in_a_unit_query_is_corrected_to_its_session_form() -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query("messages where has:tools")
    assert caught.value.correction == "messages where session.has:tools"


def test_cwd_matches_a_part_of_the_working_directory_in_any_case(partition: LexicalPartition) -> None:
    assert natives(partition, "cwd:dev/LEDGER") == {"plain"}
    plan = compile_query("messages where session.cwd:ledger").plan
    rows = partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows
    assert {r.session_id.split(":", 1)[1] for r in rows} == {"plain"}


def test_a_message_type_is_a_block_type_it_holds(partition: LexicalPartition) -> None:
    for block_type, expected in (("thinking", ["because"]), ("tool_use", ["ok", "ok"])):
        plan = compile_query(f"messages where type:{block_type}").plan
        rows = partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows
        assert [next(b.text for b in r.message.blocks if b.type == "text") for r in rows] == expected


def derived_rows(partition: LexicalPartition, query: str) -> list[str]:
    plan = compile_query(query).plan
    return [r.sort_id for r in partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows]


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    """Runs and context snapshots with models, token counts, branches and working directories."""
    s = session("derived", [Msg("user", "go"), Msg("assistant", "done")])
    for n, (model, uses, tokens) in enumerate((("claude-opus", 5, 900), ("claude-haiku", 1, 12_000))):
        s.runs.add(
            id=f"{s.id}:run:{n}", session_id=s.id, role="subagent", status="completed", model=model,
            tool_uses=uses, total_tokens=tokens, started_ms=1_750_000_000_000 + n,
        )  # fmt: skip
    for n, (branch, cwd, before) in enumerate((("main", "/home/Dev/ledger", 0), ("fix-7", "/srv/api", 150_000))):
        s.snapshots.add(
            id=f"{s.id}:snapshot:{n}", session_id=s.id, seq=n, boundary="compaction" if before else "session_start",
            model="claude-opus", branch=branch, cwd=cwd, tokens_before=before, time_ms=1_750_000_000_000 + n,
        )  # fmt: skip
    made = LexicalPartition(Path(tmp_path_factory.mktemp("derived")), 0)
    made.upsert([s])
    yield made
    made.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("runs where model:CLAUDE-OPUS", ["run:0"]),
        ("runs where tool_uses >= 2", ["run:0"]),
        ("runs where total_tokens:>10000", ["run:1"]),
        ("runs where role:subagent | sort by time desc", ["run:1", "run:0"]),
        ("context-snapshots where branch:fix-7", ["snapshot:1"]),
        ("context-snapshots where cwd:dev/ledger", ["snapshot:0"]),
        ("context-snapshots where tokens_before > 100000 AND model:claude-opus", ["snapshot:1"]),
    ],
)
def test_run_and_snapshot_fields(derived: LexicalPartition, query: str, expected: list[str]) -> None:
    assert [row.rsplit(":", 2)[-2] + ":" + row.rsplit(":", 1)[-1] for row in derived_rows(derived, query)] == expected
