"""The SQL a partition runs reaches its rows through an index, never a scan of a whole unit table.

The store keeps only the indexes these paths use (every index costs ingest time); SQLite plans without
statistics, so the plans checked here on a small store are the plans of a large one.
"""

from __future__ import annotations

import pytest

from quarry.index.lexical.fulltext import FullText
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.predicates import Lowering, Sql
from quarry.index.lexical.rows import listing_sql
from quarry.v1 import plan_pb2
from tests.index import plans as p


def query_plan(partition: LexicalPartition, sql: Sql) -> str:
    partition._store.ready_for_units()  # the functions and the id collation unit queries use
    rows = partition._store.reader().execute(f"EXPLAIN QUERY PLAN {sql.text}", sql.params).fetchall()
    return " | ".join(row[3] for row in rows)


def lowering(partition: LexicalPartition) -> Lowering:
    return Lowering(FullText(partition._index.searcher(), partition._index.schema, partition._store))


@pytest.mark.parametrize(
    ("unit", "where", "descending", "index"),
    [
        ("messages", p.field("role", "user"), False, "messages_time"),
        ("messages", p.field("role", "user"), True, "messages_time"),
        ("messages", p.field("tool", "bash"), False, "blocks_message"),
        ("blocks", p.field("type", "text"), False, "blocks_time"),
        ("blocks", p.field("type", "text"), True, "blocks_time"),
        ("actions", p.field("tool", "bash"), True, "actions_tool_time"),
        ("actions", p.field("action", "shell"), False, "actions_category_time"),
        ("actions", p.field("path", "src/db"), True, "actions_time"),
    ],
)
def test_unit_listings_walk_a_time_index(
    fresh: LexicalPartition, unit: str, where: plan_pb2.Predicate, descending: bool, index: str
) -> None:
    plan = query_plan(fresh, listing_sql(unit, lowering(fresh).unit(unit, where), descending, 50))
    assert f"INDEX {index}" in plan
    assert "SCAN u USING" in plan or "SEARCH u USING" in plan  # never a bare `SCAN u`
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan  # only the right part (ids of equal times) is sorted


@pytest.mark.parametrize(
    ("where", "seek"),
    [
        (p.field("tool", "bash"), "SEARCH a USING COVERING INDEX actions_tool"),
        (p.field("action", "shell"), "SEARCH a USING COVERING INDEX actions_category"),
        (p.field("path", "src/db"), "SEARCH a USING INDEX actions_session"),
        (p.field("tag", "db"), "SEARCH t USING PRIMARY KEY"),
        (p.field("role", "user"), "SEARCH m USING COVERING INDEX messages_session"),
    ],
)
def test_session_filters_seek_per_session(fresh: LexicalPartition, where: plan_pb2.Predicate, seek: str) -> None:
    condition = lowering(fresh).session(where)
    candidates = Sql(
        f"SELECT s.ord FROM sessions s WHERE s.ord IN (SELECT value FROM json_each(?)) AND {condition.text}",
        ["[1, 2, 3]", *condition.params],
    )
    plan = query_plan(fresh, candidates)
    assert "SEARCH s USING INTEGER PRIMARY KEY" in plan
    assert seek in plan
