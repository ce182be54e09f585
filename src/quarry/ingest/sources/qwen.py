"""Qwen Code sessions (`~/.qwen/projects/<cwd slug>/chats/<sessionId>.jsonl`).

Qwen Code is a fork of Gemini CLI that records a session as JSON Lines: every line is {uuid,
parentUuid, sessionId, timestamp, type, cwd, version, gitBranch, ...}; the session is
`qwen-code-session:<sessionId>`. Its messages are Gemini's {role, parts[]}, which is how it is told
apart from Claude Code's look-alike envelope.

- `user` -> an authored user message (its text parts).
- `assistant` -> an assistant message (`model`): a `thought: true` part is thinking, other text parts
  text, a `functionCall` part a tool_use. `usageMetadata`: input_tokens is the uncached prompt,
  cache_read_tokens the cached part, output_tokens the candidates with their thoughts.
- `tool_result` -> a tool message of tool_results (`functionResponse` parts): failed when
  `toolCallResult.status` is not success, the response holds an error, or a shell's "Exit Code: N"
  is nonzero (then kept as the result's exit code).
- `system` records are the CLI's own: `ui_telemetry` is log-only (its `qwen-code.api_response` gives
  the reply's duration, `qwen-code.api_error` is an api_error event), `chat_compression` a compaction.
- cwd and branch from the records; the repo is the cwd's last component (Windows paths too).

Raw log events (docs/sessions.md#events): every line is an event; user, assistant and tool_result
records are surface nodes, system records log-only. A record cites its parent by `parentUuid`, a
tool result the call by its id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from quarry.ingest.reader import Record, feed_all, issue
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
    json_text,
    to_ms,
    unread_record,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "qwen-code"
ORIGIN = "qwen-code-session"
SURFACE_TYPES = frozenset({"user", "assistant", "tool_result"})
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)


def is_record(data: Any) -> bool:
    """A Qwen Code chat record: a session envelope whose message has Gemini `parts`, or a system record."""
    if not isinstance(data, dict) or "sessionId" not in data or "uuid" not in data:
        return False
    return isinstance(as_dict(data.get("message")).get("parts"), list) or "systemPayload" in data


def recognize(records: list[Record]) -> str:
    return FORMAT if any(is_record(record.data) for record in records) else ""


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.result = SourceResult()
        self.draft = DraftSession(origin=ORIGIN, native_id="", source_path=path)
        self.tool_names: dict[str, str] = {}
        self.last_reply: DraftMessage | None = None

    def feed(self, record: Record) -> None:
        data = record.data
        kind = as_str(data.get("type")) or "(untyped)"
        time_ms = to_ms(data.get("timestamp"))
        self.draft.observe_time(time_ms)
        subtype = as_str(data.get("subtype"))
        name = f"{kind}/{subtype}" if subtype else kind
        event = self.draft.begin(
            DraftRecord(record.line, f"{FORMAT}:{name}", data, record.raw, time_ms, node=kind in SURFACE_TYPES)
        )
        event.keys.append(as_str(data.get("uuid")))
        parent = as_str(data.get("parentUuid"))
        if parent:
            event.source_keys.append(parent)
        self._session_fields(data)
        if kind == "user":
            self._user(as_dict(data.get("message")), time_ms)
        elif kind == "assistant":
            self._assistant(data, time_ms)
        elif kind == "tool_result":
            self._tool_result(data, time_ms)
        elif kind == "system":
            self._system(subtype, as_dict(data.get("systemPayload")), time_ms)
        else:
            self.result.skipped[f"{FORMAT}:{kind}"] += 1

    def unread(self, record: Record, kind: str) -> None:
        self.draft.records.append(unread_record(record, FORMAT, kind))

    def finish(self) -> SourceResult:
        self.draft.current = None
        if not self.draft.native_id:
            if self.draft.records:
                self.result.issues.append(issue(self.path, 0, "invalid_record", "no record names the session"))
        elif self.draft.messages:
            self.result.sessions.append(self.draft)
        return self.result

    def _session_fields(self, data: dict[str, Any]) -> None:
        draft = self.draft
        draft.native_id = draft.native_id or as_str(data.get("sessionId"))
        cwd = as_str(data.get("cwd"))
        if cwd and not draft.cwd:
            draft.cwd = cwd
            draft.repo = folder_name(cwd)
        draft.branch = draft.branch or as_str(data.get("gitBranch"))

    def _user(self, message: dict[str, Any], time_ms: int) -> None:
        text = "\n".join(as_str(as_dict(part).get("text")) for part in as_list(message.get("parts"))).strip()
        draft_message = self.draft.add_message(DraftMessage("user", authored=bool(text), time_ms=time_ms))
        if text:
            self.draft.add_block(draft_message, DraftBlock("text", text=text))

    def _assistant(self, data: dict[str, Any], time_ms: int) -> None:
        message = DraftMessage("assistant", authored=True, time_ms=time_ms, model=as_str(data.get("model")))
        _usage(message, as_dict(data.get("usageMetadata")))
        self.last_reply = self.draft.add_message(message)
        for part in as_list(as_dict(data.get("message")).get("parts")):
            part = as_dict(part)
            call = as_dict(part.get("functionCall"))
            text = as_str(part.get("text"))
            if call:
                call_id = as_str(call.get("id"))
                self.tool_names[call_id] = as_str(call.get("name"))
                self.draft.add_block(message, tool_use_block(as_str(call.get("name")), call_id, call.get("args")))
                if self.draft.current is not None:
                    self.draft.current.keys.append(f"call:{call_id}")
            elif text:
                self.draft.add_block(message, DraftBlock("thinking" if part.get("thought") else "text", text=text))

    def _tool_result(self, data: dict[str, Any], time_ms: int) -> None:
        status = as_str(as_dict(data.get("toolCallResult")).get("status"))
        message = self.draft.add_message(DraftMessage("tool", authored=False, time_ms=time_ms))
        for part in as_list(as_dict(data.get("message")).get("parts")):
            response = as_dict(as_dict(part).get("functionResponse"))
            if not response:
                continue
            call_id = as_str(response.get("id"))
            if self.draft.current is not None:
                self.draft.current.source_keys.append(f"call:{call_id}")
            self.draft.add_block(message, _result_block(response, call_id, status, self.tool_names.get(call_id, "")))

    def _system(self, subtype: str, payload: dict[str, Any], time_ms: int) -> None:
        event = as_dict(payload.get("uiEvent"))
        name = as_str(event.get("event.name"))
        if name == "qwen-code.api_response" and self.last_reply is not None and not self.last_reply.duration_ms:
            self.last_reply.duration_ms = as_count(event.get("duration_ms"))
        elif name == "qwen-code.api_error":
            text = as_str(event.get("error")) or as_str(event.get("error_type")) or "API error"
            self.draft.record("api_error", time_ms, text, failed=True)
        elif subtype == "chat_compression":
            self.draft.record("compaction", time_ms, json_text(payload.get("info", "")))
        else:
            self.result.skipped[f"{FORMAT}:system/{subtype or '(none)'}"] += 1


def _usage(message: DraftMessage, usage: dict[str, Any]) -> None:
    prompt = as_count(usage.get("promptTokenCount"))
    cached = as_count(usage.get("cachedContentTokenCount"))
    total = as_count(usage.get("totalTokenCount"))
    message.input_tokens = max(0, prompt - cached)
    message.cache_read_tokens = cached
    # OpenAI-compatible backends count the thoughts inside the candidates (total = prompt + candidates).
    candidates = as_count(usage.get("candidatesTokenCount"))
    thoughts = as_count(usage.get("thoughtsTokenCount"))
    message.output_tokens = total - prompt if total > prompt else candidates + thoughts


def _result_block(response: dict[str, Any], call_id: str, status: str, name: str) -> DraftBlock:
    body = as_dict(response.get("response"))
    output = body.get("output")
    text = output if isinstance(output, str) else json_text(output) if output is not None else ""
    error = body.get("error")
    error_text = error if isinstance(error, str) else json_text(error) if error else ""
    match = _EXIT_CODE.search(text) if "Exit Code:" in text else None
    exit_code = int(match.group(1)) if match and len(match.group(1)) < 10 else None
    failed = (bool(status) and status != "success") or bool(error_text) or bool(exit_code)
    return DraftBlock(
        "tool_result",
        text=text or error_text,
        tool_name=name or as_str(response.get("name")),
        tool_use_id=call_id,
        is_error=failed,
        exit_code=exit_code,
    )


def parse(records: Iterable[Record], path: str) -> SourceResult:
    return feed_all(_Parser(path), records, path)
