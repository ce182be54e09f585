"""A session's raw log events (docs/sessions.md#events): seqs, times, the surface fold, links, semantic text, raw JSON.

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
- raw JSON: the record's exact bytes when its line was one value (the line byte for byte), else the
  canonical JSON of the value its parser read; the payloads its format marks as media or opaque data
  are held apart (quarry.ingest.payloads): the event keeps a placeholder and its place (`held`), the
  session the bytes (`held_payloads`, once per digest), so the record can be read back whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from quarry.core import refs
from quarry.ingest import payloads
from quarry.ingest.sources import DraftBlock, DraftRecord, DraftSession
from quarry.v1 import units_pb2

CURRENT = "current"
SHADOWED = "shadowed"
LOG_ONLY = "log-only"
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
    """Fill `session.log_events`, `session.held_payloads` and `session.title_snapshot` from the folded records."""
    session_id = session.id
    last_time = 0
    title: tuple[DraftRecord, int, int] | None = None
    events = session.log_events
    held_digests: set[str] = set()
    for seq, record in enumerate(records):
        time_ms = record.time_ms
        inferred = time_ms <= 0
        if inferred:
            time_ms = last_time
        else:
            last_time = time_ms
        held = payloads.hold_apart(record_bytes(record))
        event = events.add(seq=seq, type=record.type, surface=folded.surfaces[seq], raw_json=held.raw)
        if held.places:
            event.held.extend(held.places)
            for digest, data in held.payloads.items():
                if digest not in held_digests:
                    held_digests.add(digest)
                    session.held_payloads.add(sha256=digest, data=data)
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


def record_bytes(record: DraftRecord) -> bytes:
    """The record as its source wrote it (`raw_bytes`), else the canonical JSON of its value ("null" for
    a value JSON cannot hold, such as a database's binary column)."""
    if record.raw_bytes:
        return record.raw_bytes
    try:
        return orjson.dumps(record.raw)
    except (TypeError, orjson.JSONEncodeError):
        return b"null"
