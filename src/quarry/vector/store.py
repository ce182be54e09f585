"""The vector node's durable state in one SQLite file: sqlite-vec vectors and the pending queue.

Tables:
- `vectors`: one row per passage of an embedded message (quarry.vector.passages: a short message is one
  passage, 0), with the message's id, session and text hash and the session's latest activity; its
  rowid is the vector's id in `vec_items` (a sqlite-vec vec0 table, float[dimension]) and in the FAISS
  index. Rowids are AUTOINCREMENT, so an id is never reused after a removal. A store written before
  passages (one row per message, `message_id` unique) is rebuilt to this shape when opened, its rows
  and rowids kept as passage 0.
- `pending`: texts waiting for the embedder, taken the most recently active sessions first (then in
  arrival order, `seq`), so after a large archive arrives the semantic lane covers recent work first.
  A row leaves the queue in the same transaction that stores its vector, so a crash never loses a
  text nor embeds it twice.
- `meta`: the model and dimension the vectors were made with, and the last catch-up run (JSON).
- `cursors`: how far the node has followed each lexical partition's change feed (the partition store's uuid
  -> the last change_seq taken). A cursor moves in the same transaction that queues the texts it
  covers, so a restart resumes after the last texts stored, never before nor after.
- `ann_training`: at most one row, the serving index's trained, empty IVF (kept_training.py).

The write connection is shared by the caller's threads under an internal lock; reads (lookups,
counts, exact search) use one connection per thread, which WAL lets run beside a writer.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pysqlite3.dbapi2 as sqlite3
import sqlite_vec

from quarry.core import sqlite_tx
from quarry.core.readers import ThreadReaders

REBUILD_CHUNK = 8192

_VECTORS = """
CREATE TABLE IF NOT EXISTS {name} (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL,
  passage INTEGER NOT NULL DEFAULT 0,
  session_id TEXT NOT NULL,
  text_hash BLOB NOT NULL,
  session_updated_ms INTEGER NOT NULL DEFAULT 0,
  UNIQUE (message_id, passage)
);"""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
{vectors}
CREATE TABLE IF NOT EXISTS pending (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  text TEXT NOT NULL,
  text_hash BLOB NOT NULL,
  session_updated_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS cursors (store_uuid TEXT PRIMARY KEY, change_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ann_training (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  params TEXT NOT NULL,
  digest BLOB NOT NULL,
  data BLOB NOT NULL
);
""".replace("{vectors}", _VECTORS.format(name="vectors"))

# Stores written before the newest-first order lack the session time; their texts take 0 (oldest).
_ADDED_COLUMNS = {"vectors": "session_updated_ms", "pending": "session_updated_ms"}
# A session's scope, read off its id (quarry.core.session_ids: `<scope>@<origin>:…` outside `default`): a
# virtual column, so a store of any age has it without rewriting a row, and counts can be per scope.
_SCOPE_OF_SESSION = (
    "CASE WHEN instr(substr(session_id, 1, instr(session_id, ':')), '@') > 0"
    " THEN substr(session_id, 1, instr(session_id, '@') - 1) ELSE 'default' END"
)

_INDEXES = """
CREATE INDEX IF NOT EXISTS vectors_session ON vectors (session_id);
CREATE INDEX IF NOT EXISTS vectors_text ON vectors (text_hash);  -- identical texts embedded once
CREATE INDEX IF NOT EXISTS vectors_updated ON vectors (session_updated_ms);
CREATE INDEX IF NOT EXISTS pending_session ON pending (session_id);
CREATE INDEX IF NOT EXISTS pending_order ON pending (session_updated_ms DESC, seq);
CREATE INDEX IF NOT EXISTS vectors_scope ON vectors (scope);
CREATE INDEX IF NOT EXISTS pending_scope ON pending (scope);
"""


def _in_scopes(visible: Collection[str] | None) -> tuple[str, list[str]]:
    """An SQL condition on the `scope` column admitting the visible scopes ("1": every scope)."""
    if visible is None:
        return "1", []
    return "scope IN (SELECT value FROM json_each(?))", [orjson.dumps(sorted(visible)).decode()]


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


_PENDING_COLUMNS = "seq, message_id, session_id, text, text_hash, session_updated_ms"


@dataclass(frozen=True)
class PendingText:
    seq: int
    message_id: str
    session_id: str
    text: str
    text_hash: bytes
    session_updated_ms: int


@dataclass(frozen=True)
class Coverage:
    """The time range the vectors cover, by each session's latest activity (epoch ms)."""

    covered_after_ms: int  # every session active after this is wholly embedded (0: nothing queued)
    embedded_oldest_ms: int
    embedded_newest_ms: int


