"""A partition store of an earlier format is brought to this one in place when opened, the rows it held
keeping their values: format 7 gains actions' exit_code and followup (8), format 8 the payloads held apart
from raw records (9: its records stay as format 8 wrote them until their source is ingested again, which
then reads back byte for byte), format 9 sessions' host and pusher (10: empty for the sessions it held);
a store of a format no migration reaches is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.store_schema import FORMAT_VERSION
from quarry.ingest.parse import parse_bytes
from quarry.v1 import errors_pb2, index_pb2, sessions_pb2, units_pb2
from tests import held_logs
from tests.index.sessions import Msg, Tool, session


def _failing(native_id: str) -> object:
    return session(native_id, [Msg("assistant", "Running the tests.", tools=[Tool("Bash", "shell", failed=True)])])


def _action_ids(partition: LexicalPartition, query: str) -> list[str]:
    plan = compile_query(query).plan
    return [r.sort_id for r in partition.query_units(index_pb2.PartitionUnitsRequest(plan=plan, limit=50)).rows]


def _as_format(directory: Path, version: int) -> None:
    """Rewind the store's file to format 9 (no sessions' host and pusher), 8 (nor held payloads) or 7 (nor
    actions' exit_code and followup)."""
    conn = sqlite3.connect(directory / "store.sqlite3")
    for column in ("host", "pusher"):
        conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    if version <= 8:
        for table in ("held_payloads", "session_held_payloads"):
            conn.execute(f"DROP TABLE {table}")
    if version == 7:
        for column in ("exit_code", "followup"):
            conn.execute(f"ALTER TABLE actions DROP COLUMN {column}")
    conn.execute(f"PRAGMA user_version={version}")
    conn.commit()
    conn.close()


def _user_version(directory: Path) -> int:
    conn = sqlite3.connect(directory / "store.sqlite3")
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_a_format_7_store_is_migrated_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    partition = LexicalPartition(tmp_path / "p0", 0)
    old = _failing("old")
    partition.upsert([old])
    partition.close()
    _as_format(tmp_path / "p0", 7)
    partition = LexicalPartition(tmp_path / "p0", 0)
    try:
        assert _action_ids(partition, "actions where is_error:true") == [old.actions[0].id]
        new = _failing("new")
        new.actions[0].exit_code = 2
        new.actions[0].followup = "ambiguous"
        partition.upsert([new])
        assert _action_ids(partition, "actions where exit_code = 2") == [new.actions[0].id]
        assert _action_ids(partition, "actions where followup_class:ambiguous") == [new.actions[0].id]
    finally:
        partition.close()
    assert _user_version(tmp_path / "p0") == FORMAT_VERSION == 10


def _raw_records(partition: LexicalPartition, **flags: bool) -> list[bytes]:
    request = sessions_pb2.PartitionReadEvents(session_id=held_logs.SESSION_ID, **flags)
    return [e.raw_json for e in partition.read_events(request).events]


def _as_format_8_wrote_it(parsed: units_pb2.Session) -> units_pb2.Session:
    """The session as format 8 stored it: no payloads held apart, the DNA message's 4,000 bases omitted."""
    old = units_pb2.Session()
    old.CopyFrom(parsed)
    old.ClearField("held_payloads")
    old.ClearField("content_hash")  # the partition digests this content instead: format 8's hash was another
    for event in old.log_events:
        event.ClearField("held")
    record = orjson.loads(held_logs.lines()[0])
    record["message"]["content"] = {"omitted": "base64", "media_type": "", "bytes": 3000, "sha256": "…"}
    old.log_events[0].raw_json = orjson.dumps(record)
    return old


def test_a_format_8_store_is_migrated_in_place_and_a_new_ingest_reads_back_whole(tmp_path: Path) -> None:
    parsed = parse_bytes(held_logs.log_bytes(), "/logs/genome.jsonl").sessions[0]
    partition = LexicalPartition(tmp_path / "p0", 0)
    partition.upsert([_as_format_8_wrote_it(parsed)])
    before = _raw_records(partition, full=True)
    partition.close()
    _as_format(tmp_path / "p0", 8)
    partition = LexicalPartition(tmp_path / "p0", 0)
    try:
        assert _user_version(tmp_path / "p0") == FORMAT_VERSION
        assert _raw_records(partition, with_payloads=True) == before  # its records as format 8 wrote them
        partition.upsert([parsed])  # the source ingested again
        assert _raw_records(partition, with_payloads=True) == held_logs.lines()
    finally:
        partition.close()


def test_a_format_9_store_gains_hosts_and_pushers(tmp_path: Path) -> None:
    partition = LexicalPartition(tmp_path / "p0", 0)
    partition.upsert([_failing("old")])
    partition.close()
    _as_format(tmp_path / "p0", 9)
    partition = LexicalPartition(tmp_path / "p0", 0)
    try:
        pushed = _failing("pushed")
        pushed.host, pushed.pusher = "ana-laptop", "ana"
        partition.upsert([pushed])
        held = partition.facets(index_pb2.PartitionFacetsRequest(families=["hosts", "pushers"]))
        assert {f.family: {c.value: c.count for c in f.global_counts} for f in held.families} == {
            "hosts": {"ana-laptop": 1},
            "pushers": {"ana": 1},
        }
        assert _action_ids(partition, "actions where session.host:ana-laptop") == [pushed.actions[0].id]
        assert len(_action_ids(partition, "actions where is_error:true")) == 2  # the old session's rows kept
    finally:
        partition.close()
    assert _user_version(tmp_path / "p0") == FORMAT_VERSION


def test_a_store_of_a_format_without_a_migration_is_refused(tmp_path: Path) -> None:
    LexicalPartition(tmp_path / "p0", 0).close()
    conn = sqlite3.connect(tmp_path / "p0" / "store.sqlite3")
    conn.execute("PRAGMA user_version=5")
    conn.commit()
    conn.close()
    with pytest.raises(QuarryError) as refused:
        LexicalPartition(tmp_path / "p0", 0)
    assert refused.value.code == errors_pb2.NODE_UNAVAILABLE
    assert "format 5" in refused.value.message
