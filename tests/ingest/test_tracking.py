"""What the ingest node remembers per file: unchanged, appended, rewritten and shrunk files told
apart, a file being written read only as far as it is complete, the marks kept across a restart,
and the follower's view of which files changed."""

from __future__ import annotations

import os
from pathlib import Path

from quarry.ingest.discover import iter_source_files
from quarry.ingest.follow import Watcher
from quarry.ingest.tracking import HEAD_BYTES, Change, FileMark, FileTracker, classify, examine, settled
from tests.shared_paths import REAL_LOGS, needs_shared

LINES = b'{"type":"user","n":1}\n{"type":"assistant","n":2}\n'


def mark_of(data: bytes, sessions: int = 1) -> FileMark:
    return FileMark.of(data, mtime_ns=1, sessions=sessions)


def test_each_kind_of_change_is_told_apart() -> None:
    mark = mark_of(LINES)
    assert classify(None, LINES) is Change.NEW
    assert classify(mark, LINES) is Change.UNCHANGED
    assert classify(mark, LINES + b'{"type":"user","n":3}\n') is Change.APPENDED
    assert classify(mark, LINES[:-10]) is Change.SHRUNK
    assert classify(mark, LINES.replace(b"user", b"USER")) is Change.REWRITTEN  # same size
    assert classify(mark, LINES.replace(b"user", b"USER") + b"more\n") is Change.REWRITTEN  # grew, new start


def test_a_change_past_the_first_4_kib_is_a_rewrite_not_an_append() -> None:
    big = b"".join(b'{"type":"user","n":%d}\n' % n for n in range(1000))
    assert len(big) > 2 * HEAD_BYTES
    edited = big[:6000] + b"X" + big[6001:]
    mark = mark_of(big)
    assert classify(mark, edited + b'{"n":1001}\n') is Change.REWRITTEN
    assert classify(mark, big + b'{"n":1001}\n') is Change.APPENDED


def test_a_file_mid_write_is_read_up_to_what_is_complete() -> None:
    assert settled(LINES) == LINES
    assert settled(LINES + b'{"type":"user","te') == LINES  # the writer is mid-line
    assert settled(LINES + b'{"type":"user"}') == LINES + b'{"type":"user"}'  # a last line without newline
    assert settled(LINES + b"   ") == LINES + b"   "
    document = b'{\n  "sessionId": "g1",\n  "messages": []\n}'
    assert settled(document) == document  # a whole document without a final newline
    assert settled(document[:-3]) == b""  # a document being rewritten
    assert settled(b'{"type":"us') == b""  # a first line being written
    assert settled(b"") == b""


@needs_shared
def test_every_real_log_at_rest_counts_as_complete() -> None:
    """Some real transcripts end without a final newline: a follower still ingests their last line."""
    files = list(iter_source_files([REAL_LOGS]))
    assert files
    assert [path for path in files if settled(path.read_bytes()) != path.read_bytes()] == []


def test_examine_reads_only_what_changed_and_waits_for_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(LINES)
    first = examine(path, None)
    assert (first.change, first.data) == (Change.NEW, LINES)
    mark = FileMark.of(first.data, first.mtime_ns, sessions=1)
    assert mark.mtime_ns == path.stat().st_mtime_ns

    assert examine(path, mark) == examine(path, mark, live=True)
    assert examine(path, mark).change is Change.UNCHANGED and examine(path, mark).data == b""  # by stat alone

    os.utime(path, ns=(1, 1))  # touched: same bytes under another mtime
    touched = examine(path, mark)
    assert (touched.change, touched.data, touched.mtime_ns) == (Change.UNCHANGED, LINES, 1)

    with path.open("ab") as handle:
        handle.write(b'{"type":"user","n":3')  # a line being written
    assert examine(path, mark, live=True).change is Change.PENDING
    assert examine(path, mark).change is Change.APPENDED  # a one-shot ingest takes the file as it is
    with path.open("ab") as handle:
        handle.write(b'}\n{"type":"assistant"')
    grown = examine(path, mark, live=True)
    assert grown.change is Change.APPENDED
    assert grown.data == LINES + b'{"type":"user","n":3}\n'
    assert grown.mtime_ns == path.stat().st_mtime_ns

    path.write_bytes(LINES[:10])
    assert examine(path, mark).change is Change.SHRUNK


def test_marks_survive_a_reopen_and_are_dropped_when_the_epoch_changes(tmp_path: Path) -> None:
    db = tmp_path / "ingest" / "files.sqlite3"
    tracker = FileTracker(db)
    assert tracker.enter_epoch("quarry 1 · partitions a b") is False  # nothing to forget yet
    tracker.record([("/logs/a.jsonl", mark_of(LINES, 2)), ("/logs/b.jsonl", mark_of(b"{}\n", 0))])
    tracker.record([("/logs/a.jsonl", mark_of(LINES + b"{}\n", 3))])
    tracker.close()

    reopened = FileTracker(db)
    assert reopened.enter_epoch("quarry 1 · partitions a b") is False
    assert reopened.get("/logs/a.jsonl") == mark_of(LINES + b"{}\n", 3)
    assert reopened.get("/logs/b.jsonl") == mark_of(b"{}\n", 0)
    assert reopened.get("/logs/c.jsonl") is None

    assert reopened.enter_epoch("quarry 1 · partitions a c") is True  # partition 1 was wiped
    assert reopened.get("/logs/a.jsonl") is None
    reopened.close()


def test_the_watcher_reports_files_that_appear_or_grow(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    first = project / "a.jsonl"
    first.write_bytes(LINES)
    (project / ".hidden.jsonl").write_bytes(LINES)
    (project / "notes.txt").write_bytes(b"not a log\n")
    empty = project / "b.jsonl"
    empty.write_bytes(b"")
    missing = tmp_path / "later"
    watcher = Watcher([tmp_path / "projects", missing])

    assert watcher.due() == [first]
    assert watcher.due() == []
    with first.open("ab") as handle:
        handle.write(b"{}\n")
    empty.write_bytes(LINES)  # created empty, then written: sniffed again
    assert sorted(watcher.due()) == [first, empty]
    missing.mkdir()
    (missing / "c.jsonl").write_bytes(LINES)
    assert watcher.due() == [missing / "c.jsonl"]
    assert watcher.interval >= 0.3
