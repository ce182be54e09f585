"""Outbound OTel projection (seed 000): archive sessions as OpenTelemetry traces and logs.

The projection is a view for observability tools, not archive authority: trace and span ids are
stable export ids, and every span, log record and resource carries `quarry.ref`, the public ref
(`session:…`, `run:…`, `action:…`, `message:…`, `observed-event:…`, `context-snapshot:…`) that leads
back to the canonical object (`quarry read REF`).

What becomes what:

- one resource per session (`service.name` the agent: claude-code, codex, …; `gen_ai.conversation.id`
  and `quarry.session.id` the session id; origin, repo, branch, model, parent session);
- runs are spans `invoke_agent <agent>`; actions (tool calls) are spans `execute_tool <tool>`, children
  of their session's main run span, ending when their result arrived;
- a subagent run is a child of the action that dispatched it (its delegation's tool_use), else of its
  session's main run; the main run of a child session is a child of the parent's subagent run that
  started it, when the parent's run names the child. A family shares one trace: the trace id is
  derived from the session id of its lineage root;
- messages (`gen_ai.<role>.message`), observed events (`quarry.observed_event`) and context
  snapshots (`quarry.context_snapshot`) are log records carrying the trace id and the span they belong
  to: the action whose tool call or result they hold, else the main run of their session.

Ids are stable: the trace id is the first 16 bytes of SHA-256 of `quarry-otel/trace` and the root
session id, a span id the first 8 bytes of SHA-256 of `quarry-otel/span` and the object's ref, so
exporting the same sessions twice gives the same ids.

Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
(`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `gen_ai.request.model`,
`gen_ai.response.model`, `gen_ai.usage.*`, `gen_ai.conversation.id`, `gen_ai.provider.name`), else
`quarry.*`.

Redaction rule (the default leaves out three classes of content; each has its opt-in):

- outputs (`--include-outputs`): what tools returned: an action's output, the text of tool_result
  blocks. Left out, a span or record says `quarry.output.present` and `quarry.output.length`.
- text (`--include-text`): the archive's content: message text (other than tool results), tool call
  arguments and commands, observed-event descriptions, context-snapshot previews, session titles.
  Left out, a record keeps `quarry.text.length` (characters) and its ref; its body is empty.
- paths (`--include-paths`): absolute local paths: the session's cwd and source file, a snapshot's
  cwd, an action's path when it is absolute. Left out, a path under the session's cwd is given
  relative to it and any other absolute path is dropped; in text and outputs that are included, the
  cwd prefix is cut (`/home/me/app/db/pool.py` -> `db/pool.py`, the cwd itself -> `.`) and any other
  absolute path of two or more parts becomes `<path>`.

Whatever was left out of a span, record or resource is named in its `quarry.redacted` attribute
(`["output"]`, `["path", "text"]`, …), only when there was something to leave out.

The document (`OtelProjection.document`) is `{"resourceSpans": [...], "resourceLogs": [...]}`: the
standard OTLP/JSON encodings of ExportTraceServiceRequest and ExportLogsServiceRequest side by side
(hex ids, times as strings of Unix nanoseconds, enums as numbers). `push` sends each half to an
OTLP/HTTP collector (`<endpoint>/v1/traces`, `<endpoint>/v1/logs`).

The walk (`collect`, `export_otel`) pages through every session the query selects (Search with its
cursor) and reads their runs, actions, messages, observed events, context snapshots and delegations
through QueryUnits (`<unit> where session.id:(…)`, paged by offset), requiring every partition to
answer (PARTITION_UNAVAILABLE rather than a silently partial export).
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2, units_pb2

FORMAT = "otlp-json"
SCOPE = common_pb2.InstrumentationScope(name="quarry.otel_projection", version="1")

# Agent (service.name) and provider (gen_ai.provider.name) of each origin.
AGENTS = {
    "claude-code-session": "claude-code",
    "codex-session": "codex",
    "chatgpt-export": "chatgpt",
    "gemini-cli-session": "gemini-cli",
    "claude-ai-export": "claude-ai",
    "cursor-session": "cursor",
    "copilot-chat-export": "copilot-chat",
    "cline-task": "cline",
    "roo-code-task": "roo-code",
    "opencode-session": "opencode",
    "crush-session": "crush",
    "aider-session": "aider",
    "goose-session": "goose",
}
# The agents that run several providers' models (Cursor, Cline, OpenCode, …) have no provider of their own.
PROVIDERS = {
    "claude-code-session": "anthropic",
    "codex-session": "openai",
    "chatgpt-export": "openai",
    "gemini-cli-session": "gcp.gemini",
    "claude-ai-export": "anthropic",
}

# Log severities (OTLP SeverityNumber).
INFO, WARN, ERROR = 9, 13, 17

_NS_PER_MS = 1_000_000
_OUTPUT, _TEXT, _PATH = "output", "text", "path"


@dataclass(frozen=True)
class ExportOptions:
    """What to include beyond the default projection (see the module's redaction rule)."""

    include_outputs: bool = False
    include_paths: bool = False
    include_text: bool = False


@dataclass
class SessionRows:
    """One session's summary and unit rows: what its part of the projection is made from."""

    session: units_pb2.Session
    runs: list[units_pb2.Run] = field(default_factory=list)
    actions: list[units_pb2.Action] = field(default_factory=list)
    messages: list[units_pb2.Message] = field(default_factory=list)
    events: list[units_pb2.ObservedEvent] = field(default_factory=list)
    snapshots: list[units_pb2.ContextSnapshot] = field(default_factory=list)
    delegations: list[units_pb2.Delegation] = field(default_factory=list)
    # The session id of the lineage root ("": the session is its own root): it names the trace.
    trace_root: str = ""
    # `run:<id>` of the parent's subagent run that started this session ("": none known).
    parent_run_ref: str = ""


@dataclass
class OtelProjection:
    traces: trace_service_pb2.ExportTraceServiceRequest
    logs: logs_service_pb2.ExportLogsServiceRequest
    sessions: int = 0
    format: str = FORMAT

    @property
    def span_count(self) -> int:
        return sum(len(s.spans) for r in self.traces.resource_spans for s in r.scope_spans)

    @property
    def log_record_count(self) -> int:
        return sum(len(s.log_records) for r in self.logs.resource_logs for s in r.scope_logs)

    def document(self) -> dict[str, Any]:
        """`{"resourceSpans": [...], "resourceLogs": [...]}` in OTLP/JSON."""
        return {
            "resourceSpans": otlp_json(self.traces).get("resourceSpans", []),
            "resourceLogs": otlp_json(self.logs).get("resourceLogs", []),
        }


# ---- ids ---------------------------------------------------------------------------------------------


def trace_id(root_session_id: str) -> bytes:
    """The trace of a session family: 16 bytes of SHA-256 of its lineage root's session id."""
    return _digest(b"quarry-otel/trace\0", root_session_id, 16)


def span_id(ref: str) -> bytes:
    """The span of an archive object: 8 bytes of SHA-256 of its public ref (`run:<id>`, `action:<id>`)."""
    return _digest(b"quarry-otel/span\0", ref, 8)


def _digest(domain: bytes, text: str, size: int) -> bytes:
    raw = hashlib.sha256(domain + text.encode()).digest()[:size]
    return raw if any(raw) else raw[:-1] + b"\x01"  # an all-zero id is invalid in OTLP


def _ms(ms: int) -> int:
    return max(ms, 0) * _NS_PER_MS


# ---- paths -------------------------------------------------------------------------------------------

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_STOP = r"\s'\"`<>|;,()\[\]{}"
# An absolute POSIX path of two or more parts (`/etc/hosts`, not `/review` or `and/or`), a home path,
# or a Windows drive path.
_ABSOLUTE_IN_TEXT = re.compile(
    rf"(?<![\w.:/~-])(?:~(?:/[^{_STOP}/]+)+|(?:/[^{_STOP}/:]+){{2,}}/?|[A-Za-z]:\\[^{_STOP}]+)"
)


def is_absolute(path: str) -> bool:
    """A local absolute path: POSIX, home-relative (`~/…`) or Windows."""
    return path.startswith(("/", "~")) or _WINDOWS_ABSOLUTE.match(path) is not None


def relative_to(path: str, root: str) -> str | None:
    """`path` relative to `root` (`.` for the root itself), or None when it does not lie under it."""
    if not root or not is_absolute(root):
        return None
    here = posixpath.normpath(path.replace("\\", "/"))
    base = posixpath.normpath(root.replace("\\", "/")).rstrip("/")
    if not base:
        return None
    if here == base:
        return "."
    return here[len(base) + 1 :] if here.startswith(base + "/") else None


def export_path(path: str, root: str, options: ExportOptions) -> tuple[str, bool]:
    """The path as exported, and whether something was redacted: relative paths as they are; an
    absolute one as is with --include-paths, else relative to `root` when under it, else ""."""
    if not path or options.include_paths or not is_absolute(path):
        return path, False
    relative = relative_to(path, root)
    return (relative or "", True)


def scrub_paths(text: str, root: str) -> tuple[str, bool]:
    """`text` without absolute local paths: the `root` prefix cut (the root itself as `.`), any other
    absolute path replaced by `<path>`; and whether anything changed."""
    out = text
    if root and is_absolute(root) and len(root.rstrip("/\\")) > 1:
        base = re.escape(root.rstrip("/\\"))
        pattern = base + r"(?:[/\\]|(?=[" + _STOP + r":]|\.(?:\s|$)|$))"
        out = re.sub(pattern, lambda m: "" if m.group(0)[-1:] in "/\\" else ".", out)
    out = _ABSOLUTE_IN_TEXT.sub("<path>", out)
    return out, out != text


class _Redactor:
    """Applies the options to one record's content, remembering what it left out."""

    def __init__(self, options: ExportOptions, root: str) -> None:
        self.options = options
        self.root = root
        self.redacted: set[str] = set()

    def text(self, value: str) -> str | None:
        """Archive text: None unless --include-text; path-scrubbed unless --include-paths."""
        return self._content(value, self.options.include_text, _TEXT)

    def output(self, value: str) -> str | None:
        """A tool's output: None unless --include-outputs; path-scrubbed unless --include-paths."""
        return self._content(value, self.options.include_outputs, _OUTPUT)

    def _content(self, value: str, included: bool, kind: str) -> str | None:
        if not value:
            return None
        if not included:
            self.redacted.add(kind)
            return None
        return self._paths(value)

    def path(self, value: str) -> str | None:
        exported, redacted = export_path(value, self.root, self.options)
        if redacted:
            self.redacted.add(_PATH)
        return exported or None

    def name(self, value: str) -> str:
        """A short name or ref that may hold a path (an object ref, a command name)."""
        return self._paths(value) if value else value

    def _paths(self, value: str) -> str:
        if self.options.include_paths:
            return value
        scrubbed, changed = scrub_paths(value, self.root)
        if changed:
            self.redacted.add(_PATH)
        return scrubbed


# ---- attributes --------------------------------------------------------------------------------------


def _any(value: object) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=[_any(v) for v in value]))
    return common_pb2.AnyValue(string_value=str(value))


