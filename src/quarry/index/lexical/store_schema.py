"""The layout of a partition store (store.py): tables, indexes, column lists, the statements that write
them and those of its named reads (store_reads.py, store_events.py).

The store is the partition's source of truth. Each session keeps its summary (a serialized Session
without messages, actions and derived units), every message as a serialized Message (with its
blocks), and one row per action with all Action fields; together they rebuild what the Tantivy
index holds, so it can be rebuilt from here at any time. Beside the blobs, a table holds only the
columns a predicate filters or sorts on, and only the indexes those paths use
(tests/index/test_query_plans.py checks each path): every column and index is paid for by every
ingested row. The rows themselves are built by session_rows.py in the column orders below; the
partition assigns the ordinals (it is the only writer), so a batch is one statement per table.
`PRAGMA user_version` records the layout; a store in another layout is refused at open, one of a
format MIGRATIONS lists is brought up to this one.

A message or derived-unit row stores its proto as `body`, without the two ids its row gives back
(row_codec.py); the generated `proto` column gives the serialized proto back byte for byte.

The derived units (files, runs, observed events, context snapshots, delegations) are one row each:
their filter and sort columns and the whole unit as a serialized proto. They are written, replaced
and deleted with their session, and indexed by session ordinal only: a public ref names its session,
so a lookup by id goes through the session's ordinal and reads that session's rows alone.

Raw records (the session API's events, docs/sessions.md#events) are stored as their sources wrote
them, but for the payloads their format marks as media or opaque data (quarry.ingest.payloads): a
chunk's record holds a placeholder and its place, and `held_payloads` the bytes, once per partition
for each digest (docs/sessions.md#held-apart-payloads).
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from quarry.v1 import units_pb2

COUNT_FIELDS = tuple(f.name for f in units_pb2.SessionCounts.DESCRIPTOR.fields)
FORMAT_VERSION = 10  # PRAGMA user_version of the layout below (5: raw log events; 6: scopes;
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
MIGRATIONS = {
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


# Columns are those a predicate filters or sorts on; everything else lives in the blobs. The time
# indexes take random keys on a bulk import, so they are kept narrow (the time alone, SQLite breaks
# ties on the id with a small sort per equal time): each batch rewrites fewer pages of them.
DDL = f"""
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

-- The raw log events (docs/sessions.md#events): per event the columns its filters read, the message it became (its
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
# A message or unit row tuple (session_rows.py) ends with the serialized proto; Store.replace packs it into `body`.
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


def _insert(table: str, columns: str) -> str:
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * (columns.count(',') + 1))})"


INSERT_SESSION = _insert("sessions", ", ".join(SESSION_COLUMNS))
UPDATE_SESSION = f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in SESSION_COLUMNS[1:])} WHERE ord = ?"
INSERT_MESSAGE = _insert("messages", MESSAGE_COLUMNS)
INSERT_BLOCK = _insert("blocks", BLOCK_COLUMNS)
INSERT_ACTION = _insert(
    "actions",
    "session_ord, message_id, seq, category, tool, command, path, output, failed, input_json, time_ms, exit_code, "
    "followup, path_norm, own_id, id_prefix, own_block_id, block_index",
)
INSERT_UNITS = {table: _insert(table, columns) for table, columns in UNIT_TABLES.items()}
EVENT_COLUMNS = "seq, type, time_ms, surface, message_seq, links"
INSERT_EVENT = _insert("log_events", "session_ord, message_ord, " + EVENT_COLUMNS)
INSERT_CHUNK = _insert("log_event_chunks", "session_ord, first_seq, texts, raws")
# Tables whose rows belong to a session (by session_ord), deleted with it or before it is rewritten.
SESSION_TABLES = (
    "session_tags",
    "messages",
    "actions",
    *UNIT_TABLES,
    "log_events",
    "log_event_chunks",
    "session_held_payloads",
)
IN_JSON = "IN (SELECT value FROM json_each(?))"
DELETE_BLOCKS = f"DELETE FROM blocks WHERE message_ord IN (SELECT ord FROM messages WHERE session_ord {IN_JSON})"
CHANGE_SEQ = SESSION_COLUMNS.index("change_seq")


