"""Live append on a two-partition cluster: a file ingested, appended to and ingested again reads back
exactly as the file ingested once at its final length; `quarry ingest --follow` makes a new line
searchable within 2 seconds, waits for a line being written, reads a live SQLite database's commits from its
write-ahead log, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from quarry.client.client import QuarryClient
from quarry.v1 import ingest_pb2, units_pb2
from tests.ingest.test_goose import T0, build, msg, session_row, text
from tests.shared_paths import REPO

pytestmark = pytest.mark.cluster

FIXTURE = REPO / "tests" / "fixtures" / "claude_code" / "session.jsonl"
SEARCHABLE_WITHIN_S = 2.0


def fixture_lines(native_id: str) -> list[bytes]:
    """The Claude Code fixture's lines, its session renamed so each test owns its session."""
    return FIXTURE.read_bytes().replace(b'"sess-1"', f'"{native_id}"'.encode()).splitlines(keepends=True)


def user_line(native_id: str, uuid: str, parent: str, text: str) -> bytes:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/projects/quarry",
        "sessionId": native_id,
        "type": "user",
        "uuid": uuid,
        "timestamp": "2026-03-01T10:05:00.000Z",
        "message": {"role": "user", "content": text},
    }
    return orjson.dumps(record) + b"\n"


def ingest(client: QuarryClient, path: Path) -> ingest_pb2.IngestReport:
    events = list(client.ingest_paths([path]))
    assert all(e.HasField("file") for e in events[:-1])
    return events[-1].report


def read_back(client: QuarryClient, session_id: str) -> dict[str, object]:
    """The session as the query node serves it (summary, message and action rows) and the partitions'
    totals; the source path (and the content hash over it) is where the copies differ by design."""
    hits = client.search(f"session:{session_id}").hits
    assert [h.session.id for h in hits] == [session_id]
    summary = units_pb2.Session()
    summary.CopyFrom(hits[0].session)
    summary.ClearField("source_path")
    summary.ClearField("content_hash")
    messages = client.query_units(f"messages where session.id:{session_id}", limit=200).rows
    actions = client.query_units(f"actions where session.id:{session_id}", limit=200).rows
    partitions = [n for n in client.status().nodes if n.role == "index"]
    return {
        "summary": summary,
        "messages": [r.message for r in messages],
        "actions": [r.action for r in actions],
        "partitions": [(n.sessions, n.documents) for n in partitions],
    }


def test_a_file_ingested_appended_and_ingested_again_equals_it_ingested_once(
    light_client: QuarryClient, tmp_path: Path
) -> None:
    lines = [*fixture_lines("sess-append"), user_line("sess-append", "u11", "u10", "and what about the backoff?")]
    session_id = "claude-code-session:sess-append"

    once = tmp_path / "once" / "session.jsonl"
    once.parent.mkdir()
    once.write_bytes(b"".join(lines))
    assert ingest(light_client, once).sessions_written == 1
    expected = read_back(light_client, session_id)
    assert len(expected["messages"]) == 8 and len(expected["actions"]) == 2
    # the reference copy goes: a shorter copy of the session from another file would be the cut one and
    # keep the complete copy stored (docs/sessions.md), while this test follows one file as it grows
    assert light_client.delete([session_id]).deleted

    live = tmp_path / "live" / "session.jsonl"
    live.parent.mkdir()
    live.write_bytes(b"".join(lines[:6]))  # stops at a tool call whose result is not written yet
    first = ingest(light_client, live)
    assert (first.files, first.files_appended, first.sessions_written) == (1, 0, 1)
    partial = read_back(light_client, session_id)
    assert len(partial["messages"]) < len(expected["messages"])

    with live.open("ab") as handle:
        handle.write(b"".join(lines[6:]))
    appended = ingest(light_client, live)
    assert (appended.files, appended.files_appended, appended.sessions_written) == (1, 1, 1)
    assert not appended.issues
    assert read_back(light_client, session_id) == expected  # same ids, same counts, no stale rows

    again = ingest(light_client, live)
    assert (again.files_unchanged, again.sessions_written, again.sessions_unchanged) == (1, 0, 1)


