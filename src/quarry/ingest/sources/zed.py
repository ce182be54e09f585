"""Zed's agent threads: its SQLite database `threads/threads.db` in Zed's data folder.

Learnt from Zed's source (zed-industries/zed crates/agent/src/db.rs, `ThreadsDatabase` and `DbThread`; the
message types in crates/agent/src/thread.rs). The `threads` table has one row per thread: `id`, `summary`
(its title), `updated_at` (RFC 3339), `data_type` ("zstd" or "json") and `data`, the thread serialized as
JSON (zstd-compressed by current Zed); later Zed added `parent_id` (a subagent's thread names its
parent's), `folder_paths` (the project's folders, one a line) and `created_at`. Each row is a session
`zed-session:<id>`: title `summary`, cwd the first folder (repo: its last part), its span `created_at` to
`updated_at` (Zed records no time per message), a child of `parent_id`.

The thread (`DbThread`, version "0.3.0") holds `messages`, each serde's externally tagged enum:
- `{"User": {id, content}}`: the prompt. Content items `{"Text": s}`, `{"Mention": {uri, content}}` (a
  file, symbol, selection, thread or URL the user attached: referenced by what it names, its inlined
  content left out) and `{"Image": {...}}` (an image block).
- `{"Agent": {content, tool_results}}`: the reply. `{"Text": s}`, `{"Thinking": {text, signature}}` (a
  thinking block; `RedactedThinking` is encrypted and counted in `skipped`) and `{"ToolUse": {id, name,
  input, raw_input}}` (a tool call; `raw_input` when `input` was never parsed); each call is followed by its
  result from `tool_results[id]` {content: {"Text": s} or a string, is_error, output}, failed when
  `is_error`. A call with no result (the turn was stopped) has none.
- `"Resume"`: the user let the agent go on after its tool-use limit: a turn_started event.
The model is `model.model` (its `provider` before it), on every reply. Tokens are per request:
`request_token_usage[<user message id>]` {input_tokens, output_tokens, cache_read_input_tokens,
cache_creation_input_tokens} is put on the last reply of that prompt's turn.

Raw log events (docs/sessions.md#events): the thread row (its columns, not `data`), then every message, in order,
each a surface node (Zed sends the whole thread to the model). A row whose data cannot be decompressed or is
not a thread, and a thread in the format of Zed's first agent panel (no "0.3.0" version: Zed upgrades it
when it opens the thread), are issues naming the thread; the other rows are still read.
"""

from __future__ import annotations

import io
import sqlite3
from typing import Any

import orjson
import zstandard

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_count,
    as_dict,
    as_list,
    as_str,
    json_or_none,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.sqlite_snapshot import table_rows
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "zed"
ORIGIN = "zed-session"
THREAD_COLUMNS = frozenset({"id", "summary", "updated_at", "data_type", "data"})
VERSION = "0.3.0"  # DbThread::VERSION
MAX_THREAD_BYTES = 256 << 20  # a thread decompressing past this is refused (a zstd bomb is not read)


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database's tables (name -> column names) are this format's, else ""."""
    return FORMAT if tables.get("threads", set()) >= THREAD_COLUMNS else ""


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    for row in table_rows(conn, "threads", path, result):
        thread_id = as_str(row.get("id"))
        thread, problem = _thread(row)
        if problem:
            result.issues.append(issue(path, 0, "invalid_record", f"thread {thread_id!r}: {problem}"))
            continue
        draft = _Thread(row, thread, path, result).build()
        if draft.messages:
            result.sessions.append(draft)
        else:
            result.skipped[f"{FORMAT}:empty-thread"] += 1
    return result


def _thread(row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The row's thread, decoded as Zed's `deserialize_thread` does; ({}, why not) when it cannot be."""
    if not as_str(row.get("id")):
        return {}, "the row has no id"
    data = row.get("data")
    data = data.encode() if isinstance(data, str) else data
    if not isinstance(data, bytes):
        return {}, "the row has no data"
    kind = as_str(row.get("data_type"))
    if kind == "zstd":
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
            data = reader.read(MAX_THREAD_BYTES + 1)
        except zstandard.ZstdError as error:
            return {}, f"its zstd data cannot be decompressed ({error})"
        if len(data) > MAX_THREAD_BYTES:
            return {}, f"its data decompresses to more than {MAX_THREAD_BYTES} bytes"
    elif kind != "json":
        return {}, f"unknown data type {kind!r}"
    thread = json_or_none(data)
    if not isinstance(thread, dict) or not isinstance(thread.get("messages"), list):
        return {}, "its data is not a thread (JSON with messages)"
    if thread.get("version") != VERSION:
        return {}, f"a thread of Zed's first agent panel (version {thread.get('version')!r}), not read"
    return thread, ""


