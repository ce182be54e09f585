"""The SQLite store of a lexical shard: canonical records and unit rows for structured predicates.

The store is the shard's source of truth. Each session keeps its summary (a serialized Session
without messages/actions), every message as a serialized Message (with its blocks), and one row per
action with all Action fields; together they rebuild the full Session, so the Tantivy index can be
rebuilt from here at any time. Columns that predicates filter on are kept beside the blobs, with the
indexes those predicates need.

Durability: WAL with `synchronous=FULL`, so every commit fsyncs the WAL before returning and an
acknowledged upsert survives a power loss, not only a process kill. Checkpoints stay automatic
(every ~1000 pages, run by the committing writer); `journal_size_limit` truncates the WAL file back
after a large batch, and `close()` checkpoints with TRUNCATE.

Crash consistency with Tantivy: `replace()` commits new rows with `tantivy_pending = 1`; the shard
indexes them, commits Tantivy, then clears the marker. A session still pending at open is
re-indexed from these rows.

Threads: one writer connection (the shard serializes writers); readers get one connection per
thread, which in WAL mode read concurrently with the writer.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from quarry.index.lexical import analyzer
from quarry.v1 import units_pb2

COUNT_FIELDS = tuple(f.name for f in units_pb2.SessionCounts.DESCRIPTOR.fields)

_DDL = f"""
CREATE TABLE IF NOT EXISTS sessions (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  origin TEXT NOT NULL COLLATE NOCASE,
  title_folded TEXT NOT NULL,
  repo TEXT NOT NULL COLLATE NOCASE,
  cwd TEXT NOT NULL,
  branch TEXT NOT NULL COLLATE NOCASE,
  model TEXT NOT NULL COLLATE NOCASE,
  parent_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  {", ".join(f"{name} INTEGER NOT NULL" for name in COUNT_FIELDS)},
  content_hash TEXT NOT NULL,
  doc_count INTEGER NOT NULL,
  tantivy_pending INTEGER NOT NULL,
  summary BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated_ms DESC, id);
CREATE INDEX IF NOT EXISTS sessions_repo ON sessions (repo);
CREATE INDEX IF NOT EXISTS sessions_origin ON sessions (origin);
CREATE INDEX IF NOT EXISTS sessions_pending ON sessions (tantivy_pending) WHERE tantivy_pending = 1;

