"""A session's raw log events (seed 002): seqs, times, the surface fold, links, semantic text, raw JSON.

Every origin goes through `fold` and `event_protos`, so one rule holds for all of them:
- seq: a session's records in source order (line order; a whole-document format keeps the order its
  parser read them in), numbered from 0. A grown file only adds records after the ones it had, so
  appending never renumbers.
- time: the record's own time (or a nested one its parser found); else the previous event's time,
  flagged `time_inferred` (0 before any timed event).
- surface, by one fold over the records in seq order: a surface node (a record the runtime sends to
  the model) joins the surface; a record that `replaces_all` (a compaction summary) first removes
  every node on the surface and cites them; `replaces_keys` (a branch that replaced its siblings) name
  the nodes a record removed, wherever they are in the log. Nodes nothing removed are `current`,
  removed ones `shadowed` (their `replaced_by` is the record that removed them), every other record
  is `log-only`. A message takes the surface of the record that made it, so every reader of a
  message's surface agrees with the events.
- links: a record cites earlier records by the keys they were given (a uuid, a tool call id); a key
  nobody gave earlier cites nothing. `replaced_event_seqs` are the direct removals.
- semantic text: the text of the blocks a record added (dialogue, reasoning, tool calls and their
  results) and its notes (errors, queued prompts); structural records have none.
- raw JSON: the record's exact bytes when its line was one value; large base64 payloads (images)
  become {"omitted": "base64", media_type, bytes, sha256}.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from quarry.core import refs
from quarry.ingest.sources import DraftBlock, DraftRecord, DraftSession
from quarry.v1 import units_pb2

CURRENT = "current"
SHADOWED = "shadowed"
LOG_ONLY = "log-only"
SCAN_ABOVE_BYTES = 4096  # a record smaller than this holds no payload worth replacing
PAYLOAD_CHARS = 1024  # a base64 string at least this long is a binary payload
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_MEDIA_KEYS = ("media_type", "mimeType", "mime_type")
# Marks of an inline payload of any size: a data URL, a typed data field ({media_type, data}).
_DATA_URL = b";base64,"
_INLINE_DATA = b'"data"'
_TEXT_BLOCKS = frozenset({"text", "code", "thinking", "tool_result"})


@dataclass(slots=True)
class Fold:
    """The surface and links of a session's records, indexed by seq."""

    surfaces: list[str]
    replaced_by: list[int]  # -1: not replaced
    replaced: list[list[int]]
    sources: list[list[int]]


def ordered(draft: DraftSession) -> list[DraftRecord]:
    """The session's records in seq order (a stable sort: records of one line keep their order)."""
    return sorted(draft.records, key=lambda record: record.line)


def fold(records: Sequence[DraftRecord]) -> Fold:
    count = len(records)
    replaced_by = [-1] * count
    replaced: list[list[int]] = [[] for _ in range(count)]
    sources: list[list[int]] = [[] for _ in range(count)]
    seq_of: dict[str, int] = {}
    surface: list[int] = []
    for seq, record in enumerate(records):
        cited = sources[seq]
        for key in record.source_keys:
            source = seq_of.get(key)
            if source is not None and source not in cited:
                cited.append(source)
        if record.replaces_all:
            for node in surface:
                replaced_by[node] = seq
                replaced[seq].append(node)
                if node not in cited:
                    cited.append(node)
            surface = []
        if record.node:
            surface.append(seq)
        for key in record.keys:
            seq_of.setdefault(key, seq)
    for seq, record in enumerate(records):
        for key in record.replaces_keys:
            node = seq_of.get(key)
            if node is None or node == seq or replaced_by[node] >= 0 or not records[node].node:
                continue
            replaced_by[node] = seq
            replaced[seq].append(node)
        replaced[seq].sort()
    surfaces = [
        (SHADOWED if replaced_by[seq] >= 0 else CURRENT) if record.node else LOG_ONLY
        for seq, record in enumerate(records)
    ]
    return Fold(surfaces, replaced_by, replaced, sources)


def apply_surfaces(records: Sequence[DraftRecord], folded: Fold) -> None:
    """Give each message the surface of the record that made it (the first record holding it)."""
    seen: set[int] = set()
    for seq, record in enumerate(records):
        message = record.message
        if message is not None and id(message) not in seen:
            seen.add(id(message))
            message.surface = folded.surfaces[seq]


