"""A partition stores raw records with their payloads held apart and gives them back whole when asked: the
raw read is the source's lines byte for byte; other reads stay compact (placeholders and where they are).
A payload is stored once for the sessions quoting it and deleted with the last of them."""

from __future__ import annotations

import sqlite3

import orjson
import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.ingest.parse import parse_bytes
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2
from tests import held_logs

OTHER_UUID = "9b0e4c1d-2f3a-4e5b-8c6d-7e8f9a0b1c2d"


def _parsed(data: bytes) -> units_pb2.Session:
    (session,) = parse_bytes(data, "/logs/genome.jsonl").sessions
    return session


def _read(partition: LexicalPartition, session_id: str, **flags: bool) -> list[units_pb2.SessionEvent]:
    return list(partition.read_events(sessions_pb2.PartitionReadEvents(session_id=session_id, **flags)).events)


def _stored_payloads(partition: LexicalPartition) -> int:
    conn = sqlite3.connect(partition.directory / "store.sqlite3")
    try:
        return conn.execute("SELECT COUNT(*) FROM held_payloads").fetchone()[0]
    finally:
        conn.close()


def test_the_raw_read_gives_back_the_source_lines(fresh: LexicalPartition) -> None:
    fresh.upsert([_parsed(held_logs.log_bytes())])
    whole = _read(fresh, held_logs.SESSION_ID, with_payloads=True)
    assert [e.raw_json for e in whole] == held_logs.lines()
    assert not any(e.held for e in whole)
    compact = _read(fresh, held_logs.SESSION_ID, full=True)  # a window, a surface: placeholders stay
    assert [len(e.held) for e in compact] == [0, 1, 0, 1, 1]
    image = compact[3]
    marker = orjson.loads(image.raw_json[image.held[0].start : image.held[0].end])
    assert (marker["held_apart"], marker["media_type"]) == ("media", "image/png")
    assert held_logs.PNG.replace("/", "\\/").encode() not in image.raw_json
    assert sum(len(e.raw_json) for e in compact) < sum(len(line) for line in held_logs.lines()) - 4000


def test_a_payload_is_stored_once_and_deleted_with_its_last_session(fresh: LexicalPartition) -> None:
    lines = held_logs.lines()
    fresh.upsert([_parsed(b"\n".join(lines[:2]) + b"\n")])  # the log as it stood after its signed reply
    assert _stored_payloads(fresh) == 1
    fresh.upsert([_parsed(held_logs.log_bytes())])  # grown: the signature stays, two payloads come
    other = _parsed(held_logs.log_bytes(OTHER_UUID))  # another session quoting the same three
    fresh.upsert([other])
    assert _stored_payloads(fresh) == 3
    assert [e.raw_json for e in _read(fresh, other.id, with_payloads=True)] == held_logs.lines(OTHER_UUID)
    fresh.delete([held_logs.SESSION_ID])
    assert _stored_payloads(fresh) == 3  # the other session still holds them
    assert [e.raw_json for e in _read(fresh, other.id, with_payloads=True)] == held_logs.lines(OTHER_UUID)
    fresh.delete([other.id])
    assert _stored_payloads(fresh) == 0


def test_a_replaced_version_takes_the_payloads_only_it_held(fresh: LexicalPartition) -> None:
    fresh.upsert([_parsed(held_logs.log_bytes())])
    fresh.upsert([_parsed(b"\n".join(held_logs.lines()[:2]) + b"\n")])  # a shorter version replaces it
    assert _stored_payloads(fresh) == 1
    assert [e.raw_json for e in _read(fresh, held_logs.SESSION_ID, with_payloads=True)] == held_logs.lines()[:2]


def test_a_payload_missing_from_the_store_is_a_corrupt_session(fresh: LexicalPartition) -> None:
    fresh.upsert([_parsed(held_logs.log_bytes())])
    conn = sqlite3.connect(fresh.directory / "store.sqlite3")
    conn.execute("DELETE FROM held_payloads WHERE rowid = (SELECT MIN(rowid) FROM held_payloads)")
    conn.commit()
    conn.close()
    with pytest.raises(QuarryError) as caught:
        _read(fresh, held_logs.SESSION_ID, with_payloads=True)
    assert caught.value.code == errors_pb2.CORRUPT_SESSION and "which the store lacks" in caught.value.message
