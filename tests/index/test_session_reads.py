"""The session API's reads on one partition (docs/sessions.md#session-reads): stored events come back
whole, filters select, search ranks, and a version of a session read from another file is refused when
its log contradicts the stored one."""

from __future__ import annotations

from pathlib import Path

import orjson

from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.session_rows import EVENTS_PER_CHUNK
from quarry.ingest.parse import parse_bytes
from quarry.v1 import sessions_pb2
from tests.ingest.support import FIXTURES

COMPACTED = FIXTURES / "claude_code" / "compacted.jsonl"
SID = "claude-code-session:sess-4"


def _parsed(data: bytes, path: str):  # type: ignore[no-untyped-def]
    (session,) = parse_bytes(data, path).sessions
    return session


def _read(partition: LexicalPartition, *filters: sessions_pb2.EventFilter, full: bool = True):  # type: ignore[no-untyped-def]
    request = sessions_pb2.PartitionReadEvents(session_id=SID, filters=filters, full=full)
    return partition.read_events(request)


def test_events_come_back_as_parsed(fresh: LexicalPartition) -> None:
    session = _parsed(COMPACTED.read_bytes(), str(COMPACTED))
    fresh.upsert([session])
    stored = _read(fresh)
    assert list(stored.events) == list(session.log_events)  # text, raw record, links: all of it
    assert stored.event_count == len(session.log_events) and stored.session.id == SID
    assert not stored.session.log_events and not stored.session.messages  # the header is a summary
    heads = _read(fresh, full=False).events
    assert all(not e.raw_json and not e.text for e in heads)
    assert [e.message_id for e in heads] == [e.message_id for e in session.log_events]


def test_filters_and_a_long_log_over_many_chunks(fresh: LexicalPartition) -> None:
    lines = COMPACTED.read_bytes().splitlines()
    first, rest = lines[0], lines[1:]
    grown = [first]
    for n in range(3 * EVENTS_PER_CHUNK):  # user rows with fresh uuids, over several chunks
        record = orjson.loads(first)
        record["uuid"] = f"grown-{n}"
        record["message"]["content"] = f"note number {n} about the parser"
        grown.append(orjson.dumps(record))
    session = _parsed(b"\n".join([*grown, *rest]) + b"\n", "grown.jsonl")
    fresh.upsert([session])
    window = _read(fresh, sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=60, max=70)))
    assert [e.seq for e in window.events] == list(range(60, 71))
    assert [e.raw_json for e in window.events] == [e.raw_json for e in session.log_events[60:71]]
    logged = _read(fresh, sessions_pb2.EventFilter(surfaces=sessions_pb2.Strings(values=["log-only"])), full=False)
    assert {e.type for e in logged.events} >= {"claude-code:system/compact_boundary"}
    text = _read(fresh, sessions_pb2.EventFilter(text="NOTE   number 150"), full=False)
    assert [e.seq for e in text.events] == [151]  # literal, any case, any whitespace


def test_search_within_a_session_ranks_and_pages(fresh: LexicalPartition) -> None:
    fresh.upsert([_parsed(COMPACTED.read_bytes(), str(COMPACTED))])
    request = sessions_pb2.EventSearchRequest(session_id=SID, query="retry loop", limit=20)
    page = fresh.search_events(sessions_pb2.PartitionSearchEvents(request=request))
    assert page.items and all("retry" in item.snippet.lower() for item in page.items)
    scores = [item.score for item in page.items]
    assert scores == sorted(scores, reverse=True)
    none = sessions_pb2.EventSearchRequest(session_id=SID, query="zebra", limit=20)
    empty = fresh.search_events(sessions_pb2.PartitionSearchEvents(request=none))
    assert not empty.items and empty.session.id == SID


def test_a_contradicting_copy_from_another_file_is_refused_and_a_grown_one_taken(
    fresh: LexicalPartition, tmp_path: Path
) -> None:
    data = COMPACTED.read_bytes()
    original = _parsed(data, "/a/sess-4.jsonl")
    assert fresh.upsert([original]).sessions_written == 1
    lines = data.splitlines(keepends=True)
    edited = lines[1].replace(b"Running", b"Skipping")
    assert edited != lines[1]
    changed = _parsed(b"".join([lines[0], edited, *lines[2:]]), "/b/sess-4.jsonl")
    response = fresh.upsert([changed])
    assert response.sessions_written == 0
    (conflict,) = response.source_conflicts
    assert (conflict.source_path, conflict.stored_source_path) == ("/b/sess-4.jsonl", "/a/sess-4.jsonl")
    assert conflict.first_difference == 1 and _read(fresh).session.source_path == "/a/sess-4.jsonl"
    grown = _parsed(data + lines[-1].replace(b'"uuid":"', b'"uuid":"again-'), "/c/sess-4.jsonl")
    taken = fresh.upsert([grown])
    assert taken.sessions_written == 1 and not taken.source_conflicts
    assert _read(fresh).session.source_path == "/c/sess-4.jsonl"


def test_a_replica_applying_the_log_takes_every_version(fresh: LexicalPartition) -> None:
    data = COMPACTED.read_bytes()
    fresh.upsert([_parsed(data, "/a/sess-4.jsonl")], applied_seq=1)
    lines = data.splitlines(keepends=True)
    changed = _parsed(b"".join([lines[0], lines[1].replace(b"Running", b"Skipping"), *lines[2:]]), "/b/sess-4.jsonl")
    response = fresh.upsert([changed], applied_seq=2)
    assert response.sessions_written == 1 and not response.source_conflicts  # what the log holds, every replica holds
