"""The projection's log records, each with its trace and the span it belongs under (SessionLinks):
messages (`gen_ai.<role>.message`), observed events (`quarry.observed_event`) and context snapshots
(`quarry.context_snapshot`)."""

from __future__ import annotations

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2

from quarry.cli.otel_export.attributes import Attributes
from quarry.cli.otel_export.ids import nanos
from quarry.cli.otel_export.links import SessionLinks
from quarry.cli.otel_export.redaction import PATH, Redactor
from quarry.v1 import units_pb2

# Log severities (OTLP SeverityNumber).
INFO, WARN, ERROR = 9, 13, 17


def _record(
    links: SessionLinks,
    event_name: str,
    time_ms: int,
    span: bytes,
    attrs: Attributes,
    body: str | None,
    severity: int = INFO,
) -> logs_pb2.LogRecord:
    return logs_pb2.LogRecord(
        time_unix_nano=nanos(time_ms),
        severity_number=severity,  # type: ignore[arg-type]
        severity_text={INFO: "INFO", WARN: "WARN", ERROR: "ERROR"}[severity],
        body=common_pb2.AnyValue(string_value=body) if body else None,
        attributes=attrs.items,
        trace_id=links.trace,
        span_id=span,
        event_name=event_name,
    )


def message_record(links: SessionLinks, m: units_pb2.Message) -> logs_pb2.LogRecord:
    redactor = Redactor(links.options, links.root)
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
    attrs = Attributes.of(f"message:{m.id}", m.session_id)
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
    return _record(
        links,
        f"gen_ai.{role}.message",
        m.time_ms,
        links.message_span(m),
        attrs,
        "\n\n".join(parts),
        WARN if is_error else INFO,
    )


def event_record(links: SessionLinks, e: units_pb2.ObservedEvent) -> logs_pb2.LogRecord:
    redactor = Redactor(links.options, links.root)
    attrs = Attributes.of(f"observed-event:{e.id}", e.session_id)
    attrs.add("quarry.event.kind", e.kind)
    attrs.add("quarry.event.seq", e.seq, keep_zero=True)
    attrs.add("quarry.event.delivery_state", e.delivery_state)
    attrs.add("quarry.source.ref", e.source_ref)
    attrs.add("quarry.object.ref", redactor.name(e.object_ref))
    attrs.add("quarry.text.length", len(e.text), keep_zero=True)
    body = redactor.text(e.text)
    attrs.redacted(redactor)
    severity = ERROR if e.delivery_state == "failed" else INFO
    return _record(links, "quarry.observed_event", e.time_ms, links.event_span(e), attrs, body, severity)


def snapshot_record(links: SessionLinks, c: units_pb2.ContextSnapshot) -> logs_pb2.LogRecord:
    redactor = Redactor(links.options, links.root)
    attrs = Attributes.of(f"context-snapshot:{c.id}", c.session_id)
    attrs.add("quarry.snapshot.boundary", c.boundary)
    attrs.add("quarry.snapshot.seq", c.seq, keep_zero=True)
    attrs.add("quarry.snapshot.trigger", c.trigger)
    attrs.add("quarry.snapshot.tokens_before", c.tokens_before)
    attrs.add("quarry.message.ref", c.message_ref)
    attrs.add("vcs.ref.head.name", c.branch)
    attrs.add("gen_ai.request.model", c.model)
    if c.cwd and not links.options.include_paths:
        redactor.redacted.add(PATH)
    attrs.add("quarry.snapshot.cwd", c.cwd if links.options.include_paths else None)
    attrs.add("quarry.text.length", len(c.preview), keep_zero=True)
    body = redactor.text(c.preview)
    attrs.redacted(redactor)
    return _record(links, "quarry.context_snapshot", c.time_ms, links.main_span(c.session_id), attrs, body)
