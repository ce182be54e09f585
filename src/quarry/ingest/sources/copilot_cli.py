"""GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>.jsonl`, newer `<id>/events.jsonl`).

Both layouts hold the same event log: one event a line, {type, data, id, timestamp, parentId}; the
session is `copilot-cli-session:<data.sessionId of session.start>`.

- `user.message` -> an authored user message (its `content`, what the user typed; the CLI's trailing
  `<current_datetime>` tag is not the user's words). `system.message` -> a system message, not authored.
- `assistant.message` -> an assistant message: `reasoningText` (thinking), `content` (text), then a
  tool_use per `toolRequests[]`; `model` (else the last `session.model_change`), `outputTokens`.
- `tool.execution_start` -> the tool_use, when no assistant message requested it (older builds
  write empty `toolRequests` and announce each call this way); `tool.execution_complete` -> a tool
  message holding its tool_result (`success: false` or an `error` marks it failed).
- runtime events: `assistant.turn_start` / `turn_end` -> turn_started / turn_completed, `abort` ->
  turn_aborted, `session.error` -> api_error.
- `session.shutdown` totals the session's tokens: the input, cache and output tokens the replies do
  not carry themselves are put on the last reply, so the session's sums are the CLI's own.
- `session.start.context` gives cwd, branch and repo (Windows paths read as such).

Raw log events (docs/sessions.md#events): every line is an event. Messages are surface nodes; hooks,
permissions, notices and the session's bookkeeping are log-only. A tool's start and completion cite
the request by its `toolCallId`.

The title is not in the event log: the newer layout keeps it in `workspace.yaml` beside `events.jsonl`
(`name`, `user_named` when the user chose it), read when its `id` is the session's; otherwise the title
is the first prompt. `workspace.yaml` itself is recognized (`recognize_workspace`) and counted in
`skipped` as `copilot-cli:workspace`: it holds no dialogue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

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

FORMAT = "copilot-cli"
ORIGIN = "copilot-cli-session"
EVENT_PREFIXES = ("session.", "user.", "assistant.", "tool.", "system.", "hook.", "permission.", "subagent.")
SURFACE_TYPES = frozenset({"user.message", "system.message", "assistant.message", "tool.execution_complete"})
TURN_EVENTS = {"assistant.turn_start": "turn_started", "assistant.turn_end": "turn_completed", "abort": "turn_aborted"}
_DATETIME_TAG = re.compile(r"\s*<current_datetime>[^<]*</current_datetime>\s*")
EVENTS_FILE, WORKSPACE_FILE = "events.jsonl", "workspace.yaml"
# The keys the CLI writes at the top of every workspace.yaml (a YAML mapping, one key a line).
_WORKSPACE_KEYS = re.compile(r"^id: [0-9a-f-]{36}\s*$.*^(?:cwd|name|created_at): ", re.MULTILINE | re.DOTALL)
_WORKSPACE_MAX_BYTES = 1 << 20


def is_event(data: Any) -> bool:
    """A Copilot CLI event: {type, data, id} with a dotted type of the CLI's families (or `abort`)."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict) or "id" not in data:
        return False
    kind = data.get("type")
    return isinstance(kind, str) and (kind == "abort" or kind.startswith(EVENT_PREFIXES))