def json_list(values: Iterable[object]) -> str:
    """A parameter for `IN (SELECT value FROM json_each(?))`: sets of any size in one bind."""
    return orjson.dumps(list(values)).decode()


# ---- the statements of the store's named reads (store_reads.py, store_events.py) --------------------
# `{where}`: a condition the caller compiled (predicates.Lowering, or the session API's filters:
# store_events.py), on sessions `s` (or the table read, unaliased, where a statement names no alias).

SESSION_ORD = "SELECT ord FROM sessions WHERE id = ?"
SESSION_HEAD = "SELECT ord, summary, scope FROM sessions WHERE id = ?"
SESSION_ORDS_OF = f"SELECT ord FROM sessions WHERE id {IN_JSON}"
STORED_IDS = f"SELECT id FROM sessions WHERE id {IN_JSON} ORDER BY id"
SESSION_IDS = f"SELECT ord, id FROM sessions WHERE ord {IN_JSON}"
IDS_AND_TOOL_USES = f"SELECT ord, id, tool_use_messages FROM sessions WHERE ord {IN_JSON}"
ORDS_UP_TO = f"SELECT ord FROM sessions WHERE ord {IN_JSON} AND id <= ?"
SESSION_SUMMARIES = f"SELECT ord, id, summary FROM sessions WHERE ord {IN_JSON}"
SESSIONS_BY_ID = f"SELECT id, summary FROM sessions WHERE id {IN_JSON}"
IN_SCOPES = f" AND scope {IN_JSON}"
HIT_ROWS = (
    "SELECT s.ord, s.id, s.updated_ms, s.summary, COALESCE(m.proto, X'') FROM json_each(?) j "
    "JOIN sessions s ON s.ord = j.value ->> 0 LEFT JOIN messages m ON m.ord = j.value ->> 1"
)
SESSION_ORDS_WHERE = "SELECT s.ord FROM sessions s WHERE {where}"
SESSION_ORDS_AMONG = f"SELECT s.ord FROM sessions s WHERE s.ord {IN_JSON} AND {{where}}"
SESSION_IDS_WHERE = "SELECT s.id FROM sessions s WHERE {where} ORDER BY s.id"
COUNT_SESSIONS = "SELECT COUNT(*) FROM sessions s WHERE {where}"
NEWEST_SESSIONS = (
    "SELECT s.summary, s.updated_ms FROM sessions s WHERE {where}{after} ORDER BY s.updated_ms DESC, s.id ASC LIMIT ?"
)
AFTER_SESSION = " AND (s.updated_ms < ? OR (s.updated_ms = ? AND s.id > ?))"  # (updated_ms desc, id asc)
MESSAGE = "SELECT ord, proto FROM messages WHERE session_ord = ? AND id = ?"
MESSAGE_SPAN = "SELECT MIN(ord), MAX(ord) FROM messages WHERE session_ord = ?"
# Along the ordinals within the session's span (`+session_ord`: not through the session index).
MESSAGES_AFTER = "SELECT proto FROM messages WHERE ord > ? AND ord <= ? AND +session_ord = ? ORDER BY ord"
MESSAGES_BEFORE = "SELECT proto FROM messages WHERE ord >= ? AND ord < ? AND +session_ord = ? ORDER BY ord DESC"
ASSISTANT_MESSAGES = "SELECT proto FROM messages WHERE session_ord = ? AND role = 'assistant' ORDER BY ord DESC"
ACTION_BLOCK_ID = "SELECT block_id FROM actions WHERE session_ord = ? AND id = ?"
UNIT_PROTO = "SELECT proto FROM {table} WHERE session_ord = ? AND id = ?"  # a table of UNIT_TABLES
COMMANDS = f"SELECT block_id, command FROM actions WHERE session_ord {IN_JSON} AND block_id {IN_JSON} AND command != ''"
BLOCKS_OF_MESSAGES = (
    "SELECT u.ord, u.time_ms, u.id, m.ord, m.proto FROM blocks u JOIN messages m ON m.ord = u.message_ord "
    f"WHERE u.message_ord {IN_JSON}{{where}} ORDER BY m.ord"
)
CONTENT_HASHES = "SELECT id, content_hash FROM sessions ORDER BY id"
COUNT_ROWS = "SELECT COUNT(*) FROM {table}"
SCOPED_SESSION_TOTALS = f"SELECT COUNT(*), COALESCE(SUM(s.messages), 0) FROM sessions s WHERE s.scope {IN_JSON}"
SCOPED_ACTION_TOTAL = f"SELECT COUNT(*) FROM actions a JOIN sessions s ON s.ord = a.session_ord WHERE s.scope {IN_JSON}"