@dataclass(frozen=True)
class EnqueueOutcome:
    queued: int
    unchanged: int
    removed_rowids: list[int]  # vectors deleted from the store; the caller drops them from FAISS


@dataclass(frozen=True)
class StoredBatch:
    added_rowids: np.ndarray  # int64, aligned with `vectors`
    vectors: np.ndarray  # every passage vector of the texts stored
    sessions: list[str]  # each added vector's session, aligned with `vectors`
    removed_rowids: list[int]  # older vectors of the same messages, replaced by these
    stored: list[PendingText]  # the texts stored (those still queued unchanged)


@dataclass(frozen=True)
class AnnTraining:
    """A serialized FAISS index, the parameters it was trained for and a digest of its bytes."""

    params: str
    digest: bytes
    data: bytes


@dataclass(frozen=True)
class MessageRef:
    message_id: str
    session_id: str


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def _ids_json(ids: Sequence[int] | Sequence[str] | np.ndarray) -> str:
    return orjson.dumps(ids.tolist() if isinstance(ids, np.ndarray) else list(ids)).decode()


class VectorStore:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._readers = ThreadReaders(lambda: _connect(path))
        self._conn = _connect(path)
        self._conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a commit is on disk before enqueue acknowledges it, power loss included.
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.executescript(_SCHEMA)
        self._add_passages()
        self._add_missing_columns()
        self._conn.executescript(_INDEXES)
        self._conn.executescript(
            "CREATE TEMP TABLE incoming (message_id TEXT PRIMARY KEY, session_id TEXT NOT NULL);"
            "CREATE TEMP TABLE replaced (session_id TEXT PRIMARY KEY);"
        )
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        self.model: str = meta.get("model", "")
        self.dimension: int = int(meta.get("dimension", 0))

    def _add_passages(self) -> None:
        """Rebuild a store of one vector per message (`message_id` unique) as passage 0 of each message,
        keeping every rowid (the vectors' ids) and the AUTOINCREMENT counter, in one transaction."""
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(vectors)")}
        if "passage" in columns:
            return
        kept = [c for c in ("rowid", "message_id", "session_id", "text_hash", "session_updated_ms") if c in columns]
        with self._transaction() as conn:
            sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vectors'").fetchone()
            conn.execute(_VECTORS.format(name="vectors_passages"))
            listed = ", ".join(kept)
            conn.execute(f"INSERT INTO vectors_passages ({listed}) SELECT {listed} FROM vectors")
            conn.execute("DROP TABLE vectors")
            conn.execute("ALTER TABLE vectors_passages RENAME TO vectors")
            if sequence is not None:
                conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'vectors'", (int(sequence[0]),))

    def _add_missing_columns(self) -> None:
        for table, column in _ADDED_COLUMNS.items():
            present = {row[1] for row in self._conn.execute(f"PRAGMA table_xinfo({table})")}  # generated too
            if column not in present:
                self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")
            if "scope" not in present:
                self._conn.execute(
                    f"ALTER TABLE {table} ADD COLUMN scope TEXT GENERATED ALWAYS AS ({_SCOPE_OF_SESSION})"
                )

    # -- writes ---------------------------------------------------------------------------------

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """The writer in one write transaction (quarry.core.sqlite_tx), under the write lock."""
        return sqlite_tx.transaction(self._conn, self._lock)

    def set_model(self, model: str, dimension: int) -> None:
        """Record the model and create the vec0 table; done once, before the first vector."""
        with self._transaction() as conn:
            self._set_model(conn, model, dimension)

    def _set_model(self, conn: sqlite3.Connection, model: str, dimension: int) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("model", model), ("dimension", str(dimension))],
        )
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_items USING vec0(embedding float[{dimension}])")
        self.model, self.dimension = model, dimension

    def enqueue(
        self,
        items: Sequence[tuple[str, str, str, int]],
        replace_session_ids: Sequence[str],
        cursor: tuple[str, int] | None = None,
    ) -> EnqueueOutcome:
        """Queue (message_id, session_id, text, session_updated_ms) items whose text differs from what
        is stored; the session time of what is stored or queued unchanged moves to the items'.

        A text equal to the message's vector or to its queued text is unchanged. A blank text has
        nothing to embed: it removes the message's vector and queued text. For every session in
        `replace_session_ids`, vectors and queued texts of messages not among `items` are removed.
        `cursor` (a partition store's uuid, the change_seq these items bring the node up to) is recorded
        in the same transaction.
        """
        latest = {message_id: (session_id, text) for message_id, session_id, text, _ in items}
        times = {session_id: updated_ms for _, session_id, _, updated_ms in items}
        keep = {mid: (sid, text, text_hash(text)) for mid, (sid, text) in latest.items() if text.strip()}
        blank = [mid for mid, (_, text) in latest.items() if not text.strip()]
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO incoming (message_id, session_id) VALUES (?, ?)",
                [(mid, sid) for mid, (sid, _, _) in keep.items()],
            )
            stored = conn.execute(
                "SELECT i.message_id, v.text_hash, p.text_hash FROM incoming i"
                " LEFT JOIN vectors v ON v.message_id = i.message_id AND v.passage = 0"
                " LEFT JOIN pending p ON p.message_id = i.message_id"
            ).fetchall()
            unchanged, stale_pending, queue = 0, [], []
            for message_id, vector_hash, pending_hash in stored:
                session_id, text, digest = keep[message_id]
                if digest == pending_hash:
                    unchanged += 1
                elif digest == vector_hash:
                    unchanged += 1
                    if pending_hash is not None:
                        stale_pending.append(message_id)
                else:
                    queue.append((message_id, session_id, text, digest, times[session_id]))
            for table in ("vectors", "pending"):
                conn.executemany(
                    f"UPDATE {table} SET session_updated_ms = ? WHERE session_id = ? AND session_updated_ms != ?",
                    [(ms, sid, ms) for sid, ms in times.items()],
                )
            # REPLACE deletes the older queued text and appends the new one at the end of the queue.
            conn.executemany(
                "INSERT OR REPLACE INTO pending (message_id, session_id, text, text_hash, session_updated_ms)"
                " VALUES (?, ?, ?, ?, ?)",
                queue,
            )
            conn.executemany("DELETE FROM pending WHERE message_id = ?", [(m,) for m in stale_pending + blank])
            removed = self._delete_vectors(
                conn,
                "SELECT rowid FROM vectors WHERE message_id IN (SELECT value FROM json_each(?))",
                _ids_json(blank),
            )
            if replace_session_ids:
                conn.executemany(
                    "INSERT OR IGNORE INTO replaced (session_id) VALUES (?)", [(s,) for s in replace_session_ids]
                )
                conn.execute(
                    "DELETE FROM pending WHERE session_id IN (SELECT session_id FROM replaced)"
                    " AND message_id NOT IN (SELECT message_id FROM incoming)"
                )
                removed += self._delete_vectors(
                    conn,
                    "SELECT rowid FROM vectors WHERE session_id IN (SELECT session_id FROM replaced)"
                    " AND message_id NOT IN (SELECT message_id FROM incoming)",
                )
            conn.execute("DELETE FROM incoming")
            conn.execute("DELETE FROM replaced")
            if cursor is not None:
                conn.execute("INSERT OR REPLACE INTO cursors (store_uuid, change_seq) VALUES (?, ?)", cursor)
        return EnqueueOutcome(queued=len(queue), unchanged=unchanged, removed_rowids=removed)

    def _delete_vectors(self, conn: sqlite3.Connection, select_rowids: str, *params: object) -> list[int]:
        rowids = [row[0] for row in conn.execute(select_rowids, params).fetchall()]
        if rowids:
            doomed = _ids_json(rowids)
            conn.execute("DELETE FROM vectors WHERE rowid IN (SELECT value FROM json_each(?))", (doomed,))
            if self.dimension:
                conn.execute("DELETE FROM vec_items WHERE rowid IN (SELECT value FROM json_each(?))", (doomed,))
        return rowids

    def save_ann_training(self, training: AnnTraining) -> None:
        """Keep `training` in place of any earlier one."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO ann_training (id, params, digest, data) VALUES (1, ?, ?, ?)",
                (training.params, training.digest, training.data),
            )

    def save_meta(self, key: str, value: str) -> None:
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def take_pending(self, limit: int) -> list[PendingText]:
        """The next queued texts, the most recently active sessions' first; they stay queued until
        `store_vectors` commits their vectors."""
        rows = self._reader().execute(
            f"SELECT {_PENDING_COLUMNS} FROM pending ORDER BY session_updated_ms DESC, seq LIMIT ?", (limit,)
        )
        return [PendingText(*row) for row in rows]

    def store_vectors(self, model: str, texts: Sequence[PendingText], vectors: Sequence[np.ndarray]) -> StoredBatch:
        """Store the passage vectors (`vectors[i]`: rows of text i, in passage order) of texts still queued
        unchanged and dequeue them, in one transaction.

        A text replaced or removed while it was being embedded is skipped: its newer state wins.
        """
        with self._transaction() as conn:
            if not self.dimension:
                dimension = next((int(v.shape[1]) for v in vectors if len(v)), 0)
                self._set_model(conn, model, dimension)
            still = {
                row[0]
                for row in conn.execute(
                    "SELECT seq FROM pending WHERE seq IN (SELECT value FROM json_each(?))",
                    (_ids_json([t.seq for t in texts]),),
                )
            }
            fresh = [i for i, t in enumerate(texts) if t.seq in still]
            removed = self._delete_vectors(
                conn,
                "SELECT rowid FROM vectors WHERE message_id IN (SELECT value FROM json_each(?))",
                _ids_json([texts[i].message_id for i in fresh]),
            )
            added: list[int] = []
            sessions: list[str] = []
            for i in fresh:
                text = texts[i]
                for passage in range(len(vectors[i])):
                    added.append(
                        conn.execute(
                            "INSERT INTO vectors (message_id, passage, session_id, text_hash, session_updated_ms)"
                            " VALUES (?, ?, ?, ?, ?) RETURNING rowid",
                            (text.message_id, passage, text.session_id, text.text_hash, text.session_updated_ms),
                        ).fetchone()[0]
                    )
                    sessions.append(text.session_id)
            kept = np.ascontiguousarray(
                np.concatenate([vectors[i] for i in fresh]) if fresh else np.zeros((0, self.dimension)),
                dtype=np.float32,
            )
            conn.executemany(
                "INSERT INTO vec_items (rowid, embedding) VALUES (?, ?)",
                [(rowid, kept[j].tobytes()) for j, rowid in enumerate(added)],
            )
            conn.execute(
                "DELETE FROM pending WHERE seq IN (SELECT value FROM json_each(?))",
                (_ids_json([texts[i].seq for i in fresh]),),
            )
        return StoredBatch(
            added_rowids=np.array(added, dtype=np.int64),
            vectors=kept,
            sessions=sessions,
            removed_rowids=removed,
            stored=[texts[i] for i in fresh],
        )

    # -- reads ----------------------------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        return self._readers.get()

    def iter_vectors(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every stored (rowids, vectors) in chunks, for rebuilding the ANN index."""
        if not self.dimension:
            return
        cursor = self._reader().execute("SELECT rowid, embedding FROM vec_items")
        while rows := cursor.fetchmany(REBUILD_CHUNK):
            rowids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            flat = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
            yield rowids, flat.reshape(len(rows), self.dimension)

    def iter_row_sessions(self) -> Iterator[tuple[np.ndarray, list[str]]]:
        """Every stored vector's (rowid, session id) in chunks, for the serving side's session map."""
        cursor = self._reader().execute("SELECT rowid, session_id FROM vectors")
        while rows := cursor.fetchmany(REBUILD_CHUNK):
            yield np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)), [row[1] for row in rows]

    def lookup(self, rowids: np.ndarray) -> dict[int, MessageRef]:
        rows = self._reader().execute(
            "SELECT rowid, message_id, session_id FROM vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            (_ids_json(rowids),),
        )
        return {rowid: MessageRef(message_id, session_id) for rowid, message_id, session_id in rows}

    def session_vectors(self, session_id: str) -> np.ndarray:
        """The stored vectors of one session's messages (rows of `dimension` floats; none: 0 rows)."""
        if not self.dimension:
            return np.zeros((0, 0), dtype=np.float32)
        rows = (
            self._reader()
            .execute(
                "SELECT i.embedding FROM vectors v JOIN vec_items i ON i.rowid = v.rowid WHERE v.session_id = ?",
                (session_id,),
            )
            .fetchall()
        )
        flat = np.frombuffer(b"".join(row[0] for row in rows), dtype=np.float32)
        return flat.reshape(len(rows), self.dimension)

    def vectors_of_texts(self, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The stored passage vectors (rows, in passage order) of one message of each text hash the store
        holds (of any message, any session)."""
        if not self.dimension or not hashes:
            return {}
        conn = self._reader()
        found: dict[bytes, np.ndarray] = {}
        for digest in dict.fromkeys(hashes):
            rows = conn.execute(
                "SELECT i.embedding FROM vectors v JOIN vec_items i ON i.rowid = v.rowid"
                " WHERE v.message_id = (SELECT message_id FROM vectors WHERE text_hash = ? LIMIT 1)"
                " ORDER BY v.passage",
                (digest,),
            ).fetchall()
            if rows:
                flat = np.frombuffer(b"".join(row[0] for row in rows), dtype=np.float32)
                found[digest] = flat.reshape(len(rows), self.dimension)
        return found

    def exact_search(self, vector: np.ndarray, k: int) -> list[tuple[MessageRef, float]]:
        """Brute-force k nearest messages by L2 distance (sqlite-vec): the reference for FAISS."""
        if not self.dimension:
            return []
        rows = self._reader().execute(
            "SELECT v.message_id, v.session_id, knn.distance FROM"
            " (SELECT rowid, distance FROM vec_items WHERE embedding MATCH ? AND k = ?) AS knn"
            " JOIN vectors v ON v.rowid = knn.rowid ORDER BY knn.distance, v.message_id",
            (np.ascontiguousarray(vector, dtype=np.float32).tobytes(), k),
        )
        return [(MessageRef(message_id, session_id), distance) for message_id, session_id, distance in rows]

    def ann_training(self) -> AnnTraining | None:
        row = self._reader().execute("SELECT params, digest, data FROM ann_training").fetchone()
        return AnnTraining(*row) if row else None

    def meta(self, key: str) -> str | None:
        row = self._reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def window(self, max_sessions: int) -> list[str]:
        """The first `max_sessions` queued sessions in the worker's order: the most recently active first."""
        rows = self._reader().execute(
            "SELECT session_id FROM pending GROUP BY session_id"
            " ORDER BY max(session_updated_ms) DESC, min(seq), session_id LIMIT ?",
            (max_sessions,),
        )
        return [row[0] for row in rows]

    def window_size(self, session_ids: Sequence[str]) -> tuple[int, int]:
        """(texts, characters) queued for these sessions."""
        row = (
            self._reader()
            .execute(
                "SELECT count(*), coalesce(sum(length(text)), 0) FROM pending"
                " WHERE session_id IN (SELECT value FROM json_each(?))",
                (_ids_json(session_ids),),
            )
            .fetchone()
        )
        return int(row[0]), int(row[1])

    def pending_of(self, session_ids: Sequence[str]) -> list[PendingText]:
        """Every queued text of these sessions, in the worker's order."""
        rows = self._reader().execute(
            f"SELECT {_PENDING_COLUMNS} FROM pending"
            " WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY session_updated_ms DESC, seq",
            (_ids_json(session_ids),),
        )
        return [PendingText(*row) for row in rows]

    # Counts take `visible`: the scopes whose sessions the caller may see (None: every session).

    # `vectors` counts embedded texts (a message's first passage), in the unit of `pending`.

    def embedded_sessions(self, visible: Collection[str] | None = None) -> int:
        """Sessions with at least one vector."""
        where, params = _in_scopes(visible)
        sql = f"SELECT count(DISTINCT session_id) FROM vectors WHERE {where}"
        return int(self._reader().execute(sql, params).fetchone()[0])

    def queued_sessions(self, visible: Collection[str] | None = None) -> int:
        """Sessions with at least one queued text."""
        where, params = _in_scopes(visible)
        sql = f"SELECT count(DISTINCT session_id) FROM pending WHERE {where}"
        return int(self._reader().execute(sql, params).fetchone()[0])

    def coverage(self, visible: Collection[str] | None = None) -> Coverage:
        where, params = _in_scopes(visible)
        row = (
            self._reader()
            .execute(
                f"SELECT (SELECT max(session_updated_ms) FROM pending WHERE {where}),"
                f" (SELECT min(session_updated_ms) FROM vectors WHERE {where}),"
                f" (SELECT max(session_updated_ms) FROM vectors WHERE {where})",
                params * 3,
            )
            .fetchone()
        )
        return Coverage(*(int(value or 0) for value in row))

    def cursor(self, store_uuid: str) -> int:
        """The last change_seq taken from the partition store `store_uuid`; 0 for a store never followed."""
        row = self._reader().execute("SELECT change_seq FROM cursors WHERE store_uuid = ?", (store_uuid,)).fetchone()
        return int(row[0]) if row else 0

    def pending_count(self) -> int:
        return int(self._reader().execute("SELECT count(*) FROM pending").fetchone()[0])

    def counts(self, visible: Collection[str] | None = None) -> tuple[int, int]:
        """(texts embedded, texts pending)."""
        where, params = _in_scopes(visible)
        sql = (
            f"SELECT (SELECT count(*) FROM vectors WHERE passage = 0 AND {where}),"
            f" (SELECT count(*) FROM pending WHERE {where})"
        )
        row = self._reader().execute(sql, params * 2).fetchone()
        return int(row[0]), int(row[1])

    def close(self) -> None:
        self._readers.close()
        with self._lock:
            self._conn.close()
