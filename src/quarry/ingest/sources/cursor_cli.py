"""The Cursor Agent CLI's chats (`~/.cursor/chats/<workspace hash>/<agent id>/store.db`: SQLite).

`cursor-agent` keeps each chat in a database of two tables: `meta(key, value)`, whose key "0" holds the
chat's header as hex-encoded JSON {agentId, latestRootBlobId, name, mode, createdAt (epoch ms),
lastUsedModel}, and `blobs(id, data)`, a content-addressed store (id = SHA-256 of data). Some blobs are
messages as JSON in the AI SDK's shape {role, id?, content: a string or parts}; the others are binary
(protobuf) records: the conversation's root, and per turn the steps the terminal shows (the same
messages again, for display).

The conversation is the root blob `latestRootBlobId`: its field 1, repeated, is the id (32 raw bytes)
of each message blob in order, and its field 4, when present, the reply being written as inline JSON.
A root that is missing or unreadable is an issue; the JSON blobs are then read in storage order.

- the chat is a session `cursor-cli-session:<agentId>`, titled by `name` (the first prompt), started at
  `createdAt`; the CLI records no per-message times, no token counts and no cost. Every reply's model
  is `lastUsedModel` (the only model the store names).
- roles: system (the CLI's system prompt), user (authored), assistant, tool. Parts: text -> text,
  reasoning -> thinking (an empty one: the model reasoned, the text is encrypted in `signature`),
  tool-call {toolCallId, toolName, args} -> tool_use, tool-result {toolCallId, toolName, result} ->
  tool_result, image / file -> an image or a text naming the file (never the data). A tool result
  fails when it reports an error (`Error: …`) or a command's non-zero `Finished with exit code N`.
  Tool call ids are `call_…` and the provider's `fc_…` joined by a newline: the first is the id.
- typed prompts keep the terminal's erase keys (backspace, DEL) as characters: they are applied, so
  the title and the prompt read as sent (`problm<DEL>ema` is `problema`).
- JSON blobs the root does not list (an earlier branch of the chat) are counted as
  `cursor-cli:unlisted-message`, binary blobs other than the root as `cursor-cli:display-record`, other
  part types as `cursor-cli:part/<type>` and roles as `cursor-cli:role/<role>`.

Raw log events (docs/sessions.md#events): the header (log-only), then each message (a surface node); a tool call's
message is keyed by its call id and the tool message answering it cites it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_dict,
    as_list,
    as_str,
    json_or_none,
    json_text,
    to_ms,
)
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "cursor-cli"
ORIGIN = "cursor-cli-session"
ROLES = frozenset({"system", "user", "assistant", "tool"})
_EXIT = re.compile(r"\AFinished with exit code (-?\d{1,6})\.")
_ERASE = frozenset("\b\x7f")
_ID_BYTES = 32


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database is a store of `meta` and content-addressed `blobs`, else ""."""
    return (
        FORMAT if tables.get("meta", set()) >= {"key", "value"} and tables.get("blobs", set()) >= {"id", "data"} else ""
    )


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    result = SourceResult()
    header = _header(conn, path, result)
    blobs = _blobs(conn, path, result)
    if header is None:
        return result
    draft = DraftSession(origin=ORIGIN, native_id=as_str(header.get("agentId")), source_path=path)
    if not draft.native_id:
        result.issues.append(issue(path, 0, "invalid_record", "the chat's header has no agentId"))
        return result
    draft.title = _erased(as_str(header.get("name"))).strip()
    draft.header_title_kind = "export" if draft.title else ""
    created = to_ms(header.get("createdAt"))
    draft.observe_time(created)
    draft.begin(DraftRecord(0, f"{FORMAT}:header", header, time_ms=created))
    messages = _conversation(blobs, as_str(header.get("latestRootBlobId")), path, result)
    _Chat(draft, as_str(header.get("lastUsedModel")), result).build(messages)
    if draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-chat"] += 1
    return result