class _Attributes:
    """Attributes in insertion order; None, "" and [] are left out (zero numbers and False are kept only
    when `keep_zero`)."""

    def __init__(self) -> None:
        self.items: list[common_pb2.KeyValue] = []

    def add(self, key: str, value: object, keep_zero: bool = False) -> _Attributes:
        if value is None or value == "" or value == [] or value == ():
            return self
        if not keep_zero and not isinstance(value, str) and value in (0, False):
            return self
        self.items.append(common_pb2.KeyValue(key=key, value=_any(value)))
        return self

    def redacted(self, redactor: _Redactor) -> _Attributes:
        return self.add("quarry.redacted", sorted(redactor.redacted))

    @classmethod
    def of(cls, ref: str, session_id: str) -> _Attributes:
        """The attributes every span and record of an archive object starts with: its ref and session."""
        return (
            cls().add("quarry.ref", ref).add("quarry.session.id", session_id).add("gen_ai.conversation.id", session_id)
        )


# ---- the projection ----------------------------------------------------------------------------------


def project(sessions: Iterable[SessionRows], options: ExportOptions | None = None) -> OtelProjection:
    """The OTLP traces and logs of `sessions` (pure: the same rows give the same messages)."""
    options = options or ExportOptions()
    traces = trace_service_pb2.ExportTraceServiceRequest()
    logs = logs_service_pb2.ExportLogsServiceRequest()
    count = 0
    for rows in sessions:
        count += 1
        resource = session_resource(rows, options)
        spans, records = _SessionProjection(rows, options).build()
        if spans:
            traces.resource_spans.add(resource=resource, scope_spans=[trace_pb2.ScopeSpans(scope=SCOPE, spans=spans)])
        if records:
            logs.resource_logs.add(resource=resource, scope_logs=[logs_pb2.ScopeLogs(scope=SCOPE, log_records=records)])
    return OtelProjection(traces=traces, logs=logs, sessions=count)


