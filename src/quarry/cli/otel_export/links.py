"""What one session's part of the projection is made from (SessionRows), and how its objects link up
(SessionLinks): which span each run, action, message, observed event and snapshot belongs under."""

from __future__ import annotations

from dataclasses import dataclass, field

from quarry.cli.otel_export.ids import span_id, trace_id
from quarry.cli.otel_export.redaction import ExportOptions
from quarry.v1 import units_pb2


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


class SessionLinks:
    """One session's rows indexed for the projection: its trace, each session's main run, the action
    holding each tool_use (by block and by tool_use id), the block and time of each action's result,
    and the delegations; and from them the span every object belongs under."""

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

    def message_span(self, message: units_pb2.Message) -> bytes:
        for block in message.blocks:
            action = self.actions_by_block.get(block.id) or self.action_by_result_block.get(block.id)
            if action is not None:
                return span_id(f"action:{action.id}")
        return self.main_span(message.session_id)

    def event_span(self, event: units_pb2.ObservedEvent) -> bytes:
        if event.source_ref.startswith("block:"):
            block_id = event.source_ref.removeprefix("block:")
            action = self.action_by_result_block.get(block_id) or self.actions_by_block.get(block_id)
            if action is not None:
                return span_id(f"action:{action.id}")
        return self.main_span(event.session_id)
