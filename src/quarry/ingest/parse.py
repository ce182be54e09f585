"""The ingest entry point: one file in, canonical sessions and a report of what was skipped out.

`parse_file` never raises on content: unreadable files, unknown formats, bad lines and unusable
records all become `IngestIssue`s (and so does a parser's failure on a damaged file: one file's damage
never costs another file its sessions), and record types the archive does not model are counted in
`skipped_record_types` as `<format>:<type>`. Parsing is deterministic: the same bytes give
byte-identical sessions (ids, content hash).
"""

from __future__ import annotations

import collections
import io
import logging
import sqlite3
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quarry.ingest import detect as formats
from quarry.ingest.discover import iter_source_files, read_regular
from quarry.ingest.normalize import build_session
from quarry.ingest.reader import cut_document, issue
from quarry.ingest.sources import (
    SourceResult,
    ai_studio,
    aider,
    chatgpt,
    claude_ai,
    claude_code,
    cline,
    codex,
    continue_dev,
    copilot,
    copilot_cli,
    crush,
    cursor_cli,
    cursor_db,
    cursor_markdown,
    cursor_transcripts,
    cursor_transcripts_text,
    gemini,
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
from quarry.ingest.sources.sqlite_snapshot import is_sqlite, missing_pages, open_snapshot, table_columns
from quarry.v1 import ingest_pb2, units_pb2

ZIP_MAGIC = b"PK\x03\x04"
MAX_MEMBER_BYTES = 1 << 30  # an archive member larger than this (decompressed) is refused, not read
_log = logging.getLogger(__name__)


@dataclass
class ParseResult:
    path: str
    format: str  # one of detect.FORMATS
    sessions: list[units_pb2.Session] = field(default_factory=list)
    issues: list[ingest_pb2.IngestIssue] = field(default_factory=list)
    skipped_record_types: collections.Counter[str] = field(default_factory=collections.Counter)


def parse_file(path: Path) -> ParseResult:
    """Parse one file of any supported format, recognized from its content."""
    name = str(path)
    try:
        data = read_regular(Path(path))  # a pipe or a device is refused unread: it would hang the read
    except OSError as error:
        reason = error.strerror or str(error)
        return ParseResult(name, formats.UNKNOWN, issues=[issue(name, 0, "unreadable", reason)])
    return parse_bytes(data, name)


def parse_bytes(data: bytes, path: str) -> ParseResult:
    """Parse file content already in memory; `path` is recorded as the sessions' source. A ZIP archive
    (a data export as downloaded) is read member by member (`parse_archive`). A parser that fails on
    damaged content fails this file alone: the failure is logged and becomes the file's issue."""
    try:
        return _parse_bytes(data, path)
    except Exception as error:  # any parser's failure on one damaged file is that file's issue alone
        _log.exception("parsing %s failed", path)
        reason = f"could not be parsed (damaged?): {type(error).__name__}: {error}"
        return ParseResult(path, formats.UNKNOWN, issues=[issue(path, 0, "unreadable", reason)])


def _parse_bytes(data: bytes, path: str) -> ParseResult:
    if data.startswith(ZIP_MAGIC):
        return parse_archive(data, path)
    if is_sqlite(data):
        return parse_database(data, path)
    detection = formats.detect(data, path)
    if detection.format == formats.UNKNOWN:
        if cut := cut_document(data):
            return ParseResult(path, formats.UNKNOWN, issues=[issue(path, 0, "unreadable", cut)])
        return _unknown(path, detection.reason)
    return _result(path, detection.format, _parse_source(detection, path), detection.issues)


def parse_database(data: bytes, path: str) -> ParseResult:
    """A tool's SQLite database (Cursor, Crush, OpenCode Go, Goose), read from a snapshot of it and of its
    write-ahead log (`sqlite_snapshot`): the file is never opened for writing."""
    missing = missing_pages(data)
    cut = (
        [issue(path, 0, "unreadable", f"the database file is cut short: {missing} page(s) missing")] if missing else []
    )
    try:
        with open_snapshot(data, path) as conn:
            kind = formats.database_format(table_columns(conn))
            if kind == formats.UNKNOWN:
                return _unknown(path, "a SQLite database of no supported tool")
            return _result(path, kind, _DATABASE_PARSERS[kind](conn, path), cut)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
        # SQLite's message about a damaged schema quotes its bytes, and Python cannot decode bad ones
        problem = "its schema holds bytes that are no UTF-8" if isinstance(error, UnicodeDecodeError) else error
        return ParseResult(
            path, formats.UNKNOWN, issues=[issue(path, 0, "unreadable", f"not a readable SQLite database: {problem}")]
        )


def _unknown(path: str, reason: str) -> ParseResult:
    return ParseResult(
        path, formats.UNKNOWN, issues=[issue(path, 0, "unknown_format", f"not a recognized session log: {reason}")]
    )


def _result(path: str, kind: str, source: SourceResult, issues: Iterable[ingest_pb2.IngestIssue] = ()) -> ParseResult:
    return ParseResult(
        path=path,
        format=kind,
        sessions=[build_session(draft) for draft in source.sessions],
        issues=sorted([*issues, *source.issues], key=lambda found: found.line),
        skipped_record_types=source.skipped,
    )


def parse_archive(data: bytes, path: str) -> ParseResult:
    """A ZIP archive's JSON members, each parsed as a file of its own (sessions' source: `<zip>!<member>`):
    the sessions of those that are session logs (an export's `conversations.json`); the other members
    (an export's users.json, projects.json, …) are counted as `zip:other-member`. An archive that
    cannot be opened, or holds no session log, is an issue."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = sorted(
            (info for info in archive.infolist() if not info.is_dir() and info.filename.endswith(".json")),
            key=lambda info: info.filename,
        )
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        return ParseResult(path, formats.UNKNOWN, issues=[issue(path, 0, "unreadable", f"not a readable ZIP: {error}")])
    result = ParseResult(path, formats.UNKNOWN)
    for info in members:
        where = f"{path}!{info.filename}"
        if info.file_size > MAX_MEMBER_BYTES:
            result.issues.append(issue(where, 0, "unreadable", f"{info.file_size} bytes: over {MAX_MEMBER_BYTES}"))
            continue
        try:
            member = archive.read(info)
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError) as error:
            result.issues.append(issue(where, 0, "unreadable", f"cannot be read from the archive: {error}"))
            continue
        parsed = parse_bytes(member, where) if not member.startswith(ZIP_MAGIC) else None
        if parsed is None or parsed.format == formats.UNKNOWN:
            result.skipped_record_types["zip:other-member"] += 1
            continue
        result.format = result.format if result.format != formats.UNKNOWN else parsed.format
        result.sessions.extend(parsed.sessions)
        result.issues.extend(parsed.issues)
        result.skipped_record_types.update(parsed.skipped_record_types)
    if result.format == formats.UNKNOWN and not result.issues:
        reason = (
            f"not a recognized session log: a ZIP archive with no session log among its {len(members)} JSON members"
        )
        result.issues.append(issue(path, 0, "unknown_format", reason))
    return result


_DOCUMENT_PARSERS: dict[str, Callable[[Any, str], SourceResult]] = {
    formats.CHATGPT: chatgpt.parse,
    formats.CLAUDE_AI: claude_ai.parse,
    formats.GEMINI: gemini.parse,
    formats.COPILOT_CHAT: copilot.parse,
    formats.OPENCODE: opencode.parse,
    formats.CLINE: cline.parse,
    formats.ROO_CODE: cline.parse,
    formats.CONTINUE: continue_dev.parse,
    formats.GROK: grok.parse,
    formats.AI_STUDIO: ai_studio.parse,
}
_TEXT_PARSERS: dict[str, Callable[[str, str], SourceResult]] = {
    formats.AIDER: aider.parse,
    formats.CURSOR: cursor_markdown.parse,
    formats.COPILOT_CLI: copilot_cli.parse_workspace,
    formats.CURSOR_TRANSCRIPT: cursor_transcripts_text.parse,
}
_DATABASE_PARSERS: dict[str, Callable[[sqlite3.Connection, str], SourceResult]] = {
    formats.ZED: zed.parse,
    formats.KIRO_CLI: kiro_cli.parse,
    formats.CURSOR: cursor_db.parse,
    formats.CRUSH: crush.parse,
    formats.GOOSE: goose.parse,
    formats.OPENCODE_DB: opencode_db.parse,
    formats.CURSOR_CLI: cursor_cli.parse,
}


_RECORDS_PARSERS: dict[str, Callable[[Iterable[Any], str], SourceResult]] = {
    formats.VSCODE_CHAT_LOG: vscode_chat.parse,
    formats.QWEN: qwen.parse,
    formats.COPILOT_CLI: copilot_cli.parse,
    formats.KIMI: kimi.parse,
    formats.CURSOR_TRANSCRIPT: cursor_transcripts.parse,
}


def _parse_source(detection: formats.Detection, path: str) -> SourceResult:
    if detection.format in _RECORDS_PARSERS and not detection.text:  # a text file of a JSON Lines format
        return _RECORDS_PARSERS[detection.format](detection.records, path)
    if detection.format == formats.CLAUDE_CODE:
        return claude_code.parse(detection.records, path)
    if detection.format == formats.CODEX:
        return codex.parse(detection.records, path)
    if detection.format in _TEXT_PARSERS:
        return _TEXT_PARSERS[detection.format](detection.text, path)
    return _DOCUMENT_PARSERS[detection.format](detection.document, path)


def iter_parse(paths: Iterable[Path]) -> Iterator[ParseResult]:
    """Parse every file under `paths` (folders expanded by `discover`), one result per file."""
    for path in iter_source_files(paths):
        yield parse_file(path)
