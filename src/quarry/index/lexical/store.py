"""The SQLite store of a lexical partition: canonical records and unit rows for structured predicates.

Who holds SQL against the store's tables: the store, here (the writes and the change feed) and in its
schema module store_schema.py (the layout, and the statements of the named reads), and the two
compilers that build SQL from plans, predicates.py (conditions) and rows.py (unit-row listings and
aggregates, run on `reader()`: like Datasette's views, the statement is the plan's). Every other module
asks the store by name: the lookups of store_reads.py and store_events.py (`session_ord(id)`,
`session_head(id)`, `count_sessions(where, params)`, `events(...)`, ...), which the Store has, and
several of them on one committed state with `with store.snapshot() as reads:`. Writes run in
`transaction()` (quarry.core.sqlite_tx). tests/contract/test_layout.py holds every module to this.

Layout: store_schema.py; rows hold messages and units compactly: row_codec.py.

Held-apart payloads are compressed only when first written, and put back only when a read asks for
them (session_reads), so a window of events never carries megabytes of images.

Delegation child excerpts: a child session is stored on its parent's partition (same lineage root), so
each write links both ways in its own transaction: a delegation written, or one whose child was just
written, gets the child's final answer (`final_text`) as `child_excerpt_preview` / `_sha256` and
mapping_state `resolved` when its child is stored here. Whichever arrives first, the second write
completes the link.

Durability: WAL with `synchronous=FULL`, so every commit fsyncs the WAL before returning and an
acknowledged upsert survives a power loss, not only a process kill. A replica fed by the replicated log
(`durable=False`) commits with `synchronous=NORMAL`: a commit still survives the process being killed,
and what a power loss takes back (rows and checkpoint together: the store stays consistent) is applied
again from the log, which holds it fsync'd on a quorum of log servers. Checkpoints stay automatic
(every 64 MiB of WAL, run by the committing writer); `journal_size_limit` truncates the WAL file back
after a large batch, and `close()` checkpoints with TRUNCATE.

Change feed for the vector node: every session an upsert writes (new or changed) takes the next value
of the store's change counter (`meta.head_seq`, advanced in the same transaction) as its `change_seq`;
an unchanged re-ingest takes none. `embed_count` is how many texts `quarry.core.dialogue` embeds for
the session. A deleted session leaves a row in `tombstones` with the change_seq of its deletion, so the
feed tells a follower to drop what it holds of it. A follower keeps a cursor (store_uuid, change_seq)
and asks for what came after it; `meta.store_uuid` is random per store file, so a wiped or rebuilt
partition is noticed.

Log checkpoint (cluster mode): `meta.applied_seq` is the last sequence of the replicated log this
replica applied, written in the same transaction as the rows that record changed (Quickwit publishes
its checkpoint with the split), so after a crash the replica resumes exactly after what it holds.

Crash consistency with Tantivy: `replace()` commits new rows with `tantivy_pending = 1`; the partition
indexes them, commits Tantivy, then clears the marker. A session still pending at open is
re-indexed from these rows.

Threads: one writer connection, used by one thread at a time (`_writing` holds a lock for each use
and each transaction); readers get one connection per thread, which in WAL mode read concurrently
with the writer, and read the database file through a memory map (a search reads a few rows
scattered over the whole file: no read() copy per page). A connection is never used by two threads
at once: SQLite holds a connection's mutex through a statement, and calls `quarry_unpack` (Python)
inside it, even on INSERT (it computes generated columns); a second thread that held the interpreter
lock and touched the same connection would wait on that mutex while the first waits on the
interpreter lock, and the node would stop (seen: a replica's Stats read `applied_seq` from the
writer while it applied a batch). A Python-level lock is waited on without the interpreter lock.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import zstandard

from quarry.core import sqlite_tx
from quarry.core.dialogue import EMBEDDED_ROLES, message_items
from quarry.core.errors import QuarryError
from quarry.core.readers import ThreadReaders
from quarry.index.lexical.row_codec import action_from_row, pack_action, pack_proto, unpack_proto
from quarry.index.lexical.store_reads import Snapshot, StoreReads, final_text
from quarry.index.lexical.store_schema import (
    ACTION_COLUMNS,
    CHANGE_SEQ,
    DDL,
    DELETE_BLOCKS,
    FORMAT_VERSION,
    IN_JSON,
    INSERT_ACTION,
    INSERT_BLOCK,
    INSERT_CHUNK,
    INSERT_EVENT,
    INSERT_MESSAGE,
    INSERT_SESSION,
    INSERT_UNITS,
    MIGRATIONS,
    SESSION_TABLES,
    UPDATE_SESSION,
    json_list,
)
from quarry.index.lexical.unit_tables import prepare
from quarry.v1 import errors_pb2, index_pb2, units_pb2

if TYPE_CHECKING:
    from quarry.index.lexical.session_rows import SessionRecords

_PAYLOAD_COMPRESSION = 3  # zstd level: base64 and signatures gain little from higher levels
_PAGE_BYTES = 16384
_WAL_LIMIT_BYTES = 64 << 20
_READER_MMAP_BYTES = 1 << 40
CACHE_BYTES = 64 * 1024 * 1024  # an index node's SQLite page cache budget, shared by its partitions
MIN_CACHE_BYTES = 2 * 1024 * 1024
EXCERPT_PREVIEW_CHARS = 280


class StoredSession(NamedTuple):
    ord: int
    content_hash: str
    source_path: str
    scope: str


class Store(StoreReads):
    def __init__(self, path: Path, durable: bool = True, cache_bytes: int = CACHE_BYTES) -> None:
        """`durable` False: commits are not fsync'd (a replica of the log, which holds them durably).
        `cache_bytes`: the most each connection's page cache holds (this store's share of its node's
        budget: a cache fills to its limit as the store grows past it, and stays full)."""
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        self._cache_kib = max(MIN_CACHE_BYTES, cache_bytes) // 1024
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        self._writer_lock = threading.RLock()
        self._check_format()
        self._writer.executescript(DDL)
        self._writer.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        self._writer.executemany(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
            [("store_uuid", str(uuid.uuid4())), ("head_seq", "0"), ("applied_seq", "0")],
        )
        self._readers = ThreadReaders(self._connect_reader)
        self.store_uuid: str = self._meta("store_uuid")

    # ---- connections -------------------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """The writer connection, for this thread alone until the block ends (module docstring: Threads)."""
        with self._writer_lock:
            yield self._writer

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """The writer in one write transaction: committed when the block ends, rolled back if it raises."""
        return sqlite_tx.transaction(self._writer, self._writer_lock)

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """The store's lookups on this thread's reader, in one read transaction: one committed state."""
        with sqlite_tx.snapshot(self.reader()) as conn:
            yield Snapshot(conn)

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (WAL readers never block the writer): the lookups' and, for the
        statements they compile, the compilers' (module docstring)."""
        return self._readers.get()

    def _reading(self) -> sqlite3.Connection:
        return self.reader()

    def ready_for_units(self) -> bool:
        """This thread's reader made ready for unit predicates (unit_tables.prepare: the proto functions,
        the assertions attached); returns whether the partition has assertions."""
        return prepare(self.reader(), self.path.parent)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # Only takes effect on a new file. 16 KiB pages: ~10% less CPU per ingested message than 4 KiB
        # (fewer page splits and WAL frames for the blob rows), and shallower trees.
        conn.execute(f"PRAGMA page_size={_PAGE_BYTES}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT_BYTES}")
        conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_LIMIT_BYTES // _PAGE_BYTES}")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute(f"PRAGMA cache_size=-{self._cache_kib}")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.create_function("quarry_unpack", 2, unpack_proto, deterministic=True)
        return conn

    def _connect_reader(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("PRAGMA query_only=1")
        conn.execute(f"PRAGMA mmap_size={_READER_MMAP_BYTES}")
        return conn

    def _check_format(self) -> None:
        """Bring a store of an earlier format this build migrates up to this one, in one transaction;
        refuse one of any other layout (its rows would not fit these statements)."""
        conn = self._writer
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        has_tables = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").fetchone()
        if has_tables and version in MIGRATIONS:
            with self.transaction() as migrating:
                for step in range(version, FORMAT_VERSION):
                    for statement in MIGRATIONS[step]:
                        migrating.execute(statement)
                migrating.execute(f"PRAGMA user_version={FORMAT_VERSION}")
            return
        if has_tables and version != FORMAT_VERSION:
            conn.close()
            raise QuarryError(
                errors_pb2.NODE_UNAVAILABLE,
                f"{self.path} holds lexical store format {version}; this build reads format {FORMAT_VERSION}: "
                "re-ingest into a new data directory",
            )

    def _meta(self, key: str) -> str:
        """A committed value of `meta`, read through this thread's reader (any thread may ask)."""
        return self.reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]

    def close(self) -> None:
        self._readers.close()
        with self._writing() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()

    # ---- writes (the partition serializes callers) -------------------------------------------------

    def stored_sessions(self, session_ids: Sequence[str]) -> dict[str, StoredSession]:
        """Ordinal, content hash, source and scope of the sessions already stored, by id."""
        with self._writing() as conn:
            rows = conn.execute(
                f"SELECT id, ord, content_hash, source_path, scope FROM sessions WHERE id {IN_JSON}",
                (json_list(session_ids),),
            )
            return {row[0]: StoredSession(*row[1:]) for row in rows}

    def next_ords(self) -> tuple[int, int]:
        """The next free session and message ordinals. The partition is the only writer, so it assigns
        ordinals itself and writes every session row of a batch with one statement.

        Message ordinals are never reused (AUTOINCREMENT keeps the highest ever written), so a stale
        searcher snapshot cannot map an old document onto another message's row."""
        with self._writing() as conn:
            (max_session,) = conn.execute("SELECT COALESCE(MAX(ord), 0) FROM sessions").fetchone()
            row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
        return max_session + 1, (row[0] if row else 0) + 1

    def head_seq(self) -> int:
        """The change_seq of the last session written (0 before any); the partition numbers a batch after it."""
        return int(self._meta("head_seq"))

    def replace(
        self, batch: Sequence[SessionRecords], replaced: Collection[int], applied_seq: int | None = None
    ) -> None:
        """Write the sessions' rows in one durable transaction, marked as pending for Tantivy.

        `replaced` holds the ordinals of the sessions already stored: their rows are updated in place
        (the ordinal is stable) and their old messages, blocks, actions, tags and derived units deleted
        first. The rows carry their change_seq (numbered by the partition after `head_seq()`); the highest
        becomes the new head in the same transaction, as do the child excerpts of the delegations the
        batch links (`_link_children`), a session id's tombstone (it is stored again) and, from the log,
        `applied_seq`. Held-apart payloads are written once each (`_store_payloads`), and those only the
        replaced versions held are deleted.
        """
        with self.transaction() as conn:
            dropped = _delete_rows(conn, json_list(replaced)) if replaced else []
            conn.executemany(INSERT_SESSION, [r.session_row for r in batch if r.session_ord not in replaced])
            conn.executemany(
                UPDATE_SESSION,
                [(*r.session_row[1:], r.session_ord) for r in batch if r.session_ord in replaced],  # type: ignore[index]
            )
            conn.executemany(
                "INSERT OR IGNORE INTO session_tags (tag, session_ord) VALUES (?, ?)",
                [t for r in batch for t in r.tags],
            )
            conn.executemany(
                INSERT_MESSAGE,
                [(*row[:-1], pack_proto(row[-1], row[1])) for r in batch for row in r.messages],  # type: ignore[arg-type]
            )
            conn.executemany(INSERT_BLOCK, [row for r in batch for row in r.blocks])
            conn.executemany(INSERT_ACTION, [pack_action(row) for r in batch for row in r.actions])
            for table, insert in INSERT_UNITS.items():
                conn.executemany(
                    insert,
                    [(*row[:-1], pack_proto(row[-1], row[0])) for r in batch for row in r.units[table]],  # type: ignore[arg-type]
                )
            conn.executemany(INSERT_EVENT, [row for r in batch for row in r.events])
            conn.executemany(INSERT_CHUNK, [row for r in batch for row in r.event_chunks])
            _store_payloads(conn, batch)
            _drop_unheld(conn, dropped)
            _link_children(conn, json_list(r.session_ord for r in batch))
            stored = [r.session_row for r in batch if r.session_row is not None]
            conn.execute(f"DELETE FROM tombstones WHERE session_id {IN_JSON}", (json_list(row[1] for row in stored),))
            head = max((row[CHANGE_SEQ] for row in stored), default=None)
            if head is not None:
                _set_meta(conn, "head_seq", head)
            if applied_seq is not None:
                _set_meta(conn, "applied_seq", applied_seq)

    def delete(self, sessions: dict[str, int], applied_seq: int | None = None) -> None:
        """Remove stored sessions (id -> ordinal) and every row of theirs in one durable transaction,
        leaving a tombstone with the next change_seq for each (the feed's followers drop their texts);
        with `applied_seq`, the log checkpoint in the same transaction."""
        with self.transaction() as conn:
            ords = json_list(sessions.values())
            dropped = _delete_rows(conn, ords)
            conn.execute(f"DELETE FROM sessions WHERE ord {IN_JSON}", (ords,))
            _drop_unheld(conn, dropped)
            head = int(conn.execute("SELECT value FROM meta WHERE key = 'head_seq'").fetchone()[0])
            conn.executemany(
                "INSERT OR REPLACE INTO tombstones (session_id, change_seq) VALUES (?, ?)",
                [(sid, head + n) for n, sid in enumerate(sorted(sessions), start=1)],
            )
            if sessions:
                _set_meta(conn, "head_seq", head + len(sessions))
            if applied_seq is not None:
                _set_meta(conn, "applied_seq", applied_seq)

    def applied_seq(self) -> int:
        """The last log sequence this store applied (0: none, or not fed by a log)."""
        return int(self._meta("applied_seq"))

    def set_applied_seq(self, applied_seq: int) -> None:
        """Advance the log checkpoint alone: the records up to it changed nothing here (unchanged versions)."""
        with self._writing() as conn:
            _set_meta(conn, "applied_seq", applied_seq)

    def clear_pending(self, session_ords: Sequence[int]) -> None:
        """Mark sessions as indexed, without waiting for the disk: losing this write only costs a
        re-index at the next open, and the next durable commit syncs it anyway."""
        with self._writing() as conn:
            conn.execute("PRAGMA synchronous=NORMAL")
            try:
                conn.execute(f"UPDATE sessions SET tantivy_pending = 0 WHERE ord {IN_JSON}", (json_list(session_ords),))
            finally:
                conn.execute(f"PRAGMA synchronous={self._synchronous}")

    def pending_ords(self) -> list[int]:
        with self._writing() as conn:
            return [r[0] for r in conn.execute("SELECT ord FROM sessions WHERE tantivy_pending = 1 ORDER BY ord")]

    def all_ords(self) -> list[int]:
        with self._writing() as conn:
            return [r[0] for r in conn.execute("SELECT ord FROM sessions ORDER BY ord")]

    def expected_documents(self) -> int:
        with self._writing() as conn:
            return conn.execute("SELECT COALESCE(SUM(doc_count), 0) FROM sessions").fetchone()[0]

    def load_sessions(self, session_ords: Sequence[int]) -> Iterator[tuple[units_pb2.Session, int, list[int]]]:
        """Sessions rebuilt from the rows with their messages and actions (what Tantivy indexes; not the
        derived units), with the session and message ordinals. Each session is read whole before it is
        given out: the writer is not held while the caller indexes it."""
        for session_ord in session_ords:
            with self._writing() as conn:
                (blob,) = conn.execute("SELECT summary FROM sessions WHERE ord = ?", (session_ord,)).fetchone()
                messages = conn.execute(
                    "SELECT ord, proto FROM messages WHERE session_ord = ? ORDER BY ord", (session_ord,)
                ).fetchall()
                actions = conn.execute(
                    f"SELECT {ACTION_COLUMNS} FROM actions WHERE session_ord = ? ORDER BY ord", (session_ord,)
                ).fetchall()
            session = units_pb2.Session.FromString(blob)
            session.messages.extend(units_pb2.Message.FromString(proto) for _, proto in messages)
            session.actions.extend(action_from_row(row, session.id) for row in actions)
            yield session, session_ord, [mord for mord, _ in messages]

    # ---- the change feed (any thread) --------------------------------------------------------------

    def embed_feed(self, after_seq: int, max_sessions: int) -> index_pb2.EmbedFeedResponse:
        """The sessions written after `after_seq` (the first `max_sessions`, in change_seq order) with the
        texts to embed, built from their stored messages; head and backlog from the same snapshot."""
        response = index_pb2.EmbedFeedResponse(store_uuid=self.store_uuid)
        with sqlite_tx.snapshot(self.reader()) as conn:  # one read for the head, the backlog and the sessions
            response.head_seq = int(conn.execute("SELECT value FROM meta WHERE key = 'head_seq'").fetchone()[0])
            (response.backlog_texts,) = conn.execute(
                "SELECT COALESCE(SUM(embed_count), 0) FROM sessions WHERE change_seq > ?", (after_seq,)
            ).fetchone()
            if max_sessions <= 0:
                return response
            # A deleted session comes as itself with no texts (ordinal 0 holds no messages).
            sessions = conn.execute(
                "SELECT ord, id, change_seq, embed_count, updated_ms FROM sessions WHERE change_seq > ? "
                "UNION ALL SELECT 0, session_id, change_seq, 0, 0 FROM tombstones WHERE change_seq > ? "
                "ORDER BY 3 LIMIT ?",
                (after_seq, after_seq, max_sessions),
            ).fetchall()
            wanted = [ord_ for ord_, _, _, embed_count, _ in sessions if embed_count]
            messages: dict[int, list[units_pb2.Message]] = {}
            for session_ord, proto in conn.execute(
                f"SELECT session_ord, proto FROM messages WHERE session_ord {IN_JSON} AND role {IN_JSON} ORDER BY ord",
                (json_list(wanted), json_list(EMBEDDED_ROLES)),
            ):
                messages.setdefault(session_ord, []).append(units_pb2.Message.FromString(proto))
        for session_ord, session_id, change_seq, _, updated_ms in sessions:
            response.sessions.add(
                session_id=session_id,
                change_seq=change_seq,
                items=message_items(session_id, updated_ms, messages.get(session_ord, ())),
            )
        return response


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(value), key))


