"""The baseline: the same corpus in SQLite FTS5, searched in-process the way the peer tool (seed 000) does.

A content table of messages and an external-content FTS5 table over their dialogue text (the text,
code and thinking blocks Quarry's dialogue lane indexes, taken from the same function), tokenized
`unicode61 remove_diacritics 2`, with ł/Ł folded to l/L before insertion and in queries as the peer's
pl_fold does. Search ranks messages by bm25, keeps each session's best message and returns the best
sessions, as the peer's ranked conversation search does (a window function over every matching
message). The build is timed from Session objects to a committed database: rows and index.

Deliberately generous to the baseline: no extra indexes beyond the one a session read needs, no
per-hit join with the sessions table (only the final page is joined), WAL with synchronous=NORMAL.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from quarry.index.lexical.schema import dialogue_text
from quarry.v1 import units_pb2

TOKENIZE = "unicode61 remove_diacritics 2"
BATCH_SESSIONS = 1000  # one transaction per batch, as an incremental ingest commits

_SCHEMA = f"""
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    repo TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE TABLE messages (
    rowid INTEGER PRIMARY KEY,
    message_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content='messages', content_rowid='rowid', tokenize='{TOKENIZE}'
);
"""

_SEARCH = """
WITH hits AS (
    SELECT m.session_id, m.message_id, m.time_ms, bm25(messages_fts) AS score
    FROM messages_fts JOIN messages AS m ON m.rowid = messages_fts.rowid
    WHERE messages_fts MATCH ?{role}
),
best AS (
    SELECT session_id, message_id, score,
           ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY score, time_ms DESC, message_id) AS n
    FROM hits
)
SELECT b.session_id, b.message_id, b.score, s.title
FROM best AS b JOIN sessions AS s ON s.session_id = b.session_id
WHERE b.n = 1
ORDER BY b.score, b.session_id
LIMIT ?
"""

_PL_FOLD = str.maketrans({"ł": "l", "Ł": "L"})


def pl_fold(text: str) -> str:
    """ł/Ł have no Unicode decomposition, so remove_diacritics cannot fold them; the peer folds them first."""
    return text.translate(_PL_FOLD)


@dataclass(frozen=True)
class BuildStats:
    sessions: int
    messages: int
    fts_rows: int  # messages with dialogue text
    seconds: float
    messages_per_s: float
    db_bytes: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class Hit:
    session_id: str
    message_id: str
    score: float  # bm25: lower is better
    title: str


class Fts5Archive:
    """One SQLite database file holding the corpus and its FTS5 index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self._next_rowid = 1

    @classmethod
    def reader(cls, path: Path) -> Fts5Archive:
        """Another read-only connection to a built archive: one per thread searches in parallel."""
        archive = cls.__new__(cls)
        archive.path = path
        archive.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        archive._next_rowid = 0
        return archive

    def close(self) -> None:
        self.db.close()

    def build(self, sessions: Iterable[units_pb2.Session], batch_sessions: int = BATCH_SESSIONS) -> BuildStats:
        """Insert every session's messages and index their dialogue text; timed to the last commit."""
        started = time.perf_counter()
        counts = {"sessions": 0, "messages": 0, "fts_rows": 0}
        batch: list[units_pb2.Session] = []
        for session in sessions:
            batch.append(session)
            if len(batch) >= batch_sessions:
                self._write(batch, counts)
                batch = []
        if batch:
            self._write(batch, counts)
        seconds = time.perf_counter() - started
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return BuildStats(
            sessions=counts["sessions"],
            messages=counts["messages"],
            fts_rows=counts["fts_rows"],
            seconds=round(seconds, 3),
            messages_per_s=round(counts["messages"] / seconds, 1) if seconds else 0.0,
            db_bytes=self.path.stat().st_size,
        )

    def _write(self, batch: list[units_pb2.Session], counts: dict[str, int]) -> None:
        session_rows = []
        message_rows = []
        fts_rows = []
        rowid = self._next_rowid
        for s in batch:
            session_rows.append((s.id, s.title, s.repo, s.updated_ms))
            for m in s.messages:
                text = dialogue_text(m)
                message_rows.append((rowid, m.id, s.id, m.role, m.time_ms, text))
                if text:
                    fts_rows.append((rowid, pl_fold(text)))
                rowid += 1
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?)", session_rows)
        self.db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", message_rows)
        self.db.executemany("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", fts_rows)
        self.db.execute("COMMIT")
        self._next_rowid = rowid
        counts["sessions"] += len(session_rows)
        counts["messages"] += len(message_rows)
        counts["fts_rows"] += len(fts_rows)

    def search(self, match: str, role: str = "", limit: int = 20) -> list[Hit]:
        """The best `limit` sessions for an FTS5 MATCH expression, optionally only messages of one role."""
        sql = _SEARCH.format(role=" AND m.role = ?" if role else "")
        params: tuple[object, ...] = (pl_fold(match), role, limit) if role else (pl_fold(match), limit)
        return [Hit(*row) for row in self.db.execute(sql, params)]
