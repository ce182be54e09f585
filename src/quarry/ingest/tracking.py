"""What the ingest node last ingested from each file, so a re-ingest reads only what changed.

Per path the node remembers a `FileMark`: the size and mtime it read, a SHA-256 of the first 4 KiB
and of every byte up to that size, and how many sessions the file gave. Against a file's bytes now,
a mark says whether the file is unchanged, grew past what was ingested with those bytes as its
prefix (appended: how agents write their logs), or changed otherwise (rewritten, shrunk). The
4 KiB digest tells a rewritten file apart without hashing the whole prefix.

A grown file is parsed again whole: the parsers build sessions from whole files, and the partitions
skip the sessions whose content hash is unchanged, so only the sessions the new bytes touched are
written. A future incremental parser would resume at `FileMark.size`, which the prefix digest
proves is still the start of the file.

A file being written (`IngestPaths(follow=True)`) is read only as far as it is complete: a JSON
Lines file up to its last newline, a whole JSON document once it parses. The rest waits for the
writer, so a line read mid-write is never reported as malformed.

Marks live in `<data>/files.sqlite3` (WAL, fsync on commit) and are recorded only after the partitions
acknowledged what the file gave. They are only as good as the partitions that hold the sessions and
the parsers that produced them, so they are kept under an epoch (the Quarry version and the partitions'
store ids): a wiped partition or an upgraded parser makes every file count as new again.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson

from quarry.ingest.discover import open_regular
from quarry.ingest.sources.sqlite_snapshot import is_sqlite

HEAD_BYTES = 4096
_BOM = b"\xef\xbb\xbf"
_NON_SPACE = re.compile(rb"\S")

# The marks' table, also kept by `quarry push` for the files it sent (quarry.cli.push_state).
FILES_TABLE = """
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  head_sha256 TEXT NOT NULL,
  prefix_sha256 TEXT NOT NULL,
  sessions INTEGER NOT NULL
);
"""
SELECT_MARK = "SELECT size, mtime_ns, head_sha256, prefix_sha256, sessions FROM files WHERE path = ?"
INSERT_MARK = "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)"
_SCHEMA = FILES_TABLE + "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"


class Change(StrEnum):
    NEW = "new"
    UNCHANGED = "unchanged"
    APPENDED = "appended"
    REWRITTEN = "rewritten"
    SHRUNK = "shrunk"
    PENDING = "pending"  # being written: nothing complete beyond what was ingested yet


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class FileMark:
    size: int
    mtime_ns: int
    head_sha256: str
    prefix_sha256: str
    sessions: int = 0

    def row(self, path: str) -> tuple[str, int, int, str, str, int]:
        """The mark as a row of the files table (INSERT_MARK)."""
        return (path, self.size, self.mtime_ns, self.head_sha256, self.prefix_sha256, self.sessions)

    @classmethod
    def of(cls, data: bytes, mtime_ns: int, sessions: int) -> FileMark:
        """The mark of having ingested exactly `data` (the file's first len(data) bytes)."""
        return cls(len(data), mtime_ns, _sha256(data[:HEAD_BYTES]), _sha256(data), sessions)

    def same_stat(self, path: Path, stat: os.stat_result) -> bool:
        """The file still has the size and mtime this mark read: unchanged without reading it."""
        return (stat.st_size, changed_ns(path, stat)) == (self.size, self.mtime_ns)


def changed_ns(path: Path, stat: os.stat_result) -> int:
    """When the file last changed: its mtime, or its write-ahead log's (`<path>-wal`) when that is newer.
    A live SQLite database commits to its log, and its file changes only at a checkpoint."""
    try:
        return max(stat.st_mtime_ns, os.stat(f"{path}-wal").st_mtime_ns)
    except OSError:
        return stat.st_mtime_ns


def classify(mark: FileMark | None, data: bytes) -> Change:
    """How a file whose bytes are now `data` changed since `mark` was taken."""
    if mark is None:
        return Change.NEW
    if len(data) < mark.size:
        return Change.SHRUNK
    if _sha256(data[: min(mark.size, HEAD_BYTES)]) != mark.head_sha256:
        return Change.REWRITTEN
    if _sha256(data[: mark.size]) != mark.prefix_sha256:
        return Change.REWRITTEN
    return Change.UNCHANGED if len(data) == mark.size else Change.APPENDED


def settled(data: bytes) -> bytes:
    """The complete part of a file that may be mid-write: all of it when it ends a line or its last
    line is a whole JSON value; a JSON Lines file up to its last newline; a document spread over
    lines once it parses; b"" when nothing is complete yet. A SQLite database (read from a snapshot)
    and a Markdown transcript (parsed whole each time it grows: a line cut now is whole next round)
    are complete as they are."""
    newline = data.rfind(b"\n")
    tail = data[newline + 1 :].removeprefix(_BOM)
    body = data.removeprefix(_BOM)
    first = _NON_SPACE.search(body)
    if not _NON_SPACE.search(tail) or _parses(tail) or is_sqlite(data) or (first and body[first.start()] not in b"{["):
        return data
    if newline < 0:
        return b""
    if _parses(body[: body.find(b"\n")]):
        return data[: newline + 1]  # JSON Lines: the line after the last newline is being written
    return data if _parses(body) else b""


def _parses(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Examined:
    """A file compared with its mark: how it changed, and the bytes to ingest (empty when it was
    unchanged by its size and mtime alone, or when nothing is complete yet)."""

    change: Change
    data: bytes = b""
    mtime_ns: int = 0


def examine(path: Path, mark: FileMark | None, live: bool = False) -> Examined:
    """Compare the file with its mark, reading it only when its size or mtime moved. `live`: the
    file may be mid-write, so only its `settled` part counts. Raises OSError when unreadable."""
    if mark is not None and mark.same_stat(path, os.stat(path)):
        return Examined(Change.UNCHANGED)
    with open_regular(path) as handle:  # a pipe or a device is refused unread (NotRegularFile)
        data = handle.read()
        after = os.fstat(handle.fileno())
    # A write that landed after the read leaves the mtime unknown, so the next look reads again.
    mtime_ns = changed_ns(path, after) if after.st_size == len(data) else 0
    if mark is not None and is_sqlite(data):
        return Examined(Change.REWRITTEN, data, mtime_ns)  # its pages or its log moved: read it whole again
    if live:
        complete = settled(data)
        if not complete:
            return Examined(Change.PENDING)
        change = classify(mark, complete)
        if change is Change.UNCHANGED and len(complete) < len(data):
            return Examined(Change.PENDING)
        return Examined(change, complete, mtime_ns)
    return Examined(classify(mark, data), data, mtime_ns)


class FileTracker:
    """The durable marks of one ingest node; safe to share between its request threads."""

    def __init__(self, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, path: str) -> FileMark | None:
        with self._lock:
            row = self._conn.execute(SELECT_MARK, (path,)).fetchone()
        return FileMark(*row) if row else None

    def record(self, marks: Iterable[tuple[str, FileMark]]) -> None:
        """Remember the files just ingested, in one transaction."""
        rows = [mark.row(path) for path, mark in marks]
        if not rows:
            return
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(INSERT_MARK, rows)

    def enter_epoch(self, epoch: str) -> bool:
        """Keep the marks if they were taken under `epoch`; otherwise forget them all (every file is
        new again) and start `epoch`. Returns whether the marks were forgotten."""
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            if row is not None and row[0] == epoch:
                return False
            self._conn.execute("DELETE FROM files")
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('epoch', ?)", (epoch,))
            return row is not None
