"""The projection's spans: a run is `invoke_agent <agent>`, under its parent's span (SessionLinks); an
action (a tool call) is `execute_tool <tool>`, under its session's main run, ending when its result
arrived."""

from __future__ import annotations

from opentelemetry.proto.trace.v1 import trace_pb2

from quarry.cli.otel_export.attributes import Attributes
from quarry.cli.otel_export.ids import nanos, span_id
from quarry.cli.otel_export.links import SessionLinks
from quarry.cli.otel_export.redaction import Redactor
from quarry.cli.otel_export.resource import AGENTS
from quarry.v1 import units_pb2


def run_span(links: SessionLinks, run: units_pb2.Run) -> trace_pb2.Span:
    s = links.rows.session
    agent = run.agent or (s.agent if run.session_id == s.id else "") or AGENTS.get(s.origin, "agent")
    start = run.started_ms or s.created_ms
    end = run.ended_ms or (start + run.duration_ms if run.duration_ms else start)
    ref = f"run:{run.id}"
    attrs = Attributes.of(ref, run.session_id)
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
        trace_id=links.trace,
        span_id=span_id(ref),
        parent_span_id=links.run_parent(run),
        name=f"invoke_agent {agent}",
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=nanos(start),
        end_time_unix_nano=nanos(max(end, start)),
        attributes=attrs.items,
        status=_status(failed, f"run {run.status}"),
    )


def action_span(links: SessionLinks, action: units_pb2.Action) -> trace_pb2.Span:
    redactor = Redactor(links.options, links.root)
    start = action.time_ms or links.rows.session.created_ms
    end = links.result_time.get(action.id) or start
    ref = f"action:{action.id}"
    attrs = Attributes.of(ref, action.session_id)
    attrs.add("gen_ai.operation.name", "execute_tool")
    attrs.add("gen_ai.tool.name", action.tool)
    attrs.add("gen_ai.tool.call.id", links.tool_use_id.get(action.id))
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
        trace_id=links.trace,
        span_id=span_id(ref),
        parent_span_id=links.main_span(action.session_id),
        name=f"execute_tool {action.tool or action.category or 'tool'}",
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=nanos(start),
        end_time_unix_nano=nanos(max(end, start)),
        attributes=attrs.items,
        status=_status(action.failed, "tool call failed"),
    )


def _status(failed: bool, message: str) -> trace_pb2.Status:
    if failed:
        return trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message=message)
    return trace_pb2.Status()