def add_events(
    session: units_pb2.Session, records: Sequence[DraftRecord], folded: Fold, header_title_kind: str
) -> None:
    """Fill `session.log_events` and `session.title_snapshot` from the folded records."""
    session_id = session.id
    last_time = 0
    title: tuple[DraftRecord, int, int] | None = None
    events = session.log_events
    for seq, record in enumerate(records):
        time_ms = record.time_ms
        inferred = time_ms <= 0
        if inferred:
            time_ms = last_time
        else:
            last_time = time_ms
        event = events.add(seq=seq, type=record.type, surface=folded.surfaces[seq], raw_json=raw_json(record))
        if time_ms:
            event.time_ms = time_ms
        if inferred:
            event.time_inferred = True
        if record.line:
            event.line = record.line
        if record.message is not None:
            event.message_id = refs.message_id(session_id, record.message.seq)
        text = semantic_text(record)
        if text:
            event.text = text
        if folded.replaced_by[seq] >= 0:
            event.replaced_by = folded.replaced_by[seq]
        if folded.replaced[seq]:
            event.replaced_event_seqs.extend(folded.replaced[seq])
        if folded.sources[seq]:
            event.source_event_seqs.extend(folded.sources[seq])
        if record.title_kind and record.title:
            title = (record, seq, time_ms)
    if title is not None:
        record, seq, time_ms = title
        session.title_snapshot.CopyFrom(
            units_pb2.TitleSnapshot(title=record.title, kind=record.title_kind, seq=seq, time_ms=time_ms)
        )
    elif header_title_kind and session.title:
        session.title_snapshot.CopyFrom(
            units_pb2.TitleSnapshot(title=session.title, kind=header_title_kind, time_ms=session.created_ms)
        )


def semantic_text(record: DraftRecord) -> str:
    parts = [text for block in record.blocks if (text := block_text(block))]
    joined = "\n".join(parts)
    for note in record.notes:
        if note and note not in joined:
            parts.append(note)
            joined = "\n".join(parts)
    return joined


def block_text(block: DraftBlock) -> str:
    if block.type in _TEXT_BLOCKS:
        return block.text
    if block.type == "tool_use":
        call = " ".join(part for part in (block.tool_name, block.text) if part)
        return f"{call}\n{block.command}" if block.command and block.command not in block.text else call
    return ""


def raw_json(record: DraftRecord) -> bytes:
    raw = record.raw_bytes.strip()
    if raw and len(raw) < SCAN_ABOVE_BYTES and _INLINE_DATA not in raw and _DATA_URL not in raw:
        return raw
    if isinstance(record.raw, str) and not raw:
        return orjson.dumps(record.raw)
    if raw and record.raw is None:
        return raw
    value, changed = _omit_payloads(record.raw)
    if raw and not changed:
        return raw
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return raw or b"null"


def _omit_payloads(value: Any, depth: int = 0) -> tuple[Any, bool]:
    """The value with every base64 payload replaced by what it was; whether anything was replaced."""
    if depth > 64:
        return value, False
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        typed = _media_type(value, "")
        for key, item in value.items():
            inline = typed and key == "data" and isinstance(item, str)  # {mimeType, data}: any size
            if isinstance(item, str) and (inline or len(item) >= PAYLOAD_CHARS) and _is_payload(item):
                out[key] = _omitted(item, _media_type(value, item))
                changed = True
            else:
                out[key], inner = _omit_payloads(item, depth + 1)
                changed = changed or inner
        return (out, True) if changed else (value, False)
    if isinstance(value, list):
        items = [_omit_payloads(item, depth + 1) for item in value]
        if any(changed for _, changed in items):
            return [item for item, _ in items], True
        return value, False
    if isinstance(value, str) and len(value) >= PAYLOAD_CHARS and _is_payload(value):
        return _omitted(value, _media_type({}, value)), True
    return value, False


def _is_payload(text: str) -> bool:
    if text.startswith("data:"):
        return ";base64," in text[:128]
    return bool(text) and _BASE64.fullmatch(text) is not None


def _media_type(container: dict[str, Any], text: str) -> str:
    if text.startswith("data:"):
        return text[5:].split(";", 1)[0]
    for key in _MEDIA_KEYS:
        media_type = container.get(key)
        if isinstance(media_type, str):
            return media_type
    return ""


def _omitted(text: str, media_type: str) -> dict[str, Any]:
    body = text.split(",", 1)[1] if text.startswith("data:") else text
    body = "".join(body.split())
    return {
        "omitted": "base64",
        "media_type": media_type,
        "bytes": len(body.rstrip("=")) * 3 // 4,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
