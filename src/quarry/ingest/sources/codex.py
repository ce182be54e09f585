"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`).

Every line is an envelope {timestamp, type, payload}; rollouts older than the envelope hold bare
response items, read the same way. The session id is the first `session_meta.id`.

`response_item`s are the conversation: each becomes one message in file order. Codex writes the
same dialogue twice, once as response items and once as `event_msg` (user_message, agent_message,
agent_reasoning). Every rollout opens with response items (the injected context), so once one has
been seen the event copies are not used (they are counted in `skipped`); events that come before
any response item are read as the dialogue. Deciding from what precedes keeps a prefix of a
growing rollout consistent with the whole file.

- roles: user, assistant, `developer` and `system` -> system; tool outputs -> tool.
- user messages the CLI injects (AGENTS.md, `<environment_context>`, `<turn_aborted>`, …) keep the
  user role but are not authored. The VS Code extension (originator `codex_vscode`) and the Desktop app
  (`Codex Desktop`) wrap a prompt in context (`# Context from my IDE setup:`, `# Files mentioned by the
  user:`, a forked thread's `## Prior conversation with Codex:`) followed by `## My request for Codex:`
  and the typed request: the context is a non-authored user message, the request an authored one.
- function_call / custom_tool_call / local_shell_call / web_search_call -> tool_use; their outputs
  -> tool_result. Outputs are plain text or, up to 0.46, a JSON string {output, metadata:{exit_code}};
  a nonzero exit code (from that metadata, from exec_command's "Process exited with code N" or
  shell_command's "Exit code: N" header, or from a later `exec_command_end` event) marks the result as
  an error.
- rollouts Codex archived (`~/.codex/archived_sessions/`, flat) are the same rollouts, read the same way.
- reasoning -> thinking (summary text, else reasoning content, else an empty block: the model
  reasoned but the text is encrypted).
- `token_count` events carry per-request usage; each turn's usage is summed onto the turn's last
  model message. input_tokens counts uncached input, cache_read_tokens the cached part.
- `compacted` becomes a non-authored user message that shadows everything before it, and a
  compaction (event and context snapshot); a `context_compacted` event right after it is the same
  compaction, one with no `compacted` record is a compaction without a summary message.
- runtime events: task_started / task_complete / turn_aborted -> turn_started / turn_completed /
  turn_aborted; `error` and `stream_error` -> api_error.
- a rollout can hold several `session_meta` records (a resumed session): the first id names the
  session; later ones only fill what the first left empty. `turn_context` sets the model of the
  turn's replies (and the cwd when session_meta had none).

Raw log events (docs/sessions.md#events): every line is an event. The response items Codex sends to the model
(messages, reasoning, tool calls and their outputs; not `ghost_snapshot`, an undo snapshot) and the
event copies read as the dialogue are surface nodes; `compacted` is a surface node that replaces every
node before it. session_meta, turn_context and the other event_msg records are log-only. A tool
output and an `exec_command_end` cite the call with their `call_id`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from quarry.ingest.reader import Record, feed_all
from quarry.ingest.sources import (
    DraftBlock,
    DraftCompaction,
    DraftEvent,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_count,
    as_list,
    as_str,
    json_or_none,
    json_text,
    to_ms,
    unread_record,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import describe_tool_input, patch_path

FORMAT = "codex"
ORIGIN = "codex-session"
ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
EVENT_DIALOGUE = frozenset({"user_message", "agent_message", "agent_reasoning"})
TURN_EVENTS = {"task_started": "turn_started", "task_complete": "turn_completed", "turn_aborted": "turn_aborted"}
ERROR_EVENTS = frozenset({"error", "stream_error"})
ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal", "summary_text", "reasoning_text"})
# What the VS Code extension and the Desktop app put before a prompt (the open files, a forked thread's
# conversation), then `## My request for Codex:` and what the user typed.
_CONTEXT_HEADERS = r"# Context from my IDE setup:|# Files mentioned by the user:|## Prior conversation with Codex:"
_REQUEST_MARK = "## My request for Codex:"
_WRAPPED = re.compile(r"\A\s*(?:" + _CONTEXT_HEADERS + ")")
_INJECTED = re.compile(
    r"\A\s*(?:<environment_context>|<user_instructions>|<turn_aborted>|<permissions instructions>"
    r"|<collaboration_mode>|<apps_instructions>|<skills_instructions>|<user_shell_command>|<INSTRUCTIONS>"
    r"|# AGENTS\.md instructions for |" + _CONTEXT_HEADERS + ")"
)
# The header exec_command (`Process exited with code N`) or shell_command (`Exit code: N`) puts before a
# finished command's output.
_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)\s*$", re.MULTILINE)
_HEADER_CHARS = 600


@dataclass(slots=True)
class _Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        cached = as_count(usage.get("cached_input_tokens"))
        self.input_tokens += max(0, as_count(usage.get("input_tokens")) - cached)
        self.output_tokens += as_count(usage.get("output_tokens"))
        self.cache_read_tokens += cached


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seen_response_item = False
        self.result = SourceResult()
        self.draft = DraftSession(origin=ORIGIN, native_id="", source_path=path)
        self.model = ""
        self.call_names: dict[str, str] = {}
        self.results: dict[str, DraftBlock] = {}
        self.exit_codes: dict[str, int] = {}
        self.usage = _Usage()
        self.last_total: Any = None
        self.turn_anchor: DraftMessage | None = None
        self.compacted_at = -2  # message count when the last compaction was recorded
        self.compaction_event = DraftEvent("compaction")

    def feed(self, record: Record) -> None:
        data = record.data
        kind, payload = _envelope(data)
        time_ms = to_ms(data.get("timestamp"))
        self.draft.observe_time(time_ms)
        name = kind
        if kind in ("response_item", "event_msg"):
            name += f"/{as_str(payload.get('type')) or '(untyped)'}"
        event = self.draft.begin(
            DraftRecord(record.line, f"{FORMAT}:{name}", data, record.raw, time_ms or to_ms(payload.get("timestamp")))
        )
        call_id = as_str(payload.get("call_id"))
        if kind == "response_item" and as_str(payload.get("type")) in CALL_TYPES:
            event.keys.append(f"call:{call_id or as_str(payload.get('id'))}")
        elif call_id:
            event.source_keys.append(f"call:{call_id}")
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self.model = as_str(payload.get("model")) or self.model
            if not self.draft.cwd:
                self._set_cwd(as_str(payload.get("cwd")))
        elif kind == "response_item":
            self.seen_response_item = True
            self._response_item(payload, time_ms)
        elif kind == "event_msg":
            self._event(payload, time_ms)
        elif kind == "compacted":
            self._compacted(payload, time_ms)
        else:
            self.result.skipped[f"{FORMAT}:{kind}"] += 1

    def _session_meta(self, payload: dict[str, Any]) -> None:
        first = not self.draft.native_id
        if first:
            self.draft.native_id = as_str(payload.get("id"))
        self.draft.observe_time(to_ms(payload.get("timestamp")))
        if not self.draft.cwd:
            self._set_cwd(as_str(payload.get("cwd")))
        git = payload.get("git")
        if isinstance(git, dict):
            self.draft.branch = self.draft.branch or as_str(git.get("branch"))
            url = as_str(git.get("repository_url")).rstrip("/")
            if url and (first or not self.draft.repo):  # the repository names the repo better than the cwd
                self.draft.repo = folder_name(url.rsplit(":", 1)[-1]).removesuffix(".git")

    def _set_cwd(self, cwd: str) -> None:
        self.draft.cwd = cwd
        if cwd and not self.draft.repo:
            self.draft.repo = folder_name(cwd)

    def _response_item(self, item: dict[str, Any], time_ms: int) -> None:
        kind = as_str(item.get("type"))
        if kind == "message":
            role = ROLES.get(as_str(item.get("role")))
            if role is None:
                self.result.skipped[f"{FORMAT}:message/{as_str(item.get('role')) or '(none)'}"] += 1
                return
            blocks = _content_blocks(item.get("content"))
            if role == "user" and (request := _split_request(blocks)):
                self._message(role, blocks, time_ms)  # the context, injected (not authored)
                blocks = request
            self._message(role, blocks, time_ms)
        elif kind == "reasoning":
            texts = [_part_text(part) for part in as_list(item.get("summary"))]
            texts = [text for text in texts if text] or [
                text for text in (_part_text(part) for part in as_list(item.get("content"))) if text
            ]
            blocks = [DraftBlock("thinking", text=text) for text in texts] or [DraftBlock("thinking")]
            self._message("assistant", blocks, time_ms)
        elif kind in CALL_TYPES:
            self._message("assistant", [self._call(kind, item)], time_ms)
        elif kind in OUTPUT_TYPES:
            self._message("tool", [self._output(item)], time_ms)
        else:
            self.result.skipped[f"{FORMAT}:response_item/{kind or '(untyped)'}"] += 1

    def unread(self, record: Record, kind: str) -> None:
        self.draft.begin(unread_record(record, FORMAT, kind))

    def _message(self, role: str, blocks: list[DraftBlock], time_ms: int) -> DraftMessage:
        text = next((block.text for block in blocks if block.type == "text"), "")
        if role == "user":
            authored = not _INJECTED.match(text) if text else any(block.type == "image" for block in blocks)
        else:
            authored = role == "assistant"
        if role == "user" and authored:
            self._flush_usage()
        message = DraftMessage(role=role, authored=authored, time_ms=time_ms)
        if self.draft.current is not None:
            self.draft.current.node = True
        if role == "assistant":
            message.model = self.model
            self.turn_anchor = message
        self.draft.add_message(message)
        for block in blocks:
            self.draft.add_block(message, block)
        return message

    def _call(self, kind: str, item: dict[str, Any]) -> DraftBlock:
        call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
        if kind == "function_call":
            name = as_str(item.get("name"))
            arguments = item.get("arguments")
            tool_input = json_or_none(arguments) if isinstance(arguments, str) else arguments
            input_json = arguments if isinstance(arguments, str) and tool_input is not None else ""
            if tool_input is None and isinstance(arguments, str):
                tool_input = {"arguments": arguments}  # not JSON: kept verbatim
        elif kind == "custom_tool_call":
            name = as_str(item.get("name"))
            tool_input = {"input": item.get("input")}
            input_json = ""
        else:
            name = kind.removesuffix("_call")
            tool_input = item.get("action")
            input_json = ""
        call = describe_tool_input(tool_input)
        path = call.path
        if not path and isinstance(tool_input, dict) and isinstance(tool_input.get("input"), str):
            path = patch_path(tool_input["input"])
        if call_id:
            self.call_names[call_id] = name
        return DraftBlock(
            "tool_use",
            text=call.summary,
            tool_name=name,
            tool_use_id=call_id,
            tool_input_json=input_json or json_text(tool_input if tool_input is not None else {}),
            path=path,
            command=call.command,
        )

    def _output(self, item: dict[str, Any]) -> DraftBlock:
        call_id = as_str(item.get("call_id"))
        text, exit_code, failed = _output_text(item.get("output"))
        if exit_code is None:
            match = _EXIT_LINE.search(text, 0, _HEADER_CHARS)
            exit_code = int(match.group(1)) if match else None
        block = DraftBlock(
            "tool_result",
            text=text,
            tool_name=self.call_names.get(call_id, ""),
            tool_use_id=call_id,
            is_error=failed or bool(exit_code),
            exit_code=exit_code,
        )
        if call_id:
            self.results.setdefault(call_id, block)
        return block

    def _event(self, event: dict[str, Any], time_ms: int) -> None:
        kind = as_str(event.get("type"))
        if kind == "token_count":
            self._token_count(event.get("info"))
        elif kind == "exec_command_end":
            call_id = as_str(event.get("call_id"))
            exit_code = event.get("exit_code")
            if call_id and isinstance(exit_code, int):
                self.exit_codes[call_id] = exit_code
        elif kind in TURN_EVENTS:
            self._turn_event(TURN_EVENTS[kind], event, time_ms)
        elif kind in ERROR_EVENTS:
            text = as_str(event.get("message")) or kind
            self.draft.record("api_error", time_ms, f"API error: {text}", failed=True)
        elif kind == "context_compacted":
            if self.compacted_at != len(self.draft.messages):
                self._compaction(DraftCompaction(time_ms), time_ms)
        elif kind in EVENT_DIALOGUE and not self.seen_response_item:
            text = as_str(event.get("message")) or as_str(event.get("text"))
            if kind == "user_message":
                self._message("user", [DraftBlock("text", text=text)] if text else [], time_ms)
            elif kind == "agent_message":
                self._message("assistant", [DraftBlock("text", text=text)] if text else [], time_ms)
            else:
                self._message("assistant", [DraftBlock("thinking", text=text)], time_ms)
        else:
            self.result.skipped[f"{FORMAT}:event_msg/{kind or '(untyped)'}"] += 1

    def _turn_event(self, kind: str, event: dict[str, Any], time_ms: int) -> None:
        if kind == "turn_completed":
            answer = as_str(event.get("last_agent_message"))
            text = f"turn completed: {answer}" if answer else "turn completed"
        elif kind == "turn_aborted":
            reason = as_str(event.get("reason"))
            text = f"turn aborted ({reason})" if reason else "turn aborted"
        else:
            text = "turn started"
        self.draft.record(kind, time_ms, text, object_ref=as_str(event.get("turn_id")))

    def _compaction(self, compaction: DraftCompaction, time_ms: int) -> None:
        self.draft.compactions.append(compaction)
        self.compaction_event = self.draft.record(
            "compaction", time_ms, "context compacted", message_seq=compaction.message_seq
        )
        self.compacted_at = len(self.draft.messages)

    def _token_count(self, info: Any) -> None:
        if not isinstance(info, dict):
            return
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        if total == self.last_total or not isinstance(last, dict):
            return  # Codex repeats the same count; only a changed total is a new request
        self.last_total = total
        self.usage.add(last)

    def _flush_usage(self) -> None:
        anchor = self.turn_anchor
        if anchor is None:
            return
        anchor.input_tokens += self.usage.input_tokens
        anchor.output_tokens += self.usage.output_tokens
        anchor.cache_read_tokens += self.usage.cache_read_tokens
        self.usage = _Usage()
        self.turn_anchor = None

    def _compacted(self, payload: dict[str, Any], time_ms: int) -> None:
        text = as_str(payload.get("message"))
        message = self._message("user", [DraftBlock("text", text=text)] if text else [], time_ms)
        message.authored = False
        if self.draft.current is not None:
            self.draft.current.replaces_all = True
        if self.compacted_at == message.seq:  # its context_compacted event came first
            self.draft.compactions[-1].message_seq = message.seq
            self.compaction_event.message_seq = message.seq
            self.compacted_at = len(self.draft.messages)
            return
        self._compaction(DraftCompaction(time_ms, message.seq), time_ms)

    def finish(self) -> SourceResult:
        self._flush_usage()
        for call_id, exit_code in self.exit_codes.items():
            block = self.results.get(call_id)
            if block is not None:
                block.exit_code = exit_code
                block.is_error = block.is_error or exit_code != 0
        if self.draft.messages:
            if not self.draft.native_id:
                self.draft.native_id = os.path.splitext(os.path.basename(self.path))[0]
            self.result.sessions.append(self.draft)
        return self.result


def parse(records: Iterable[Record], path: str) -> SourceResult:
    return feed_all(_Parser(path), records, path)


def _envelope(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(record kind, payload) of an enveloped line or of a pre-envelope one."""
    kind = data.get("type")
    payload = data.get("payload")
    if kind in ENVELOPE_TYPES and isinstance(payload, dict):
        return kind, payload
    if kind is None:
        if "record_type" in data:
            return f"record_type/{as_str(data.get('record_type')) or '(none)'}", data
        if "id" in data and "timestamp" in data:
            return "session_meta", data
        return "(untyped)", data
    if isinstance(kind, str) and (kind in CALL_TYPES or kind in OUTPUT_TYPES or kind in ("message", "reasoning")):
        return "response_item", data
    return kind if isinstance(kind, str) else "(untyped)", data


def _content_blocks(content: Any) -> list[DraftBlock]:
    if isinstance(content, str):
        return [DraftBlock("text", text=content)] if content else []
    blocks: list[DraftBlock] = []
    for part in as_list(content):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in TEXT_PARTS:
            text = _part_text(part)
            if text:
                blocks.append(DraftBlock("text", text=text))
        elif kind == "input_image":
            url = as_str(part.get("image_url"))
            media_type = url[5:].split(";", 1)[0] if url.startswith("data:") else ""
            blocks.append(DraftBlock("image", media_type=media_type))
    return blocks


def _split_request(blocks: list[DraftBlock]) -> list[DraftBlock]:
    """The typed request of a prompt the VS Code extension or the Desktop app wrapped in context: the blocks
    after `## My request for Codex:` (removed from `blocks`, which keep the context); [] when not wrapped."""
    first = next((block for block in blocks if block.type == "text"), None)
    if first is None or not _WRAPPED.match(first.text):
        return []
    for index, block in enumerate(blocks):
        at = block.text.find(f"\n{_REQUEST_MARK}") if block.type == "text" else -1
        if at < 0:
            continue
        request = block.text[at + len(_REQUEST_MARK) + 1 :].strip("\n")
        if not request.strip():
            return []
        block.text = block.text[:at]
        rest = blocks[index + 1 :]
        del blocks[index + 1 :]
        return [DraftBlock("text", text=request), *rest]
    return []


def _part_text(part: Any) -> str:
    if not isinstance(part, dict):
        return ""
    return as_str(part.get("text")) or as_str(part.get("refusal"))


def _output_text(output: Any) -> tuple[str, int | None, bool]:
    """(text, exit code if stated, failed) of a tool output in any of its shapes."""
    if isinstance(output, str):
        if output.startswith("{") and '"output"' in output:
            decoded = json_or_none(output)
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                metadata = decoded.get("metadata")
                exit_code = metadata.get("exit_code") if isinstance(metadata, dict) else None
                return decoded["output"], exit_code if isinstance(exit_code, int) else None, False
        return output, None, output.startswith("failed in sandbox")
    if isinstance(output, list):
        return "\n".join(text for text in (_part_text(part) for part in output) if text), None, False
    if isinstance(output, dict):  # {content, success}: content is text or parts, never nested deeper
        content = output.get("content")
        text, exit_code, failed = ("", None, False) if isinstance(content, dict) else _output_text(content)
        return text, exit_code, failed or output.get("success") is False
    return "", None, False
