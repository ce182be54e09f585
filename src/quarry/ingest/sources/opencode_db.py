"""OpenCode's SQLite store (`~/.local/share/opencode/opencode.db`, sst/opencode 1.2 and later).

OpenCode 1.2 moved its storage from one JSON file per object into one database: a `session` row per
session, a `message` row per message and a `part` row per part, the message's and the part's own
objects kept as JSON text in their `data` column (the objects `opencode export` nests, minus the ids
the row holds). This module reads those rows back into the export's shape, a session at a time, and
hands each to the export parser (`opencode`), so a session reads the same from its export and from the
database: same origin (`opencode-session:<ses_…>`), messages, tool calls and outcomes, tokens, cost,
errors, compactions and subagent links (a child session's `parent_id`).

- session row -> the export's `info`: id, slug, project_id, directory, parent_id, title, version,
  share_url, summary_*, revert (JSON), time_created / time_updated / time_compacting / time_archived
  (epoch ms), agent and model (JSON).
- messages in `time_created, id` order (the ids sort by time), their parts in id order; a message's
  `data` without `time.created` takes the row's. A `data` that is not a JSON object is an issue naming
  its row; the rest of the session is kept. Messages whose session row is missing make a session of
  their own (so nothing stored is lost), after the others.
- the other tables are not read: `event` / `event_sequence` (an event log of the same changes),
  `todo`, `permission`, `project`, workspace and share tables, and the credential tables (`account`,
  `control_account`, `credential`) which Quarry never reads.

The database is read from a snapshot with its write-ahead log (`sqlite_snapshot`), never written.
Raw log events (docs/sessions.md#events) are the export's: the session, each message and each part.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from quarry.ingest.reader import issue
from quarry.ingest.sources import SourceResult, as_dict, as_str, json_or_none, opencode
from quarry.ingest.sources.sqlite_snapshot import json_column, table_rows

FORMAT = "opencode-db"
SESSION_COLUMNS = frozenset({"id", "directory", "title", "time_created", "time_updated"})
MESSAGE_COLUMNS = frozenset({"id", "session_id", "time_created", "data"})
PART_COLUMNS = frozenset({"id", "message_id", "session_id", "data"})
# session column -> the export info's key (the JSON columns are decoded first).
_INFO_KEYS = {
    "id": "id",
    "slug": "slug",
    "project_id": "projectID",
    "directory": "directory",
    "parent_id": "parentID",
    "title": "title",
    "version": "version",
    "agent": "agent",
    "model": "model",
    "revert": "revert",
    "permission": "permission",
}
_JSON_COLUMNS = frozenset({"model", "revert", "permission", "summary_diffs", "metadata"})
_TIMES = {
    "time_created": "created",
    "time_updated": "updated",
    "time_compacting": "compacting",
    "time_archived": "archived",
}
_SUMMARY = {"summary_additions": "additions", "summary_deletions": "deletions", "summary_files": "files"}


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database has OpenCode's session, message and part tables, else ""."""
    return (
        FORMAT
        if tables.get("session", set()) >= SESSION_COLUMNS
        and tables.get("message", set()) >= MESSAGE_COLUMNS
        and tables.get("part", set()) >= PART_COLUMNS
        else ""
    )


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    sessions = table_rows(conn, "session", path, result, "SELECT * FROM session ORDER BY time_created, id")
    messages = table_rows(conn, "message", path, result, "SELECT * FROM message ORDER BY time_created, id")
    parts = table_rows(conn, "part", path, result, "SELECT * FROM part ORDER BY message_id, id")
    parts_by_message: dict[str, list[dict[str, Any]]] = {}
    for row in parts:
        part = _object(row, "part", path, result)
        if part is not None:
            ids = {"id": as_str(row.get("id")), "sessionID": as_str(row.get("session_id"))}
            part = {**ids, "messageID": as_str(row.get("message_id")), **part}
            parts_by_message.setdefault(as_str(row.get("message_id")), []).append(part)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in messages:
        info = _object(row, "message", path, result)
        if info is None:
            continue
        message_id, session_id = as_str(row.get("id")), as_str(row.get("session_id"))
        info = {"id": message_id, "sessionID": session_id, **info}
        times = as_dict(info.get("time"))
        if not times.get("created"):
            info["time"] = {**times, "created": row.get("time_created")}
        by_session.setdefault(session_id, []).append({"info": info, "parts": parts_by_message.get(message_id, [])})
    for info in _infos(sessions, by_session, path, result):
        found = opencode.parse({"info": info, "messages": by_session.get(as_str(info.get("id")), [])}, path)
        result.sessions.extend(found.sessions)
        result.issues.extend(found.issues)
        result.skipped.update(found.skipped)
    return result


def _object(row: dict[str, Any], table: str, path: str, result: SourceResult) -> dict[str, Any] | None:
    """The row's `data` as a JSON object; None, and an issue naming the row, when it is not one."""
    value = json_column(row.get("data"))
    if isinstance(value, dict):
        return value
    reason = f"{table} {as_str(row.get('id')) or '(no id)'}: data is not a JSON object"
    result.issues.append(issue(path, 0, "invalid_record", reason))
    return None


def _infos(
    sessions: list[dict[str, Any]], by_session: dict[str, list[dict[str, Any]]], path: str, result: SourceResult
) -> Iterator[dict[str, Any]]:
    """The export `info` of every session row, then a bare one for messages whose session row is missing."""
    seen: set[str] = set()
    for row in sessions:
        info = _info(row)
        native_id = as_str(info.get("id"))
        if not native_id:
            result.issues.append(issue(path, 0, "invalid_record", "a row of session without id"))
            continue
        seen.add(native_id)
        yield info
    for native_id in by_session:
        if native_id not in seen:
            reason = f"{len(by_session[native_id])} message(s) of session {native_id!r}, which has no row in session"
            result.issues.append(issue(path, 0, "invalid_record", reason))
            yield {"id": native_id}


def _info(row: dict[str, Any]) -> dict[str, Any]:
    """A session row as the export's `info` object."""
    values = {key: json_or_none(value) if key in _JSON_COLUMNS and isinstance(value, str) else value
              for key, value in row.items()}  # fmt: skip
    info = {name: values[key] for key, name in _INFO_KEYS.items() if values.get(key) not in (None, "")}
    times = {name: values[key] for key, name in _TIMES.items() if values.get(key)}
    info["time"] = times
    summary = {name: values[key] for key, name in _SUMMARY.items() if values.get(key) is not None}
    if summary:
        info["summary"] = summary
    if values.get("share_url"):
        info["share"] = {"url": values["share_url"]}
    return info