class Follower:
    """`quarry --format ndjson ingest --follow FOLDER` as a user runs it, its output read as it comes."""

    def __init__(self, light_home: Path, folder: Path) -> None:
        command = [sys.executable, "-m", "quarry.cli", "--home", str(light_home), "--format", "ndjson"]
        self.proc = subprocess.Popen(
            [*command, "ingest", "--follow", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.events: queue.Queue[dict[str, object]] = queue.Queue()
        self.seen: list[dict[str, object]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.put(orjson.loads(line))

    def next_report(self, timeout: float) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            self.seen.append(event)
            if "report" in event:
                return event["report"]  # type: ignore[return-value]

    def drain(self) -> None:
        """Every event printed before the process exited."""
        self.reader.join(timeout=10)
        while not self.events.empty():
            self.seen.append(self.events.get())


def searchable_after(client: QuarryClient, word: str, written_at: float) -> float:
    """Seconds from the write until a search for `word` finds it (fails after the allowed time)."""
    while (elapsed := time.monotonic() - written_at) < SEARCHABLE_WITHIN_S:
        if client.search(word).hits:
            return elapsed
        time.sleep(0.05)
    raise AssertionError(f"{word!r} not searchable {SEARCHABLE_WITHIN_S} s after it was written")


def test_follow_makes_a_new_line_searchable_within_2_seconds_and_stops_on_ctrl_c(
    light_home: Path, light_client: QuarryClient, tmp_path: Path
) -> None:
    folder = tmp_path / "projects" / "quarry"
    folder.mkdir(parents=True)
    log = (folder / "session.jsonl").resolve()
    log.write_bytes(b"".join(fixture_lines("sess-follow")))
    follower = Follower(light_home, tmp_path / "projects")
    try:
        first = follower.next_report(timeout=60)
        assert (first["files"], first["sessionsWritten"]) == (1, 1)

        line = user_line("sess-follow", "u11", "u10", "does zanzibarquokka explain the stall?")
        with log.open("ab") as handle:
            handle.write(line)
        searchable_after(light_client, "zanzibarquokka", time.monotonic())

        line = user_line("sess-follow", "u12", "u11", "then try the marmosetwrangler fix")
        with log.open("ab") as handle:
            handle.write(line[:40])  # the writer is mid-line for a while
            handle.flush()
            time.sleep(1.0)
            handle.write(line[40:])
        searchable_after(light_client, "marmosetwrangler", time.monotonic())

        other = folder / "second.jsonl"  # a session file that appears while following
        other.write_bytes(b"".join(fixture_lines("sess-new")[:3]) + user_line("sess-new", "n1", "u1", "okapiflux"))
        searchable_after(light_client, "okapiflux", time.monotonic())

        # A tool's live SQLite database (Goose's): its commits land in its write-ahead log, the file itself
        # changes only at a checkpoint, which a running tool may not reach for a long time.
        database = build(folder / "sessions.db", [session_row()], [msg("user", text("start the wombatledger run"))])
        writer = sqlite3.connect(database)
        try:
            writer.execute("PRAGMA journal_mode=WAL")
            writer.execute("PRAGMA wal_autocheckpoint=0")
            searchable_after(light_client, "wombatledger", time.monotonic())
            writer.execute(
                "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?, ?, ?, ?)",
                ("20260101_1", "assistant", orjson.dumps([text("the pangolinrelay answer")]).decode(), T0 + 9),
            )
            writer.commit()
            searchable_after(light_client, "pangolinrelay", time.monotonic())
        finally:
            writer.close()
    finally:
        follower.proc.send_signal(signal.SIGINT)
        code = follower.proc.wait(timeout=20)
        stderr = follower.proc.stderr.read().decode() if follower.proc.stderr else ""
    assert code == 0, stderr
    follower.drain()
    files = [e["file"] for e in follower.seen if "file" in e]
    assert ("appended", str(log)) in {(f["change"], f["path"]) for f in files}
    assert ("new", str(other)) in {(f["change"], f["path"]) for f in files}
    issues = [i for e in follower.seen if "report" in e for i in e["report"].get("issues", [])]
    assert issues == []  # the line read mid-write was never reported as malformed
