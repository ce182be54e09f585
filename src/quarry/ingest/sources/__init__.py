"""Source parsers, one module per origin, and the draft model they fill.

A parser reads one file's records and builds `DraftSession`s: plain mutable objects that are cheap to
grow while records arrive (Claude Code spreads one API response over several lines, Codex reports
exit codes after the output). `quarry.ingest.normalize.build_session` then turns each draft into the
canonical `units_pb2.Session`, assigning every id and computing words, counts, actions, the derived
units and the content hash in one place, the same way for every origin.

Every JSON value a parser reads is also a `DraftRecord` of its session (a raw log event: docs/sessions.md#events): the
parser opens it with `DraftSession.begin` before it reads the value, says whether the runtime sends it
to the model (a surface node), what it replaces and which earlier records it cites (by keys such as a
uuid or a tool call id), and the messages and blocks it builds are attached to it as they are added.
`quarry.ingest.events` numbers the records, folds the surface and resolves the links.

Besides messages, a parser records the runtime facts the derived units need and the canonical
messages do not carry: events (turns, API errors, commands, compactions), compaction boundaries and
what the source says about each subagent dispatch (`DraftDispatch`, keyed by its tool_use id).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from quarry.ingest.fences import has_fence, split_fenced
from quarry.ingest.reader import issue
from quarry.v1 import ingest_pb2

# Model names of replies the runtime wrote itself (Claude Code's `<synthetic>` error and notice rows).
SYNTHETIC_MODELS = frozenset({"", "<synthetic>"})


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
    exit_code: int | None = None  # tool_result: the command's exit status, when the source records it
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
    cost_usd: float = 0.0  # what the source says the reply cost (0: not recorded)
    surface: str = "current"
    paste: bool = False
    seq: int = -1
    blocks: list[DraftBlock] = field(default_factory=list)


@dataclass(slots=True)
class DraftEvent:
    """Something the runtime recorded (a kind of `vocab.EVENT_KINDS`), placed in the message stream
    after message `after_seq` (-1: before any); `message_seq` is the message it was read from, if any."""

    kind: str
    time_ms: int = 0
    text: str = ""
    object_ref: str = ""
    failed: bool = False
    after_seq: int = -1
    message_seq: int = -1


@dataclass(slots=True)
class DraftCompaction:
    """A context compaction: the message that holds its summary (or its boundary), how it was
    triggered (auto | manual, "" unknown) and the context size it replaced (0 unknown)."""

    time_ms: int = 0
    message_seq: int = -1
    trigger: str = ""
    tokens_before: int = 0


@dataclass(slots=True)
class DraftDispatch:
    """What the source recorded about one subagent dispatch besides its tool_use and tool_result."""

    child_native_id: str = ""  # the child session's native id, when the source links it
    agent: str = ""  # the subagent type the runtime reports (the dispatch input may name it too)
    status: str = ""  # the source's own status word (completed, failed, async_launched, ...)
    duration_ms: int = 0
    total_tokens: int = 0
    tool_uses: int = 0
    # The child's final assistant text, when the child session is in the same file; else "".
    child_excerpt: str = ""
    model: str = ""


@dataclass(slots=True)
class DraftRecord:
    """One JSON value of the source as a raw log event of its session.

    `line` is the 1-based line of a JSON Lines file (0 inside a whole-document format: there the
    records keep the order the parser opened them in). `raw` is the value as read (a str for a line
    that is not JSON), `raw_bytes` its exact source bytes when the line was one value.
    """

    line: int
    type: str
    raw: Any
    raw_bytes: bytes = b""
    time_ms: int = 0
    node: bool = False  # the runtime sends it to the model: on the surface until something replaces it
    replaces_all: bool = False  # a compaction summary: replaces every surface node before it, and cites them
    replaces_keys: list[str] = field(default_factory=list)  # the records it replaces (in any order), by key
    keys: list[str] = field(default_factory=list)  # names later records cite it by
    source_keys: list[str] = field(default_factory=list)  # earlier records it cites, in recorded order
    message: DraftMessage | None = None
    blocks: list[DraftBlock] = field(default_factory=list)  # the blocks it added to `message`
    notes: list[str] = field(default_factory=list)  # semantic text that is not a block (errors, queued prompts)
    title_kind: str = ""  # a title record: ai-title | custom-title | summary
    title: str = ""


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
    header_title_kind: str = ""  # the title is the source's header field: its title snapshot kind (export)
    repo: str = ""
    cwd: str = ""
    branch: str = ""
    parent_session_id: str = ""
    span: TimeSpan = field(default_factory=TimeSpan)  # every timestamp of the source, messages or not
    messages: list[DraftMessage] = field(default_factory=list)
    # Every tool_use in arrival order, as (message seq, block index): a Claude Code message can
    # grow after later messages exist, so message order alone would renumber actions on append.
    tool_uses: list[tuple[int, int]] = field(default_factory=list)
    agent: str = ""  # a child session: the subagent type that ran it
    events: list[DraftEvent] = field(default_factory=list)
    compactions: list[DraftCompaction] = field(default_factory=list)
    dispatches: dict[str, DraftDispatch] = field(default_factory=dict)
    records: list[DraftRecord] = field(default_factory=list)
    current: DraftRecord | None = None  # the record being read: messages and blocks attach to it

    def begin(self, record: DraftRecord) -> DraftRecord:
        """Open the record the next messages, blocks and failures are read from."""
        self.records.append(record)
        self.current = record
        return record

    def add_message(self, message: DraftMessage) -> DraftMessage:
        message.seq = len(self.messages)
        self.messages.append(message)
        if self.current is not None and self.current.message is None:
            self.current.message = message
        return message

    def add_block(self, message: DraftMessage, block: DraftBlock) -> None:
        """Append a block; a text block with fenced code becomes its text and code pieces."""
        if self.current is not None:
            self.current.blocks.append(block)
        if block.type == "tool_use":
            self.tool_uses.append((message.seq, len(message.blocks)))
        elif block.type == "text" and has_fence(block.text):
            pieces = split_fenced(block.text)
            if pieces:
                message.blocks.extend(DraftBlock(kind, text=text, language=lang) for kind, text, lang in pieces)
                return
        message.blocks.append(block)

    def record(
        self,
        kind: str,
        time_ms: int = 0,
        text: str = "",
        *,
        object_ref: str = "",
        failed: bool = False,
        message_seq: int = -1,
    ) -> DraftEvent:
        """Record a runtime event after the messages added so far (read from `message_seq`, if any)."""
        event = DraftEvent(kind, time_ms, text, object_ref, failed, len(self.messages) - 1, message_seq)
        self.events.append(event)
        if (failed or kind == "turn_aborted") and text and self.current is not None:
            self.current.notes.append(text)
        return event

    def observe_time(self, ms: int) -> None:
        self.span.observe(ms)


def unread_record(record: Any, fmt: str, kind: str) -> DraftRecord:
    """The log-only event of a value a parser could not read (a `reader.Record` with `malformed`, or a
    value that is not an object): its type is `<format>:<kind>`, its raw JSON the value (a malformed
    line's text as a JSON string)."""
    return DraftRecord(record.line, f"{fmt}:{kind}", record.data, b"" if record.malformed else record.raw)


@dataclass(slots=True)
class SourceResult:
    """What a parser made of one file."""

    sessions: list[DraftSession] = field(default_factory=list)
    issues: list[ingest_pb2.IngestIssue] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


# Typed reads of untrusted JSON: a value of the wrong type reads as empty, never raises.


class BranchedConversation:
    """A conversation whose messages form a tree (an edit or a regeneration forks it): its current
    thread's messages come first, in order, then every other branch's in tree order. Subclasses say
    how the tree is read; `build` is the same for every export that has one."""

    draft: DraftSession

    def build(self) -> DraftSession:
        thread = self._current_thread()
        self._records(thread)
        on_thread = set(thread)
        for node in thread:
            self._add(node)
        for node in self._tree_order():
            if node not in on_thread:
                self._add(node)
        self.draft.current = None
        return self.draft

    def _current_thread(self) -> list[str]:
        raise NotImplementedError

    def _records(self, thread: list[str]) -> None:
        """The raw log events of the conversation, given its current thread."""
        raise NotImplementedError

    def _tree_order(self) -> Iterator[str]:
        raise NotImplementedError

    def _add(self, node: str) -> None:
        """The node's message (and blocks), when it has one."""
        raise NotImplementedError


def parse_conversations(
    document: Any, path: str, fmt: str, id_name: str, build: Callable[[dict[str, Any], SourceResult], DraftSession]
) -> SourceResult:
    """A whole-document export of conversations (an array of them, or one): a session each, built by
    `build`. A conversation that is not an object, has no `id_name` or breaks its builder is an issue;
    one without messages is counted as `<fmt>:empty-conversation`."""
    result = SourceResult()
    conversations = document if isinstance(document, list) else [document]
    for index, data in enumerate(conversations):
        where = f"conversation #{index}"
        if not isinstance(data, dict):
            result.issues.append(issue(path, 0, "invalid_record", f"{where} is not an object"))
            continue
        try:
            draft = build(data, result)
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as error:
            result.issues.append(issue(path, 0, "invalid_record", f"{where} is unusable: {error}"))
            continue
        if not draft.native_id:
            result.issues.append(issue(path, 0, "invalid_record", f"{where} has no {id_name}"))
        elif draft.messages:
            result.sessions.append(draft)
        else:
            result.skipped[f"{fmt}:empty-conversation"] += 1
    return result


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def json_or_none(text: str | bytes) -> Any:
    """A JSON value kept inside a string of the source (a tool's arguments, a UI record's text); None
    when the string is empty or not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def as_cost(value: Any) -> float:
    """A cost in US dollars the source recorded; anything but a positive number reads as 0."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0.0


def as_count(value: Any) -> int:
    """A positive integer such as a token count; anything else (or absurdly large) reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**53 else 0


def to_ms(value: Any) -> int:
    """Epoch milliseconds from an ISO-8601 string or an epoch number (seconds or ms); 0 if unknown."""
    if isinstance(value, str):
        if not value:
            return 0
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return 0
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)  # the agents write UTC; a zone-less stamp is read as such
        try:
            return int(parsed.timestamp() * 1000)
        except (OverflowError, OSError, ValueError):
            return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not 0 < value < 1e15:  # also rejects NaN and infinities
        return 0
    return int(value if value > 1e11 else value * 1000)


def json_text(value: Any) -> str:
    """JSON text of a parsed value; keys keep their source order so the text is deterministic."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # nested deeper than orjson writes (254 levels)
        try:
            return json.dumps(value, ensure_ascii=False)
        except (RecursionError, ValueError, TypeError):
            return "null"
