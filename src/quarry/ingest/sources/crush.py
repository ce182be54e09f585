"""Crush and OpenCode (Go) databases (`.crush/crush.db`, `.opencode/opencode.db`: SQLite).

OpenCode (Go, opencode-ai/opencode) moved to Charm and continues as Crush: one schema lineage (goose
migrations in `goose_db_version`), one origin `crush-session`. Crush added `messages.provider`
(20250627), `messages.is_summary_message` (20250810), `sessions.todos` (20250812) and `read_files`
(2026); a database without `messages.provider` was written by OpenCode (Go) or a Crush older than
that. The database is read from a snapshot (`sqlite_snapshot`), never written.

- sessions: a session per row, `crush-session:<id>`, titled by `title` (the AI-generated title; a
  placeholder such as "New Session" until then, when the first prompt titles it instead). A row with
  `parent_session_id` is a child: the run of a sub-agent tool (`agent`, Crush's `agentic_fetch`),
  whose id is the dispatching tool call's id (OpenCode Go) or `<message id>$$<tool call id>` (Crush).
  The child is linked to that dispatch (its id, agent = the tool's name, its final answer and model),
  inherits the parent's cwd, and its prompts are the parent agent's (not authored). A
  `title-<parent id>` child is a title-generation session (the runtime asking the small model for the
  parent's title, already the parent's `title`; both codebases define it and never call it): counted
  as `crush:title-session`, not kept. A session without messages is counted as `crush:empty-session`.
- messages: in `created_at` order (whole seconds), ties in insertion (rowid) order. Roles user,
  assistant, tool (the results of one assistant message's calls) and system. `parts` is a JSON array
  of {type, data}: text -> text; reasoning -> thinking; tool_call {id, name, input: a JSON string} ->
  tool_use (the patch tool's `patch_text` names its file); tool_result {tool_call_id, content, metadata,
  is_error; Crush's data/mime_type for media} -> tool_result (and an image); image_url and binary
  {Path, MIMEType, Data} -> an image block (its media type, never the bytes) or, for another file
  type, a text naming it; shell_command (Crush's bang mode) {command, output, exit_code} -> the text
  Crush sends to the model and a `command` event; finish {reason} -> end_turn / max_tokens:
  turn_completed, canceled: turn_aborted, error / content_filter: api_error (tool_use and stop say
  nothing). A message with no content (a finish alone) is counted as `crush:empty-message`; its events
  are kept. Unknown part types are counted as `crush:part/<type>`, unknown roles as `crush:role/<role>`.
- bash results: the database keeps is_error false for a command that failed; the runtime's trailing
  `Exit code N` line (before Crush's `<cwd>` trailer) gives the exit code and marks it failed. The cwd
  is the first bash result's `metadata.working_directory` (Crush; OpenCode Go records none).
- compaction: a summary message (`sessions.summary_message_id`, or `is_summary_message`) is what the
  runtime sends the model instead of everything before it.
- usage: the session row keeps only the last request's prompt_tokens / completion_tokens (every step
  overwrites them) and the cumulative `cost`: both go on the session's last assistant message (its
  `cost_usd`, so the main run's cost is the session's). An assistant message's duration is finished_at - created_at.
- files: versioned contents of every file the write/edit tools changed (Crush's file history, before
  and after each change): log-only events of their session, not actions (the tool calls are).
  `read_files` (the last read time per path, overwritten) is not read.

Raw log events (docs/sessions.md#events): per session, its row (log-only), its messages (surface nodes; a message of
an unknown role is log-only) and its file versions (log-only). A message making tool calls is keyed
by their ids and the tool message answering them cites them; a summary message replaces every node
before it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftCompaction,
    DraftDispatch,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_cost,
    as_count,
    as_dict,
    as_str,
    json_or_none,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.sqlite_snapshot import json_column, table_columns, table_rows
from quarry.ingest.sources.tool_calls import patch_path, tool_use_block

FORMAT = "crush"
ORIGIN = "crush-session"
MESSAGE_COLUMNS = frozenset({"id", "session_id", "role", "parts", "created_at"})
SESSION_COLUMNS = frozenset({"id", "parent_session_id", "title", "message_count"})
ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}
PLACEHOLDER_TITLES = frozenset({"New Session", "Untitled Session", "New Agent Session"})
AGENT_SESSION_SEPARATOR = "$$"  # Crush's sub-agent session id: <message id>$$<tool call id>
# finish reason -> (event kind, text, failed); tool_use and stop end a step, not a turn.
FINISH_EVENTS = {
    "end_turn": ("turn_completed", "turn completed", False),
    "max_tokens": ("turn_completed", "turn completed (max_tokens)", False),
    "canceled": ("turn_aborted", "turn aborted (canceled)", False),
    "error": ("api_error", "API error", True),
    "content_filter": ("api_error", "refused by the provider (content_filter)", True),
}
QUIET_FINISHES = frozenset({"tool_use", "stop", "unknown", ""})
# The runtime's last line of a command that exited non-zero, before Crush's `<cwd>` trailer.
_EXIT_TRAILER = re.compile(r"(?:\A|\n)Exit code (-?\d{1,6})\s*(?:<cwd>[^\n]*</cwd>\s*)?\Z")


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database's tables (name -> column names) are this format's, else "".

    Goose's sessions.db also has `sessions` and `messages`, with `content_json` instead of `parts`."""
    messages = tables.get("messages", set())
    sessions = tables.get("sessions", set())
    return FORMAT if messages >= MESSAGE_COLUMNS and sessions >= SESSION_COLUMNS else ""


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    tables = table_columns(conn)
    sessions = table_rows(conn, "sessions", path, result)
    messages = table_rows(conn, "messages", path, result)
    files = table_rows(conn, "files", path, result) if "files" in tables else []
    by_session = _group(messages, "messages", path, result)
    files_by_session = _group(files, "files", path, result)
    built: dict[str, _Session] = {}
    for native_id, row in _session_rows(sessions, by_session, path, result):
        parent = as_str(row.get("parent_session_id"))
        if parent and native_id == f"title-{parent}":
            result.skipped[f"{FORMAT}:title-session"] += 1
            continue
        if not by_session.get(native_id):
            result.skipped[f"{FORMAT}:empty-session"] += 1
            continue
        session = _Session(native_id, row, path, result)
        session.build(by_session[native_id], files_by_session.get(native_id, []))
        built[native_id] = session
    _link_children(built)
    result.sessions.extend(session.draft for session in built.values())
    return result