def _delete_rows(conn: sqlite3.Connection, session_ords: str) -> list[str]:
    """Delete every row that belongs to these sessions (`session_ords`: a json_list) but their session
    rows; returns the digests of the payloads they held (`_drop_unheld` deletes those no one holds)."""
    dropped = _held_digests(conn, session_ords)
    conn.execute(DELETE_BLOCKS, (session_ords,))
    for table in SESSION_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE session_ord {IN_JSON}", (session_ords,))
    return dropped


def _link_children(conn: sqlite3.Connection, session_ords: str) -> None:
    """Fill the child excerpt of every delegation of these sessions whose child is stored, and of every
    delegation whose child is one of these sessions (`session_ords`: a json_list)."""
    rows = conn.execute(
        "SELECT d.ord, d.id, d.proto, c.ord FROM delegations d JOIN sessions c ON c.id = d.child_session_id "
        f"WHERE d.session_ord {IN_JSON} AND d.child_session_id != '' "
        "UNION SELECT d.ord, d.id, d.proto, c.ord FROM sessions c JOIN delegations d ON d.child_session_id = c.id "
        f"WHERE c.ord {IN_JSON} AND d.child_session_id != ''",
        (session_ords, session_ords),
    ).fetchall()
    answers: dict[int, str] = {}
    updates = []
    for delegation_ord, delegation_id, proto, child_ord in rows:
        if child_ord not in answers:
            answers[child_ord] = final_text(conn, child_ord)
        text = answers[child_ord]
        delegation = units_pb2.Delegation.FromString(proto)
        delegation.mapping_state = "resolved"
        delegation.child_excerpt_preview = text[:EXCERPT_PREVIEW_CHARS]
        delegation.child_excerpt_sha256 = hashlib.sha256(text.encode()).hexdigest() if text else ""
        body = pack_proto(delegation.SerializeToString(), delegation_id)
        updates.append((delegation.mapping_state, body, delegation_ord))
    conn.executemany("UPDATE delegations SET mapping_state = ?, body = ? WHERE ord = ?", updates)


