"""Cursor's agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/`), JSON Lines layout.

Cursor (its editor agent and the Cursor Agent CLI) writes a transcript per chat beside the project:
`agent-transcripts/<uuid>/<uuid>.jsonl` (earlier `agent-transcripts/<uuid>.jsonl`), a subagent's in
`agent-transcripts/<uuid>/subagents/<uuid2>.jsonl`; older versions wrote plain text `<uuid>.txt`
(read by `cursor_transcripts_text`). Sources: the format write-up of potsherd's Cursor adapter (857
real records), kenn-io/agentsview's `internal/parser/cursor.go` and its tests (both layouts, the
subagent folder as the only link to the parent).

- Every record is `{role: user | assistant, message: {content: [...]}}` (content may be a plain
  string); blocks are `text`, `thinking`, `tool_use {name, input}` (input an object, or a raw string:
  every ApplyPatch) and, in newer versions, `tool_result {content, is_error}`. Records carry no ids, no
  session id, no per-message times, no model, tokens or cost: the file's name is the session id, line
  order the only order, and tool calls cannot be paired with results (a result is its own tool message).
- A prompt is `[preamble]<timestamp>Friday, May 8, 2026, 6:05 AM (UTC+5:30)</timestamp>\\n<user_query>
  \\n…\\n</user_query>`: the stamp (minute precision, its own UTC offset) is the prompt's time; the
  user's words are the query (up to the last closing tag), never the preamble (`[Image]`,
  `<image_files>`, …). The runtime's continuations ("The above subagent result is already visible…")
  put their text right after the opening tag, where a typed prompt starts with a newline: they are
  not authored. A subagent's first prompt is its dispatcher's, not the user's.
- A tool name with an embedded newline (seen once: `Grep path\\n/…`) is its first word.
- Byte-identical duplicate records occur in real transcripts: each is a record of its own and is kept.
- `{type: turn_ended}` markers are counted as `cursor-transcript:turn_ended`, other roles as
  `cursor-transcript:role/<role>`.

Origin: `cursor-agent-transcript:<uuid>`. The uuid is the editor's composer id (or the CLI's agent id),
but a transcript is not the same record as the CLI's `store.db` (it holds no tool results, no system
prompt, no model, and the editor writes transcripts the CLI never saw): two origins, so neither copy
ever replaces the other; the shared id lets a user find one from the other.

Raw log events (docs/sessions.md#events): every line is an event, user and assistant records surface
nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from quarry.ingest.reader import Record, feed_all
from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_dict,
    as_list,
    as_str,
    json_text,
    unread_record,
)
from quarry.ingest.sources.tool_calls import tool_use_block

FORMAT = "cursor-transcript"
ORIGIN = "cursor-agent-transcript"
ROLES = frozenset({"user", "assistant"})
_QUERY_OPEN, _QUERY_CLOSE = "<user_query>", "</user_query>"
_STAMP = re.compile(
    r"<timestamp>\s*(?:\w+,\s*)?(?P<month>[A-Za-z]+)\s+(?P<day>\d{1,2}),\s*(?P<year>\d{4}),\s*"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[AaPp][Mm])?"
    r"(?:\s*\((?:UTC|GMT)(?:(?P<sign>[+-])(?P<oh>\d{1,2})(?::?(?P<om>\d{2}))?)?\))?\s*</timestamp>"
)
_MONTHS = {name: number for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
)}  # fmt: skip
_SEPARATORS = re.compile(r"[\\/]")


def recognize(records: list[Record]) -> str:
    """FORMAT when a record is a bare `{role, message: {content}}` (no envelope, no ids)."""
    return FORMAT if any(is_record(record.data) for record in records) else ""


def is_record(data: Any) -> bool:
    if not isinstance(data, dict) or set(data) != {"role", "message"} or data.get("role") not in ROLES:
        return False
    return "content" in as_dict(data.get("message"))


@dataclass(frozen=True, slots=True)
class Prompt:
    """A user record's text read apart: the query, its time, and whether the runtime wrote it."""

    text: str
    time_ms: int
    injected: bool


def read_prompt(text: str) -> Prompt:
    """The user's words, the stamp's time and whether it is an injected continuation (see the module)."""
    start = text.find(_QUERY_OPEN)
    preamble = text if start < 0 else text[:start]
    stamp = _STAMP.search(preamble)
    time_ms = stamp_ms(stamp) if stamp else 0
    if start < 0:
        body = text[stamp.end() :] if stamp else text
        return Prompt(body.strip(), time_ms, False)
    end = text.rfind(_QUERY_CLOSE)
    body = text[start + len(_QUERY_OPEN) : end if end > start else len(text)]
    return Prompt(body.strip(), time_ms, not body.startswith(("\n", "\r")))


def stamp_ms(match: re.Match[str]) -> int:
    """Epoch ms of a `<timestamp>` match, read in its own UTC offset (none: UTC); 0 when invalid."""
    month = _MONTHS.get(match["month"][:3].lower())
    hour = int(match["hour"])
    if match["half"]:
        hour = hour % 12 + (12 if match["half"].lower() == "pm" else 0)
    offset = timedelta(hours=int(match["oh"] or 0), minutes=int(match["om"] or 0))
    try:
        zone = timezone(-offset if match["sign"] == "-" else offset)
        moment = datetime(int(match["year"]), month or 0, int(match["day"]), hour, int(match["minute"]), tzinfo=zone)
    except ValueError:
        return 0
    return int(moment.timestamp() * 1000)