def session_resource(rows: SessionRows, options: ExportOptions) -> resource_pb2.Resource:
    s = rows.session
    redactor = _Redactor(options, s.cwd)
    attrs = _Attributes()
    attrs.add("service.name", AGENTS.get(s.origin, s.origin or "unknown"))
    attrs.add("gen_ai.provider.name", PROVIDERS.get(s.origin))
    attrs.add("quarry.ref", f"session:{s.id}")
    attrs.add("quarry.session.id", s.id)
    attrs.add("gen_ai.conversation.id", s.id)
    attrs.add("quarry.origin", s.origin)
    attrs.add("quarry.session.native_id", s.native_id)
    attrs.add("quarry.repo", s.repo)
    attrs.add("vcs.ref.head.name", s.branch)
    attrs.add("gen_ai.agent.name", s.agent)
    attrs.add("gen_ai.request.model", s.model)
    attrs.add("quarry.session.parent_id", s.parent_session_id)
    attrs.add("quarry.session.root_id", rows.trace_root or s.id)
    attrs.add("quarry.session.title", redactor.text(s.title))
    attrs.add("quarry.session.cwd", s.cwd if options.include_paths else None)
    attrs.add("quarry.session.source_path", redactor.path(s.source_path))
    if s.cwd and not options.include_paths:
        redactor.redacted.add(_PATH)
    attrs.add("quarry.session.created_ms", s.created_ms)
    attrs.add("quarry.session.duration_ms", s.duration_ms)
    attrs.redacted(redactor)
    return resource_pb2.Resource(attributes=attrs.items)


