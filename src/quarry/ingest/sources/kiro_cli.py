"""Kiro CLI and Amazon Q Developer CLI chats: their SQLite database `data.sqlite3`.

Learnt from the Amazon Q Developer CLI's source (aws/amazon-q-developer-cli, which Kiro CLI continues):
crates/chat-cli/src/database/sqlite_migrations/007_conversations_table.sql creates `conversations (key TEXT
PRIMARY KEY, value TEXT)`, one row per working folder (`key`, its path) holding the folder's last chat, its
`ConversationState` as JSON (crates/chat-cli/src/cli/chat/conversation.rs, message.rs, parser.rs). Kiro CLI
keeps every chat in `conversations_v2 (key, conversation_id, value, created_at, updated_at)` instead (its
source is not public: that table is read the same way, by the same `ConversationState`). Each chat is a
session `kiro-cli-session:<conversation_id>`; its cwd is the first prompt's
`env_context.env_state.current_working_directory`, else the row's key.

`history` is a list of turns `{user, assistant, request_metadata}` (before 1.x a pair `[user, assistant]`):
- `user.content` (serde's externally tagged enum): `{"Prompt": {prompt}}` is the user's prompt (authored,
  at `user.timestamp`); `{"ToolUseResults": {tool_use_results}}` carries the results of the previous
  reply's calls, and `{"CancelledToolUses": {prompt, tool_use_results}}` the calls the user cancelled (failed
  results) with the prompt that interrupted them. A result {tool_use_id, content: [{"Text": s} | {"Json":
  v}], status: "Success" | "Error"} is a tool_result, failed when its status is Error. The context files
  (`additional_context`) are the runtime's, not the user's words: they stay in the raw event.
- `assistant`: `{"Response": {message_id, content}}` or `{"ToolUse": {message_id, content, tool_uses}}`,
  each call {id, name, args} a tool_use (the model's name and arguments; `orig_name` / `orig_args` are what
  an MCP server calls them).
- `request_metadata`: the reply's time (`request_start_timestamp_ms`), its duration (to
  `stream_end_timestamp_ms`) and its model (`model_id`, else the chat's `model_info.model_id`).
`latest_summary` [text, metadata], written by /compact, is a compaction: a system message holding the summary.

Raw log events (docs/sessions.md#events): the row (its columns, the state's other fields), then per turn the
user message, the assistant message, each a surface node. A row whose value is not a conversation is an issue
naming its key; the other rows are still read.
"""

from __future__ import annotations

import sqlite3
from typing import Any

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
    json_or_none,
    json_text,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.sqlite_snapshot import table_rows
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "kiro-cli"
ORIGIN = "kiro-cli-session"
TABLES = {
    "conversations_v2": frozenset({"key", "conversation_id", "value"}),
    "conversations": frozenset({"key", "value"}),
}


def recognize(tables: dict[str, set[str]]) -> str:
    """The database's `migrations` table beside a conversations table of the CLI's shape."""
    if "migrations" not in tables:
        return ""
    return FORMAT if any(tables.get(name, set()) >= columns for name, columns in TABLES.items()) else ""


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in (name for name in TABLES if name in tables):
        for row in table_rows(conn, table, path, result):
            state = json_or_none(as_str(row.get("value")).encode())
            key = as_str(row.get("key"))
            if not isinstance(state, dict) or not isinstance(state.get("history"), list):
                result.issues.append(issue(path, 0, "invalid_record", f"{table} row {key!r} holds no conversation"))
                continue
            draft = _Conversation(row, state, path, result).build()
            if not draft.native_id:
                result.issues.append(issue(path, 0, "invalid_record", f"{table} row {key!r} has no conversation_id"))
            elif draft.messages:
                result.sessions.append(draft)
            else:
                result.skipped[f"{FORMAT}:empty-conversation"] += 1
    return result


