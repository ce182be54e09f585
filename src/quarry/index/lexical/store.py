"""The SQLite store of a lexical partition: canonical records and unit rows for structured predicates.

The store is the partition's source of truth. Each session keeps its summary (a serialized Session
without messages, actions and derived units), every message as a serialized Message (with its
blocks), and one row per action with all Action fields; together they rebuild what the Tantivy
index holds, so it can be rebuilt from here at any time. Beside the blobs, a table holds only the
columns a predicate filters or sorts on, and only the indexes those paths use
(tests/index/test_query_plans.py checks each path): every column and index is paid for by every
ingested row. The rows themselves are built by records.py; the partition assigns the ordinals (it is the
only writer), so a batch is one statement per table. `PRAGMA user_version` records the layout; a
store in another layout is refused at open.

A message or derived-unit row stores its proto as `body`, without the two ids (the unit's own and its
session's) that the row's `id` column gives back (`pack_proto`); the `proto` column, generated on read
by the SQL function every connection of this module registers, is the serialized proto byte for byte.
A connection opened elsewhere reads every other column, but `proto` needs `quarry_unpack` registered.
Likewise an action's `id` and `block_id` are generated (plain SQL) from its message id (`pack_action`).

The derived units (files, runs, observed events, context snapshots, delegations) are one row each:
their filter and sort columns and the whole unit as a serialized proto. They are written, replaced
and deleted with their session, and indexed by session ordinal only: a public ref names its session,
so a lookup by id goes through the session's ordinal and reads that session's rows alone.

Raw records (seed 002's events) are stored as their sources wrote them, but for the payloads their
format marks as media or opaque data (quarry.ingest.payloads): a chunk's record holds a placeholder and
its place, and `held_payloads` the bytes, once per partition for each digest (a session ingested again
as it grows, or two sessions quoting one image, add none), compressed only when first written. Reads
put them back only when asked (session_reads), so a window of events never carries megabytes of images.

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
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import zstandard

from quarry.core.dialogue import EMBEDDED_ROLES, message_items
from quarry.core.errors import QuarryError
from quarry.core.readers import ThreadReaders
from quarry.v1 import errors_pb2, index_pb2, units_pb2

if TYPE_CHECKING:
    from quarry.index.lexical.session_rows import SessionRecords

COUNT_FIELDS = tuple(f.name for f in units_pb2.SessionCounts.DESCRIPTOR.fields)
FORMAT_VERSION = 10  # PRAGMA user_version of the layout below (5: seed 002's raw log events; 6: scopes;
# 7: message and unit protos without the ids their row gives back, log_event_chunks a rowid table;
# 8: actions' exit_code and followup; 9: raw records byte for byte, their media and opaque payloads
# held apart in held_payloads; 10: sessions' host and pusher)
# Payloads held apart from the raw records (quarry.ingest.payloads): each once per partition, by the
# sha256 of its bytes, zstd-compressed; `session_held_payloads` says which sessions hold which, so a
# payload is deleted with the last session holding it.
_HELD_PAYLOADS_DDL = (
    "CREATE TABLE IF NOT EXISTS held_payloads (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS session_held_payloads (session_ord INTEGER NOT NULL, sha256 TEXT NOT NULL, "
    "PRIMARY KEY (session_ord, sha256)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS session_held_payloads_digest ON session_held_payloads (sha256)",
)
# The statements that bring a store of format N to format N + 1 in place (its rows keep their values;
# what the new columns and tables record is filled in for sessions written from then on: a format 8
# store's raw records keep the base64 payloads it replaced by {"omitted": …}, until their source is
# ingested again).
_MIGRATIONS = {
    7: (
        "ALTER TABLE actions ADD COLUMN exit_code INTEGER",
        "ALTER TABLE actions ADD COLUMN followup TEXT NOT NULL DEFAULT ''",
    ),
    8: _HELD_PAYLOADS_DDL,
    9: (
        "ALTER TABLE sessions ADD COLUMN host TEXT NOT NULL DEFAULT '' COLLATE NOCASE",
        "ALTER TABLE sessions ADD COLUMN pusher TEXT NOT NULL DEFAULT '' COLLATE NOCASE",
    ),
}
_PAYLOAD_COMPRESSION = 3  # zstd level: base64 and signatures gain little from higher levels
_PAGE_BYTES = 16384
_WAL_LIMIT_BYTES = 64 << 20
_READER_MMAP_BYTES = 1 << 40
CACHE_BYTES = 64 * 1024 * 1024  # an index node's SQLite page cache budget, shared by its partitions
MIN_CACHE_BYTES = 2 * 1024 * 1024

# Columns are those a predicate filters or sorts on; everything else lives in the blobs. The time
# indexes take random keys on a bulk import, so they are kept narrow (the time alone, SQLite breaks
# ties on the id with a small sort per equal time): each batch rewrites fewer pages of them.
_DDL = f"""
CREATE TABLE IF NOT EXISTS sessions (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  origin TEXT NOT NULL COLLATE NOCASE,
  title_folded TEXT NOT NULL,
  repo TEXT NOT NULL COLLATE NOCASE,
  updated_ms INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  cwd TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  parent_session_id TEXT NOT NULL,
  source_path TEXT NOT NULL,
  scope TEXT NOT NULL,
  host TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
  pusher TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
  {", ".join(f"{name} INTEGER NOT NULL" for name in COUNT_FIELDS)},
  change_seq INTEGER NOT NULL,
  embed_count INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  doc_count INTEGER NOT NULL,
  tantivy_pending INTEGER NOT NULL,
  summary BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated_ms DESC, id);
