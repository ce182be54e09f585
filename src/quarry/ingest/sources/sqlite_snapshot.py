"""An agent's SQLite database, read from a snapshot and never written.

Cursor, Crush, OpenCode (Go) and Goose keep their sessions in SQLite databases that the tool may be
writing while Quarry reads. The bytes already read are deserialized into a private in-memory database
(the file is never opened by SQLite, so no lock, journal or checkpoint touches it); when the tool is
live, the newest commits are still in its write-ahead log beside the file (`<db>-wal`), so the file
and its log are copied into a temporary folder first and the copy is opened, where SQLite replays the
log. Either way the snapshot is what the database held at one moment.

A file cut short (a partial copy) is read for what it holds: the image is trimmed to whole pages and
its header made to count them, and a table whose pages are gone raises when it is read, where the
parser reports it and keeps the rows before it. Text that is no UTF-8 (a damaged byte in a table's name
or a row's text) is read with U+FFFD in place of the bad bytes, so one bad byte never costs the file.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quarry.ingest.reader import issue
from quarry.ingest.sources import json_or_none

if TYPE_CHECKING:
    from quarry.ingest.sources import SourceResult

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
# Header fields (https://www.sqlite.org/fileformat.html#the_database_header): the page size; the file
# format versions (2 for a WAL database, 1 for a rollback one); the change counter; the database size
# in pages, valid when the "version valid for" number equals the change counter.
_PAGE_SIZE = slice(16, 18)
_FORMAT_VERSIONS = slice(18, 20)
_CHANGE_COUNTER = slice(24, 28)
_PAGE_COUNT = slice(28, 32)
_VERSION_VALID_FOR = slice(92, 96)


def is_sqlite(data: bytes) -> bool:
    return data.startswith(SQLITE_MAGIC)


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def json_column(value: Any) -> Any:
    """A column holding JSON, decoded (a BLOB read as UTF-8, as the snapshot reads text); None for NULL or
    for text that is not JSON."""
    if isinstance(value, bytes):
        value = _text(value)
    return json_or_none(value) if isinstance(value, str) else None


def _connect(target: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(target)
    conn.text_factory = _text
    return conn


@contextmanager
def open_snapshot(data: bytes, path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database whose file bytes are `data` (read from `path`), with the
    commits its write-ahead log holds beside it, if any. Raises sqlite3.DatabaseError when the bytes
    are not a readable database."""
    wal = Path(f"{path}-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        with tempfile.TemporaryDirectory(prefix="quarry-snapshot-") as folder:
            copy = Path(folder, "snapshot.db")
            copy.write_bytes(data)
            shutil.copyfile(wal, f"{copy}-wal")
            conn = _connect(copy)
            try:
                conn.execute("PRAGMA query_only=1")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                yield conn
            finally:
                conn.close()
        return
    conn = _connect(":memory:")
    try:
        # An in-memory database has no shared memory for a WAL index: read the file as a rollback-journal
        # one (the pages are the same; only the header's two version bytes say WAL).
        image = bytearray(data)
        if len(image) > _FORMAT_VERSIONS.stop and image[_FORMAT_VERSIONS] == b"\x02\x02":
            image[_FORMAT_VERSIONS] = b"\x01\x01"
        if missing_pages(data):
            image = _whole_pages(image)
        conn.deserialize(bytes(image))
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        yield conn
    finally:
        conn.close()


def missing_pages(data: bytes) -> int:
    """How many pages a database file cut short lacks, by its header's count (0: whole, or not told)."""
    if len(data) < HEADER_BYTES or data[_VERSION_VALID_FOR] != data[_CHANGE_COUNTER]:
        return 0
    size = _page_size(data)
    counted = int.from_bytes(data[_PAGE_COUNT], "big")
    return max(0, counted - len(data) // size)


def _page_size(data: bytes | bytearray) -> int:
    size = int.from_bytes(data[_PAGE_SIZE], "big")
    return 65536 if size == 1 else max(size, 512)


def _whole_pages(image: bytearray) -> bytearray:
    """The image trimmed to its whole pages, its header counting them."""
    size = _page_size(image)
    pages = len(image) // size
    trimmed = image[: pages * size]
    trimmed[_PAGE_COUNT] = pages.to_bytes(4, "big")
    return trimmed


def table_columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every table of the database with its column names: what recognizing a schema looks at."""
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {table: {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')} for table in tables}


def table_rows(
    conn: sqlite3.Connection, table: str, path: str, result: SourceResult, query: str = ""
) -> list[dict[str, Any]]:
    """The table's rows as {column: value}, in insertion order (or as `query` reads them). A table whose
    pages are damaged yields the rows read before the damage, and an `unreadable` issue of `path` saying
    how far the read got."""
    rows: list[dict[str, Any]] = []
    try:
        cursor = conn.execute(query or f'SELECT * FROM "{table}" ORDER BY rowid')
        names = [column[0] for column in cursor.description]
        rows.extend(dict(zip(names, values, strict=True)) for values in cursor)
    except sqlite3.DatabaseError as error:
        reason = f"the {table} table is unreadable after {len(rows)} row(s): {error}"
        result.issues.append(issue(path, 0, "unreadable", reason))
    return rows