CREATE TABLE IF NOT EXISTS session_tags (
  tag TEXT NOT NULL COLLATE NOCASE,
  session_ord INTEGER NOT NULL,
  PRIMARY KEY (tag, session_ord)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_tags_session ON session_tags (session_ord);

CREATE TABLE IF NOT EXISTS messages (
  ord INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL COLLATE NOCASE,
  authored INTEGER NOT NULL,
  surface TEXT NOT NULL COLLATE NOCASE,
  model TEXT NOT NULL COLLATE NOCASE,
  time_ms INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  words INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  proto BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages (session_ord, role);
CREATE INDEX IF NOT EXISTS messages_time ON messages (time_ms, id);

CREATE TABLE IF NOT EXISTS blocks (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  message_ord INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  type TEXT NOT NULL COLLATE NOCASE,
  tool TEXT NOT NULL COLLATE NOCASE,
  path_norm TEXT NOT NULL,
  is_error INTEGER NOT NULL,
  time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_message ON blocks (message_ord);
CREATE INDEX IF NOT EXISTS blocks_time ON blocks (time_ms, id);

CREATE TABLE IF NOT EXISTS actions (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  block_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  category TEXT NOT NULL COLLATE NOCASE,
  tool TEXT NOT NULL COLLATE NOCASE,
  command TEXT NOT NULL,
  path TEXT NOT NULL,
  path_norm TEXT NOT NULL,
  output TEXT NOT NULL,
  failed INTEGER NOT NULL,
  input_json TEXT NOT NULL,
  time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS actions_session ON actions (session_ord, seq);
CREATE INDEX IF NOT EXISTS actions_tool ON actions (tool, session_ord);
CREATE INDEX IF NOT EXISTS actions_category ON actions (category, session_ord);
CREATE INDEX IF NOT EXISTS actions_tool_time ON actions (tool, time_ms, id);
CREATE INDEX IF NOT EXISTS actions_category_time ON actions (category, time_ms, id);
CREATE INDEX IF NOT EXISTS actions_time ON actions (time_ms, id);
"""

ACTION_COLUMNS = (
    "id, session_ord, message_id, block_id, seq, category, tool, command, path, output, failed, input_json, time_ms"
)


_SESSION_COLUMNS = (
    "id",
    "origin",
    "title_folded",
    "repo",
    "cwd",
    "branch",
    "model",
    "parent_id",
    "created_ms",
    "updated_ms",
    "duration_ms",
    *COUNT_FIELDS,
    "content_hash",
    "doc_count",
    "tantivy_pending",
    "summary",
)
_UPSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(_SESSION_COLUMNS)}) VALUES ({', '.join('?' * len(_SESSION_COLUMNS))}) "
    f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _SESSION_COLUMNS[1:])} "
    "RETURNING ord"
)
_MESSAGE_COLUMNS = (
    "ord, id, session_ord, seq, role, authored, surface, model, time_ms, duration_ms, words, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, proto"
)
_BLOCK_COLUMNS = "id, session_ord, message_ord, idx, type, tool, path_norm, is_error, time_ms"


def _collect_rows(
    rows: dict[str, list[tuple[object, ...]]],
    s: units_pb2.Session,
    session_ord: int,
    message_ords: Sequence[int],
) -> None:
    """Append the session's tag, message, block and action rows to the batch."""
    rows["tags"].extend((tag, session_ord) for tag in s.tags)
    for mord, m in zip(message_ords, s.messages, strict=True):
        rows["messages"].append(
            (
                mord,
                m.id,
                session_ord,
                m.seq,
                m.role,
                int(m.authored),
                m.surface,
                m.model,
                m.time_ms,
                m.duration_ms,
                m.words,
                m.input_tokens,
                m.output_tokens,
                m.cache_read_tokens,
                m.cache_write_tokens,
                m.SerializeToString(),
            )
        )
        rows["blocks"].extend(
            (
                b.id,
                session_ord,
                mord,
                b.index,
                b.type,
                b.tool_name,
                analyzer.normalize_path(b.path) if b.path else "",
                int(b.is_error),
                m.time_ms,
            )
            for b in m.blocks
        )
    rows["actions"].extend(
        (
            a.id,
            session_ord,
            a.message_id,
            a.block_id,
            a.seq,
            a.category,
            a.tool,
            a.command,
            a.path,
            a.output,
            int(a.failed),
            a.input_json,
            a.time_ms,
            analyzer.normalize_path(a.path) if a.path else "",
        )
        for a in s.actions
    )


def _delete_rows(conn: sqlite3.Connection, session_ord: int) -> None:
    conn.execute(
        "DELETE FROM blocks WHERE message_ord IN (SELECT ord FROM messages WHERE session_ord = ?)", (session_ord,)
    )
    for table in ("session_tags", "messages", "actions"):
        conn.execute(f"DELETE FROM {table} WHERE session_ord = ?", (session_ord,))


@dataclass(frozen=True)
class Replacement:
    """One session to (re)write, with what the shard computed for it."""

    session: units_pb2.Session
    content_hash: str
    doc_count: int


@dataclass(frozen=True)
class Written:
    """Where a written session's rows went: ordinals the Tantivy documents carry."""

    session_ord: int
    message_ords: list[int]


def json_list(values: Iterable[object]) -> str:
    """A parameter for `IN (SELECT value FROM json_each(?))`: sets of any size in one bind."""
    return orjson.dumps(list(values)).decode()


def summary_of(session: units_pb2.Session) -> units_pb2.Session:
    summary = units_pb2.Session()
    summary.CopyFrom(session)
    summary.ClearField("messages")
    summary.ClearField("actions")
    return summary


def action_from_row(row: Sequence[object], session_id: str) -> units_pb2.Action:
    """An Action from the `ACTION_COLUMNS` of a row (session_ord replaced by the session id)."""
    (id_, _, message_id, block_id, seq, category, tool, command, path, output, failed, input_json, time_ms) = row
    return units_pb2.Action(
        id=id_,
        session_id=session_id,
        message_id=message_id,
        block_id=block_id,
        seq=seq,
        category=category,
        tool=tool,
        command=command,
        path=path,
        output=output,
        failed=bool(failed),
        input_json=input_json,
        time_ms=time_ms,
    )


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        self._writer.executescript(_DDL)
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA journal_size_limit=67108864")
        conn.execute("PRAGMA wal_autocheckpoint=8192")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute("PRAGMA temp_store=MEMORY")
        return conn

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (WAL readers never block the writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=1")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._writer.close()

    # ---- writes (the shard serializes callers) -------------------------------------------------

    def stored_hashes(self, session_ids: Sequence[str]) -> dict[str, str]:
        rows = self._writer.execute(
            "SELECT id, content_hash FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
            (json_list(session_ids),),
        )
        return dict(rows.fetchall())

    def replace(self, replacements: Sequence[Replacement], existing: Collection[str]) -> list[Written]:
        """Replace the sessions' rows in one durable transaction, marked as pending for Tantivy.

        `existing` names the sessions already stored (their old rows are deleted first).
        """
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            next_message_ord = self._next_message_ord(conn)
            written = []
            rows: dict[str, list[tuple[object, ...]]] = {"tags": [], "messages": [], "blocks": [], "actions": []}
            for replacement in replacements:
                session_ord = self._upsert_session_row(conn, replacement)
                if replacement.session.id in existing:
                    _delete_rows(conn, session_ord)
                count = len(replacement.session.messages)
                message_ords = list(range(next_message_ord, next_message_ord + count))
                next_message_ord += count
                _collect_rows(rows, replacement.session, session_ord, message_ords)
                written.append(Written(session_ord, message_ords))
            conn.executemany("INSERT OR IGNORE INTO session_tags (tag, session_ord) VALUES (?, ?)", rows["tags"])
            conn.executemany(
                f"INSERT INTO messages ({_MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 16)})", rows["messages"]
            )
            conn.executemany(f"INSERT INTO blocks ({_BLOCK_COLUMNS}) VALUES ({', '.join('?' * 9)})", rows["blocks"])
            conn.executemany(
                f"INSERT INTO actions ({ACTION_COLUMNS}, path_norm) VALUES ({', '.join('?' * 14)})", rows["actions"]
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return written

    def _next_message_ord(self, conn: sqlite3.Connection) -> int:
        """Message ordinals are never reused (AUTOINCREMENT), so a stale searcher snapshot cannot map an
        old document onto another message's row."""
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
        return (row[0] if row else 0) + 1

    @staticmethod
    def _upsert_session_row(conn: sqlite3.Connection, replacement: Replacement) -> int:
        """Insert or update the session row in place: its ordinal is stable across replacements."""
        s = replacement.session
        values = [
            s.id,
            s.origin,
            analyzer.fold(s.title),
            s.repo,
            s.cwd,
            s.branch,
            s.model,
            s.parent_session_id,
            s.created_ms,
            s.updated_ms,
            s.duration_ms,
            *(getattr(s.counts, name) for name in COUNT_FIELDS),
            replacement.content_hash,
            replacement.doc_count,
            1,
            summary_of(s).SerializeToString(),
        ]
        (session_ord,) = conn.execute(_UPSERT_SESSION, values).fetchone()
        return session_ord

    def clear_pending(self, session_ords: Sequence[int]) -> None:
        """Mark sessions as indexed, without waiting for the disk: losing this write only costs a
        re-index at the next open, and the next durable commit syncs it anyway."""
        conn = self._writer
        conn.execute("PRAGMA synchronous=NORMAL")
        try:
            conn.execute(
                "UPDATE sessions SET tantivy_pending = 0 WHERE ord IN (SELECT value FROM json_each(?))",
                (json_list(session_ords),),
            )
        finally:
            conn.execute("PRAGMA synchronous=FULL")

    def pending_ords(self) -> list[int]:
        rows = self._writer.execute("SELECT ord FROM sessions WHERE tantivy_pending = 1 ORDER BY ord")
        return [r[0] for r in rows]

    def all_ords(self) -> list[int]:
        return [r[0] for r in self._writer.execute("SELECT ord FROM sessions ORDER BY ord")]

    def expected_documents(self) -> int:
        return self._writer.execute("SELECT COALESCE(SUM(doc_count), 0) FROM sessions").fetchone()[0]

    def load_sessions(self, session_ords: Sequence[int]) -> Iterator[tuple[units_pb2.Session, Written]]:
        """Full canonical sessions rebuilt from the rows, with the ordinals their rows carry."""
        conn = self._writer
        for session_ord in session_ords:
            (blob,) = conn.execute("SELECT summary FROM sessions WHERE ord = ?", (session_ord,)).fetchone()
            session = units_pb2.Session.FromString(blob)
            message_ords = []
            for mord, proto in conn.execute(
                "SELECT ord, proto FROM messages WHERE session_ord = ? ORDER BY ord", (session_ord,)
            ):
                session.messages.append(units_pb2.Message.FromString(proto))
                message_ords.append(mord)
            for row in conn.execute(
                f"SELECT {ACTION_COLUMNS} FROM actions WHERE session_ord = ? ORDER BY ord", (session_ord,)
            ):
                session.actions.append(action_from_row(row, session.id))
            yield session, Written(session_ord, message_ords)

    # ---- reads (any thread) ----------------------------------------------------------------------

    def summaries(self, session_ords: Iterable[int]) -> dict[int, units_pb2.Session]:
        rows = self.reader().execute(
            "SELECT ord, summary FROM sessions WHERE ord IN (SELECT value FROM json_each(?))",
            (json_list(session_ords),),
        )
        return {ord_: units_pb2.Session.FromString(blob) for ord_, blob in rows}

    def session_ids(self, session_ords: Iterable[int]) -> dict[int, str]:
        rows = self.reader().execute(
            "SELECT ord, id FROM sessions WHERE ord IN (SELECT value FROM json_each(?))",
            (json_list(session_ords),),
        )
        return dict(rows.fetchall())

    def sessions_by_id(self, session_ids: Sequence[str]) -> list[units_pb2.Session]:
        """Summaries in the order asked, skipping ids this shard does not hold."""
        rows = self.reader().execute(
            "SELECT id, summary FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
            (json_list(session_ids),),
        )
        found = dict(rows.fetchall())
        seen: set[str] = set()
        out = []
        for sid in session_ids:
            if sid in found and sid not in seen:
                seen.add(sid)
                out.append(units_pb2.Session.FromString(found[sid]))
        return out

    def totals(self) -> tuple[int, int, int]:
        """(sessions, messages, actions) held by the shard."""
        conn = self.reader()
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("sessions", "messages", "actions")
        )