def session_for(path: str) -> DraftSession:
    """The session a transcript file is: its file name is the id; under `<uuid>/subagents/` it is a
    subagent of `<uuid>`."""
    parts = [part for part in _SEPARATORS.split(path) if part]
    name = parts[-1] if parts else path
    stem = name.rsplit(".", 1)[0] if name.endswith((".jsonl", ".txt")) else name
    parent = parts[-3] if len(parts) >= 3 and parts[-2] == "subagents" else ""
    return DraftSession(
        origin=ORIGIN,
        native_id=stem,
        source_path=path,
        parent_session_id=f"{ORIGIN}:{parent}" if parent else "",
    )


def add_prompt(draft: DraftSession, text: str) -> None:
    """A user record: an authored prompt, or the runtime's (a continuation, a subagent's first prompt)."""
    prompt = read_prompt(text)
    draft.observe_time(prompt.time_ms)
    if draft.current is not None:
        draft.current.time_ms = prompt.time_ms
    dispatched = bool(draft.parent_session_id) and not any(m.role == "user" for m in draft.messages)
    authored = bool(prompt.text) and not prompt.injected and not dispatched
    message = draft.add_message(DraftMessage("user", authored=authored, time_ms=prompt.time_ms))
    if prompt.text:
        draft.add_block(message, DraftBlock("text", text=prompt.text))


def settle(draft: DraftSession, result: SourceResult) -> SourceResult:
    """The file's result: its session, or a count of an empty transcript (one that holds no message)."""
    draft.current = None
    if draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-transcript"] += 1
    return result


def tool_call(name: str, tool_input: Any, call_id: str = "") -> DraftBlock:
    """A tool_use block. A name with a newline (one real transcript has `Grep path\\n/Users/…`: the model
    ran an argument into it) is its first word."""
    if "\n" in name:
        name = next(iter(name.split()), "")
    return tool_use_block(name.strip(), call_id, tool_input)


def result_text(content: Any) -> str:
    """A tool_result's content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts = [as_str(as_dict(part).get("text")) for part in as_list(content)]
    return "\n".join(part for part in parts if part) if parts else json_text(content) if content else ""


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.result = SourceResult()
        self.draft = session_for(path)

    def feed(self, record: Record) -> None:
        data = record.data
        role = as_str(data.get("role"))
        kind = role or as_str(data.get("type")) or "(untyped)"
        self.draft.begin(DraftRecord(record.line, f"{FORMAT}:{kind}", data, record.raw, node=role in ROLES))
        content = as_dict(data.get("message")).get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)
        if role == "user":
            self._user([as_dict(block) for block in blocks])
        elif role == "assistant":
            self._assistant([as_dict(block) for block in blocks])
        elif role:
            self.result.skipped[f"{FORMAT}:role/{role}"] += 1
        else:
            self.result.skipped[f"{FORMAT}:{kind}"] += 1

    def unread(self, record: Record, kind: str) -> None:
        self.draft.records.append(unread_record(record, FORMAT, kind))

    def finish(self) -> SourceResult:
        return settle(self.draft, self.result)

    def _user(self, blocks: list[dict[str, Any]]) -> None:
        results = [block for block in blocks if block.get("type") == "tool_result"]
        text = "\n".join(as_str(block.get("text")) for block in blocks if block.get("type") == "text")
        if text or not results:
            add_prompt(self.draft, text)
        self._results(results)

    def _assistant(self, blocks: list[dict[str, Any]]) -> None:
        message = self.draft.add_message(DraftMessage("assistant", authored=True))
        for block in blocks:
            kind = as_str(block.get("type"))
            if kind == "text" and as_str(block.get("text")).strip():
                self.draft.add_block(message, DraftBlock("text", text=as_str(block.get("text"))))
            elif kind == "thinking":
                thought = as_str(block.get("thinking")) or as_str(block.get("text"))
                self.draft.add_block(message, DraftBlock("thinking", text=thought))
            elif kind == "tool_use":
                self.draft.add_block(
                    message, tool_call(as_str(block.get("name")), block.get("input"), as_str(block.get("id")))
                )
            elif kind != "tool_result":
                self.result.skipped[f"{FORMAT}:block/{kind or '(untyped)'}"] += 1
        self._results([block for block in blocks if block.get("type") == "tool_result"])

    def _results(self, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        message = self.draft.add_message(DraftMessage("tool", authored=False))
        for block in blocks:
            text = result_text(block.get("content"))
            failed = block.get("is_error") is True
            call_id = as_str(block.get("tool_use_id"))
            self.draft.add_block(message, DraftBlock("tool_result", text=text, tool_use_id=call_id, is_error=failed))


def parse(records: Iterable[Record], path: str) -> SourceResult:
    return feed_all(_Parser(path), records, path)
