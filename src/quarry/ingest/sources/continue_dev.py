"""Continue sessions (`~/.continue/sessions/<sessionId>.json`, the IDE extensions and the `cn` CLI).

One JSON object per session: {sessionId, title, workspaceDirectory, history[], mode?, chatModelTitle?,
usage?}; the session is `continue-session:<sessionId>`.

- each `history[]` item holds a `message` {role: user | assistant | tool, content (a string or a list
  of parts), toolCalls?, toolCallId?, usage?} and what the IDE knew about it (`contextItems`,
  `promptLogs`, `toolCallStates`, `reasoning`).
- user -> an authored user message (text parts; `imageUrl` parts are images); assistant -> its
  `reasoning.text` (thinking), its content, then a tool_use per `toolCalls[]`; tool -> a tool message.
- a call's outcome is its `toolCallStates[]` entry: `errored` and `canceled` are failed. When no
  `tool` message answers a call (the CLI keeps outputs only there), its result is built from the
  state's `output[]`.
- tokens and cost: an assistant message's `usage` {prompt_tokens, completion_tokens, model,
  cost_cents}; the session's `usage` {promptTokens, completionTokens, totalCost} also counts
  requests no message carries (such as a title), and that remainder is put on the last reply, so the
  session's sums are Continue's own. The model is the usage's, else `chatModelTitle`, else the
  prompt log's `modelTitle`.
- there are no message times; `reasoning.startAt` / `endAt` are the only ones.
- `workspaceDirectory` is a `file://` URI (the extension) or a plain path (the CLI): the cwd, whose
  last component (Windows paths too) is the repo. A title the model began with `<think>` is no title.

Raw log events (docs/sessions.md#events): each history item is an event (in order), a surface node; a
tool message cites its call by id.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_cost,
    as_count,
    as_dict,
    as_list,
    as_str,
    json_or_none,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "continue"
ORIGIN = "continue-session"
ROLES = frozenset({"user", "assistant", "tool"})
FAILED_STATES = frozenset({"errored", "canceled"})


def recognize(document: Any) -> str:
    """FORMAT for a Continue session object: `sessionId` beside a `history` list."""
    if isinstance(document, dict) and isinstance(document.get("history"), list) and "sessionId" in document:
        return FORMAT if "workspaceDirectory" in document or "title" in document else ""
    return ""


def workspace_path(value: str) -> str:
    """The folder a `workspaceDirectory` names: a `file:///c%3A/x` URI as `c:/x`, a plain path as is."""
    if not value.startswith("file://"):
        return value
    path = unquote(urlsplit(value).path)
    return path[1:] if len(path) > 2 and path[0] == "/" and path[2] == ":" else path


class _Session:
    def __init__(self, document: dict[str, Any], path: str, result: SourceResult) -> None:
        self.document = document
        self.result = result
        title = as_str(document.get("title"))
        title = "" if title.lstrip().startswith("<think>") else title
        self.draft = DraftSession(
            ORIGIN, as_str(document.get("sessionId")), path, title=title, header_title_kind="summary" if title else ""
        )
        cwd = workspace_path(as_str(document.get("workspaceDirectory")))
        self.draft.cwd = cwd
        self.draft.repo = folder_name(cwd) if cwd else ""
        self.model = as_str(document.get("chatModelTitle"))
        self.states: dict[str, dict[str, Any]] = {}
        self.answered: set[str] = set()
        self.last_reply: DraftMessage | None = None

    def build(self) -> DraftSession:
        items = [as_dict(item) for item in as_list(self.document.get("history"))]
        for item in items:
            for state in as_list(item.get("toolCallStates")):
                self.states[as_str(as_dict(state).get("toolCallId"))] = as_dict(state)
            message = as_dict(item.get("message"))
            if message.get("role") == "tool":
                self.answered.add(as_str(message.get("toolCallId")))
        for item in items:
            self._item(item)
        if self.last_reply is not None:
            self._settle_totals(self.last_reply)
        self.draft.current = None
        return self.draft

    def _item(self, item: dict[str, Any]) -> None:
        message = as_dict(item.get("message"))
        role = as_str(message.get("role"))
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:history/{role or '(none)'}", item, node=role in ROLES))
        reasoning = as_dict(item.get("reasoning"))
        for key in ("startAt", "endAt"):
            self.draft.observe_time(to_ms(reasoning.get(key)))
        if role == "user":
            self._user(message)
        elif role == "assistant":
            self._assistant(item, message, reasoning)
        elif role == "tool":
            call_id = as_str(message.get("toolCallId"))
            record.source_keys.append(f"call:{call_id}")
            self._result(call_id, _text(message.get("content")))
        else:
            self.result.skipped[f"{FORMAT}:role/{role or '(none)'}"] += 1

    def _user(self, message: dict[str, Any]) -> None:
        blocks = _blocks(message.get("content"))
        authored = any(block.text.strip() for block in blocks)
        draft_message = self.draft.add_message(DraftMessage("user", authored=authored))
        for block in blocks:
            self.draft.add_block(draft_message, block)

    def _assistant(self, item: dict[str, Any], message: dict[str, Any], reasoning: dict[str, Any]) -> None:
        usage = as_dict(message.get("usage"))
        model = as_str(usage.get("model")) or self.model or _prompt_log_model(item)
        reply = DraftMessage("assistant", authored=True, time_ms=to_ms(reasoning.get("startAt")), model=model)
        reply.input_tokens = as_count(usage.get("prompt_tokens"))
        reply.output_tokens = as_count(usage.get("completion_tokens"))
        reply.cost_usd = as_cost(usage.get("cost_cents")) / 100
        self.last_reply = self.draft.add_message(reply)
        if as_str(reasoning.get("text")).strip():
            self.draft.add_block(reply, DraftBlock("thinking", text=as_str(reasoning.get("text")).strip()))
        for block in _blocks(message.get("content")):
            self.draft.add_block(reply, block)
        calls = [as_dict(call) for call in as_list(message.get("toolCalls"))]
        for call in calls:
            call_id = as_str(call.get("id"))
            function = as_dict(call.get("function"))
            arguments = json_or_none(as_str(function.get("arguments")))
            if arguments is None:
                arguments = as_dict(self.states.get(call_id)).get("parsedArgs")
            use = tool_use_block(as_str(function.get("name")), call_id, arguments)
            use.path = use.path or as_str(as_dict(arguments).get("filepath"))
            self.draft.add_block(reply, use)
            if self.draft.current is not None:
                self.draft.current.keys.append(f"call:{call_id}")
        for call in calls:
            call_id = as_str(call.get("id"))
            state = self.states.get(call_id)
            if call_id in self.answered or state is None:
                continue
            output = "\n".join(_text(as_dict(out).get("content")) for out in as_list(state.get("output")))
            if output or state.get("status") != "calling":  # a call still running when saved has no result yet
                self._result(call_id, output)

    def _result(self, call_id: str, text: str) -> None:
        state = as_dict(self.states.get(call_id))
        failed = as_str(state.get("status")) in FAILED_STATES
        name = as_str(as_dict(as_dict(state.get("toolCall")).get("function")).get("name"))
        message = self.draft.add_message(DraftMessage("tool", authored=False))
        block = DraftBlock("tool_result", text=text or as_str(state.get("status")), tool_name=name, tool_use_id=call_id)
        block.is_error = failed
        self.draft.add_block(message, block)

    def _settle_totals(self, reply: DraftMessage) -> None:
        """Put what the session's usage counts beyond its messages' own on the last reply."""
        usage = as_dict(self.document.get("usage"))
        if not usage:
            return
        replies = [message for message in self.draft.messages if message.role == "assistant"]
        reply.input_tokens += max(0, as_count(usage.get("promptTokens")) - sum(m.input_tokens for m in replies))
        reply.output_tokens += max(0, as_count(usage.get("completionTokens")) - sum(m.output_tokens for m in replies))
        reply.cost_usd += max(0.0, as_cost(usage.get("totalCost")) - sum(m.cost_usd for m in replies))


def _prompt_log_model(item: dict[str, Any]) -> str:
    return next((as_str(as_dict(log).get("modelTitle")) for log in as_list(item.get("promptLogs"))), "")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(as_str(as_dict(part).get("text")) for part in as_list(content) if as_dict(part).get("text"))


def _blocks(content: Any) -> list[DraftBlock]:
    """A message's text (consecutive text parts are one block) and its images."""
    if isinstance(content, str):
        return [DraftBlock("text", text=content)] if content.strip() else []
    blocks: list[DraftBlock] = []
    texts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "imageUrl":
            if texts:
                blocks.append(DraftBlock("text", text="\n".join(texts)))
                texts = []
            blocks.append(DraftBlock("image", media_type="image/*"))
        elif as_str(part.get("text")):
            texts.append(as_str(part.get("text")))
    if texts:
        blocks.append(DraftBlock("text", text="\n".join(texts)))
    return blocks


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    if not isinstance(document, dict) or not as_str(document.get("sessionId")):
        result.issues.append(issue(path, 0, "invalid_record", "the Continue session has no sessionId"))
        return result
    draft = _Session(document, path, result).build()
    if draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-session"] += 1
    return result
