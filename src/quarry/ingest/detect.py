"""Recognize a session log's format from its content alone.

Users point the ingest node at exports, copies and checkouts, so file names and folders prove
nothing: a Claude Code transcript may be called `notes.txt`, a Gemini CLI session (one JSON object)
is written with a `.jsonl` name. Whole JSON documents are recognized by their top-level shape;
JSON Lines files by a vote over their first records, so a malformed first line does not hide the
format; Markdown transcripts (Aider, SpecStory, Cursor's export) by the marks their tools write at
the top. SQLite databases are recognized by their tables, in `parse` (they are read from a snapshot).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from quarry.ingest.reader import Record, iter_jsonl, read_document, strip_bom
from quarry.ingest.sources import (
    ai_studio,
    aider,
    cline,
    continue_dev,
    copilot,
    copilot_cli,
    crush,
    cursor_cli,
    cursor_db,
    cursor_markdown,
    cursor_transcripts,
    cursor_transcripts_text,
    goose,
    grok,
    kimi,
    kiro_cli,
    opencode,
    opencode_db,
    qwen,
    vscode_chat,
    zed,
)
from quarry.v1 import ingest_pb2

CLAUDE_CODE = "claude-code"
CODEX = "codex"
CHATGPT = "chatgpt"
GEMINI = "gemini"
CLAUDE_AI = "claude-ai"
COPILOT_CHAT = copilot.FORMAT
OPENCODE = opencode.FORMAT
CLINE = cline.CLINE
ROO_CODE = cline.ROO_CODE
AIDER = aider.FORMAT
CURSOR = cursor_markdown.FORMAT
CRUSH = crush.FORMAT
GOOSE = goose.FORMAT
OPENCODE_DB = opencode_db.FORMAT
CURSOR_CLI = cursor_cli.FORMAT
VSCODE_CHAT_LOG = vscode_chat.FORMAT
ZED = zed.FORMAT
KIRO_CLI = kiro_cli.FORMAT
GROK, AI_STUDIO = grok.FORMAT, ai_studio.FORMAT
CONTINUE, COPILOT_CLI, KIMI, QWEN = continue_dev.FORMAT, copilot_cli.FORMAT, kimi.FORMAT, qwen.FORMAT
CURSOR_TRANSCRIPT = cursor_transcripts.FORMAT
UNKNOWN = "unknown"
FORMATS = (
    CLAUDE_CODE, CODEX, CHATGPT, GEMINI, CLAUDE_AI, COPILOT_CHAT, OPENCODE, CLINE, ROO_CODE, AIDER, CURSOR, CRUSH,
    GOOSE, VSCODE_CHAT_LOG, ZED, KIRO_CLI,
    OPENCODE_DB, CURSOR_CLI,
    CONTINUE, COPILOT_CLI, KIMI, QWEN,
    GROK, AI_STUDIO,
    CURSOR_TRANSCRIPT,
    UNKNOWN,
)  # fmt: skip
# How much of a text file's start its recognizers see (a folder walk reads no more to pick candidates).
TEXT_HEAD_CHARS = 4096
_JSON_DOCUMENT_RECOGNIZERS = (copilot.recognize, opencode.recognize, cline.recognize)
_JSON_DOCUMENT_RECOGNIZERS += (continue_dev.recognize,)
_JSON_DOCUMENT_RECOGNIZERS += (grok.recognize, ai_studio.recognize)
_TEXT_RECOGNIZERS = (aider.recognize, cursor_markdown.recognize)
_TEXT_RECOGNIZERS += (copilot_cli.recognize_workspace,)  # a Copilot CLI session folder's workspace.yaml
_TEXT_RECOGNIZERS += (cursor_transcripts_text.recognize,)
_DATABASE_RECOGNIZERS = (cursor_db.recognize, crush.recognize, goose.recognize)
_DATABASE_RECOGNIZERS += (opencode_db.recognize, cursor_cli.recognize)
_DATABASE_RECOGNIZERS += (zed.recognize, kiro_cli.recognize)
_RECORDS_RECOGNIZERS = (vscode_chat.recognize_records,)  # JSON Lines formats recognized by their records
_RECORDS_RECOGNIZERS += (qwen.recognize, copilot_cli.recognize, kimi.recognize)
_RECORDS_RECOGNIZERS += (cursor_transcripts.recognize,)

VOTE_RECORDS = 64
_NON_SPACE = re.compile(rb"\S")

CLAUDE_RECORD_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "attachment",
        "permission-mode",
        "last-prompt",
        "ai-title",
        "custom-title",
        "pr-link",
    }
)
CLAUDE_ID_KEYS = ("uuid", "sessionId", "leafUuid", "messageId", "parentUuid")
CODEX_ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# Rollouts written before the {timestamp, type, payload} envelope hold bare response items.
CODEX_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)


@dataclass(slots=True)
class Detection:
    """What a file is and its parsed content: a whole `document` or JSON Lines `records`.

    `records` is lazy: it is read once, by the parser, and `issues` (bad lines) is complete only
    after it has been consumed."""

    format: str
    document: Any = None
    records: Iterable[Record] = ()
    text: str = ""  # a Markdown transcript, decoded
    issues: list[ingest_pb2.IngestIssue] = field(default_factory=list)
    reason: str = ""


def detect(data: bytes, path: str) -> Detection:
    """Parse `data` once and say which format it holds (`UNKNOWN` with a reason when none)."""
    data = strip_bom(data)
    start = _NON_SPACE.search(data)
    head = data[start.start() : start.start() + 1] if start else b""
    if not head:
        return Detection(UNKNOWN, reason="the file is empty")
    if head not in (b"{", b"["):
        text = data.decode("utf-8", errors="replace")
        kind = text_format(text)
        if kind != UNKNOWN:
            return Detection(kind, text=text)
    shape = _shape(data) if head == b"{" else "document"
    if shape != "lines":
        document, error = read_document(data)
        if not error:
            kind = document_format(document)
            if kind != UNKNOWN:
                return Detection(kind, document=document)
            if shape == "document":
                return Detection(UNKNOWN, reason=f"a JSON {_describe(document)}")
        elif head == b"[":
            return Detection(UNKNOWN, reason=f"not JSON: {error}")
    issues: list[ingest_pb2.IngestIssue] = []
    records = iter_jsonl(data, path, issues)
    head_records = list(itertools.islice(records, VOTE_RECORDS))
    kind = records_format(head_records)
    if kind == UNKNOWN:
        reason = (
            "not a Markdown transcript of a known tool, and no Claude Code or Codex record among the first "
            f"{len(head_records)} JSON value(s)"
        )
        if issues:
            reason += f" and {len(issues)} line(s) that are not JSON"
        return Detection(UNKNOWN, reason=reason)
    return Detection(kind, records=itertools.chain(head_records, records), issues=issues)


def _shape(data: bytes) -> str:
    """How a file starting with `{` is laid out: "lines" (JSON Lines), "single" (one line: a
    minified document or a one-record log) or "document" (a value spread over several lines)."""
    newline = data.find(b"\n")
    if newline < 0 or not _NON_SPACE.search(data, newline):
        return "single"
    try:
        orjson.loads(data[:newline])
    except orjson.JSONDecodeError:
        return "document"
    return "lines"


def _describe(document: Any) -> str:
    if isinstance(document, dict):
        keys = ", ".join(list(document)[:5])
        return f"object with keys {keys}" if keys else "empty object"
    if isinstance(document, list):
        return "array that holds no ChatGPT or Claude.ai conversation"
    return "scalar"


def document_format(document: Any) -> str:
    if isinstance(document, list):
        first = next((item for item in document if isinstance(item, dict)), None)
        if first is not None and isinstance(first.get("mapping"), dict):
            return CHATGPT
        if first is not None and _claude_ai_conversation(first):
            return CLAUDE_AI
        return _recognized(_JSON_DOCUMENT_RECOGNIZERS, document)
    if not isinstance(document, dict):
        return UNKNOWN
    if isinstance(document.get("mapping"), dict) and "current_node" in document:
        return CHATGPT
    if _claude_ai_conversation(document):
        return CLAUDE_AI
    if isinstance(document.get("messages"), list) and ("sessionId" in document or "projectHash" in document):
        return GEMINI
    return _recognized(_JSON_DOCUMENT_RECOGNIZERS, document)


def text_format(text: str) -> str:
    """The format of a text file that is not JSON, from its first TEXT_HEAD_CHARS characters."""
    return _recognized(_TEXT_RECOGNIZERS, text[:TEXT_HEAD_CHARS])


def database_format(tables: dict[str, set[str]]) -> str:
    """The format of a SQLite database, from its tables and their columns."""
    return _recognized(_DATABASE_RECOGNIZERS, tables)


def _recognized(recognizers: Iterable[Callable[[Any], str]], content: Any) -> str:
    return next((kind for recognize in recognizers if (kind := recognize(content))), UNKNOWN)


def _claude_ai_conversation(item: dict[str, Any]) -> bool:
    """A Claude.ai export's conversation: its messages in `chat_messages`, beside its `uuid`."""
    return isinstance(item.get("chat_messages"), list) and "uuid" in item