class _SessionProjection:
    """The spans and log records of one session."""

    def __init__(self, rows: SessionRows, options: ExportOptions) -> None:
        self.rows = rows
        self.options = options
        s = rows.session
        self.trace = trace_id(rows.trace_root or s.id)
        self.root = s.cwd
        # the main run of each session id these rows belong to (subagent runs belong to the parent)
        self.main_run: dict[str, units_pb2.Run] = {r.session_id: r for r in rows.runs if r.role == "main"}
        self.actions_by_block = {a.block_id: a for a in rows.actions if a.block_id}
        # a tool_use id -> the action holding it; a result block id -> that action; time of results
        self.action_by_use: dict[str, units_pb2.Action] = {}
        self.result_time: dict[str, int] = {}
        self.action_by_result_block: dict[str, units_pb2.Action] = {}
        use_ids: dict[str, str] = {}  # tool_use block id -> tool_use id
        for message in rows.messages:
            for block in message.blocks:
                if block.type == "tool_use" and block.id in self.actions_by_block and block.tool_use_id:
                    self.action_by_use[block.tool_use_id] = self.actions_by_block[block.id]
                    use_ids[block.id] = block.tool_use_id
        for message in rows.messages:
            for block in message.blocks:
                action = self.action_by_use.get(block.tool_use_id) if block.type == "tool_result" else None
                if action is not None and action.id not in self.result_time:
                    self.result_time[action.id] = message.time_ms
                    self.action_by_result_block[block.id] = action
        self.tool_use_id = {a.id: use_ids.get(a.block_id, "") for a in rows.actions}
        self.delegations = {d.id: d for d in rows.delegations}

    def build(self) -> tuple[list[trace_pb2.Span], list[logs_pb2.LogRecord]]:
        spans = [self.run_span(r) for r in self.rows.runs] + [self.action_span(a) for a in self.rows.actions]
        records = (
            [self.message_record(m) for m in self.rows.messages]
            + [self.event_record(e) for e in self.rows.events]
            + [self.snapshot_record(c) for c in self.rows.snapshots]
        )
        return spans, records

    # -- spans

    def main_span(self, session_id: str) -> bytes:
        run = self.main_run.get(session_id)
        return span_id(f"run:{run.id}") if run is not None else b""

    def run_parent(self, run: units_pb2.Run) -> bytes:
        if run.role == "main":
            return span_id(self.rows.parent_run_ref) if self.rows.parent_run_ref else b""
        delegation = self.delegations.get(run.delegation_id)
        if delegation is not None and delegation.tool_use_ref.startswith("block:"):
            action = self.actions_by_block.get(delegation.tool_use_ref.removeprefix("block:"))
            if action is not None:
                return span_id(f"action:{action.id}")
        return self.main_span(run.session_id)

    def run_span(self, run: units_pb2.Run) -> trace_pb2.Span:
        s = self.rows.session
        agent = run.agent or (s.agent if run.session_id == s.id else "") or AGENTS.get(s.origin, "agent")
        start = run.started_ms or s.created_ms
        end = run.ended_ms or (start + run.duration_ms if run.duration_ms else start)
        ref = f"run:{run.id}"
        attrs = _Attributes.of(ref, run.session_id)
        attrs.add("gen_ai.operation.name", "invoke_agent")
        attrs.add("gen_ai.agent.name", agent)
        attrs.add("gen_ai.request.model", run.model)
        attrs.add("quarry.run.role", run.role)
        attrs.add("quarry.run.status", run.status)
        attrs.add("quarry.run.tool_uses", run.tool_uses, keep_zero=True)
        attrs.add("quarry.run.total_tokens", run.total_tokens)
        attrs.add("quarry.run.duration_ms", run.duration_ms)
        attrs.add("quarry.delegation.ref", f"delegation:{run.delegation_id}" if run.delegation_id else "")
        attrs.add("quarry.child_session.id", run.child_session_id)
        attrs.add("quarry.child_session.ref", f"session:{run.child_session_id}" if run.child_session_id else "")
        failed = run.status == "failed"
        return trace_pb2.Span(
            trace_id=self.trace,
            span_id=span_id(ref),
            parent_span_id=self.run_parent(run),
            name=f"invoke_agent {agent}",
            kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=_ms(start),
            end_time_unix_nano=_ms(max(end, start)),
            attributes=attrs.items,
            status=_status(failed, f"run {run.status}"),
        )

    def action_span(self, action: units_pb2.Action) -> trace_pb2.Span:
        redactor = _Redactor(self.options, self.root)
        start = action.time_ms or self.rows.session.created_ms
        end = self.result_time.get(action.id) or start
        ref = f"action:{action.id}"
        attrs = _Attributes.of(ref, action.session_id)
        attrs.add("gen_ai.operation.name", "execute_tool")
        attrs.add("gen_ai.tool.name", action.tool)
        attrs.add("gen_ai.tool.call.id", self.tool_use_id.get(action.id))
        attrs.add("quarry.action.category", action.category)
        attrs.add("quarry.action.seq", action.seq, keep_zero=True)
        attrs.add("quarry.action.failed", action.failed, keep_zero=True)
        attrs.add("quarry.action.path", redactor.path(action.path))
        attrs.add("quarry.message.ref", f"message:{action.message_id}" if action.message_id else "")
        attrs.add("quarry.block.ref", f"block:{action.block_id}" if action.block_id else "")
        attrs.add("quarry.command.length", len(action.command))
        attrs.add("quarry.action.command", redactor.text(action.command))
        attrs.add("quarry.input.length", len(action.input_json))
        attrs.add("gen_ai.tool.call.arguments", redactor.text(action.input_json))
        attrs.add("quarry.output.present", bool(action.output), keep_zero=True)
        attrs.add("quarry.output.length", len(action.output), keep_zero=True)
        attrs.add("gen_ai.tool.call.result", redactor.output(action.output))
        if action.failed:
            attrs.add("error.type", "tool_error")
        attrs.redacted(redactor)
        return trace_pb2.Span(
            trace_id=self.trace,
            span_id=span_id(ref),
            parent_span_id=self.main_span(action.session_id),
            name=f"execute_tool {action.tool or action.category or 'tool'}",
            kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=_ms(start),
            end_time_unix_nano=_ms(max(end, start)),
            attributes=attrs.items,
            status=_status(action.failed, "tool call failed"),
        )

    # -- log records

    def _record(
        self,
        event_name: str,
        time_ms: int,
        span: bytes,
        attrs: _Attributes,
        body: str | None,
        severity: int = INFO,
    ) -> logs_pb2.LogRecord:
        return logs_pb2.LogRecord(
            time_unix_nano=_ms(time_ms),
            severity_number=severity,  # type: ignore[arg-type]
            severity_text={INFO: "INFO", WARN: "WARN", ERROR: "ERROR"}[severity],
            body=common_pb2.AnyValue(string_value=body) if body else None,
            attributes=attrs.items,
            trace_id=self.trace,
            span_id=span,
            event_name=event_name,
        )

    def message_span(self, message: units_pb2.Message) -> bytes:
        for block in message.blocks:
            action = self.actions_by_block.get(block.id) or self.action_by_result_block.get(block.id)
            if action is not None:
                return span_id(f"action:{action.id}")
        return self.main_span(message.session_id)

    def message_record(self, m: units_pb2.Message) -> logs_pb2.LogRecord:
        redactor = _Redactor(self.options, self.root)
        texts = [b.text for b in m.blocks if b.type not in ("tool_result", "image") and b.text]
        outputs = [b for b in m.blocks if b.type == "tool_result"]
        parts: list[str] = []
        for block in m.blocks:
            if block.type == "image" or not block.text:
                continue
            kept = redactor.output(block.text) if block.type == "tool_result" else redactor.text(block.text)
            if kept:
                parts.append(kept)
        is_error = any(b.is_error for b in outputs)
        attrs = _Attributes.of(f"message:{m.id}", m.session_id)
        attrs.add("quarry.message.role", m.role)
        attrs.add("quarry.message.seq", m.seq, keep_zero=True)
        attrs.add("quarry.message.surface", m.surface)
        attrs.add("quarry.message.authored", m.authored, keep_zero=True)
        attrs.add("quarry.message.words", m.words)
        attrs.add("quarry.message.block_types", [b.type for b in m.blocks])
        attrs.add("gen_ai.response.model" if m.role == "assistant" else "gen_ai.request.model", m.model)
        attrs.add("gen_ai.usage.input_tokens", m.input_tokens)
        attrs.add("gen_ai.usage.output_tokens", m.output_tokens)
        attrs.add("gen_ai.usage.cache_read.input_tokens", m.cache_read_tokens)
        attrs.add("gen_ai.usage.cache_creation.input_tokens", m.cache_write_tokens)
        attrs.add("quarry.message.duration_ms", m.duration_ms)
        attrs.add("quarry.text.length", sum(len(t) for t in texts), keep_zero=True)
        if outputs:
            length = sum(len(b.text) for b in outputs)
            attrs.add("quarry.output.present", length > 0, keep_zero=True)
            attrs.add("quarry.output.length", length, keep_zero=True)
            attrs.add("quarry.is_error", is_error, keep_zero=True)
        attrs.redacted(redactor)
        role = m.role if m.role in ("user", "assistant", "system", "tool") else "unknown"
        return self._record(
            f"gen_ai.{role}.message",
            m.time_ms,
            self.message_span(m),
            attrs,
            "\n\n".join(parts),
            WARN if is_error else INFO,
        )

    def event_span(self, event: units_pb2.ObservedEvent) -> bytes:
        if event.source_ref.startswith("block:"):
            block_id = event.source_ref.removeprefix("block:")
            action = self.action_by_result_block.get(block_id) or self.actions_by_block.get(block_id)
            if action is not None:
                return span_id(f"action:{action.id}")
        return self.main_span(event.session_id)

    def event_record(self, e: units_pb2.ObservedEvent) -> logs_pb2.LogRecord:
        redactor = _Redactor(self.options, self.root)
        attrs = _Attributes.of(f"observed-event:{e.id}", e.session_id)
        attrs.add("quarry.event.kind", e.kind)
        attrs.add("quarry.event.seq", e.seq, keep_zero=True)
        attrs.add("quarry.event.delivery_state", e.delivery_state)
        attrs.add("quarry.source.ref", e.source_ref)
        attrs.add("quarry.object.ref", redactor.name(e.object_ref))
        attrs.add("quarry.text.length", len(e.text), keep_zero=True)
        body = redactor.text(e.text)
        attrs.redacted(redactor)
        severity = ERROR if e.delivery_state == "failed" else INFO
        return self._record("quarry.observed_event", e.time_ms, self.event_span(e), attrs, body, severity)

    def snapshot_record(self, c: units_pb2.ContextSnapshot) -> logs_pb2.LogRecord:
        redactor = _Redactor(self.options, self.root)
        attrs = _Attributes.of(f"context-snapshot:{c.id}", c.session_id)
        attrs.add("quarry.snapshot.boundary", c.boundary)
        attrs.add("quarry.snapshot.seq", c.seq, keep_zero=True)
        attrs.add("quarry.snapshot.trigger", c.trigger)
        attrs.add("quarry.snapshot.tokens_before", c.tokens_before)
        attrs.add("quarry.message.ref", c.message_ref)
        attrs.add("vcs.ref.head.name", c.branch)
        attrs.add("gen_ai.request.model", c.model)
        if c.cwd and not self.options.include_paths:
            redactor.redacted.add(_PATH)
        attrs.add("quarry.snapshot.cwd", c.cwd if self.options.include_paths else None)
        attrs.add("quarry.text.length", len(c.preview), keep_zero=True)
        body = redactor.text(c.preview)
        attrs.redacted(redactor)
        return self._record("quarry.context_snapshot", c.time_ms, self.main_span(c.session_id), attrs, body)


