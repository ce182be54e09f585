"""One file read as it changed since it was last ingested: the step the ingest node (IngestPaths, reading
its own files) and a pushing client (`quarry push`, reading its machine's) share, so both read, parse
and count a file alike in their reports.

What a file gives is judged against its mark (quarry.ingest.tracking): unchanged by size and mtime costs a
stat; a change is parsed whole. A file that cannot be read, or is no regular file, is an issue; a file a
folder held that is no session log is passed over (`skipped`) unless it was named itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quarry.ingest.discover import EMPTY, NOT_A_SESSION_LOG, NotRegularFile
from quarry.ingest.parse import ParseResult, parse_bytes
from quarry.ingest.tracking import Change, FileMark, examine
from quarry.v1 import ingest_pb2


@dataclass(frozen=True)
class ChangedFile:
    """How the file changed, what it parsed to (None when there was nothing to parse: unchanged, or not
    complete yet) and the mark to remember once its sessions are acknowledged (None: none)."""

    change: Change
    parsed: ParseResult | None
    mark: FileMark | None


def read_changed(
    path: Path, mark: FileMark | None, live: bool, named: bool, report: ingest_pb2.IngestReport
) -> ChangedFile | None:
    """The file read against `mark` and counted in `report`; None when it could not be read (an issue
    says why; a followed file removed since the scan says nothing). `live`: it may be mid-write."""
    name = str(path)
    report.files += 1
    try:
        seen = examine(path, mark, live)
    except NotRegularFile as error:
        report.issues.add(path=name, code="not_regular", reason=error.strerror)
        return None
    except OSError as error:
        if not (live and isinstance(error, FileNotFoundError)):
            report.issues.add(path=name, code="unreadable", reason=error.strerror or str(error))
        return None
    if seen.change is Change.PENDING:
        return ChangedFile(seen.change, None, None)
    if seen.change is Change.UNCHANGED:
        sessions = mark.sessions if mark else 0
        report.files_unchanged += 1
        report.sessions_unchanged += sessions
        # The same bytes under a new mtime: remembered, so the next look is a stat again.
        remembered = FileMark.of(seen.data, seen.mtime_ns, sessions) if seen.data else None
        return ChangedFile(seen.change, None, remembered)
    if seen.change is Change.APPENDED:
        report.files_appended += 1
    elif seen.change is not Change.NEW:
        report.files_rewritten += 1
    parsed = parse_bytes(seen.data, name)
    for found in parsed.issues:
        if found.code == "unknown_format" and not named:
            report.skipped.add(path=found.path, code=NOT_A_SESSION_LOG, reason=found.reason)
        else:
            report.issues.append(found)
    if not parsed.sessions and not parsed.issues:  # recognized, yet nothing to ingest: said, never silent
        report.skipped.add(path=name, code=EMPTY, reason=f"a {parsed.format} file that holds no session")
    for record_type, count in parsed.skipped_record_types.items():
        report.skipped_record_types[record_type] += count
    return ChangedFile(seen.change, parsed, FileMark.of(seen.data, seen.mtime_ns, len(parsed.sessions)))
