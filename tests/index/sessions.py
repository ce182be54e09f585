"""Small canonical sessions for lexical-partition tests: messages with text / tool blocks and actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from quarry.core import refs
from quarry.v1 import units_pb2

BASE_MS = 1_750_000_000_000


@dataclass
class Tool:
    """A tool call made by the message it belongs to, with its result in the next message."""

    name: str
    category: str
    summary: str = ""
    command: str = ""
    path: str = ""
    output: str = ""
    input_json: str = "{}"
    failed: bool = False


@dataclass
class Msg:
    role: str
    text: str = ""
    code: str = ""
    thinking: str = ""
    tools: list[Tool] = field(default_factory=list)


def session(
    native_id: str,
    messages: list[Msg],
    *,
    origin: str = "claude-code-session",
    title: str = "",
    repo: str = "quarry",
    tags: tuple[str, ...] = (),
    start_ms: int = BASE_MS,
    content_hash: str = "",
) -> units_pb2.Session:
    """A session whose messages are one minute apart; each tool call adds a tool message with its result."""
    sid = f"{origin}:{native_id}"
    s = units_pb2.Session(
        id=sid, origin=origin, native_id=native_id, title=title, repo=repo, tags=list(tags), created_ms=start_ms
    )
    seq = 0
    action_seq = 0

    def new_message(role: str) -> units_pb2.Message:
        nonlocal seq
        m = s.messages.add(
            id=refs.message_id(sid, seq), session_id=sid, seq=seq, role=role, time_ms=start_ms + seq * 60_000
        )
        seq += 1
        return m

    def add_block(m: units_pb2.Message, **fields: object) -> units_pb2.Block:
        index = len(m.blocks)
        return m.blocks.add(id=refs.block_id(m.id, index), index=index, **fields)

    for spec in messages:
        m = new_message(spec.role)
        for kind, text in (("thinking", spec.thinking), ("text", spec.text), ("code", spec.code)):
            if text:
                add_block(m, type=kind, text=text)
        m.words = sum(len(b.text.split()) for b in m.blocks)
        for tool in spec.tools:
            use = add_block(
                m,
                type="tool_use",
                text=tool.summary or f"{tool.name}: {tool.command or tool.path}",
                tool_name=tool.name,
                tool_use_id=f"call-{action_seq}",
                tool_input_json=tool.input_json,
                path=tool.path,
            )
            result_message = new_message("tool")
            add_block(
                result_message,
                type="tool_result",
                text=tool.output,
                tool_name=tool.name,
                tool_use_id=f"call-{action_seq}",
                is_error=tool.failed,
            )
            s.actions.add(
                id=refs.action_id(sid, action_seq),
                session_id=sid,
                message_id=m.id,
                block_id=use.id,
                seq=action_seq,
                category=tool.category,
                tool=tool.name,
                command=tool.command,
                path=tool.path,
                output=tool.output,
                failed=tool.failed,
                input_json=tool.input_json,
                time_ms=m.time_ms,
            )
            action_seq += 1
    s.updated_ms = s.messages[-1].time_ms if s.messages else start_ms
    s.counts.messages = len(s.messages)
    s.counts.words = sum(m.words for m in s.messages)
    s.content_hash = content_hash
    return s