class _Conversation:
    """One row's ConversationState: a session, read turn by turn."""

    def __init__(self, row: dict[str, Any], state: dict[str, Any], path: str, result: SourceResult) -> None:
        self.state = state
        self.result = result
        self.key = as_str(row.get("key"))
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=as_str(state.get("conversation_id")) or as_str(row.get("conversation_id")),
            source_path=path,
        )
        self.model = as_str(as_dict(state.get("model_info")).get("model_id")) or as_str(state.get("model"))
        for stamp in (row.get("created_at"), row.get("updated_at")):
            self.draft.observe_time(to_ms(stamp))
        header = {key: value for key, value in row.items() if key != "value"}
        header["state"] = {key: value for key, value in state.items() if key not in ("history", "latest_summary")}
        self.draft.begin(DraftRecord(0, f"{FORMAT}:conversation", header))

    def build(self) -> DraftSession:
        for turn in as_list(self.state.get("history")):
            if isinstance(turn, list) and len(turn) == 2:  # before 1.x: a [user, assistant] pair
                turn = {"user": turn[0], "assistant": turn[1]}
            if not isinstance(turn, dict):
                self.result.skipped[f"{FORMAT}:turn/(not an object)"] += 1
                continue
            self._user(as_dict(turn.get("user")))
            self._assistant(as_dict(turn.get("assistant")), as_dict(turn.get("request_metadata")))
        summary = as_list(self.state.get("latest_summary"))
        if summary and isinstance(summary[0], str):
            self.draft.begin(DraftRecord(0, f"{FORMAT}:latest_summary", summary, node=True, replaces_all=True))
            message = self.draft.add_message(DraftMessage("system", authored=False))
            self.draft.add_block(message, DraftBlock("text", text=summary[0]))
            self.draft.compactions.append(DraftCompaction(message_seq=message.seq))
        if self.key.startswith(("/", "~")) or self.key[1:3] in (":\\", ":/"):  # the working folder's path
            self._cwd(self.key)
        self.draft.current = None
        return self.draft

    def _cwd(self, folder: str) -> None:
        if folder and not self.draft.cwd:
            self.draft.cwd = folder
            self.draft.repo = folder_name(folder)

    def _user(self, user: dict[str, Any]) -> None:
        time_ms = to_ms(user.get("timestamp"))
        self.draft.observe_time(time_ms)
        self._cwd(as_str(as_dict(as_dict(user.get("env_context")).get("env_state")).get("current_working_directory")))
        content = as_dict(user.get("content"))
        kind = next(iter(content), "")
        body = as_dict(content.get(kind))
        self.draft.begin(DraftRecord(0, f"{FORMAT}:user/{kind or '(empty)'}", user, time_ms=time_ms, node=True))
        prompt = as_str(body.get("prompt"))
        results = as_list(body.get("tool_use_results"))
        if not prompt and not results:
            self.result.skipped[f"{FORMAT}:user/{kind or '(empty)'}"] += 1
            return
        message = self.draft.add_message(DraftMessage("user", authored=bool(prompt), time_ms=time_ms))
        for result in results:
            result = as_dict(result)
            call_id = as_str(result.get("tool_use_id"))
            if self.draft.current is not None:
                self.draft.current.source_keys.append(f"call:{call_id}")
            failed = result.get("status") == "Error"
            block = DraftBlock("tool_result", text=_result_text(result), tool_use_id=call_id, is_error=failed)
            self.draft.add_block(message, block)
        if prompt:
            self.draft.add_block(message, DraftBlock("text", text=prompt))
            self.draft.record("turn_started", time_ms, "turn started", message_seq=message.seq)
        for image in as_list(user.get("images")):
            self.draft.add_block(
                message, DraftBlock("image", media_type=f"image/{as_str(as_dict(image).get('format'))}")
            )

    def _assistant(self, assistant: dict[str, Any], metadata: dict[str, Any]) -> None:
        kind = next(iter(assistant), "")
        body = as_dict(assistant.get(kind))
        start = as_count(metadata.get("request_start_timestamp_ms"))
        end = as_count(metadata.get("stream_end_timestamp_ms"))
        self.draft.observe_time(start)
        self.draft.observe_time(end)
        raw = {"assistant": assistant, "request_metadata": metadata} if metadata else assistant
        self.draft.begin(DraftRecord(0, f"{FORMAT}:assistant/{kind or '(empty)'}", raw, time_ms=start, node=True))
        model = as_str(metadata.get("model_id")) or self.model
        reply = DraftMessage("assistant", authored=False, time_ms=start, model=model)
        reply.duration_ms = end - start if start and end > start else 0
        text = as_str(body.get("content"))
        calls = [as_dict(call) for call in as_list(body.get("tool_uses"))]
        if not text and not calls:
            self.result.skipped[f"{FORMAT}:assistant/{kind or '(empty)'}"] += 1
            return
        self.draft.add_message(reply)
        if text:
            self.draft.add_block(reply, DraftBlock("text", text=text))
        for call in calls:
            call_id = as_str(call.get("id"))
            if self.draft.current is not None:
                self.draft.current.keys.append(f"call:{call_id}")
            self.draft.add_block(reply, tool_use_block(as_str(call.get("name")), call_id, call.get("args")))


def _result_text(result: dict[str, Any]) -> str:
    parts = []
    for block in as_list(result.get("content")):
        block = as_dict(block)
        if isinstance(block.get("Text"), str):
            parts.append(block["Text"])
        elif "Json" in block:
            parts.append(json_text(block["Json"]))
    return "\n".join(parts)