def _status(failed: bool, message: str) -> trace_pb2.Status:
    if failed:
        return trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message=message)
    return trace_pb2.Status()


# ---- OTLP/JSON -----------------------------------------------------------------------------------------

_ID_KEYS = frozenset(("traceId", "spanId", "parentSpanId"))


def otlp_json(message: Any) -> dict[str, Any]:
    """A protobuf OTLP message in the OTLP/JSON encoding: proto3 JSON with camelCase names and enums
    as numbers, but trace and span ids as hex (not base64)."""
    return _hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (_b64_to_hex(v) if k in _ID_KEYS else _hex_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


# ---- the walk over the client -------------------------------------------------------------------------

SEARCH_PAGE = 100
UNIT_PAGE = 1000  # the query node's largest page
_BARE_VALUE = re.compile(r'[^\s()"|]+')
_MAX_EXPRESSION_CHARS = 6000
_UNITS = (
    ("runs", "run", "runs"),
    ("actions", "action", "actions"),
    ("messages", "message", "messages"),
    ("observed-events", "observed_event", "events"),
    ("context-snapshots", "context_snapshot", "snapshots"),
    ("delegations", "delegation", "delegations"),
)


def _quoted(value: str) -> str:
    if _BARE_VALUE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def session_scope(unit: str, session_ids: Sequence[str]) -> str:
    """`<unit> where session.id:(a|b|…)`: the unit rows of these sessions."""
    return f"{unit} where session.id:({'|'.join(_quoted(i) for i in session_ids)})"


def _batches(session_ids: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for sid in session_ids:
        cost = len(_quoted(sid)) + 1
        if batch and size + cost > _MAX_EXPRESSION_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(sid)
        size += cost
    if batch:
        yield batch


def unit_rows(client: Any, expression: str, page: int = UNIT_PAGE) -> Iterator[query_pb2.QueryUnitRow]:
    """Every row of a unit query, page by page (limit / offset, in the rows' (time, id) order)."""
    offset = 0
    while True:
        envelope = client.query_units(expression, limit=page, offset=offset, require_complete=True)
        yield from envelope.rows
        if len(envelope.rows) < page:
            return
        offset += len(envelope.rows)


def selected_sessions(client: Any, query: str, page: int = SEARCH_PAGE) -> Iterator[units_pb2.Session]:
    """Every session the query selects, in the search's order, following its cursor to the end."""
    cursor = ""
    seen: set[str] = set()
    while True:
        envelope = client.search(query, limit=page, cursor=cursor, require_complete=True)
        for hit in envelope.hits:
            if hit.session.id not in seen:
                seen.add(hit.session.id)
                yield hit.session
        cursor = envelope.next_cursor
        if not cursor or not envelope.hits:
            return


def check_session_query(query: str) -> None:
    """A session query, or a typed error: a malformed one fails as the query node would (with its
    position), a unit query is UNSUPPORTED_FORM."""
    from quarry.dsl import compile_query

    if compile_query(query).kind != "sessions":
        raise QuarryError(
            errors_pb2.UNSUPPORTED_FORM,
            "export otel takes a session query (`sessions where …` or compact: `repo:ledger`), not a unit query",
            parameter="query",
        )


def collect(client: Any, query: str) -> list[SessionRows]:
    """The rows of every session `query` selects, with each one's trace root and parent run."""
    check_session_query(query)
    sessions = list(selected_sessions(client, query))
    bundles = [SessionRows(session=s) for s in sessions]
    by_id = {b.session.id: b for b in bundles}
    for batch in _batches(list(by_id)):
        for unit, oneof, attribute in _UNITS:
            for row in unit_rows(client, session_scope(unit, batch)):
                bundle = by_id.get(row.session_id)
                if bundle is not None and row.WhichOneof("row") == oneof:
                    getattr(bundle, attribute).append(getattr(row, oneof))
    _link_families(client, bundles, by_id)
    return bundles


def _link_families(client: Any, bundles: list[SessionRows], by_id: dict[str, SessionRows]) -> None:
    """Trace roots (from the lineage of every child session) and the parent's subagent run of each."""
    roots: dict[str, str] = {}
    parent_runs: dict[str, list[units_pb2.Run]] = {b.session.id: b.runs for b in bundles}
    for bundle in bundles:
        s = bundle.session
        if not s.parent_session_id:
            continue
        if s.id not in roots:
            lineage = client.sessions.lineage(s.id)
            root = lineage.root.header.id if lineage.HasField("root") else lineage.unresolved_parent_id
            roots[s.id] = root or s.id
            for ancestor in lineage.ancestors:
                roots.setdefault(ancestor.header.id, roots[s.id])
        bundle.trace_root = roots[s.id] if roots[s.id] != s.id else ""
        parent = s.parent_session_id
        if parent not in parent_runs:
            parent_runs[parent] = [
                row.run for row in unit_rows(client, session_scope("runs", [parent])) if row.WhichOneof("row") == "run"
            ]
        run = next((r for r in parent_runs[parent] if r.role == "subagent" and r.child_session_id == s.id), None)
        bundle.parent_run_ref = f"run:{run.id}" if run is not None else ""


def export_otel(client: Any, query: str, options: ExportOptions | None = None) -> OtelProjection:
    """The projection of every session `query` selects."""
    return project(collect(client, query), options)


# ---- OTLP/HTTP push ------------------------------------------------------------------------------------

MAX_BODY_BYTES = 4 * 1024 * 1024  # a collector's common default request limit
PUSH_TIMEOUT_S = 30.0


class OtlpPushError(Exception):
    """An OTLP/HTTP collector refused a request, or could not be reached."""

    def __init__(self, url: str, status: int | None, detail: str) -> None:
        self.url, self.status, self.detail = url, status, detail
        what = f"answered HTTP {status}" if status is not None else "could not be reached"
        super().__init__(f"the OTLP collector at {url} {what}: {detail}".rstrip(": "))

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "status": self.status, "message": str(self)}


@dataclass
class PushReport:
    requests: int = 0
    rejected_spans: int = 0
    rejected_log_records: int = 0
    messages: list[str] = field(default_factory=list)


def endpoint_urls(endpoint: str) -> tuple[str, str]:
    """The traces and logs URLs of an OTLP/HTTP endpoint (`http://host:4318` -> `…/v1/traces`, `…/v1/logs`)."""
    if not re.match(r"^https?://[^/\s]+", endpoint):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"--endpoint takes an http(s) URL such as http://localhost:4318, got {endpoint!r}",
            parameter="--endpoint",
        )
    base = endpoint.rstrip("/")
    return f"{base}/v1/traces", f"{base}/v1/logs"