class _Thread:
    """One thread row: a session, read message by message."""

    def __init__(self, row: dict[str, Any], thread: dict[str, Any], path: str, result: SourceResult) -> None:
        self.thread = thread
        self.result = result
        parent = as_str(row.get("parent_id"))
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=as_str(row.get("id")),
            source_path=path,
            title=as_str(row.get("summary")) or as_str(thread.get("title")),
            parent_session_id=f"{ORIGIN}:{parent}" if parent else "",
        )
        folder = as_str(row.get("folder_paths")).split("\n", 1)[0].strip()
        if folder:
            self.draft.cwd = folder
            self.draft.repo = folder_name(folder)
        for stamp in (row.get("created_at"), row.get("updated_at"), thread.get("updated_at")):
            self.draft.observe_time(to_ms(stamp))
        model = as_dict(thread.get("model"))
        self.model = as_str(model.get("model"))
        header = {key: value for key, value in row.items() if key != "data"}
        self.draft.begin(DraftRecord(0, f"{FORMAT}:thread", header))
        self.usage = as_dict(thread.get("request_token_usage"))
        self.turn = ""  # the user message id whose request the next replies answer
        self.last_reply: dict[str, DraftMessage] = {}

    def build(self) -> DraftSession:
        for message in as_list(self.thread.get("messages")):
            if isinstance(message, dict) and isinstance(message.get("User"), dict):
                self._user(message)
            elif isinstance(message, dict) and isinstance(message.get("Agent"), dict):
                self._agent(message)
            elif message == "Resume":
                self.draft.begin(DraftRecord(0, f"{FORMAT}:Resume", message, node=True))
                self.draft.record("turn_started", text="resumed after the tool-use limit was reached")
            else:
                self.draft.begin(DraftRecord(0, f"{FORMAT}:(unknown message)", message))
                self.result.skipped[f"{FORMAT}:unknown-message"] += 1
        for user_id, reply in self.last_reply.items():
            tokens = as_dict(self.usage.get(user_id))
            reply.input_tokens = as_count(tokens.get("input_tokens"))
            reply.output_tokens = as_count(tokens.get("output_tokens"))
            reply.cache_read_tokens = as_count(tokens.get("cache_read_input_tokens"))
            reply.cache_write_tokens = as_count(tokens.get("cache_creation_input_tokens"))
        self.draft.current = None
        return self.draft

    def _user(self, message: dict[str, Any]) -> None:
        user = message["User"]
        self.turn = as_str(user.get("id"))
        self.draft.begin(DraftRecord(0, f"{FORMAT}:User", message, node=True, keys=[f"user:{self.turn}"]))
        prompt = self.draft.add_message(DraftMessage("user", authored=True))
        self.draft.record("turn_started", text="turn started", object_ref=self.turn)
        mentions: list[str] = []
        for item in as_list(user.get("content")):
            item = as_dict(item)
            if isinstance(item.get("Text"), str):
                self.draft.add_block(prompt, DraftBlock("text", text=item["Text"]))
            elif "Mention" in item:
                mentions.append(_mention(as_dict(item["Mention"]).get("uri")))
            elif "Image" in item:
                self.draft.add_block(prompt, DraftBlock("image", media_type="image/png"))  # Zed sends PNG
            else:
                self.result.skipped[f"{FORMAT}:user-content/{next(iter(item), '(empty)')}"] += 1
        if mentions:
            self.draft.add_block(prompt, DraftBlock("text", text="mentions: " + ", ".join(mentions)))

    def _agent(self, message: dict[str, Any]) -> None:
        agent = message["Agent"]
        self.draft.begin(DraftRecord(0, f"{FORMAT}:Agent", message, node=True))
        reply = self.draft.add_message(DraftMessage("assistant", authored=False, model=self.model))
        self.last_reply[self.turn] = reply
        results = as_dict(agent.get("tool_results"))
        for item in as_list(agent.get("content")):
            item = as_dict(item)
            if isinstance(item.get("Text"), str):
                self.draft.add_block(reply, DraftBlock("text", text=item["Text"]))
            elif isinstance(item.get("Thinking"), dict):
                self.draft.add_block(reply, DraftBlock("thinking", text=as_str(item["Thinking"].get("text"))))
            elif isinstance(item.get("ToolUse"), dict):
                self._call(reply, item["ToolUse"], results)
            else:
                self.result.skipped[f"{FORMAT}:agent-content/{next(iter(item), '(empty)')}"] += 1

    def _call(self, reply: DraftMessage, call: dict[str, Any], results: dict[str, Any]) -> None:
        call_id = as_str(call.get("id"))
        name = as_str(call.get("name"))
        arguments = call.get("input")
        if arguments is None:
            arguments = json_or_none(as_str(call.get("raw_input"))) or as_str(call.get("raw_input"))
        if self.draft.current is not None:
            self.draft.current.keys.append(f"call:{call_id}")
        self.draft.add_block(reply, tool_use_block(name, call_id, arguments))
        if call_id not in results:
            return
        result = as_dict(results[call_id])
        failed = result.get("is_error") is True
        text = _result_text(result)
        self.draft.add_block(
            reply, DraftBlock("tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed)
        )


def _result_text(result: dict[str, Any]) -> str:
    """What the model was told: the result's content (`{"Text": s}`, or a plain string), else its output."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    if isinstance(as_dict(content).get("Text"), str):
        return content["Text"]
    output = result.get("output")
    if isinstance(output, str):
        return output
    return orjson.dumps(output).decode() if output is not None else ""


def _mention(uri: Any) -> str:
    """A mention's target in a few words: `{"File": {"abs_path": ...}}` -> "File /path"."""
    if isinstance(uri, str):
        return uri
    kind, value = next(iter(as_dict(uri).items()), ("", None))
    fields = as_dict(value)
    target = next(
        (as_str(fields.get(key)) for key in ("abs_path", "path", "url", "name", "id") if as_str(fields.get(key))), ""
    )
    return f"{kind} {target}".strip()
