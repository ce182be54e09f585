"""Cursor's older plain-text agent transcripts (`agent-transcripts/<uuid>.txt`).

Before the JSON Lines layout (`cursor_transcripts`), Cursor wrote a transcript as text: a line `user:`
or `assistant:` opens each message. A prompt reads as in the JSON layout (`<timestamp>`,
`<user_query>`). In a reply, a line at the left margin starting `[Thinking]`, `[Tool call] <name>` or
`[Tool result] <name>` opens a block whose body is the indented (or empty) lines after it: thinking, a
tool call whose input is its body (JSON, `key: value` or `key=value` lines, or the raw text: an
ApplyPatch's patch), a tool result (its own tool message). Other lines are the reply's text. Sources:
kenn-io/agentsview's `internal/parser/cursor.go` and its tests.

Raw log events (docs/sessions.md#events): each message is an event (its text, from its marker line).
"""

from __future__ import annotations

import re
import textwrap

from quarry.ingest.sources import DraftBlock, DraftMessage, DraftRecord, DraftSession, SourceResult, json_or_none
from quarry.ingest.sources.cursor_transcripts import FORMAT, add_prompt, session_for, settle, tool_call

_ROLE_LINE = re.compile(r"^(user|assistant):[ \t]*$", re.MULTILINE)
_MARKER = re.compile(r"^\[(Thinking|Tool call|Tool result)\][ \t]?(.*)$")
_ARGUMENT = re.compile(r"^([A-Za-z_][\w.-]*)\s*(?::|=)\s?(.*)$")


def recognize(head: str) -> str:
    """FORMAT when the text opens with a `user:` line and holds a `<user_query>` or an `assistant:` line."""
    stripped = head.lstrip()
    if not stripped.startswith("user:") or not _ROLE_LINE.match(stripped):
        return ""
    return FORMAT if "<user_query>" in stripped or re.search(r"^assistant:[ \t]*$", stripped, re.MULTILINE) else ""


def parse(text: str, path: str) -> SourceResult:
    draft = session_for(path)
    marks = list(_ROLE_LINE.finditer(text))
    for index, mark in enumerate(marks):
        body = text[mark.end() : marks[index + 1].start() if index + 1 < len(marks) else len(text)].strip("\n")
        role = mark.group(1)
        line = text.count("\n", 0, mark.start()) + 1
        draft.begin(DraftRecord(line, f"{FORMAT}:{role}", body, node=True))
        if role == "user":
            add_prompt(draft, body)
        else:
            _Reply(draft).read(body.split("\n"))
    return settle(draft, SourceResult())


class _Reply:
    """An assistant message's lines read in order: prose, thinking and tool calls go to the reply; each
    tool result is a tool message after it, and what follows opens the next reply (made when needed)."""

    def __init__(self, draft: DraftSession) -> None:
        self.draft = draft
        self.message: DraftMessage | None = None
        self.prose: list[str] = []

    def read(self, lines: list[str]) -> None:
        index = 0
        while index < len(lines):
            marker = _MARKER.match(lines[index])
            if not marker:
                self.prose.append(lines[index])
                index += 1
                continue
            self._flush()
            end = index + 1
            while end < len(lines) and not _ends_body(lines[end]):
                end += 1
            self._block(marker.group(1), marker.group(2).strip(), textwrap.dedent("\n".join(lines[index + 1 : end])))
            index = end
        self._flush()

    def _block(self, kind: str, head: str, body: str) -> None:
        if kind == "Thinking":
            self.draft.add_block(
                self._reply(), DraftBlock("thinking", text="\n".join(filter(None, (head, body.strip()))))
            )
        elif kind == "Tool call":
            self.draft.add_block(self._reply(), tool_call(head, _arguments(body.strip())))
        else:
            result = self.draft.add_message(DraftMessage("tool", authored=False))
            self.draft.add_block(result, DraftBlock("tool_result", text=body.strip(), tool_name=head))
            self.message = None

    def _reply(self) -> DraftMessage:
        if self.message is None:
            self.message = self.draft.add_message(DraftMessage("assistant", authored=True))
        return self.message

    def _flush(self) -> None:
        text = "\n".join(self.prose).strip()
        self.prose.clear()
        if text:
            self.draft.add_block(self._reply(), DraftBlock("text", text=text))


def _ends_body(line: str) -> bool:
    """A block's body is its indented and empty lines: a marker or left-margin text ends it."""
    return bool(line.strip()) and not line.startswith((" ", "\t"))


def _arguments(body: str) -> object:
    """A tool call's input: JSON as written, `key: value` lines as an object, else the raw text."""
    if not body:
        return {}
    value = json_or_none(body)
    if value is not None:
        return value
    arguments: dict[str, str] = {}
    last = ""
    for line in body.split("\n"):
        match = _ARGUMENT.match(line)
        if match and (match.group(1) not in arguments):
            last = match.group(1)
            arguments[last] = match.group(2)
        elif last:
            arguments[last] += "\n" + line
        else:
            return body
    return arguments