# Facet buckets of sessions by message count: (label, lowest count, highest or None); every session
# falls in exactly one.
BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0", 0, 0),
    ("1-9", 1, 9),
    ("10-49", 10, 49),
    ("50-199", 50, 199),
    ("200+", 200, None),
)
_BUCKET_CASE = (
    "CASE "
    + " ".join(f"WHEN s.messages <= {high} THEN '{label}'" for label, _, high in BUCKETS if high is not None)
    + f" ELSE '{BUCKETS[-1][0]}' END"
)
# Per facet family: SQL over the sessions `s` that pass `{where}`, giving (value, sessions) rows.
FACET_SQL: dict[str, str] = {
    "origins": "SELECT s.origin, COUNT(*) FROM sessions s WHERE {where} GROUP BY s.origin",
    "tags": (
        "SELECT t.tag, COUNT(*) FROM session_tags t JOIN sessions s ON s.ord = t.session_ord "
        "WHERE {where} GROUP BY t.tag"
    ),
    "repos": "SELECT s.repo, COUNT(*) FROM sessions s WHERE s.repo != '' AND {where} GROUP BY s.repo",
    "hosts": "SELECT s.host, COUNT(*) FROM sessions s WHERE s.host != '' AND {where} GROUP BY s.host",
    "pushers": "SELECT s.pusher, COUNT(*) FROM sessions s WHERE s.pusher != '' AND {where} GROUP BY s.pusher",
    "action_types": (
        "SELECT a.category, COUNT(DISTINCT a.session_ord) FROM actions a JOIN sessions s ON s.ord = a.session_ord "
        "WHERE {where} GROUP BY a.category"
    ),
    "count_buckets": f"SELECT {_BUCKET_CASE} AS bucket, COUNT(*) FROM sessions s WHERE {{where}} GROUP BY bucket",
}

# The session API's reads (store_events.py); `{where}` there is " AND " and the conditions, or nothing.
LIST_SESSIONS = "SELECT summary FROM sessions{where} ORDER BY {index}updated_ms DESC, id LIMIT ?"
LIST_AFTER = "(updated_ms < ? OR (updated_ms = ? AND id > ?))"
SESSION_ORDS_MATCHING = "SELECT ord FROM sessions WHERE {where}"
_OF_MESSAGES = f"message_ord {IN_JSON} AND message_ord != 0"  # through the message index (ordinals are unique)
EVENTS = f"SELECT {EVENT_COLUMNS} FROM log_events WHERE session_ord = ?{{where}} ORDER BY seq"
EVENT_COUNT = "SELECT COUNT(*) FROM log_events WHERE session_ord = ?"
MESSAGES_WITH_EVENTS = f"SELECT DISTINCT message_ord FROM log_events WHERE {_OF_MESSAGES}{{where}}"
MESSAGE_EVENTS = (
    f"SELECT message_ord, {EVENT_COLUMNS} FROM log_events WHERE {_OF_MESSAGES}{{where}} ORDER BY message_ord, seq"
)
# The chunks holding each span [first seq, last seq] of a session's events (`{columns}`: texts, with or
# without raws): from the last chunk starting at or before the span's first seq to the span's end.
EVENT_CHUNKS = (
    "SELECT c.session_ord, c.first_seq, {columns} FROM json_each(?) j JOIN log_event_chunks c "
    "ON c.session_ord = j.value ->> 0 AND c.first_seq <= j.value ->> 2 AND c.first_seq >= "
    "(SELECT COALESCE(MAX(first_seq), 0) FROM log_event_chunks "
    "WHERE session_ord = j.value ->> 0 AND first_seq <= j.value ->> 1)"
)
HELD_PAYLOADS = f"SELECT sha256, data FROM held_payloads WHERE sha256 {IN_JSON}"