def records_format(records: list[Record]) -> str:
    if (kind := _recognized(_RECORDS_RECOGNIZERS, records)) != UNKNOWN:
        return kind
    claude = codex = 0
    for record in records:
        data = record.data
        if not isinstance(data, dict):
            continue
        if is_claude_record(data):
            claude += 1
        elif is_codex_record(data):
            codex += 1
    if claude == codex == 0:
        return UNKNOWN
    return CLAUDE_CODE if claude > codex else CODEX


def is_claude_record(data: dict[str, Any]) -> bool:
    kind = data.get("type")
    if not isinstance(kind, str) or "payload" in data:
        return False
    if kind in CLAUDE_RECORD_TYPES:
        return any(key in data for key in CLAUDE_ID_KEYS)
    # A record type this parser has not seen yet, still carrying Claude Code's envelope.
    return "sessionId" in data and ("uuid" in data or "timestamp" in data)


def is_codex_record(data: dict[str, Any]) -> bool:
    kind = data.get("type")
    if kind in CODEX_ENVELOPE_TYPES:
        return isinstance(data.get("payload"), dict)
    if kind in CODEX_ITEM_TYPES:
        return "uuid" not in data and "sessionId" not in data
    if kind is None:
        return "record_type" in data or ("id" in data and "timestamp" in data and "instructions" in data)
    return False