def _held_digests(conn: sqlite3.Connection, session_ords: str) -> list[str]:
    """The digests of the payloads these sessions hold (`session_ords`: a json_list)."""
    rows = conn.execute(
        f"SELECT DISTINCT sha256 FROM session_held_payloads WHERE session_ord {IN_JSON}", (session_ords,)
    )
    return [digest for (digest,) in rows]


def _store_payloads(conn: sqlite3.Connection, batch: Sequence[SessionRecords]) -> None:
    """Link each session to the payloads it holds, and write those the store does not hold yet
    (compressed here, so a session written again does not compress its payloads again)."""
    wanted = {digest: data for r in batch for digest, data in r.payloads}
    if not wanted:
        return
    present = {
        digest
        for (digest,) in conn.execute(f"SELECT sha256 FROM held_payloads WHERE sha256 {IN_JSON}", (json_list(wanted),))
    }
    compress = zstandard.ZstdCompressor(level=_PAYLOAD_COMPRESSION).compress
    conn.executemany(
        "INSERT INTO held_payloads (sha256, data) VALUES (?, ?)",
        [(digest, compress(data)) for digest, data in wanted.items() if digest not in present],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO session_held_payloads (session_ord, sha256) VALUES (?, ?)",
        [(r.session_ord, digest) for r in batch for digest, _ in r.payloads],
    )


def _drop_unheld(conn: sqlite3.Connection, digests: Sequence[str]) -> None:
    """Delete the payloads among `digests` that no stored session holds any more."""
    if digests:
        conn.execute(
            f"DELETE FROM held_payloads WHERE sha256 {IN_JSON} AND NOT EXISTS "
            "(SELECT 1 FROM session_held_payloads h WHERE h.sha256 = held_payloads.sha256)",
            (json_list(digests),),
        )