def recognize(records: list[Record]) -> str:
    """FORMAT when most JSON objects among a file's first records are Copilot CLI events."""
    objects = [record.data for record in records if isinstance(record.data, dict)]
    events = sum(is_event(data) for data in objects)
    return FORMAT if events and events * 2 > len(objects) else ""


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.result = SourceResult()
        self.draft = DraftSession(origin=ORIGIN, native_id="", source_path=path)
        self.model = ""
        self.requested: set[str] = set()
        self.tool_names: dict[str, str] = {}
        self.last_reply: DraftMessage | None = None
        self.totals: dict[str, int] = {}

    def feed(self, record: Record) -> None:
        data = record.data
        kind = as_str(data.get("type")) or "(untyped)"
        body = as_dict(data.get("data"))
        time_ms = to_ms(data.get("timestamp"))
        self.draft.observe_time(time_ms)
        event = self.draft.begin(
            DraftRecord(record.line, f"{FORMAT}:{kind}", data, record.raw, time_ms, node=kind in SURFACE_TYPES)
        )
        event.keys.append(as_str(data.get("id")))
        call_id = as_str(body.get("toolCallId"))
        if call_id in self.requested and kind.startswith("tool."):
            event.source_keys.append(f"call:{call_id}")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, body, time_ms)
        elif kind in TURN_EVENTS:
            text = as_str(body.get("reason"))
            self.draft.record(TURN_EVENTS[kind], time_ms, text, failed=kind == "abort")
        elif kind == "session.error":
            message = as_str(body.get("message")) or as_str(body.get("errorType")) or "error"
            self.draft.record("api_error", time_ms, message.strip().strip('"'), failed=True)
        else:
            self.result.skipped[f"{FORMAT}:{kind}"] += 1

    def unread(self, record: Record, kind: str) -> None:
        self.draft.records.append(unread_record(record, FORMAT, kind))

    def finish(self) -> SourceResult:
        self.draft.current = None
        if self.totals and self.last_reply is not None:
            self._settle_totals(self.last_reply)
        if not self.draft.native_id:
            if self.draft.records:
                self.result.issues.append(issue(self.path, 0, "invalid_record", "no session.start names the session"))
        elif self.draft.messages:
            _read_title(self.draft, self.path, self.result)
            self.result.sessions.append(self.draft)
        return self.result

    def _start(self, body: dict[str, Any], time_ms: int) -> None:
        self.draft.native_id = self.draft.native_id or as_str(body.get("sessionId"))
        self.draft.observe_time(to_ms(body.get("startTime")))
        context = as_dict(body.get("context"))
        cwd = as_str(context.get("cwd"))
        root = as_str(context.get("gitRoot")) or cwd
        self.draft.cwd = self.draft.cwd or cwd
        self.draft.branch = self.draft.branch or as_str(context.get("branch"))
        if root and not self.draft.repo:
            self.draft.repo = folder_name(root)
        self.draft.record("session_started", time_ms)

    def _model_change(self, body: dict[str, Any], time_ms: int) -> None:
        self.model = as_str(body.get("newModel")) or self.model

    def _user(self, body: dict[str, Any], time_ms: int) -> None:
        text = _DATETIME_TAG.sub("\n", as_str(body.get("content"))).strip()
        message = self.draft.add_message(DraftMessage("user", authored=bool(text), time_ms=time_ms))
        if text:
            self.draft.add_block(message, DraftBlock("text", text=text))

    def _system(self, body: dict[str, Any], time_ms: int) -> None:
        message = self.draft.add_message(DraftMessage("system", authored=False, time_ms=time_ms))
        self.draft.add_block(message, DraftBlock("text", text=as_str(body.get("content"))))

    def _assistant(self, body: dict[str, Any], time_ms: int) -> None:
        self.model = as_str(body.get("model")) or self.model
        message = self._reply(time_ms)
        message.output_tokens = as_count(body.get("outputTokens"))
        reasoning = as_str(body.get("reasoningText"))
        if reasoning or body.get("reasoningOpaque"):
            self.draft.add_block(message, DraftBlock("thinking", text=reasoning))
        content = as_str(body.get("content"))
        if content:
            self.draft.add_block(message, DraftBlock("text", text=content))
        for request in as_list(body.get("toolRequests")):
            request = as_dict(request)
            self._tool_use(message, as_str(request.get("toolCallId")), as_str(request.get("name")), request)

    def _reply(self, time_ms: int) -> DraftMessage:
        message = DraftMessage("assistant", authored=True, time_ms=time_ms, model=self.model)
        self.last_reply = self.draft.add_message(message)
        return message

    def _tool_use(self, message: DraftMessage, call_id: str, name: str, request: dict[str, Any]) -> None:
        self.requested.add(call_id)
        self.tool_names[call_id] = name
        self.draft.add_block(message, tool_use_block(name, call_id, request.get("arguments")))
        if self.draft.current is not None:
            self.draft.current.keys.append(f"call:{call_id}")

    def _tool_start(self, body: dict[str, Any], time_ms: int) -> None:
        call_id = as_str(body.get("toolCallId"))
        if call_id in self.requested:
            return
        message = self.last_reply if self.last_reply is not None else self._reply(time_ms)
        self._tool_use(message, call_id, as_str(body.get("toolName")), body)

    def _tool_complete(self, body: dict[str, Any], time_ms: int) -> None:
        call_id = as_str(body.get("toolCallId"))
        result = as_dict(body.get("result"))
        error = body.get("error")
        error_text = as_str(as_dict(error).get("message")) if isinstance(error, dict) else as_str(error)
        text = as_str(result.get("content")) or error_text or (json_text(result) if result else "")
        failed = body.get("success") is False or bool(error)
        message = self.draft.add_message(DraftMessage("tool", authored=False, time_ms=time_ms))
        name = self.tool_names.get(call_id, "")
        self.draft.add_block(
            message, DraftBlock("tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed)
        )

    def _shutdown(self, body: dict[str, Any], time_ms: int) -> None:
        details = as_dict(body.get("tokenDetails"))
        for key in ("input", "cache_read", "cache_write", "output"):
            self.totals[key] = as_count(as_dict(details.get(key)).get("tokenCount"))

    def _settle_totals(self, reply: DraftMessage) -> None:
        """Put what the shutdown totals hold beyond the replies' own counts on the last reply."""
        counted = sum(message.output_tokens for message in self.draft.messages if message.role == "assistant")
        reply.output_tokens += max(0, self.totals["output"] - counted)
        reply.input_tokens += self.totals["input"]
        reply.cache_read_tokens += self.totals["cache_read"]
        reply.cache_write_tokens += self.totals["cache_write"]


_HANDLERS = {
    "session.start": _Parser._start,
    "session.resume": _Parser._start,
    "session.model_change": _Parser._model_change,
    "user.message": _Parser._user,
    "system.message": _Parser._system,
    "assistant.message": _Parser._assistant,
    "tool.execution_start": _Parser._tool_start,
    "tool.execution_complete": _Parser._tool_complete,
    "session.shutdown": _Parser._shutdown,
}


def parse(records: Iterable[Record], path: str) -> SourceResult:
    return feed_all(_Parser(path), records, path)


def recognize_workspace(text: str) -> str:
    """FORMAT for a session folder's `workspace.yaml` (its `id` line, then the CLI's own keys)."""
    return FORMAT if _WORKSPACE_KEYS.match(text.lstrip("\ufeff")) else ""


def parse_workspace(text: str, path: str) -> SourceResult:
    """A `workspace.yaml` alone holds no dialogue: it is read with its `events.jsonl` (`_read_title`)."""
    result = SourceResult()
    result.skipped[f"{FORMAT}:workspace"] += 1
    return result


def _read_title(draft: DraftSession, path: str, result: SourceResult) -> None:
    """The title `workspace.yaml` beside an `events.jsonl` gives the session, if it is the same session's."""
    if not path.endswith(EVENTS_FILE):
        return
    file = Path(path[: -len(EVENTS_FILE)] + WORKSPACE_FILE)
    if not file.is_file():
        return
    try:
        if file.stat().st_size > _WORKSPACE_MAX_BYTES:
            raise ValueError(f"larger than {_WORKSPACE_MAX_BYTES} bytes")
        workspace = as_dict(yaml.safe_load(file.read_bytes()))
    except OSError as error:
        result.issues.append(issue(str(file), 0, "unreadable", error.strerror or str(error)))
        return
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        result.issues.append(issue(str(file), 0, "invalid_record", f"not a workspace.yaml the CLI writes: {error}"))
        return
    if as_str(workspace.get("id")).lower() != draft.native_id.lower():
        return
    title = " ".join(as_str(workspace.get("name")).split())
    if title:
        draft.title = title
        draft.header_title_kind = "custom-title" if workspace.get("user_named") is True else "ai-title"
