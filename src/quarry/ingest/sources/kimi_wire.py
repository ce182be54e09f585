"""Kimi CLI's `wire.jsonl`: the times, token usage and interruptions its `context.jsonl` does not record.

The wire log is the UI's event stream of the same turns: {timestamp (epoch seconds), message{type,
payload}}. `TurnBegin` {user_input} opens a turn (the prompt as typed), `StepBegin` one model call,
whose `ContentPart`s (think | text) and `ToolCall`s are one assistant message of the context and whose
`StatusUpdate` {token_usage{input_other, output, input_cache_read, input_cache_creation}} is that
call's usage; `ToolResult` {tool_call_id} answers a call; `StepInterrupted` means the user stopped it.

`merge` matches the context's messages to it, each in order: an assistant message to the step that
made one of its tool calls, else to the step with the same text; a tool message to the result of its
call id; a user message to the next turn with the same prompt text. A message the wire does not show
(a wire log that starts mid-session) keeps no time, and nothing is guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quarry.ingest.reader import iter_jsonl, strip_bom
from quarry.ingest.sources import (
    DraftEvent,
    DraftMessage,
    DraftSession,
    SourceResult,
    as_count,
    as_dict,
    as_list,
    as_str,
    to_ms,
)

CONTEXT_FILE, WIRE_FILE = "context.jsonl", "wire.jsonl"
_WIRE_MAX_BYTES = 256 << 20


@dataclass(slots=True)
class Reply:
    """What the context says of one assistant message: its tool call ids and its text, to find its step."""

    message: DraftMessage
    call_ids: set[str] = field(default_factory=set)
    text: str = ""


@dataclass(slots=True)
class _Step:
    time_ms: int
    call_ids: set[str] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Turn:
    time_ms: int
    text: str
    interrupted_ms: int = 0


@dataclass(slots=True)
class Wire:
    turns: list[_Turn] = field(default_factory=list)
    steps: list[_Step] = field(default_factory=list)
    results: dict[str, int] = field(default_factory=dict)  # tool call id -> time of its result
    times: list[int] = field(default_factory=list)


def wire_beside(path: str) -> Path | None:
    """The `wire.jsonl` of the session whose main `context.jsonl` is `path` (a subagent's has none)."""
    if not path.endswith(CONTEXT_FILE):
        return None
    file = Path(path[: -len(CONTEXT_FILE)] + WIRE_FILE)
    return file if file.is_file() else None


def read_wire(file: Path, result: SourceResult) -> Wire:
    """The wire log's turns, steps and results; its unreadable lines are issues of that file."""
    wire = Wire()
    if file.stat().st_size > _WIRE_MAX_BYTES:
        raise ValueError(f"{file} is larger than {_WIRE_MAX_BYTES} bytes")
    for record in iter_jsonl(strip_bom(file.read_bytes()), str(file), result.issues):
        if isinstance(record.data, dict) and not record.malformed:
            _event(wire, record.data)
    return wire


def _event(wire: Wire, data: dict[str, Any]) -> None:
    message = as_dict(data.get("message"))
    kind, payload, time_ms = as_str(message.get("type")), as_dict(message.get("payload")), to_ms(data.get("timestamp"))
    wire.times.append(time_ms)
    step = wire.steps[-1] if wire.steps else None
    if kind == "TurnBegin":
        wire.turns.append(_Turn(time_ms, prompt_text(payload.get("user_input"))))
    elif kind == "StepBegin":
        wire.steps.append(_Step(time_ms))
    elif kind == "StepInterrupted" and wire.turns:
        wire.turns[-1].interrupted_ms = time_ms
    elif kind == "ToolResult":
        wire.results.setdefault(as_str(payload.get("tool_call_id")), time_ms)
    elif step is None:
        return
    elif kind == "ToolCall":
        step.call_ids.add(as_str(payload.get("id")))
    elif kind == "ContentPart" and payload.get("type") == "text":
        step.texts.append(as_str(payload.get("text")))
    elif kind == "StatusUpdate" and isinstance(payload.get("token_usage"), dict):
        step.usage = payload["token_usage"]


def prompt_text(content: Any) -> str:
    """The text of a prompt: a string, or the `text` of its parts."""
    if isinstance(content, str):
        return content
    texts = (as_str(as_dict(part).get("text")) for part in as_list(content))
    return "\n".join(text for text in texts if text)


@dataclass(slots=True)
class Seen:
    """The context's messages as the wire can find them (collected while the context is read)."""

    replies: list[Reply] = field(default_factory=list)
    prompts: list[tuple[DraftMessage, str]] = field(default_factory=list)  # authored user messages, text
    results: dict[str, DraftMessage] = field(default_factory=dict)  # tool call id -> its tool message


def merge(draft: DraftSession, wire: Wire, seen: Seen) -> None:
    """Give the context's messages the wire's times, token usage and interruptions (module docstring)."""
    for time_ms in wire.times:
        draft.observe_time(time_ms)
    _merge_replies(wire.steps, seen.replies)
    for call_id, message in seen.results.items():
        message.time_ms = wire.results.get(call_id, 0)
    _merge_turns(draft, wire.turns, seen.prompts)


def _merge_replies(steps: list[_Step], replies: list[Reply]) -> None:
    start = 0
    for reply in replies:
        found = next(
            (
                index
                for index in range(start, len(steps))
                if reply.call_ids & steps[index].call_ids
                or (not reply.call_ids and reply.text and "".join(steps[index].texts) == reply.text)
            ),
            None,
        )
        if found is None:
            continue
        start = found + 1
        step, message = steps[found], reply.message
        message.time_ms = step.time_ms
        message.input_tokens = as_count(step.usage.get("input_other"))
        message.output_tokens = as_count(step.usage.get("output"))
        message.cache_read_tokens = as_count(step.usage.get("input_cache_read"))
        message.cache_write_tokens = as_count(step.usage.get("input_cache_creation"))


def _merge_turns(draft: DraftSession, turns: list[_Turn], prompts: list[tuple[DraftMessage, str]]) -> None:
    users = [message for message, _ in prompts]
    start = 0
    for number, (message, prompt) in enumerate(prompts):
        text = " ".join(prompt.split())
        found = next((i for i in range(start, len(turns)) if " ".join(turns[i].text.split()) == text), None)
        if found is None:
            continue
        start = found + 1
        turn = turns[found]
        message.time_ms = turn.time_ms
        if turn.interrupted_ms:
            last = users[number + 1].seq - 1 if number + 1 < len(users) else len(draft.messages) - 1
            event = DraftEvent("turn_aborted", turn.interrupted_ms, "interrupted by the user", failed=True)
            event.after_seq = last
            draft.events.append(event)