def _header(conn: sqlite3.Connection, path: str, result: SourceResult) -> dict[str, Any] | None:
    """The chat's header: meta "0" as hex-encoded JSON (plain JSON read too); None, and an issue, if absent."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
    except sqlite3.DatabaseError as error:
        result.issues.append(issue(path, 0, "unreadable", f"table meta is unreadable: {error}"))
        return None
    value = row[0] if row else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = as_str(value).strip()
    with contextlib.suppress(ValueError):  # not hex: plain JSON, as a later version might write it
        text = bytes.fromhex(text).decode("utf-8", errors="replace")
    header = json_or_none(text) if text else None
    if isinstance(header, dict):
        return header
    result.issues.append(issue(path, 0, "invalid_record", "meta has no chat header (key 0 holding a JSON object)"))
    return None


def _blobs(conn: sqlite3.Connection, path: str, result: SourceResult) -> dict[str, bytes]:
    """Every blob by id, in storage order; a damaged table yields the blobs read before the damage."""
    blobs: dict[str, bytes] = {}
    try:
        for blob_id, data in conn.execute("SELECT id, data FROM blobs ORDER BY rowid"):
            if isinstance(blob_id, str):
                blobs[blob_id] = data.encode() if isinstance(data, str) else bytes(data or b"")
    except sqlite3.DatabaseError as error:
        reason = f"table blobs is unreadable after {len(blobs)} blob(s): {error}"
        result.issues.append(issue(path, 0, "unreadable", reason))
    return blobs


@dataclass(slots=True)
class _Message:
    blob_id: str  # "" for the root's inline reply
    data: dict[str, Any]


def _conversation(blobs: dict[str, bytes], root_id: str, path: str, result: SourceResult) -> list[_Message]:
    """The chat's messages in order, from its root (module docstring); what else the store holds is counted."""
    listed = _root(blobs.get(root_id))
    json_blobs = {blob_id: value for blob_id, data in blobs.items() if isinstance(value := _json_message(data), dict)}
    if listed is None:
        reason = f"the conversation's root blob {root_id[:16] or '(none)'} is missing or unreadable"
        result.issues.append(issue(path, 0, "invalid_record", f"{reason}: messages read in storage order"))
        return [_Message(blob_id, data) for blob_id, data in json_blobs.items()]
    ids, inline = listed
    messages: list[_Message] = []
    for blob_id in ids:
        if blob_id in json_blobs:
            messages.append(_Message(blob_id, json_blobs[blob_id]))
        else:
            result.issues.append(issue(path, 0, "invalid_record", f"message blob {blob_id[:16]} is missing"))
    for data in inline:
        value = _json_message(data)
        if isinstance(value, dict) and hashlib.sha256(data).hexdigest() not in ids:
            messages.append(_Message("", value))
    unlisted = len(set(json_blobs) - set(ids))
    display = len(set(blobs) - set(json_blobs) - {root_id})
    for kind, count in (("unlisted-message", unlisted), ("display-record", display)):
        if count:
            result.skipped[f"{FORMAT}:{kind}"] += count
    return messages


def _json_message(data: bytes) -> dict[str, Any] | None:
    if not data.startswith(b"{"):
        return None
    value = json_or_none(data)
    return value if isinstance(value, dict) and "role" in value else None