CREATE INDEX IF NOT EXISTS sessions_repo ON sessions (repo);
CREATE INDEX IF NOT EXISTS sessions_origin ON sessions (origin);
CREATE INDEX IF NOT EXISTS sessions_scope ON sessions (scope);
CREATE INDEX IF NOT EXISTS sessions_pending ON sessions (tantivy_pending) WHERE tantivy_pending = 1;
CREATE INDEX IF NOT EXISTS sessions_change ON sessions (change_seq, embed_count);  -- covers the backlog sum
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_session_id);  -- lineage levels, --root

-- Seed 002's raw log events: per event the columns its filters read, the message it became (its
-- ordinal, 0 for none: a search hit on a message finds its events; and its seq, -1 for none) and
-- `links` (the rest of the event without text and raw record: line, inferred time, replacements,
-- sources). Texts and raw records live in chunks of consecutive events, zstd-compressed, texts
-- first: a read that needs only texts never touches the raw records' pages.
CREATE TABLE IF NOT EXISTS log_events (
  session_ord INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  surface TEXT NOT NULL,
  message_ord INTEGER NOT NULL,
  message_seq INTEGER NOT NULL,
  links BLOB NOT NULL,
  PRIMARY KEY (session_ord, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS log_events_message ON log_events (message_ord) WHERE message_ord != 0;
-- A rowid table: a WITHOUT ROWID row keeps at most ~1/4 of a page in place and spills the rest to
-- overflow pages of its own, which left half of each 16 KiB overflow page of a chunk empty.
CREATE TABLE IF NOT EXISTS log_event_chunks (
  session_ord INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  texts BLOB NOT NULL,
  raws BLOB NOT NULL,
  PRIMARY KEY (session_ord, first_seq)
);

{";".join(_HELD_PAYLOADS_DDL)};

CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tombstones (
  session_id TEXT PRIMARY KEY,
  change_seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tombstones_change ON tombstones (change_seq);

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
  role TEXT NOT NULL COLLATE NOCASE,
  time_ms INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages (session_ord, role);
CREATE INDEX IF NOT EXISTS messages_time ON messages (time_ms);

CREATE TABLE IF NOT EXISTS blocks (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  message_ord INTEGER NOT NULL,
  type TEXT NOT NULL COLLATE NOCASE,
  tool TEXT NOT NULL COLLATE NOCASE,
  path_norm TEXT NOT NULL,
  time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_message ON blocks (message_ord);
CREATE INDEX IF NOT EXISTS blocks_time ON blocks (time_ms);

-- `id` and `block_id` follow from message_id and seq (pack_action): stored only when they do not.
CREATE TABLE IF NOT EXISTS actions (
  ord INTEGER PRIMARY KEY,
  id TEXT GENERATED ALWAYS AS (COALESCE(own_id, substr(message_id, 1, id_prefix) || ':action:' || seq)) VIRTUAL,
  session_ord INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  block_id TEXT GENERATED ALWAYS AS (COALESCE(own_block_id, message_id || ':' || block_index)) VIRTUAL,
  seq INTEGER NOT NULL,
  category TEXT NOT NULL COLLATE NOCASE,
  tool TEXT NOT NULL COLLATE NOCASE,
  command TEXT NOT NULL,
  path TEXT NOT NULL,
  path_norm TEXT NOT NULL,
  output TEXT NOT NULL,
  failed INTEGER NOT NULL,
  input_json TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  own_id TEXT,  -- NULL: the id is `<message_id's first id_prefix characters>:action:<seq>`
  id_prefix INTEGER,
  own_block_id TEXT,  -- NULL: the block id is `<message_id>:<block_index>`
  block_index INTEGER,
  exit_code INTEGER,  -- NULL: the source does not record it
  followup TEXT NOT NULL DEFAULT ''  -- a failed action's quarry.ingest.followup label
);
CREATE INDEX IF NOT EXISTS actions_session ON actions (session_ord, seq);
CREATE INDEX IF NOT EXISTS actions_tool ON actions (tool, session_ord);
CREATE INDEX IF NOT EXISTS actions_category ON actions (category, session_ord);
CREATE INDEX IF NOT EXISTS actions_tool_time ON actions (tool, time_ms);
CREATE INDEX IF NOT EXISTS actions_category_time ON actions (category, time_ms);
CREATE INDEX IF NOT EXISTS actions_time ON actions (time_ms);

CREATE TABLE IF NOT EXISTS files (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  path_norm TEXT NOT NULL,
  categories TEXT NOT NULL,  -- the action categories on the path, space-separated, sorted
  first_time_ms INTEGER NOT NULL,
  last_time_ms INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS files_session ON files (session_ord);

CREATE TABLE IF NOT EXISTS runs (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  role TEXT NOT NULL COLLATE NOCASE,
  status TEXT NOT NULL COLLATE NOCASE,
  agent TEXT NOT NULL COLLATE NOCASE,
  child_session_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS runs_session ON runs (session_ord);

CREATE TABLE IF NOT EXISTS observed_events (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL COLLATE NOCASE,
  delivery_state TEXT NOT NULL COLLATE NOCASE,
  time_ms INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS observed_events_session ON observed_events (session_ord);

CREATE TABLE IF NOT EXISTS context_snapshots (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  boundary TEXT NOT NULL COLLATE NOCASE,
  time_ms INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS context_snapshots_session ON context_snapshots (session_ord);

CREATE TABLE IF NOT EXISTS delegations (
  ord INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  session_ord INTEGER NOT NULL,
  child_session_id TEXT NOT NULL,
  mapping_state TEXT NOT NULL COLLATE NOCASE,
  result_state TEXT NOT NULL COLLATE NOCASE,
  agent TEXT NOT NULL COLLATE NOCASE,
  time_ms INTEGER NOT NULL,
  body BLOB NOT NULL,
  proto BLOB GENERATED ALWAYS AS (quarry_unpack(body, id)) VIRTUAL
);
CREATE INDEX IF NOT EXISTS delegations_session ON delegations (session_ord);
CREATE INDEX IF NOT EXISTS delegations_child ON delegations (child_session_id) WHERE child_session_id != '';
"""

ACTION_COLUMNS = (
    "id, session_ord, message_id, block_id, seq, category, tool, command, path, output, failed, input_json, time_ms, "
    "exit_code, followup"
)
SESSION_COLUMNS = (
    "ord",
    "id",
    "origin",
    "title_folded",
    "repo",
    "updated_ms",
    "duration_ms",
    "cwd",
    "created_ms",
    "parent_session_id",
    "source_path",
    "scope",
    "host",
    "pusher",
    *COUNT_FIELDS,
    "change_seq",
    "embed_count",
    "content_hash",
    "doc_count",
    "tantivy_pending",
    "summary",
)
# A message or unit row tuple (records.py) ends with the serialized proto; Store.replace packs it into `body`.
MESSAGE_COLUMNS = (
    "ord, id, session_ord, role, time_ms, duration_ms, input_tokens, output_tokens, cache_read_tokens, "
    "cache_write_tokens, body"
)
BLOCK_COLUMNS = "id, session_ord, message_ord, type, tool, path_norm, time_ms"
# The derived-unit tables (SessionRecords.units holds their rows by table): the columns a row tuple fills.
UNIT_TABLES = {
    "files": "id, session_ord, path_norm, categories, first_time_ms, last_time_ms, body",
    "runs": "id, session_ord, role, status, agent, child_session_id, started_ms, body",
    "observed_events": "id, session_ord, seq, kind, delivery_state, time_ms, body",
    "context_snapshots": "id, session_ord, seq, boundary, time_ms, body",
    "delegations": "id, session_ord, child_session_id, mapping_state, result_state, agent, time_ms, body",
}
EXCERPT_PREVIEW_CHARS = 280
_TEXT_BLOCK_TYPES = frozenset(("text", "code"))
_PACKED = b"\x00"  # the first byte of a packed body (pack_proto)
_BYTES = tuple(bytes((n,)) for n in range(0x80))
_ID_TAG, _SESSION_TAG = b"\x0a", b"\x12"  # wire tags (field << 3 | type 2) of Message.id and .session_id
_CURRENT_SURFACES = frozenset(("", "current"))


def _insert(table: str, columns: str) -> str:
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * (columns.count(',') + 1))})"


_INSERT_SESSION = _insert("sessions", ", ".join(SESSION_COLUMNS))
_UPDATE_SESSION = f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in SESSION_COLUMNS[1:])} WHERE ord = ?"
_INSERT_MESSAGE = _insert("messages", MESSAGE_COLUMNS)
_INSERT_BLOCK = _insert("blocks", BLOCK_COLUMNS)
_INSERT_ACTION = _insert(
    "actions",
    "session_ord, message_id, seq, category, tool, command, path, output, failed, input_json, time_ms, exit_code, "
    "followup, path_norm, own_id, id_prefix, own_block_id, block_index",
)
_INSERT_UNITS = {table: _insert(table, columns) for table, columns in UNIT_TABLES.items()}
EVENT_COLUMNS = "seq, type, time_ms, surface, message_seq, links"
_INSERT_EVENT = _insert("log_events", "session_ord, message_ord, " + EVENT_COLUMNS)
_INSERT_CHUNK = _insert("log_event_chunks", "session_ord, first_seq, texts, raws")
# Tables whose rows belong to a session (by session_ord), deleted with it or before it is rewritten.
_SESSION_TABLES = (
    "session_tags",
    "messages",
    "actions",
    *UNIT_TABLES,
    "log_events",
    "log_event_chunks",
    "session_held_payloads",
)
_IN_JSON = "IN (SELECT value FROM json_each(?))"
_DELETE_BLOCKS = f"DELETE FROM blocks WHERE message_ord IN (SELECT ord FROM messages WHERE session_ord {_IN_JSON})"
_CHANGE_SEQ = SESSION_COLUMNS.index("change_seq")


class StoredSession(NamedTuple):
    ord: int
    content_hash: str
    source_path: str
    scope: str


class HitRow(NamedTuple):
    session_id: str
    updated_ms: int
    summary: bytes  # a serialized Session without messages and actions
    message: bytes  # a serialized Message; empty when it is gone (replaced after the searcher's snapshot)


def json_list(values: Iterable[object]) -> str:
    """A parameter for `IN (SELECT value FROM json_each(?))`: sets of any size in one bind."""
    return orjson.dumps(list(values)).decode()


def action_from_row(row: Sequence[object], session_id: str) -> units_pb2.Action:
    """An Action from the `ACTION_COLUMNS` of a row (session_ord replaced by the session id)."""
    (id_, _, message_id, block_id, seq, category, tool, command, path, output, failed, input_json, time_ms) = row[:13]
    exit_code, followup = row[13:15]
    action = units_pb2.Action(
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
        followup=followup,
    )
    if exit_code is not None:
        action.exit_code = exit_code
    return action


def pack_proto(proto: bytes, unit_id: str) -> bytes:
    """A row's `body`: its serialized message or unit (`proto`) without the ids its row's `id` gives back.

    Messages and the derived units begin with `id` (field 1) and `session_id` (field 2), and every id
    begins with its session's long id: the two repeated it twice, a fifth of a message's bytes and
    two fifths of an observed event's. Protobuf writes fields in number order, so the two lead the
    bytes. When they are the row's id and a prefix of it, the body is a zero byte (no serialized proto
    starts with one: field number 0 is invalid), the session id's length in bytes (a varint) and the
    bytes after the two fields; otherwise `proto` itself. A body is kept only when `unpack_proto`
    gives back exactly `proto`. The `proto` column (SQL function `quarry_unpack`) gives them back to
    every read: slicing bytes costs about a µs each way. Block ids (`<message id>:<index>`) repeat
    the id too, but taking them out means walking every field of the message.
    """
    mid = unit_id.encode()
    lead = _ID_TAG + _encode_varint(len(mid)) + mid
    if not mid or not proto.startswith(lead):
        return proto
    pos = len(lead)
    session_bytes = 0
    if proto[pos : pos + 1] == _SESSION_TAG:
        try:
            session_bytes, pos = _varint(proto, pos + 1)
        except IndexError:
            return proto
        pos += session_bytes
    body = _PACKED + _encode_varint(session_bytes) + proto[pos:]
    return body if unpack_proto(body, unit_id) == proto else proto


def pack_action(row: Sequence[Any]) -> tuple[object, ...]:
    """The `_INSERT_ACTION` values of an action row (`ACTION_COLUMNS` + path_norm, records.py).

    An action's id (`<session id>:action:<seq>`) and block id (`<message id>:<index>`) repeat its
    message id, which the row holds: the generated columns `id` and `block_id` give them back from
    message_id, seq, the id's prefix length and the block index; `own_id` / `own_block_id` hold an id
    only when it does not have that form."""
    action_id, session_ord, message_id, block_id, seq, *rest = row
    suffix = f":action:{seq}"
    prefix = len(action_id) - len(suffix)
    derived = prefix >= 0 and action_id.endswith(suffix) and message_id[:prefix] == action_id[:prefix]
    head, colon, index = block_id.rpartition(":")
    indexed = bool(colon) and head == message_id and index.isascii() and index.isdigit() and str(int(index)) == index
    return (
        session_ord,
        message_id,
        seq,
        *rest,
        None if derived else action_id,
        prefix if derived else None,
        None if indexed else block_id,
        int(index) if indexed else None,
    )


def unpack_proto(body: bytes | None, unit_id: str | None) -> bytes | None:
    """The serialized proto of a `body` (pack_proto) and its row's id: SQL function `quarry_unpack`."""
    if body is None or body[:1] != _PACKED:
        return body
    mid = unit_id.encode()  # type: ignore[union-attr]
    session_bytes, pos = _varint(body, 1)
    lead = _ID_TAG + _encode_varint(len(mid)) + mid
    if session_bytes:
        lead += _SESSION_TAG + _encode_varint(session_bytes) + mid[:session_bytes]
    return lead + body[pos:]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    if value < 0x80:  # ids are mostly shorter than 128 bytes
        return _BYTES[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def dialogue_text(blocks: Iterable[units_pb2.Block]) -> str:
    """The prose and code of these blocks, one after the other; "" when they have none."""
    return "\n".join(b.text for b in blocks if b.type in _TEXT_BLOCK_TYPES and b.text and not b.text.isspace())


def final_text(conn: sqlite3.Connection, session_ord: int) -> str:
    """A session's final answer: the text of its last assistant message on the current surface that
    has some (a message with no surface recorded counts as current); "" when there is none."""
    rows = conn.execute(
        "SELECT proto FROM messages WHERE session_ord = ? AND role = 'assistant' ORDER BY ord DESC", (session_ord,)
    )
    for (proto,) in rows:
        message = units_pb2.Message.FromString(proto)
        if message.surface in _CURRENT_SURFACES and (text := dialogue_text(message.blocks)):
            return text
    return ""


def _link_children(conn: sqlite3.Connection, session_ords: str) -> None:
    """Fill the child excerpt of every delegation of these sessions whose child is stored, and of every
    delegation whose child is one of these sessions (`session_ords`: a json_list)."""
    rows = conn.execute(
        "SELECT d.ord, d.id, d.proto, c.ord FROM delegations d JOIN sessions c ON c.id = d.child_session_id "
        f"WHERE d.session_ord {_IN_JSON} AND d.child_session_id != '' "
        "UNION SELECT d.ord, d.id, d.proto, c.ord FROM sessions c JOIN delegations d ON d.child_session_id = c.id "
        f"WHERE c.ord {_IN_JSON} AND d.child_session_id != ''",
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
        f"SELECT DISTINCT sha256 FROM session_held_payloads WHERE session_ord {_IN_JSON}", (session_ords,)
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
        for (digest,) in conn.execute(f"SELECT sha256 FROM held_payloads WHERE sha256 {_IN_JSON}", (json_list(wanted),))
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
            f"DELETE FROM held_payloads WHERE sha256 {_IN_JSON} AND NOT EXISTS "
            "(SELECT 1 FROM session_held_payloads h WHERE h.sha256 = held_payloads.sha256)",
            (json_list(digests),),
        )


class Store:
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
        self._writer.executescript(_DDL)
        self._writer.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        self._writer.executemany(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
            [("store_uuid", str(uuid.uuid4())), ("head_seq", "0"), ("applied_seq", "0")],
        )
        self._readers = ThreadReaders(self._connect_reader)
        self.store_uuid: str = self._meta("store_uuid")

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """The writer connection, for this thread alone until the block ends (module docstring: Threads)."""
        with self._writer_lock:
            yield self._writer

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer in one write transaction: committed when the block ends, rolled back if it raises."""
        with self._writing() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

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

    def _check_format(self) -> None:
        """Bring a store of an earlier format this build migrates up to this one, in one transaction;
        refuse one of any other layout (its rows would not fit these statements)."""
        conn = self._writer
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        has_tables = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").fetchone()
        if has_tables and version in _MIGRATIONS:
            with self._transaction() as migrating:
                for step in range(version, FORMAT_VERSION):
                    for statement in _MIGRATIONS[step]:
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

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (WAL readers never block the writer)."""
        return self._readers.get()

    def _connect_reader(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("PRAGMA query_only=1")
        conn.execute(f"PRAGMA mmap_size={_READER_MMAP_BYTES}")
        return conn

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
                f"SELECT id, ord, content_hash, source_path, scope FROM sessions WHERE id {_IN_JSON}",
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
        with self._transaction() as conn:
            dropped: list[str] = []
            if replaced:
                old = (json_list(replaced),)
                dropped = _held_digests(conn, old[0])
                conn.execute(_DELETE_BLOCKS, old)
                for table in _SESSION_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE session_ord {_IN_JSON}", old)
            conn.executemany(_INSERT_SESSION, [r.session_row for r in batch if r.session_ord not in replaced])
            conn.executemany(
                _UPDATE_SESSION,
                [(*r.session_row[1:], r.session_ord) for r in batch if r.session_ord in replaced],  # type: ignore[index]
            )
            conn.executemany(
                "INSERT OR IGNORE INTO session_tags (tag, session_ord) VALUES (?, ?)",
                [t for r in batch for t in r.tags],
            )
            conn.executemany(
                _INSERT_MESSAGE,
                [(*row[:-1], pack_proto(row[-1], row[1])) for r in batch for row in r.messages],  # type: ignore[arg-type]
            )
            conn.executemany(_INSERT_BLOCK, [row for r in batch for row in r.blocks])
            conn.executemany(_INSERT_ACTION, [pack_action(row) for r in batch for row in r.actions])
            for table, insert in _INSERT_UNITS.items():
                conn.executemany(
                    insert,
                    [(*row[:-1], pack_proto(row[-1], row[0])) for r in batch for row in r.units[table]],  # type: ignore[arg-type]
                )
            conn.executemany(_INSERT_EVENT, [row for r in batch for row in r.events])
            conn.executemany(_INSERT_CHUNK, [row for r in batch for row in r.event_chunks])
            _store_payloads(conn, batch)
            _drop_unheld(conn, dropped)
            _link_children(conn, json_list(r.session_ord for r in batch))
            stored = [r.session_row for r in batch if r.session_row is not None]
            conn.execute(f"DELETE FROM tombstones WHERE session_id {_IN_JSON}", (json_list(row[1] for row in stored),))
            head = max((row[_CHANGE_SEQ] for row in stored), default=None)
            if head is not None:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'head_seq'", (str(head),))
            if applied_seq is not None:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'applied_seq'", (str(applied_seq),))

    def delete(self, sessions: dict[str, int], applied_seq: int | None = None) -> None:
        """Remove stored sessions (id -> ordinal) and every row of theirs in one durable transaction,
        leaving a tombstone with the next change_seq for each (the feed's followers drop their texts);
        with `applied_seq`, the log checkpoint in the same transaction."""
        with self._transaction() as conn:
            ords = (json_list(sessions.values()),)
            dropped = _held_digests(conn, ords[0])
            conn.execute(_DELETE_BLOCKS, ords)
            for table in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE session_ord {_IN_JSON}", ords)
            conn.execute(f"DELETE FROM sessions WHERE ord {_IN_JSON}", ords)
            _drop_unheld(conn, dropped)
            head = int(conn.execute("SELECT value FROM meta WHERE key = 'head_seq'").fetchone()[0])
            conn.executemany(
                "INSERT OR REPLACE INTO tombstones (session_id, change_seq) VALUES (?, ?)",
                [(sid, head + n) for n, sid in enumerate(sorted(sessions), start=1)],
            )
            if sessions:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'head_seq'", (str(head + len(sessions)),))
            if applied_seq is not None:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'applied_seq'", (str(applied_seq),))

    def applied_seq(self) -> int:
        """The last log sequence this store applied (0: none, or not fed by a log)."""
        return int(self._meta("applied_seq"))

    def set_applied_seq(self, applied_seq: int) -> None:
        """Advance the log checkpoint alone: the records up to it changed nothing here (unchanged versions)."""
        with self._writing() as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'applied_seq'", (str(applied_seq),))

    def clear_pending(self, session_ords: Sequence[int]) -> None:
        """Mark sessions as indexed, without waiting for the disk: losing this write only costs a
        re-index at the next open, and the next durable commit syncs it anyway."""
        with self._writing() as conn:
            conn.execute("PRAGMA synchronous=NORMAL")
            try:
                conn.execute(
                    f"UPDATE sessions SET tantivy_pending = 0 WHERE ord {_IN_JSON}", (json_list(session_ords),)
                )
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

    # ---- reads (any thread) ----------------------------------------------------------------------

    def hit_rows(self, pairs: Sequence[tuple[int, int]]) -> dict[int, HitRow]:
        """The rows a search shows for (session ordinal, message ordinal) pairs, by session ordinal."""
        rows = self.reader().execute(
            "SELECT s.ord, s.id, s.updated_ms, s.summary, COALESCE(m.proto, X'') FROM json_each(?) j "
            "JOIN sessions s ON s.ord = j.value ->> 0 LEFT JOIN messages m ON m.ord = j.value ->> 1",
            (orjson.dumps(pairs).decode(),),
        )
        return {row[0]: HitRow(*row[1:]) for row in rows}

    def session_ids(self, session_ords: Sequence[int]) -> dict[int, str]:
        """The ids of these sessions (those still stored), by ordinal."""
        rows = self.reader().execute(f"SELECT ord, id FROM sessions WHERE ord {_IN_JSON}", (json_list(session_ords),))
        return dict(rows.fetchall())

    def ids_and_tool_uses(self, session_ords: Sequence[int]) -> dict[int, tuple[str, int]]:
        """The ids of these sessions (those still stored) and how many of their messages carry a tool use,
        by ordinal: what a rank-only hit says (fusion does not hold a session without tool calls to the
        actions lane)."""
        rows = self.reader().execute(
            f"SELECT ord, id, tool_use_messages FROM sessions WHERE ord {_IN_JSON}", (json_list(session_ords),)
        )
        return {ord_: (id_, tools) for ord_, id_, tools in rows.fetchall()}

    def commands(self, session_ords: Iterable[int], block_ids: Iterable[str]) -> dict[str, str]:
        """The normalized commands of the actions these tool_use blocks made, by block id."""
        rows = self.reader().execute(
            f"SELECT block_id, command FROM actions WHERE session_ord {_IN_JSON} AND block_id {_IN_JSON} "
            "AND command != ''",
            (json_list(session_ords), json_list(block_ids)),
        )
        return dict(rows.fetchall())

    def sessions_by_id(
        self, session_ids: Sequence[str], scopes: Collection[str] | None = None
    ) -> list[units_pb2.Session]:
        """Summaries in the order asked, skipping ids this partition does not hold (or whose scope is not
        one of `scopes`, when given)."""
        sql = "SELECT id, summary FROM sessions WHERE id IN (SELECT value FROM json_each(?))"
        params: list[object] = [json_list(session_ids)]
        if scopes is not None:
            sql += " AND scope IN (SELECT value FROM json_each(?))"
            params.append(json_list(sorted(scopes)))
        rows = self.reader().execute(sql, params)
        found = dict(rows.fetchall())
        seen: set[str] = set()
        out = []
        for sid in session_ids:
            if sid in found and sid not in seen:
                seen.add(sid)
                out.append(units_pb2.Session.FromString(found[sid]))
        return out

    def embed_feed(self, after_seq: int, max_sessions: int) -> index_pb2.EmbedFeedResponse:
        """The sessions written after `after_seq` (the first `max_sessions`, in change_seq order) with the
        texts to embed, built from their stored messages; head and backlog from the same snapshot."""
        conn = self.reader()
        response = index_pb2.EmbedFeedResponse(store_uuid=self.store_uuid)
        conn.execute("BEGIN")  # one read snapshot for the head, the backlog and the sessions
        try:
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
                f"SELECT session_ord, proto FROM messages WHERE session_ord {_IN_JSON} AND role {_IN_JSON} "
                "ORDER BY ord",
                (json_list(wanted), json_list(EMBEDDED_ROLES)),
            ):
                messages.setdefault(session_ord, []).append(units_pb2.Message.FromString(proto))
        finally:
            conn.execute("COMMIT")
        for session_ord, session_id, change_seq, _, updated_ms in sessions:
            response.sessions.add(
                session_id=session_id,
                change_seq=change_seq,
                items=message_items(session_id, updated_ms, messages.get(session_ord, ())),
            )
        return response

    def content_digest(self) -> str:
        """sha256 over the sorted (session id, content hash) pairs: replicas holding the same versions of
        the same sessions have the same digest, whatever their ordinals or segment layout."""
        digest = hashlib.sha256()
        for session_id, content_hash in self.reader().execute("SELECT id, content_hash FROM sessions ORDER BY id"):
            digest.update(f"{session_id}\0{content_hash}\n".encode())
        return digest.hexdigest()

    def totals(self, scopes: Collection[str] | None = None) -> tuple[int, int, int]:
        """(sessions, messages, actions) held by the partition, or by its sessions of `scopes` when given."""
        conn = self.reader()
        if scopes is None:
            return tuple(  # type: ignore[return-value]
                conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("sessions", "messages", "actions")
            )
        scoped = "s.scope IN (SELECT value FROM json_each(?))"
        wanted = json_list(sorted(scopes))
        sessions, messages = conn.execute(
            f"SELECT COUNT(*), COALESCE(SUM(s.messages), 0) FROM sessions s WHERE {scoped}", (wanted,)
        ).fetchone()
        (actions,) = conn.execute(
            f"SELECT COUNT(*) FROM actions a JOIN sessions s ON s.ord = a.session_ord WHERE {scoped}", (wanted,)
        ).fetchone()
        return sessions, messages, actions