def _group(rows: list[dict[str, Any]], table: str, path: str, result: SourceResult) -> dict[str, list[dict[str, Any]]]:
    """Rows by session id, each session's in time order (ties: insertion order)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    order = sorted(range(len(rows)), key=lambda n: (to_ms(rows[n].get("created_at")), n))
    for n in order:
        session_id = as_str(rows[n].get("session_id"))
        if session_id:
            grouped.setdefault(session_id, []).append(rows[n])
        else:
            result.issues.append(issue(path, 0, "invalid_record", f"a row of {table} without session_id"))
    return grouped


def _session_rows(
    sessions: list[dict[str, Any]], messages: dict[str, list[dict[str, Any]]], path: str, result: SourceResult
) -> list[tuple[str, dict[str, Any]]]:
    """(id, row) of every session in creation order; messages whose session row is missing form a
    session of their own (its row is then just the id), after the others."""
    rows: dict[str, dict[str, Any]] = {}
    for row in sorted(sessions, key=lambda row: to_ms(row.get("created_at"))):
        native_id = as_str(row.get("id"))
        if not native_id:
            result.issues.append(issue(path, 0, "invalid_record", "a row of sessions without id"))
        elif native_id not in rows:
            rows[native_id] = row
    found = list(rows.items())
    found += [(native_id, {}) for native_id in messages if native_id not in rows]
    return found


@dataclass(slots=True)
class _Parts:
    """What one message's parts hold besides its blocks."""

    blocks: list[DraftBlock] = field(default_factory=list)
    finishes: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    media: bool = False  # a pasted image or an attached file