def _root(data: bytes | None) -> tuple[list[str], list[bytes]] | None:
    """(message blob ids, inline messages) of a root blob; None when it is absent or not one."""
    if data is None:
        return None
    try:
        found = list(_fields(data))
    except ValueError:
        return None
    ids = [value.hex() for number, value in found if number == 1 and len(value) == _ID_BYTES]
    inline = [value for number, value in found if number == 4]
    return (ids, inline) if ids or inline else None


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields (number, bytes) of a protobuf message; other wire types are skipped.
    Raises ValueError when the bytes are not a protobuf message."""
    out: list[tuple[int, bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("a field runs past the end")
            out.append((number, data[at : at + size]))
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if number == 0 or at > len(data):
            raise ValueError("not a protobuf message")
    return out


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data) and shift < 64:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at
    raise ValueError("a varint runs past the end")


def _erased(text: str) -> str:
    """Text with the terminal's erase keys applied: each backspace or DEL removes the character before it."""
    if not _ERASE.intersection(text):
        return text
    kept: list[str] = []
    for char in text:
        if char in _ERASE:
            if kept:
                kept.pop()
        else:
            kept.append(char)
    return "".join(kept)


@dataclass(slots=True)
class _Chat:
    draft: DraftSession
    model: str
    result: SourceResult
    calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name

    def build(self, messages: list[_Message]) -> None:
        for message in messages:
            self._message(message)
        self.draft.current = None

    def _message(self, message: _Message) -> None:
        data = message.data
        role = as_str(data.get("role"))
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:message/{role or '(none)'}", data))
        if message.blob_id:
            record.keys.append(f"blob:{message.blob_id}")
        if role not in ROLES:
            self.result.skipped[f"{FORMAT}:role/{role or '(none)'}"] += 1
            return
        record.node = True
        content = data.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)
        blocks = [block for part in parts for block in self._part(role, as_dict(part), record)]
        if not blocks:
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
            return
        draft_message = DraftMessage(role=role, authored=role in ("user", "assistant"))
        draft_message.model = self.model if role == "assistant" else ""
        self.draft.add_message(draft_message)
        for block in blocks:
            self.draft.add_block(draft_message, block)

    def _part(self, role: str, part: dict[str, Any], record: DraftRecord) -> list[DraftBlock]:
        kind = as_str(part.get("type"))
        if kind == "text":
            text = as_str(part.get("text"))
            text = _erased(text) if role == "user" else text
            return [DraftBlock("text", text=text)] if text else []
        if kind == "reasoning":
            return [DraftBlock("thinking", text=as_str(part.get("text")))]
        if kind == "tool-call":
            call_id = _call_id(part)
            name = as_str(part.get("toolName"))
            self.calls[call_id] = name
            record.keys.append(f"call:{call_id}")
            return [tool_use_block(name, call_id, part.get("args"))]
        if kind == "tool-result":
            call_id = _call_id(part)
            record.source_keys.append(f"call:{call_id}")
            return [_tool_result(as_str(part.get("toolName")) or self.calls.get(call_id, ""), call_id, part)]
        if kind in ("image", "file"):
            return [_attachment(part)]
        self.result.skipped[f"{FORMAT}:part/{kind or '(untyped)'}"] += 1
        text = as_str(part.get("text"))
        return [DraftBlock("text", text=text)] if text else []


def _call_id(part: dict[str, Any]) -> str:
    return as_str(part.get("toolCallId")).split("\n", 1)[0]


def _tool_result(name: str, call_id: str, part: dict[str, Any]) -> DraftBlock:
    result = part.get("result")
    text = result if isinstance(result, str) else json_text(result) if result is not None else ""
    match = _EXIT.match(text)
    exit_code = int(match.group(1)) if match else None
    failed = text.startswith("Error") or bool(exit_code) or part.get("isError") is True
    return DraftBlock(
        "tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed, exit_code=exit_code
    )


def _attachment(part: dict[str, Any]) -> DraftBlock:
    """An image by its media type, any other file by its name: the data itself is never kept."""
    media_type = as_str(part.get("mimeType")) or as_str(part.get("mediaType"))
    if as_str(part.get("type")) == "image" or media_type.startswith("image/"):
        return DraftBlock("image", media_type=media_type)
    name = as_str(part.get("filename")) or as_str(part.get("name")) or "attachment"
    return DraftBlock("text", text=f"file: {name}" + (f" ({media_type})" if media_type else ""))
