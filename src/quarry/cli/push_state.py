"""What `quarry push` has sent to one cluster, and had acknowledged: its state file.

One SQLite file per archive and scope pushed to (under `$XDG_STATE_HOME/quarry/push/`), holding
- per file: the mark of the bytes whose sessions the cluster acknowledged (quarry.ingest.tracking's
  FileMark: size, mtime and digests), so a file unchanged since is passed over after one stat, and a
  file that grew is read again;
- per session: the content hash the cluster acknowledged, so a file read again sends only the sessions
  in it that changed (an export re-downloaded with one new conversation sends that one).

Marks are recorded only after the cluster acknowledged every session of the file, in one transaction,
so a push stopped anywhere (Ctrl-C, a lost connection, a dead cluster) resumes where it stopped:
nothing acknowledged is sent again, nothing unacknowledged is taken as sent. The file remembers the
archive it describes (ArchiveDescription.archive_id) and the Quarry version that parsed: another
archive (the cluster was created anew) or another parser forgets everything, so every file is sent.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from quarry.ingest.tracking import FILES_TABLE, INSERT_MARK, SELECT_MARK, FileMark

_SCHEMA = (
    FILES_TABLE
    + """
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
)


def default_state_home() -> Path:
    """Where Quarry keeps per-user state (XDG state home)."""
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "quarry"


def state_path(state_home: Path, archive: str, scope: str) -> Path:
    """The state file of pushes into `scope` of the archive `archive` (ArchiveDescription.archive_id):
    one per cluster, whatever address reaches it."""
    key = hashlib.sha256(f"{archive}\0{scope}".encode()).hexdigest()[:20]
    return state_home / "push" / f"{key}.sqlite3"


class PushState:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        os.chmod(path, 0o600)  # it names the files and sessions of this machine

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PushState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self, archive: str, parser: str) -> bool:
        """Keep what is remembered if it describes `archive` as read by `parser`; otherwise forget it all
        and start remembering for them. Returns whether anything was forgotten."""
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
            if rows == {"archive": archive, "parser": parser}:
                return False
            for table in ("files", "sessions", "meta"):
                self._conn.execute(f"DELETE FROM {table}")
            self._conn.executemany("INSERT INTO meta VALUES (?, ?)", [("archive", archive), ("parser", parser)])
            return bool(rows)

    def mark(self, path: str) -> FileMark | None:
        row = self._conn.execute(SELECT_MARK, (path,)).fetchone()
        return FileMark(*row) if row else None

    def sent_hashes(self, session_ids: Iterable[str]) -> dict[str, str]:
        """The acknowledged content hash of each of these sessions the cluster holds from this machine."""
        ids = list(session_ids)
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self._conn.execute(f"SELECT id, content_hash FROM sessions WHERE id IN ({marks})", chunk))
        return found

    def record(self, files: Iterable[tuple[str, FileMark]], sessions: Iterable[tuple[str, str, str]]) -> None:
        """Remember, in one transaction, files whose sessions were all acknowledged and the acknowledged
        sessions (id, content hash, path)."""
        file_rows = [mark.row(path) for path, mark in files]
        session_rows = list(sessions)
        if not file_rows and not session_rows:
            return
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(INSERT_MARK, file_rows)
            self._conn.executemany("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?)", session_rows)

    def sessions(self) -> dict[str, str]:
        """Every acknowledged session: id -> content hash."""
        return dict(self._conn.execute("SELECT id, content_hash FROM sessions"))
