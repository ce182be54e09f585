"""A session taken apart in one pass: its SQLite rows (store_schema.py) and its Tantivy documents (schema.py).

This is the ingest hot path. Every read of a protobuf field builds a new Python object, and every
iteration of a repeated field builds its wrappers anew, so each message, block and action is visited
once and gives everything both stores need; the texts it builds are exactly `schema.dialogue_text`
and `schema.action_text` with their Chinese words segmented (`analyzer.segment`; the dialogue text
goes to both its exact and its stemmed field), and the session's `embed_count` is the number of `quarry.core.dialogue`
items (tests hold them to it).

Row tuples follow the column lists in store_schema.py (`SESSION_COLUMNS`, `MESSAGE_COLUMNS`, `BLOCK_COLUMNS`,
`ACTION_COLUMNS` + `path_norm`, `UNIT_TABLES`); documents are JSON for `IndexWriter.add_json`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
import zstandard

from quarry.core.dialogue import EMBEDDED_BLOCK_TYPES, embeds
from quarry.core.tokens import DEFAULT_SCOPE
from quarry.core.vocab import DIALOGUE_BLOCK_TYPES
from quarry.index.lexical import analyzer, schema
from quarry.index.lexical.store_schema import COUNT_FIELDS
from quarry.v1 import units_pb2

_DIALOGUE_TYPES = frozenset(DIALOGUE_BLOCK_TYPES)


@dataclass
class SessionRecords:
    """Everything one session writes; `session_row` is None when only documents were asked for."""

    session_ord: int
    session_row: tuple[object, ...] | None
    tags: list[tuple[str, int]]
    messages: list[tuple[object, ...]]
    blocks: list[tuple[object, ...]]
    actions: list[tuple[object, ...]]
    units: dict[str, list[tuple[object, ...]]]  # derived-unit rows by table (store_schema.UNIT_TABLES)
    documents: list[str]
    events: list[tuple[object, ...]]  # log_events rows
    event_chunks: list[tuple[object, ...]]  # log_event_chunks rows
    payloads: list[tuple[str, bytes]]  # the payloads its raw records hold apart: (sha256, bytes), once each


# Events per compressed chunk: a window of a few events reads one or two chunks, and a chunk holds
# enough similar records for compression to find their repetitions.
EVENTS_PER_CHUNK = 64
CHUNK_BYTES = 256 * 1024
CHUNK_COMPRESSION = 6  # zstd level: smaller than level 3 on session logs, still fast to write

_local = threading.local()

# What a summary leaves out: it travels with every search hit.
_BULK_FIELDS = (
    "messages",
    "actions",
    "files",
    "runs",
    "events",
    "snapshots",
    "delegations",
    "log_events",
    "held_payloads",
)


def summary_blob(session: units_pb2.Session) -> bytes:
    """The session serialized without its messages, actions and derived units."""
    summary = units_pb2.Session()
    summary.CopyFrom(session)
    for name in _BULK_FIELDS:
        summary.ClearField(name)
    return summary.SerializeToString()


def event_rows(
    session: units_pb2.Session, session_ord: int, message_ord_of: dict[str, int]
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The session's log_events rows (filter columns and the event's head: everything but its text and
    raw record) and log_event_chunks rows (text and raw records of consecutive events, compressed; a raw
    record with the places of the payloads it holds apart, whose bytes the store keeps beside)."""
    rows: list[tuple[object, ...]] = []
    chunks: list[tuple[object, ...]] = []
    texts, raws = units_pb2.SessionEventList(), units_pb2.SessionEventList()
    chunk_bytes = 0
    first_seq = 0
    compress = _compressor().compress
    for event in session.log_events:
        seq, text, raw = event.seq, event.text, event.raw_json
        message_id = event.message_id
        message_ord = message_ord_of.get(message_id, 0) if message_id else 0
        links = units_pb2.SessionEvent(
            line=event.line,
            time_inferred=event.time_inferred,
            replaced_event_seqs=event.replaced_event_seqs,
            source_event_seqs=event.source_event_seqs,
        )
        if event.HasField("replaced_by"):
            links.replaced_by = event.replaced_by
        message_seq = int(message_id.rpartition(":m")[2]) if message_id else -1
        rows.append(
            (
                session_ord,
                message_ord,
                seq,
                event.type,
                event.time_ms,
                event.surface,
                message_seq,
                links.SerializeToString(),
            )
        )
        if not raws.events:
            first_seq = seq
        texts.events.add(seq=seq, text=text)
        raws.events.add(seq=seq, raw_json=raw, held=event.held)
        chunk_bytes += len(raw) + len(text)
        if len(raws.events) >= EVENTS_PER_CHUNK or chunk_bytes >= CHUNK_BYTES:
            chunks.append(
                (session_ord, first_seq, compress(texts.SerializeToString()), compress(raws.SerializeToString()))
            )
            texts, raws = units_pb2.SessionEventList(), units_pb2.SessionEventList()
            chunk_bytes = 0
    if raws.events:
        chunks.append((session_ord, first_seq, compress(texts.SerializeToString()), compress(raws.SerializeToString())))
    return rows, chunks


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's compressor (a zstd context is not for concurrent use)."""
    compressor: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=CHUNK_COMPRESSION)
    return compressor