class _Session:
    def __init__(self, native_id: str, row: dict[str, Any], path: str, result: SourceResult) -> None:
        self.row = row
        self.path = path
        self.result = result
        parent = as_str(row.get("parent_session_id"))
        title = as_str(row.get("title")).strip()
        title = "" if title in PLACEHOLDER_TITLES else title
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=native_id,
            source_path=path,
            title=title,
            header_title_kind="ai-title" if title and not parent else "",
            parent_session_id=f"{ORIGIN}:{parent}" if parent else "",
        )
        self.call_names: dict[str, str] = {}

    def build(self, messages: list[dict[str, Any]], files: list[dict[str, Any]]) -> None:
        draft = self.draft
        if self.row:
            time_ms = to_ms(self.row.get("created_at"))
            record = draft.begin(DraftRecord(0, f"{FORMAT}:session", self.row, time_ms=time_ms))
            record.keys.append(f"session:{draft.native_id}")
            draft.observe_time(time_ms)
            draft.observe_time(to_ms(self.row.get("updated_at")))
        summaries = {as_str(self.row.get("summary_message_id"))} - {""}
        for row in messages:
            self._message(row, summary=as_str(row.get("id")) in summaries or _truthy(row.get("is_summary_message")))
        for row in files:
            time_ms = to_ms(row.get("created_at"))
            record = draft.begin(DraftRecord(0, f"{FORMAT}:file", row, time_ms=time_ms))
            record.keys.append(f"file:{as_str(row.get('id'))}")
            draft.observe_time(time_ms)
        self._usage()
        draft.current = None

    def _message(self, row: dict[str, Any], summary: bool) -> None:
        draft = self.draft
        message_id = as_str(row.get("id"))
        role_name = as_str(row.get("role"))
        time_ms = to_ms(row.get("created_at"))
        finished_ms = to_ms(row.get("finished_at"))
        parts = self._decode(row.get("parts"), message_id)
        raw = {**row, "parts": parts} if parts is not None else row
        record = draft.begin(DraftRecord(0, f"{FORMAT}:message/{role_name or '(none)'}", raw, time_ms=time_ms))
        if message_id:
            record.keys.append(f"message:{message_id}")
        for ms in (time_ms, to_ms(row.get("updated_at")), finished_ms):
            draft.observe_time(ms)
        role = ROLES.get(role_name)
        if role is None:
            self.result.skipped[f"{FORMAT}:role/{role_name or '(none)'}"] += 1
            return
        record.node = True
        record.replaces_all = summary
        read = self._parts(parts or [], message_id, record)
        message = None
        if read.blocks:
            message = DraftMessage(
                role=role,
                authored=role == "assistant" or (role == "user" and not draft.parent_session_id),
                time_ms=time_ms,
                model=as_str(row.get("model")) if role == "assistant" else "",
                duration_ms=finished_ms - time_ms if role == "assistant" and finished_ms > time_ms > 0 else 0,
                paste=role == "user" and read.media,
            )
            draft.add_message(message)
            for block in read.blocks:
                draft.add_block(message, block)
        else:
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
        seq = message.seq if message is not None else -1
        if summary:
            draft.compactions.append(DraftCompaction(time_ms, seq))
            draft.record("compaction", time_ms, "context compacted", message_seq=seq)
        for command in read.commands:
            draft.record("command", time_ms, f"! {command}", object_ref="!", message_seq=seq)
        for finish in read.finishes:
            self._finish(finish, finished_ms or time_ms, seq)

    def _decode(self, parts: Any, message_id: str) -> list[Any] | None:
        """The message's parts as a list; None (and an issue) when the column is not a JSON array."""
        decoded = json_column(parts)
        if isinstance(decoded, list):
            return decoded
        reason = f"message {message_id or '(no id)'}: parts is not a JSON array"
        self.result.issues.append(issue(self.path, 0, "invalid_record", reason))
        return None

    def _parts(self, parts: list[Any], message_id: str, record: DraftRecord) -> _Parts:
        read = _Parts()
        for index, part in enumerate(parts):
            part = as_dict(part)
            kind = as_str(part.get("type"))
            data = as_dict(part.get("data"))
            if kind in ("text", "reasoning"):
                text = as_str(data.get("text" if kind == "text" else "thinking"))
                if text:
                    read.blocks.append(DraftBlock("text" if kind == "text" else "thinking", text=text))
                else:
                    self.result.skipped[f"{FORMAT}:empty-{kind}"] += 1
            elif kind == "tool_call":
                read.blocks.append(self._tool_call(data, f"{message_id}:{index}", record))
            elif kind == "tool_result":
                read.blocks.extend(self._tool_result(data, record))
            elif kind == "image_url":
                read.blocks.append(_image_url(as_str(data.get("url"))))
                read.media = True
            elif kind == "binary":
                read.blocks.append(_media(as_str(data.get("MIMEType")), as_str(data.get("Path"))))
                read.media = True
            elif kind == "shell_command":
                read.blocks.append(DraftBlock("text", text=_shell_text(data)))
                read.commands.append(as_str(data.get("command")))
            elif kind == "finish":
                read.finishes.append(data)
            else:
                self.result.skipped[f"{FORMAT}:part/{kind or '(untyped)'}"] += 1
        return read

    def _tool_call(self, data: dict[str, Any], fallback_id: str, record: DraftRecord) -> DraftBlock:
        raw_input = data.get("input")
        parsed = json_or_none(raw_input) if isinstance(raw_input, str) and raw_input.strip() else None
        tool_input = parsed if isinstance(parsed, dict) else ({"input": raw_input} if raw_input else {})
        call_id = as_str(data.get("id")) or fallback_id
        name = as_str(data.get("name"))
        block = tool_use_block(name, call_id, tool_input)
        if not block.path:
            block.path = patch_path(as_str(tool_input.get("patch_text")))
        self.call_names[call_id] = name
        record.keys.append(f"call:{call_id}")
        return block

    def _tool_result(self, data: dict[str, Any], record: DraftRecord) -> list[DraftBlock]:
        call_id = as_str(data.get("tool_call_id"))
        content = as_str(data.get("content"))
        match = _EXIT_TRAILER.search(content)
        exit_code = int(match.group(1)) if match else None
        metadata = json_or_none(as_str(data.get("metadata")))
        cwd = as_str(metadata.get("working_directory")) if isinstance(metadata, dict) else ""
        if cwd and not self.draft.cwd:
            self._set_cwd(cwd)
        if call_id:
            record.source_keys.append(f"call:{call_id}")
        result = DraftBlock(
            "tool_result",
            text=content,
            tool_name=as_str(data.get("name")) or self.call_names.get(call_id, ""),
            tool_use_id=call_id,
            is_error=data.get("is_error") is True or bool(exit_code),
            exit_code=exit_code,
        )
        media_type = as_str(data.get("mime_type"))
        return [result, _media(media_type, "")] if media_type and as_str(data.get("data")) else [result]

    def _set_cwd(self, cwd: str) -> None:
        self.draft.cwd = cwd
        self.draft.repo = self.draft.repo or folder_name(cwd)

    def _finish(self, finish: dict[str, Any], fallback_ms: int, seq: int) -> None:
        reason = as_str(finish.get("reason"))
        event = FINISH_EVENTS.get(reason)
        if event is None:
            if reason not in QUIET_FINISHES:
                self.result.skipped[f"{FORMAT}:finish/{reason}"] += 1
            return
        kind, text, failed = event
        detail = ": ".join(x for x in (as_str(finish.get("message")), as_str(finish.get("details"))) if x)
        time_ms = to_ms(finish.get("time")) or fallback_ms
        self.draft.record(kind, time_ms, f"{text}: {detail}" if detail else text, failed=failed, message_seq=seq)

    def _usage(self) -> None:
        """The session row's token counts (its last request's) and its cost (every request's, summed) on
        its last assistant message."""
        last = next((m for m in reversed(self.draft.messages) if m.role == "assistant"), None)
        if last is not None:
            last.input_tokens = as_count(self.row.get("prompt_tokens"))
            last.output_tokens = as_count(self.row.get("completion_tokens"))
            last.cost_usd = as_cost(self.row.get("cost"))


