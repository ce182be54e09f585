"""Source parsers, one module per origin, and the draft model they fill.

A parser reads one file's records and builds `DraftSession`s: plain mutable objects that are cheap to
grow while records arrive (Claude Code spreads one API response over several lines, Codex reports
exit codes after the output). `quarry.ingest.normalize.build_session` then turns each draft into the
canonical `units_pb2.Session`, assigning every id and computing words, counts, actions and the
content hash in one place, the same way for every origin.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from quarry.v1 import ingest_pb2


@dataclass(slots=True)
class DraftBlock:
    type: str
    text: str = ""
    language: str = ""
    tool_name: str = ""
    tool_use_id: str = ""
    tool_input_json: str = ""
    path: str = ""
    is_error: bool = False
    media_type: str = ""
    command: str = ""  # tool_use: the command it runs, carried to its Action (not a Block field)


@dataclass(slots=True)
class DraftMessage:
    role: str
    authored: bool
    time_ms: int = 0
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    duration_ms: int = 0
    surface: str = "current"
    paste: bool = False
    seq: int = -1
    blocks: list[DraftBlock] = field(default_factory=list)


@dataclass(slots=True)
class TimeSpan:
    """Earliest and latest timestamps seen (epoch ms, 0 = none yet)."""

    first_ms: int = 0
    last_ms: int = 0

    def observe(self, ms: int) -> None:
        if ms <= 0:
            return
        if self.first_ms == 0 or ms < self.first_ms:
            self.first_ms = ms
        if ms > self.last_ms:
            self.last_ms = ms


@dataclass(slots=True)
class DraftSession:
    origin: str
    native_id: str
    source_path: str
    title: str = ""  # from a title event; normalize falls back to the first authored prompt
    repo: str = ""
    cwd: str = ""
    branch: str = ""
    parent_session_id: str = ""
    span: TimeSpan = field(default_factory=TimeSpan)  # every timestamp of the source, messages or not
    messages: list[DraftMessage] = field(default_factory=list)
    # Every tool_use in arrival order, as (message seq, block index): a Claude Code message can
    # grow after later messages exist, so message order alone would renumber actions on append.
    tool_uses: list[tuple[int, int]] = field(default_factory=list)

    def add_message(self, message: DraftMessage) -> DraftMessage:
        message.seq = len(self.messages)
        self.messages.append(message)
        return message

    def add_block(self, message: DraftMessage, block: DraftBlock) -> None:
        if block.type == "tool_use":
            self.tool_uses.append((message.seq, len(message.blocks)))
        message.blocks.append(block)

    def observe_time(self, ms: int) -> None:
        self.span.observe(ms)


@dataclass(slots=True)
class SourceResult:
    """What a parser made of one file."""

    sessions: list[DraftSession] = field(default_factory=list)
    issues: list[ingest_pb2.IngestIssue] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


# Typed reads of untrusted JSON: a value of the wrong type reads as empty, never raises.


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_count(value: Any) -> int:
    """A positive integer such as a token count; anything else (or absurdly large) reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**53 else 0
