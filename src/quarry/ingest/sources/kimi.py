"""Kimi CLI sessions (`~/.kimi/sessions/<work dir hash>/<session id>/context.jsonl`).

A session is a folder: `context.jsonl` is the history sent to the model (read here), each subagent's
history is `context_sub_<n>.jsonl` beside it, and `wire.jsonl` is the UI's event stream of the same
turns. The files name no session, so the id is the session folder's (the last UUID in the path):
`kimi-cli-session:<id>`, a subagent `kimi-cli-session:<id>/sub_<n>` whose parent is the session.

- context lines are OpenAI-style messages: `user` (a string or text parts) -> an authored user
  message (a subagent's first prompt is its dispatcher's, so not authored); `assistant` -> `think`
  parts (thinking), `text` parts, then a tool_use per `tool_calls[]`; `tool` -> a tool message whose
  result opens with the CLI's `<system>…</system>` status line (an `ERROR` status marks it failed).
- `_checkpoint` and `_usage` lines are bookkeeping: `_usage.token_count` is the context's size, not
  a reply's usage, so no tokens are read; other `_` roles are counted in `skipped`.
- `Task` calls dispatch a subagent ({description, subagent_name, prompt}).
- the context has no times and no reply's usage: a main context read from its session folder takes
  them from the `wire.jsonl` beside it (`kimi_wire`): each message's time, each reply's tokens, the
  session's span, and a turn_aborted event per interrupted turn. A subagent's context has no wire log
  of its own. `wire.jsonl` read alone is recognized and counted in `skipped` as `kimi-cli:wire-log`:
  its dialogue is the context's.

Raw log events (docs/sessions.md#events): every context line is an event; messages are surface nodes,
bookkeeping lines log-only; a tool message cites its call by `tool_call_id`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from quarry.ingest.reader import Record, feed_all, issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftDispatch,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_dict,
    as_list,
    as_str,
    json_or_none,
    unread_record,
)
from quarry.ingest.sources.kimi_wire import Reply, Seen, merge, prompt_text, read_wire, wire_beside
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "kimi-cli"
ORIGIN = "kimi-cli-session"
ROLES = frozenset({"user", "assistant", "tool", "system"})
BOOKKEEPING = frozenset({"_checkpoint", "_usage"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_SUB = re.compile(r"context_sub_(\d+)\.jsonl$")
_STATUS = re.compile(r"\A\s*<system>(.*?)</system>", re.DOTALL)


def is_wire_record(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if data.get("type") == "metadata" and "protocol_version" in data:
        return True
    return "timestamp" in data and isinstance(as_dict(data.get("message")).get("payload"), dict)


def recognize(records: list[Record]) -> str:
    """FORMAT for a context (a `_checkpoint` or `_usage` line among its messages) or a wire log."""
    objects = [record.data for record in records if isinstance(record.data, dict)]
    if any(data.get("role") in BOOKKEEPING and len(data) <= 3 for data in objects):
        return FORMAT
    wire = sum(is_wire_record(data) for data in objects)
    return FORMAT if wire and wire * 2 > len(objects) else ""


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.result = SourceResult()
        ids = _UUID.findall(path)
        session_id = ids[-1].lower() if ids else ""
        sub = _SUB.search(path)
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=f"{session_id}/sub_{sub.group(1)}" if sub and session_id else session_id,
            source_path=path,
            parent_session_id=f"{ORIGIN}:{session_id}" if sub and session_id else "",
        )
        self.tool_names: dict[str, str] = {}
        self.wire = False
        self.seen = Seen()

    def feed(self, record: Record) -> None:
        data = record.data
        if self.wire or is_wire_record(data):
            self.wire = True
            self.result.skipped[f"{FORMAT}:wire-log"] += 1
            return
        role = as_str(data.get("role")) or "(none)"
        event = self.draft.begin(DraftRecord(record.line, f"{FORMAT}:{role}", data, record.raw, node=role in ROLES))
        if role == "user":
            self._user(data.get("content"))
        elif role == "assistant":
            self._assistant(data)
        elif role == "tool":
            call_id = as_str(data.get("tool_call_id"))
            event.source_keys.append(f"call:{call_id}")
            self._tool(call_id, data.get("content"))
        elif role == "system":
            message = self.draft.add_message(DraftMessage("system", authored=False))
            self.draft.add_block(message, DraftBlock("text", text=prompt_text(data.get("content"))))
        elif role not in BOOKKEEPING:
            self.result.skipped[f"{FORMAT}:{role}"] += 1

    def unread(self, record: Record, kind: str) -> None:
        if not self.wire:
            self.draft.records.append(unread_record(record, FORMAT, kind))

    def finish(self) -> SourceResult:
        self.draft.current = None
        if self.wire:
            return self.result
        if not self.draft.native_id:
            self.result.issues.append(issue(self.path, 0, "invalid_record", "no session folder id in the file's path"))
        elif self.draft.messages:
            self._merge_wire()
            self.result.sessions.append(self.draft)
        return self.result

    def _merge_wire(self) -> None:
        file = wire_beside(self.path) if not self.draft.parent_session_id else None
        if file is None:
            return
        try:
            wire = read_wire(file, self.result)
        except (OSError, ValueError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            self.result.issues.append(issue(str(file), 0, "unreadable", f"the session's wire log: {reason}"))
            return
        merge(self.draft, wire, self.seen)

    def _user(self, content: Any) -> None:
        text = prompt_text(content)
        first = not any(message.role == "user" for message in self.draft.messages)
        authored = bool(text.strip()) and not (self.draft.parent_session_id and first)
        message = self.draft.add_message(DraftMessage("user", authored=authored))
        if authored:
            self.seen.prompts.append((message, text))
        if text.strip():
            self.draft.add_block(message, DraftBlock("text", text=text))

    def _assistant(self, data: dict[str, Any]) -> None:
        message = self.draft.add_message(DraftMessage("assistant", authored=True))
        reply = Reply(message)
        self.seen.replies.append(reply)
        content = data.get("content")
        if isinstance(content, str) and content.strip():
            reply.text = content
            self.draft.add_block(message, DraftBlock("text", text=content))
        for part in as_list(content):
            part = as_dict(part)
            if part.get("type") == "think":
                self.draft.add_block(message, DraftBlock("thinking", text=as_str(part.get("think"))))
            elif as_str(part.get("text")).strip():
                reply.text += as_str(part.get("text"))
                self.draft.add_block(message, DraftBlock("text", text=as_str(part.get("text"))))
        for call in as_list(data.get("tool_calls")):
            call = as_dict(call)
            call_id = as_str(call.get("id"))
            function = as_dict(call.get("function"))
            name = as_str(function.get("name"))
            arguments = json_or_none(as_str(function.get("arguments")))
            self.tool_names[call_id] = name
            reply.call_ids.add(call_id)
            self.draft.add_block(message, tool_use_block(name, call_id, arguments))
            if self.draft.current is not None:
                self.draft.current.keys.append(f"call:{call_id}")
            if name == "Task":
                agent = as_str(as_dict(arguments).get("subagent_name"))
                self.draft.dispatches[call_id] = DraftDispatch(agent=agent)

    def _tool(self, call_id: str, content: Any) -> None:
        text = prompt_text(content)
        status = _STATUS.match(text)
        failed = bool(status and status.group(1).lstrip().upper().startswith("ERROR"))
        message = self.draft.add_message(DraftMessage("tool", authored=False))
        self.seen.results[call_id] = message
        name = self.tool_names.get(call_id, "")
        block = DraftBlock("tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed)
        self.draft.add_block(message, block)


def parse(records: Iterable[Record], path: str) -> SourceResult:
    return feed_all(_Parser(path), records, path)
