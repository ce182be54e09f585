"""Goose (block/goose) sessions: its SQLite database (`~/.local/share/goose/sessions/sessions.db`).

Recognized by its tables: `sessions` with a `working_dir` and `messages` holding `content_json` (Crush
and OpenCode (Go) also have `sessions` and `messages`, with `parts` and no working dir). Every row of
`sessions` is a session `goose-session:<id>` (`YYYYMMDD_N`), even one that never got a message; its
messages are the `messages` rows with its `session_id`, in insertion (`id`) order, which is the order
Goose reads them back. Messages whose session row is missing are a session too, and an issue.

- session row: title `name` (schema 4+), else `description`; cwd `working_dir` (repo: its last
  folder); created_at / updated_at (SQLite `CURRENT_TIMESTAMP` text, UTC); `parent_session_id` links a
  child session where the column exists. The model is `model_config_json.model_name` (schema 6+), set on
  every assistant message. Goose records tokens per session only: the accumulated input/output counts
  (else the last ones) are put on the session's last assistant message, so the messages sum to them.
  A recipe's `instructions` (sent to the model with the system prompt) are a system message of the
  session row; schedule, extension data and recipe values stay in the row's raw event.
- messages: `role` user | assistant; `created_timestamp` (epoch seconds), else `timestamp`. The content
  items (`content_json`): text, image (referenced by its MIME type, never inlined), thinking and
  redactedThinking (an empty thinking block: the text is encrypted), reasoning, toolRequest and
  frontendToolRequest (tool_use: `toolCall` {status, value: {name, arguments}}, an older bare
  {name, arguments}, or {status: error, error}: a call the model got wrong, kept with its error as
  text), toolResponse (tool_result: `toolResult` {status, value: CallToolResult {content, isError}},
  the legacy value of content items, or {status: error, error}; an error status or `isError` marks it
  failed). A result's content items addressed to the user only (Goose's shell writes its output twice,
  once per audience) are left out when the model got its own copy; images in a result are referenced.
  contextLengthExceeded is an api_error event; conversationCompacted (older Goose) a compaction;
  summarizationRequested, systemNotification, toolConfirmationRequest and actionRequired are notes of
  the row's raw event (not messages); jsonRenderSpec and unknown item types without text are counted in
  `skipped`. A user message is authored when the user saw it and it holds text or an image of its own,
  unless it is the copy of the last prompt Goose adds after a compaction's summary.
- developer extension tools are named by what they do, so their actions get their categories:
  `developer__shell` -> shell, `developer__text_editor` by its command (view -> view, write -> write,
  str_replace -> str_replace, insert / undo_edit -> edit), the newer `developer__write` / `__edit` ->
  write / edit. Every other tool keeps its Goose name (`<extension>__<tool>`).

Raw log events (docs/sessions.md#events): the session row, then every message row, in order; a row's JSON columns are
decoded in its raw value. `metadata_json.agentVisible` says whether the runtime sends a message to the
model (a surface node). Goose compacts by keeping the history visible to the user only and adding an
agent-only summary: that summary (an agent-only message right after an agent-invisible one) replaces
every node before it, and the history before the last summary was sent to the model until then (nodes,
now shadowed) — except notifications, which never were. A tool response cites its request by call id.

A table that turns unreadable in the middle (a damaged page) yields the rows read before the damage, and
an issue. The one-JSONL-file-per-session format of older Goose is not read (no real one was found).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftCompaction,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_count,
    as_dict,
    as_list,
    as_str,
    json_text,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.sqlite_snapshot import table_rows
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "goose"
ORIGIN = "goose-session"
SESSION_COLUMNS = frozenset({"id", "working_dir"})
MESSAGE_COLUMNS = frozenset({"session_id", "role", "content_json", "created_timestamp"})
JSON_COLUMNS = frozenset(
    {"extension_data", "recipe_json", "user_recipe_values_json", "model_config_json", "content_json", "metadata_json"}
)
ROLES = frozenset({"user", "assistant"})
CALL_ITEMS = frozenset({"toolRequest", "frontendToolRequest"})
NOTE_ITEMS = frozenset({"summarizationRequested", "systemNotification", "toolConfirmationRequest", "actionRequired"})
TEXT_EDITOR = "developer__text_editor"
DEVELOPER_TOOLS = {"shell": "shell", "write": "write", "edit": "edit"}
TEXT_EDITOR_COMMANDS = {
    "view": "view",
    "write": "write",
    "str_replace": "str_replace",
    "insert": "edit",
    "undo_edit": "edit",
}


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database's tables (name -> column names) are this format's, else ""."""
    if tables.get("sessions", set()) >= SESSION_COLUMNS and tables.get("messages", set()) >= MESSAGE_COLUMNS:
        return FORMAT
    return ""


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    sessions = table_rows(conn, "sessions", path, result)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in table_rows(conn, "messages", path, result):
        by_session.setdefault(_text(row.get("session_id")), []).append(row)
    for index, row in enumerate(sessions):
        native_id = _text(row.get("id"))
        if not native_id:
            result.issues.append(issue(path, 0, "invalid_record", f"session row #{index} has no id"))
            continue
        result.sessions.append(_Session(row, by_session.pop(native_id, []), path, result).build())
    for native_id, rows in by_session.items():
        reason = f"{len(rows)} message(s) of session {native_id!r}, which has no row in sessions"
        result.issues.append(issue(path, 0, "invalid_record", reason))
        if native_id:
            result.sessions.append(_Session({"id": native_id}, rows, path, result).build())
    return result