def _link_children(sessions: dict[str, _Session]) -> None:
    """Join every child session to the tool call that dispatched it, when its parent is in the database."""
    for child in sessions.values():
        parent = sessions.get(as_str(child.row.get("parent_session_id")))
        if parent is None:
            continue
        draft = child.draft
        if not draft.cwd and parent.draft.cwd:
            child._set_cwd(parent.draft.cwd)
        call_id = draft.native_id.rsplit(AGENT_SESSION_SEPARATOR, 1)[-1]
        if call_id not in parent.call_names:
            continue
        replies = [m for m in draft.messages if m.role == "assistant"]
        texts = [b.text for b in replies[-1].blocks if b.type in ("text", "code")] if replies else []
        draft.agent = parent.call_names[call_id]
        parent.draft.dispatches[call_id] = DraftDispatch(
            child_native_id=draft.native_id,
            agent=draft.agent,
            child_excerpt="\n".join(texts),
            model=next((m.model for m in reversed(replies) if m.model), ""),
        )


def _image_url(url: str) -> DraftBlock:
    """A pasted image: a data URL gives its media type (the bytes are not kept), another URL is kept."""
    if url.startswith("data:"):
        return DraftBlock("image", media_type=url[5:].split(";", 1)[0].split(",", 1)[0])
    return DraftBlock("image", text=url)


def _media(media_type: str, path: str) -> DraftBlock:
    """An attachment, referenced: an image block, or a text naming a file of another type."""
    if not media_type or media_type.startswith("image/"):
        return DraftBlock("image", media_type=media_type, path=path)
    name = f"{path} ({media_type})" if path else media_type
    return DraftBlock("text", text=f"attached file: {name}")


def _shell_text(data: dict[str, Any]) -> str:
    """A bang-mode command as Crush gives it to the model."""
    exit_code = data.get("exit_code")
    status = f"\n(exit code {exit_code})" if isinstance(exit_code, int) and not isinstance(exit_code, bool) else ""
    return f"$ {as_str(data.get('command'))}\n{as_str(data.get('output'))}{status}"


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, int) and value == 1)
