"""`quarry push`: this machine's agent logs, parsed here by the same parsers the ingest node runs, sent
to a cluster's ingest node as sessions (IngestService.IngestSessions) with the caller's token. The
cluster never reads a path of this machine.

- What was sent is remembered per cluster and scope (quarry.cli.push_state): a file unchanged since
  its sessions were acknowledged costs one stat; a file that changed is parsed again and only its
  sessions whose content changed are sent.
- Files are parsed on a thread of their own while batches are in flight; the queue between them is
  bounded, and so are the batches in flight (IN_FLIGHT): a slow cluster slows the parsing, memory stays
  flat.
- A batch (BATCH_BYTES or BATCH_SESSIONS, whichever comes first) is one IngestSessions call; its files
  are remembered once the cluster acknowledged it and every batch before it. A call that fails for a
  reason that passes (the cluster unreachable, restarting, a partition without a replica, a deadline) is
  sent again after an exponential backoff with full jitter, for as long as `retry_for` allows (forever
  when following).
  Sending a batch again writes nothing twice: the partitions skip a session whose content they hold.
- `follow`: after the first pass, files that appear or grow are sent within a second or two
  (quarry.ingest.follow's polling, the settled part of a file being written), until stopped.

A session is sent whole, however large: each is one message of the call's stream (the ingest node
takes up to MAX_SESSION_BYTES per message), and the cluster stores sessions larger than a log record
in cluster mode itself.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import queue
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from quarry.cli.push_state import PushState, default_state_home, state_path
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.stop_signal import Stop
from quarry.core.telemetry import MAX_MESSAGE_BYTES
from quarry.ingest.changed_files import read_changed
from quarry.ingest.discover import iter_source_files
from quarry.ingest.follow import Watcher
from quarry.ingest.tracking import FileMark
from quarry.v1 import errors_pb2, ingest_pb2, units_pb2

BATCH_BYTES = 32 * 1024 * 1024
BATCH_SESSIONS = 1000
IN_FLIGHT = 2  # batches sent before the oldest one's acknowledgement is waited for
MAX_SESSION_BYTES = MAX_MESSAGE_BYTES  # one session is one message of the call's stream
CALL_TIMEOUT_S = 900.0
RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0
QUEUED_FILES = 16  # parsed files waiting to be sent (backpressure)
_T = TypeVar("_T")
RETRYABLE = frozenset(
    {
        errors_pb2.NODE_UNAVAILABLE,
        errors_pb2.PARTITION_UNAVAILABLE,
        errors_pb2.NOT_HOSTED,
        errors_pb2.DEADLINE_EXCEEDED,
        errors_pb2.INTERNAL,
    }
)


@dataclass
class _Parsed:
    """One file read and parsed: the sessions to send, and the mark to remember once they are acknowledged
    (None: nothing to remember, e.g. a file still being written)."""

    path: str
    sessions: list[units_pb2.Session]
    mark: FileMark | None


@dataclass
class _Batch:
    sessions: list[units_pb2.Session] = field(default_factory=list)
    files: list[tuple[str, FileMark]] = field(default_factory=list)
    size: int = 0


class Pusher:
    """Pushes files to one cluster's ingest node, into one scope (the token's one writable scope when
    `scope` is empty). `retry_for`: how long a batch is retried (seconds; None: for ever)."""

    def __init__(
        self,
        client: QuarryClient,
        scope: str = "",
        ack: str = "",
        state_home: Path | None = None,
        retry_for: float | None = 600.0,
        warn: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.client = client
        self.ack = ack
        self.retry_for = retry_for
        self.warn = warn
        self.host = socket.gethostname()
        description = self._retried(lambda: client.describe_archive(scope))
        self.scope = description.scope
        self.state = PushState(state_path(state_home or default_state_home(), description.archive_id, self.scope))
        self.forgot = self.state.describe(description.archive_id, f"quarry {importlib.metadata.version('quarry')}")

    def close(self) -> None:
        self.state.close()

    def __enter__(self) -> Pusher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- one pass, and following ------------------------------------------------------------------

    def push(
        self, paths: list[Path], on_file: Callable[[int, int], None] = lambda done, total: None
    ) -> ingest_pb2.IngestReport:
        """Send what changed in the files under `paths`; returns once the cluster acknowledged it all."""
        report = ingest_pb2.IngestReport()
        for path in paths:
            if not path.exists():
                report.issues.add(path=str(path), code="unreadable", reason="no such file or directory")

        def skipped(path: Path, code: str, reason: str) -> None:
            report.skipped.add(path=str(path), code=code, reason=reason)

        files = list(iter_source_files([p for p in paths if p.exists()], skipped))
        self._send(files, frozenset(paths), report, live=False, on_file=on_file)
        return report

    def follow(self, paths: list[Path], on_round: Callable[[ingest_pb2.IngestReport], None], stop: Stop) -> None:
        """Send the files under `paths`, then whatever appears or grows there, each round's report to
        `on_round`, until `stop` is set."""
        watcher = Watcher(paths)
        named = frozenset(paths)
        while not stop.is_set():
            if files := watcher.due():
                report = ingest_pb2.IngestReport()
                self._send(files, named, report, live=True)
                on_round(report)
            stop.wait(watcher.interval)

    # ----- parsing and sending ------------------------------------------------------------------

    def _send(
        self,
        files: list[Path],
        named: frozenset[Path],
        report: ingest_pb2.IngestReport,
        live: bool,
        on_file: Callable[[int, int], None] = lambda done, total: None,
    ) -> None:
        started = time.perf_counter()
        parsed: queue.Queue[_Parsed | BaseException | None] = queue.Queue(QUEUED_FILES)
        stopping = threading.Event()

        def parse_all() -> None:
            try:
                for path in files:
                    if stopping.is_set():
                        return
                    item = self._parse(path, path in named, live, report)
                    if item is not None:
                        parsed.put(item)
                parsed.put(None)
            except BaseException as error:  # handed to the sending thread, which raises it
                parsed.put(error)

        worker = threading.Thread(target=parse_all, name="quarry-push-parse", daemon=True)
        worker.start()
        batch = _Batch()
        done = 0
        report.searchable = report.in_log = True
        in_flight: deque[tuple[_Batch, Future[ingest_pb2.IngestReport] | None]] = deque()
        with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="quarry-push-send") as sender:

            def flush(batch: _Batch) -> None:
                """Send the batch while the ones before it wait for their acknowledgement; once more than
                IN_FLIGHT are out, wait for the oldest and remember it (in order: a file's mark comes with
                the batch of its last session, after the batches of the others)."""
                call = sender.submit(self._send_batch, batch) if batch.sessions else None
                in_flight.append((batch, call))
                while len(in_flight) > IN_FLIGHT:
                    self._remember(*in_flight.popleft(), report)

            try:
                while (item := parsed.get()) is not None:
                    if isinstance(item, BaseException):
                        raise item
                    for session in item.sessions:
                        size = session.ByteSize()
                        if batch.sessions and (
                            batch.size + size > BATCH_BYTES or len(batch.sessions) >= BATCH_SESSIONS
                        ):
                            flush(batch)
                            batch = _Batch()
                        batch.sessions.append(session)
                        batch.size += size
                    if item.mark is not None:
                        batch.files.append((item.path, item.mark))
                    done += 1
                    on_file(done, len(files))
                flush(batch)
                while in_flight:
                    self._remember(*in_flight.popleft(), report)
            finally:
                stopping.set()
                while worker.is_alive():  # let the parser see the stop even if it waits on a full queue
                    with contextlib.suppress(queue.Empty):
                        parsed.get(timeout=0.1)
        report.elapsed_ms = (time.perf_counter() - started) * 1000

    def _parse(self, path: Path, named: bool, live: bool, report: ingest_pb2.IngestReport) -> _Parsed | None:
        """The file's sessions that changed since they were acknowledged, counted in `report` (None when
        the file is unchanged, unreadable or not complete yet)."""
        name = str(path)
        read = read_changed(path, self.state.mark(name), live, named, report)
        if read is None or read.mark is None:
            return None
        if read.parsed is None:  # unchanged: its new mtime is remembered
            return _Parsed(name, [], read.mark)
        result = read.parsed
        sent = self.state.sent_hashes(s.id for s in result.sessions)
        changed = []
        for session in result.sessions:
            if sent.get(session.id) == session.content_hash:
                report.sessions_unchanged += 1
                continue
            if session.ByteSize() > MAX_SESSION_BYTES:
                report.issues.add(
                    path=name,
                    code="invalid_record",
                    reason=f"{session.id}: {session.ByteSize()} bytes, over the {MAX_SESSION_BYTES} a session may be",
                )
                continue
            session.scope = self.scope
            session.host = self.host
            changed.append(session)
        return _Parsed(name, changed, read.mark)

    def _send_batch(self, batch: _Batch) -> ingest_pb2.IngestReport:
        """One batch, sent again while the failure is one that passes."""
        return self._retried(lambda: self.client.ingest_sessions(batch.sessions, self.ack, CALL_TIMEOUT_S))

    def _remember(
        self, batch: _Batch, call: Future[ingest_pb2.IngestReport] | None, report: ingest_pb2.IngestReport
    ) -> None:
        """Wait for the batch's acknowledgement (raising the failure that did not pass), add it to the
        report, and remember its files and sessions."""
        if call is not None:
            _merge(report, call.result())
        self.state.record(batch.files, ((s.id, s.content_hash, s.source_path) for s in batch.sessions))

    def _retried(self, call: Callable[[], _T]) -> _T:
        started = time.monotonic()
        for attempt in _attempts():
            try:
                return call()
            except QuarryError as error:
                waited = time.monotonic() - started
                if error.code not in RETRYABLE or (self.retry_for is not None and waited > self.retry_for):
                    raise
                delay = random.uniform(0, min(RETRY_CAP_S, RETRY_BASE_S * 2**attempt))
                self.warn(f"{error.code_name}: {error.message} (sent again in {delay:.1f} s)")
                time.sleep(delay)
        raise AssertionError("unreachable")


def _attempts() -> Iterator[int]:
    attempt = 0
    while True:
        yield attempt
        attempt = min(attempt + 1, 16)


def _merge(report: ingest_pb2.IngestReport, answer: ingest_pb2.IngestReport) -> None:
    """Add one call's acknowledgement to the push's report."""
    report.sessions_received += answer.sessions_received
    report.sessions_written += answer.sessions_written
    report.sessions_unchanged += answer.sessions_unchanged
    report.messages_written += answer.messages_written
    report.issues.extend(answer.issues)
    report.caveats.extend(c for c in answer.caveats if c not in report.caveats)
    report.in_log = report.in_log and answer.in_log
    report.searchable = report.searchable and answer.searchable
    highest = {w.partition: w.seq for w in report.watermarks}
    for mark in answer.watermarks:
        highest[mark.partition] = max(highest.get(mark.partition, 0), mark.seq)
    del report.watermarks[:]
    report.watermarks.extend(ingest_pb2.PartitionWatermark(partition=p, seq=s) for p, s in sorted(highest.items()))
