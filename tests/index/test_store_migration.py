"""A partition store of format 7 is brought to format 8 in place when opened (actions gain exit_code and
followup; the rows it held keep their values), and a store of a format no migration reaches is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.store import FORMAT_VERSION
from quarry.v1 import errors_pb2, index_pb2
from tests.index.sessions import Msg, Tool, session


def _failing(native_id: str) -> object:
    return session(native_id, [Msg("assistant", "Running the tests.", tools=[Tool("Bash", "shell", failed=True)])])


def _action_ids(shard: LexicalPartition, query: str) -> list[str]:
    plan = compile_query(query).plan
    return [r.sort_id for r in shard.query_units(index_pb2.ShardUnitsRequest(plan=plan, limit=50)).rows]


def _as_format_7(directory: Path) -> None:
    """Rewind the store's file to format 7: the actions table without this format's columns."""
    conn = sqlite3.connect(directory / "store.sqlite3")
    for column in ("exit_code", "followup"):
        conn.execute(f"ALTER TABLE actions DROP COLUMN {column}")
    conn.execute("PRAGMA user_version=7")
    conn.commit()
    conn.close()


def test_a_format_7_store_is_migrated_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    shard = LexicalPartition(tmp_path / "p0", 0)
    old = _failing("old")
    shard.upsert([old])
    shard.close()
    _as_format_7(tmp_path / "p0")
    shard = LexicalPartition(tmp_path / "p0", 0)
    try:
        assert _action_ids(shard, "actions where is_error:true") == [old.actions[0].id]
        new = _failing("new")
        new.actions[0].exit_code = 2
        new.actions[0].followup = "ambiguous"
        shard.upsert([new])
        assert _action_ids(shard, "actions where exit_code = 2") == [new.actions[0].id]
        assert _action_ids(shard, "actions where followup_class:ambiguous") == [new.actions[0].id]
    finally:
        shard.close()
    (version,) = sqlite3.connect(tmp_path / "p0" / "store.sqlite3").execute("PRAGMA user_version").fetchone()
    assert version == FORMAT_VERSION == 8


def test_a_store_of_a_format_without_a_migration_is_refused(tmp_path: Path) -> None:
    LexicalPartition(tmp_path / "p0", 0).close()
    conn = sqlite3.connect(tmp_path / "p0" / "store.sqlite3")
    conn.execute("PRAGMA user_version=5")
    conn.commit()
    conn.close()
    with pytest.raises(QuarryError) as refused:
        LexicalPartition(tmp_path / "p0", 0)
    assert refused.value.code == errors_pb2.SHARD_UNAVAILABLE
    assert "format 5" in refused.value.message
