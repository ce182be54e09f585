"""Gemini CLI sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json`).

One JSON object per file (whatever its name says): {sessionId, projectHash, startTime,
lastUpdated, messages[]}; the session is `gemini-cli-session:<sessionId>`.

- message types: `user` -> user, `gemini` -> assistant, `info` / `error` / `warning` -> system
  (not authored); other types are counted in `skipped`. An `error` message (the CLI reports a
  failed model request this way) is also an api_error event.
- content is a string or a list of parts: text parts are the text, `inlineData` / `fileData` parts
  with an image MIME type are image blocks (referenced by MIME type, the data is not kept); other
  parts are counted in `skipped` as `gemini:part/<kind>`.
- a gemini message's blocks, in order: its `thoughts` (thinking: subject and description), its
  text, then for each `toolCalls[]` entry a tool_use and its tool_result (from
  `result[].functionResponse.response`, else `resultDisplay`). A call whose status is error or
  cancelled, whose response holds an error, or whose shell output ends with a nonzero
  "Exit Code: N" is failed.
- tokens: input_tokens is uncached input (input - cached), cache_read_tokens the cached part,
  output_tokens includes the thought tokens, as the other origins count reasoning as output.
- the session has no working directory in the file (only a hash of it), so cwd and repo stay empty.

Raw log events (docs/sessions.md#events): each `messages[]` element is an event (seq = its index); `user` and model
messages are surface nodes, `info` / `error` / `warning` messages (the CLI's own notices) are log-only.
A tool call and its result live inside one message, so no event cites another. A top-level `summary`
is the session's title (a header title: no event).
"""

from __future__ import annotations

import re
from typing import Any

from quarry.ingest.reader import issue
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
)
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "gemini"
ORIGIN = "gemini-cli-session"
ROLES = {
    "user": "user",
    "gemini": "assistant",
    "model": "assistant",
    "info": "system",
    "error": "system",
    "warning": "system",
}
SURFACE_TYPES = frozenset({"user", "gemini", "model"})
FAILED_STATUSES = frozenset({"error", "cancelled"})
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    if not isinstance(document, dict):
        result.issues.append(issue(path, 0, "invalid_record", "the session is not a JSON object"))
        return result
    native_id = as_str(document.get("sessionId"))
    if not native_id:
        result.issues.append(issue(path, 0, "invalid_record", "the session has no sessionId"))
        return result
    title = as_str(document.get("summary"))
    draft = DraftSession(
        origin=ORIGIN, native_id=native_id, source_path=path, title=title, header_title_kind="summary" if title else ""
    )
    draft.observe_time(to_ms(document.get("startTime")))
    draft.observe_time(to_ms(document.get("lastUpdated")))
    for index, message in enumerate(as_list(document.get("messages"))):
        kind = as_str(as_dict(message).get("type")) or "(untyped)"
        time_ms = to_ms(as_dict(message).get("timestamp"))
        draft.begin(DraftRecord(0, f"{FORMAT}:message/{kind}", message, time_ms=time_ms, node=kind in SURFACE_TYPES))
        try:
            _add_message(draft, message, result)
        except (TypeError, ValueError, AttributeError, KeyError) as error:
            result.issues.append(issue(path, 0, "invalid_record", f"message #{index} is unusable: {error}"))
    if draft.messages:
        result.sessions.append(draft)
    return result


def _add_message(draft: DraftSession, message: Any, result: SourceResult) -> None:
    message = as_dict(message)
    kind = as_str(message.get("type"))
    role = ROLES.get(kind)
    if role is None:
        result.skipped[f"{FORMAT}:message/{kind or '(untyped)'}"] += 1
        return
    draft_message = DraftMessage(
        role=role,
        authored=role in ("user", "assistant"),
        time_ms=to_ms(message.get("timestamp")),
        model=as_str(message.get("model")) if role == "assistant" else "",
    )
    tokens = message.get("tokens")
    if isinstance(tokens, dict):
        cached = as_count(tokens.get("cached"))
        draft_message.input_tokens = max(0, as_count(tokens.get("input")) - cached)
        draft_message.cache_read_tokens = cached
        draft_message.output_tokens = as_count(tokens.get("output")) + as_count(tokens.get("thoughts"))
    draft.add_message(draft_message)
    for thought in as_list(message.get("thoughts")):
        thought = as_dict(thought)
        text = "\n".join(part for part in (as_str(thought.get("subject")), as_str(thought.get("description"))) if part)
        draft.add_block(draft_message, DraftBlock("thinking", text=text))
    blocks = _content(message.get("content"), result)
    for block in blocks:
        draft.add_block(draft_message, block)
    if kind == "error":
        text = "\n".join(block.text for block in blocks if block.text)
        draft.record("api_error", draft_message.time_ms, text or "error", failed=True, message_seq=draft_message.seq)
    for call in as_list(message.get("toolCalls")):
        for block in _tool_call(as_dict(call)):
            draft.add_block(draft_message, block)


def _tool_call(call: dict[str, Any]) -> list[DraftBlock]:
    name = as_str(call.get("name"))
    call_id = as_str(call.get("id"))
    args = call.get("args")
    use = tool_use_block(name, call_id, args)
    output, error = _response_text(call.get("result"))
    if not output and not error:
        display = call.get("resultDisplay")
        output = display if isinstance(display, str) else ""
    match = _EXIT_CODE.search(output) if "Exit Code:" in output else None
    failed = as_str(call.get("status")) in FAILED_STATUSES or bool(error) or bool(match and int(match.group(1)))
    result = DraftBlock("tool_result", text=output or error, tool_name=name, tool_use_id=call_id, is_error=failed)
    return [use, result]


def _response_text(results: Any) -> tuple[str, str]:
    """(output, error) of the functionResponse parts of a tool call."""
    outputs: list[str] = []
    errors: list[str] = []
    for part in as_list(results):
        response = as_dict(as_dict(as_dict(part).get("functionResponse")).get("response"))
        output = response.get("output")
        if isinstance(output, str):
            outputs.append(output)
        elif output is not None:
            outputs.append(json_text(output))
        error = response.get("error")
        if isinstance(error, str) and error:
            errors.append(error)
        elif error:
            errors.append(json_text(error))
    return "\n".join(outputs), "\n".join(errors)


def _content(content: Any, result: SourceResult) -> list[DraftBlock]:
    """The blocks of a message's content (a string or a list of parts), in order; consecutive text
    parts are one text block."""
    if isinstance(content, str):
        return [DraftBlock("text", text=content)] if content else []
    blocks: list[DraftBlock] = []
    texts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        text = as_str(part.get("text"))
        if text:
            texts.append(text)
            continue
        data = as_dict(part.get("inlineData") or part.get("fileData"))
        mime_type = as_str(data.get("mimeType"))
        if mime_type.startswith("image/"):
            if texts:
                blocks.append(DraftBlock("text", text="\n".join(texts)))
                texts = []
            blocks.append(DraftBlock("image", media_type=mime_type))
        elif "text" not in part:
            result.skipped[f"{FORMAT}:part/{next(iter(part), '(empty)')}"] += 1
    if texts:
        blocks.append(DraftBlock("text", text="\n".join(texts)))
    return blocks