def push(
    projection: OtelProjection,
    endpoint: str,
    timeout: float = PUSH_TIMEOUT_S,
    post: Callable[[str, bytes, float], bytes] | None = None,
) -> PushReport:
    """POST the traces to `<endpoint>/v1/traces` and the logs to `<endpoint>/v1/logs` as OTLP/JSON, in
    requests of whole sessions up to MAX_BODY_BYTES each; raises OtlpPushError on a failed request."""
    traces_url, logs_url = endpoint_urls(endpoint)
    send = post or _post
    report = PushReport()
    document = projection.document()
    for url, key, rejected in (
        (traces_url, "resourceSpans", "rejectedSpans"),
        (logs_url, "resourceLogs", "rejectedLogRecords"),
    ):
        for body in _bodies(key, document[key]):
            answer = send(url, body, timeout)
            report.requests += 1
            partial = _partial_success(answer)
            count = int(partial.get(rejected, 0) or 0)
            if key == "resourceSpans":
                report.rejected_spans += count
            else:
                report.rejected_log_records += count
            if partial.get("errorMessage"):
                report.messages.append(f"{url}: {partial['errorMessage']}")
    return report


def _bodies(key: str, resources: list[dict[str, Any]]) -> Iterator[bytes]:
    """`{key: [...]}` request bodies holding whole resources, each under MAX_BODY_BYTES when it can be."""
    batch: list[bytes] = []
    size = 0
    for resource in resources:
        encoded = json.dumps(resource, separators=(",", ":")).encode()
        if batch and size + len(encoded) + 1 > MAX_BODY_BYTES:
            yield _body(key, batch)
            batch, size = [], 0
        batch.append(encoded)
        size += len(encoded) + 1
    if batch:
        yield _body(key, batch)


def _body(key: str, encoded: list[bytes]) -> bytes:
    return b'{"' + key.encode() + b'":[' + b",".join(encoded) + b"]}"


def _partial_success(answer: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(answer) if answer.strip() else {}
    except ValueError:
        return {}
    partial = decoded.get("partialSuccess") if isinstance(decoded, dict) else None
    return partial if isinstance(partial, dict) else {}


def _post(url: str, body: bytes, timeout: float) -> bytes:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read()[:500].decode(errors="replace").strip() or str(error.reason)
        raise OtlpPushError(url, error.code, detail) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise OtlpPushError(url, None, str(reason)) from None