def unit_rows(session: units_pb2.Session, session_ord: int) -> dict[str, list[tuple[object, ...]]]:
    """The rows of the session's derived units, by table, in the columns of store_schema.UNIT_TABLES."""
    normalize_path = analyzer.normalize_path
    return {
        "files": [
            (
                f.id,
                session_ord,
                normalize_path(f.path) if f.path else "",
                " ".join(sorted(f.categories)),
                f.first_time_ms,
                f.last_time_ms,
                f.SerializeToString(),
            )
            for f in session.files
        ],
        "runs": [
            (r.id, session_ord, r.role, r.status, r.agent, r.child_session_id, r.started_ms, r.SerializeToString())
            for r in session.runs
        ],
        "observed_events": [
            (e.id, session_ord, e.seq, e.kind, e.delivery_state, e.time_ms, e.SerializeToString())
            for e in session.events
        ],
        "context_snapshots": [
            (c.id, session_ord, c.seq, c.boundary, c.time_ms, c.SerializeToString()) for c in session.snapshots
        ],
        "delegations": [
            (
                d.id,
                session_ord,
                d.child_session_id,
                d.mapping_state,
                d.result_state,
                d.agent,
                d.time_ms,
                d.SerializeToString(),
            )
            for d in session.delegations
        ],
    }


def decompose(
    session: units_pb2.Session,
    session_ord: int,
    message_ords: Sequence[int],
    content_hash: str = "",
    *,
    change_seq: int = 0,
    rows: bool = True,
) -> SessionRecords:
    """The session's rows (with `rows`) and documents: one document per message with dialogue or
    action text. The session row carries `change_seq` and is marked pending for Tantivy."""
    action_rows, commands = _actions(session, session_ord, rows)
    messages = _Messages(session, session_ord, commands, rows)
    for m, message_ord in zip(session.messages, message_ords, strict=True):
        messages.add(m, message_ord)
    if not rows:
        return SessionRecords(
            session_ord, None, [], [], messages.blocks, action_rows, {}, messages.documents, [], [], []
        )
    events, event_chunks = [], []
    if session.log_events:
        message_ord_of = {row[1]: row[0] for row in messages.rows}
        events, event_chunks = event_rows(session, session_ord, message_ord_of)
    return SessionRecords(
        session_ord=session_ord,
        session_row=_session_row(session, session_ord, content_hash, change_seq, messages),
        tags=[(tag, session_ord) for tag in session.tags],
        messages=messages.rows,
        blocks=messages.blocks,
        actions=action_rows,
        units=unit_rows(session, session_ord),
        documents=messages.documents,
        events=events,
        event_chunks=event_chunks,
        payloads=[(p.sha256, p.data) for p in session.held_payloads],
    )


def _actions(
    session: units_pb2.Session, session_ord: int, rows: bool
) -> tuple[list[tuple[object, ...]], dict[str, str]]:
    """The session's action rows (with `rows`), and the command of each tool_use block that has one
    (the action text of its message shows it), by block id."""
    action_rows: list[tuple[object, ...]] = []
    commands: dict[str, str] = {}
    for a in session.actions:
        block_id = a.block_id
        command = a.command
        if block_id and command:
            commands[block_id] = command
        if rows:
            path = a.path
            action_rows.append(
                (
                    a.id,
                    session_ord,
                    a.message_id,
                    block_id,
                    a.seq,
                    a.category,
                    a.tool,
                    command,
                    path,
                    a.output,
                    a.failed,
                    a.input_json,
                    a.time_ms,
                    a.exit_code if a.HasField("exit_code") else None,
                    a.followup,
                    analyzer.normalize_path(path) if path else "",
                )
            )
    return action_rows, commands