@dataclass(slots=True)
class _Visibility:
    """Who a message row is for (metadata_json; both by default)."""

    user: bool = True
    agent: bool = True

    @classmethod
    def of(cls, row: dict[str, Any]) -> _Visibility:
        metadata = as_dict(_json(row.get("metadata_json")))
        return cls(metadata.get("userVisible") is not False, metadata.get("agentVisible") is not False)


@dataclass(slots=True)
class _Place:
    """Where a message row sits relative to compactions."""

    summary: bool  # an agent-only message right after an agent-invisible one: a compaction's summary
    compacted: bool  # before the last summary: the model saw it until a compaction
    echo: bool  # right after an agent-only message (a summary, or the continuation that follows it)


class _Session:
    def __init__(self, row: dict[str, Any], rows: list[dict[str, Any]], path: str, result: SourceResult) -> None:
        self.row = row
        self.rows = rows
        self.path = path
        self.result = result
        self.model = as_str(as_dict(_json(row.get("model_config_json"))).get("model_name"))
        self.calls: dict[str, str] = {}  # tool call id -> tool name
        self.prompts: set[str] = set()  # the text of every authored user message so far
        self.compacted = ""  # the current row's compaction text, when it is one
        cwd = _text(row.get("working_dir"))
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=_text(row.get("id")),
            source_path=path,
            title=_text(row.get("name")) or _text(row.get("description")),
            cwd=cwd,
            repo=folder_name(cwd),
        )
        parent = _text(row.get("parent_session_id"))
        if parent:
            self.draft.parent_session_id = f"{ORIGIN}:{parent}"
        self.draft.observe_time(to_ms(row.get("created_at")))
        self.draft.observe_time(to_ms(row.get("updated_at")))

    def build(self) -> DraftSession:
        header = self._session_row()
        visibility = [_Visibility.of(row) for row in self.rows]
        summaries = {
            index
            for index in range(1, len(self.rows))
            if visibility[index].agent and not visibility[index].user and not visibility[index - 1].agent
        }
        last_summary = max(summaries, default=-1)
        for index, row in enumerate(self.rows):
            echo = index > 0 and visibility[index - 1].agent and not visibility[index - 1].user
            self._message(row, visibility[index], _Place(index in summaries, index < last_summary, echo))
        self._tokens()
        if _truthy(self.row.get("user_set_name")):
            header.title_kind = "custom-title"
        elif any(message.authored for message in self.draft.messages if message.role == "user"):
            header.title_kind = "ai-title"  # Goose names a session with the model once it has prompts
        header.title = self.draft.title if header.title_kind else ""
        self.draft.current = None
        return self.draft

    def _session_row(self) -> DraftRecord:
        time_ms = to_ms(self.row.get("created_at"))
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:session", _raw(self.row), time_ms=time_ms))
        record.keys.append(f"session:{self.draft.native_id}")
        instructions = as_str(as_dict(_json(self.row.get("recipe_json"))).get("instructions"))
        if instructions:
            record.node = True
            message = self.draft.add_message(DraftMessage(role="system", authored=False, time_ms=time_ms))
            self.draft.add_block(message, DraftBlock("text", text=instructions))
        return record

    def _message(self, row: dict[str, Any], visible: _Visibility, place: _Place) -> None:
        role = _text(row.get("role"))
        time_ms = to_ms(row.get("created_timestamp")) or to_ms(row.get("timestamp"))
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:message/{role or '(none)'}", _raw(row), time_ms=time_ms))
        record.keys.append(f"message:{_text(row.get('message_id')) or _text(row.get('id'))}")
        items = _content_items(row.get("content_json"))
        if items is None:
            self.result.issues.append(
                issue(self.path, 0, "invalid_record", f"message row {_text(row.get('id'))}: content_json is not JSON")
            )
            return
        if role not in ROLES:
            self.result.skipped[f"{FORMAT}:role/{role or '(none)'}"] += 1
            return
        notification_only = bool(items) and all(as_dict(item).get("type") == "systemNotification" for item in items)
        record.node = visible.agent or (place.compacted and not notification_only)
        message = DraftMessage(role=role, authored=visible.user, time_ms=time_ms)
        if role == "assistant":
            message.model = self.model
        self.compacted = "context compacted: summary" if place.summary else ""
        blocks = [block for item in items for block in self._item(as_dict(item), time_ms, record)]
        if role == "user":
            message.authored = self._authored_prompt(visible, place, items)
        if blocks:
            self.draft.add_message(message)
            for block in blocks:
                self.draft.add_block(message, block)
        elif not record.notes and not self.compacted:
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
        if self.compacted:
            record.replaces_all = True
            seq = message.seq if blocks else -1
            self.draft.compactions.append(DraftCompaction(time_ms, seq))
            self.draft.record("compaction", time_ms, self.compacted, message_seq=seq)

    def _authored_prompt(self, visible: _Visibility, place: _Place, items: list[Any]) -> bool:
        """A user message the user saw, with text or an image of its own (not a tool result's); not the
        copy of the last prompt Goose adds after a compaction's summary."""
        kinds = [as_str(as_dict(item).get("type")) for item in items]
        if not visible.user or not any(kind in ("text", "image") for kind in kinds):
            return False
        text = "\n".join(as_str(as_dict(item).get("text")) for item in items if as_dict(item).get("type") == "text")
        if place.echo and text in self.prompts:
            return False
        self.prompts.add(text)
        return True

    def _item(self, item: dict[str, Any], time_ms: int, record: DraftRecord) -> list[DraftBlock]:
        """The blocks of one content item; runtime items become events or notes of the row's record."""
        kind = as_str(item.get("type"))
        if kind == "text":
            text = as_str(item.get("text"))
            return [DraftBlock("text", text=text)] if text else []
        if kind == "image":
            return [DraftBlock("image", media_type=as_str(item.get("mimeType")))]
        if kind in ("thinking", "reasoning"):
            return [DraftBlock("thinking", text=as_str(item.get("thinking")) or as_str(item.get("text")))]
        if kind == "redactedThinking":
            return [DraftBlock("thinking")]
        if kind in CALL_ITEMS:
            return [self._call(item, record)]
        if kind == "toolResponse":
            return self._response(item, record)
        if kind == "contextLengthExceeded":
            text = as_str(item.get("msg")) or "the context length was exceeded"
            self.draft.record("api_error", time_ms, f"context length exceeded: {text}", failed=True)
        elif kind == "conversationCompacted":
            self.compacted = as_str(item.get("msg")) or "context compacted"
        elif kind in NOTE_ITEMS:
            record.notes.append(_note(kind, item))
        elif as_str(item.get("text")):  # an item type not seen yet, with text
            return [DraftBlock("text", text=item["text"])]
        else:
            self.result.skipped[f"{FORMAT}:content/{kind or '(untyped)'}"] += 1
        return []

    def _call(self, item: dict[str, Any], record: DraftRecord) -> DraftBlock:
        call_id = as_str(item.get("id"))
        if call_id:
            record.keys.append(f"call:{call_id}")
        call = as_dict(item.get("toolCall"))
        value = as_dict(call.get("value")) if "status" in call else call
        goose_name = as_str(value.get("name"))
        if as_str(call.get("status")) == "error" or not goose_name:
            error = as_str(call.get("error")) or "a tool call without a tool name"
            return DraftBlock("tool_use", text=error, tool_use_id=call_id, tool_input_json=json_text(call))
        arguments = as_dict(value.get("arguments"))
        name = _tool_name(goose_name, arguments)
        self.calls[call_id] = name
        if goose_name != TEXT_EDITOR:
            return tool_use_block(name, call_id, arguments)
        # The editor's `command` is an editor command (view, write, …), not a shell command.
        block = tool_use_block(name, call_id, {key: arg for key, arg in arguments.items() if key != "command"})
        block.tool_input_json = json_text(arguments)
        block.text = " ".join(part for part in (as_str(arguments.get("command")), block.text) if part)
        return block

    def _response(self, item: dict[str, Any], record: DraftRecord) -> list[DraftBlock]:
        call_id = as_str(item.get("id"))
        if call_id:
            record.source_keys.append(f"call:{call_id}")
        outcome = as_dict(item.get("toolResult"))
        name = self.calls.get(call_id, "")
        if as_str(outcome.get("status")) == "error":
            text = as_str(outcome.get("error")) or "error"
            return [DraftBlock("tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=True)]
        value = outcome.get("value")
        contents = as_list(value.get("content")) if isinstance(value, dict) else as_list(value)
        failed = isinstance(value, dict) and value.get("isError") is True
        text, images = _result_content(contents)
        result = DraftBlock("tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed)
        return [result, *images]

    def _tokens(self) -> None:
        last = next((m for m in reversed(self.draft.messages) if m.role == "assistant"), None)
        if last is None:
            return
        row = self.row
        last.input_tokens = as_count(row.get("accumulated_input_tokens")) or as_count(row.get("input_tokens"))
        last.output_tokens = as_count(row.get("accumulated_output_tokens")) or as_count(row.get("output_tokens"))


def _tool_name(name: str, arguments: dict[str, Any]) -> str:
    """A developer extension tool's name by what it does (module docstring); any other tool's own name."""
    if name == TEXT_EDITOR:
        return TEXT_EDITOR_COMMANDS.get(as_str(arguments.get("command")), name)
    extension, _, tool = name.rpartition("__")
    return DEVELOPER_TOOLS.get(tool, name) if extension == "developer" else name


def _result_content(contents: list[Any]) -> tuple[str, list[DraftBlock]]:
    """(text, image blocks) of a tool result's content items: what the model saw, else what the user saw."""
    for_model: list[str] = []
    for_user: list[str] = []
    images: list[DraftBlock] = []
    for content in contents:
        content = as_dict(content)
        kind = as_str(content.get("type"))
        if kind == "image":
            images.append(DraftBlock("image", media_type=as_str(content.get("mimeType"))))
            continue
        if kind == "resource":
            resource = as_dict(content.get("resource"))
            text = as_str(resource.get("text")) or as_str(resource.get("uri"))
        elif kind == "resource_link":
            text = as_str(content.get("uri")) or as_str(content.get("name"))
        else:
            text = as_str(content.get("text"))
        audience = as_dict(content.get("annotations")).get("audience")
        user_only = isinstance(audience, list) and "assistant" not in audience
        if text:
            (for_user if user_only else for_model).append(text)
    return "\n".join(for_model or for_user), images


def _note(kind: str, item: dict[str, Any]) -> str:
    """The text a runtime item leaves in its row's raw event."""
    if kind == "toolConfirmationRequest":
        return f"tool confirmation requested: {as_str(item.get('toolName'))}"
    if kind == "actionRequired":
        data = as_dict(item.get("data"))
        detail = as_str(data.get("toolName")) or as_str(data.get("message")) or as_str(data.get("id"))
        return f"action required ({as_str(data.get('actionType')) or 'unknown'}): {detail}"
    return as_str(item.get("msg")) or kind


def _content_items(value: Any) -> list[Any] | None:
    """A message's content items (a whole serialized Message is read too); None when it is not JSON."""
    content = _json(value)
    if content is _NOT_JSON:
        return None
    if isinstance(content, dict):
        content = content.get("content")
    return as_list(content)


_NOT_JSON = object()


def _json(value: Any) -> Any:
    """A JSON column's value decoded; None for NULL, `_NOT_JSON` for text that is not JSON."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def _raw(row: dict[str, Any]) -> dict[str, Any]:
    """A row as its raw event's JSON value: JSON columns decoded (kept as text when they are not JSON)."""
    raw: dict[str, Any] = {}
    for name, value in row.items():
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if name in JSON_COLUMNS and isinstance(value, str):
            decoded = _json(value)
            value = value if decoded is _NOT_JSON else decoded
        raw[name] = value
    return raw


def _text(value: Any) -> str:
    """A text column's value (an integer id reads as its digits)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def _truthy(value: Any) -> bool:
    return value is True or value == 1 or (isinstance(value, str) and value.lower() in ("1", "true"))
