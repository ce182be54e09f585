"""The projection itself: the OTLP traces and logs of sessions (`project`), and its document in the
OTLP/JSON encoding."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from quarry.cli.otel_export.links import SessionLinks, SessionRows
from quarry.cli.otel_export.logs import event_record, message_record, snapshot_record
from quarry.cli.otel_export.redaction import ExportOptions
from quarry.cli.otel_export.resource import session_resource
from quarry.cli.otel_export.spans import action_span, run_span

FORMAT = "otlp-json"
SCOPE = common_pb2.InstrumentationScope(name="quarry.otel_projection", version="1")


@dataclass
class OtelProjection:
    """The projection of some sessions: the OTLP export requests of their traces and their logs."""

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


def project(sessions: Iterable[SessionRows], options: ExportOptions | None = None) -> OtelProjection:
    """The OTLP traces and logs of `sessions` (pure: the same rows give the same messages)."""
    options = options or ExportOptions()
    traces = trace_service_pb2.ExportTraceServiceRequest()
    logs = logs_service_pb2.ExportLogsServiceRequest()
    count = 0
    for rows in sessions:
        count += 1
        resource = session_resource(rows, options)
        spans, records = _session_signals(rows, options)
        if spans:
            traces.resource_spans.add(resource=resource, scope_spans=[trace_pb2.ScopeSpans(scope=SCOPE, spans=spans)])
        if records:
            logs.resource_logs.add(resource=resource, scope_logs=[logs_pb2.ScopeLogs(scope=SCOPE, log_records=records)])
    return OtelProjection(traces=traces, logs=logs, sessions=count)


def _session_signals(
    rows: SessionRows, options: ExportOptions
) -> tuple[list[trace_pb2.Span], list[logs_pb2.LogRecord]]:
    """The spans and log records of one session."""
    links = SessionLinks(rows, options)
    spans = [run_span(links, r) for r in rows.runs] + [action_span(links, a) for a in rows.actions]
    records = (
        [message_record(links, m) for m in rows.messages]
        + [event_record(links, e) for e in rows.events]
        + [snapshot_record(links, c) for c in rows.snapshots]
    )
    return spans, records


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