class _Messages:
    """The messages of one session taken apart, one `add` each: their rows and their blocks' (with
    `rows`), their documents, and how many of them the vector node embeds."""

    def __init__(self, session: units_pb2.Session, session_ord: int, commands: dict[str, str], rows: bool) -> None:
        self.session_ord = session_ord
        self.commands = commands
        self.with_rows = rows
        self.rows: list[tuple[object, ...]] = []
        self.blocks: list[tuple[object, ...]] = []
        self.documents: list[str] = []
        self.embed_count = 0
        # What every document of the session carries (session-constant filter fields).
        self.session_fields = {
            schema.ORIGIN: session.origin.lower(),
            schema.SCOPE: session.scope or DEFAULT_SCOPE,
            schema.REPO: session.repo.lower(),
            schema.TAG: [t.lower() for t in session.tags],
        }

    def add(self, m: units_pb2.Message, message_ord: int) -> None:
        dialogue, embedded, acted = self._texts(m, message_ord)
        if embedded and self.with_rows and embeds(m.role, m.surface, embedded):
            self.embed_count += 1
        if self.with_rows:
            self.rows.append(
                (
                    message_ord,
                    m.id,
                    self.session_ord,
                    m.role,
                    m.time_ms,
                    m.duration_ms,
                    m.input_tokens,
                    m.output_tokens,
                    m.cache_read_tokens,
                    m.cache_write_tokens,
                    m.SerializeToString(),
                )
            )
        if dialogue or acted:
            segment = analyzer.segment
            text = segment("\n".join(dialogue))
            document = {
                **self.session_fields,
                schema.SESSION_ORD: self.session_ord,
                schema.MESSAGE_ORD: message_ord,
                schema.ROLE: m.role.lower(),
                schema.TIME: m.time_ms,
                schema.TEXT: text,
                schema.TEXT_STEM: text,
                schema.ACTIONS: segment("\n".join(acted)),
            }
            self.documents.append(orjson.dumps(document).decode())

    def _texts(self, m: units_pb2.Message, message_ord: int) -> tuple[list[str], list[str], list[str]]:
        """The message's dialogue texts, those of them the vector node embeds, and its action texts
        (`schema.dialogue_text` / `schema.action_text` in parts); its block rows are added on the way."""
        dialogue: list[str] = []
        embedded: list[str] = []
        acted: list[str] = []
        commands = self.commands
        add_block = self.blocks.append if self.with_rows else None
        normalize_path = analyzer.normalize_path
        time_ms = m.time_ms
        for b in m.blocks:
            kind = b.type
            text = b.text
            tool = b.tool_name
            path = b.path
            if kind in _DIALOGUE_TYPES:
                if text:
                    dialogue.append(text)
                    if kind in EMBEDDED_BLOCK_TYPES:  # a subset of the dialogue types
                        embedded.append(text)
            elif kind == "tool_use":
                if tool:
                    acted.append(tool)
                if text:
                    acted.append(text)
                if path:
                    acted.append(path)
                command = commands.get(b.id, "") if commands else ""
                if command and command not in text:
                    acted.append(command)
            elif kind == "tool_result" and text:
                acted.append(text)
            if add_block is not None:
                add_block(
                    (b.id, self.session_ord, message_ord, kind, tool, normalize_path(path) if path else "", time_ms)
                )
        return dialogue, embedded, acted


def _session_row(
    session: units_pb2.Session, session_ord: int, content_hash: str, change_seq: int, messages: _Messages
) -> tuple[object, ...]:
    """The session's row, in the columns of store_schema.SESSION_COLUMNS (pending for Tantivy)."""
    counts = session.counts
    return (
        session_ord,
        session.id,
        session.origin,
        analyzer.fold(session.title),
        session.repo,
        session.updated_ms,
        session.duration_ms,
        session.cwd,
        session.created_ms,
        session.parent_session_id,
        session.source_path,
        session.scope or DEFAULT_SCOPE,
        session.host,
        session.pusher,
        *(getattr(counts, name) for name in COUNT_FIELDS),
        change_seq,
        messages.embed_count,
        content_hash,
        len(messages.documents),
        1,  # tantivy_pending
        summary_blob(session),
    )
