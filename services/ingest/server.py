"""gRPC face of the ingest node (IngestService)."""

from __future__ import annotations

import contextvars
import importlib.metadata
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.ingest.discover import iter_source_files, standard_locations
from quarry.ingest.follow import Watcher
from quarry.ingest.parse import parse_bytes
from quarry.ingest.router import ShardRouter
from quarry.ingest.tracking import Change, FileMark, FileTracker, examine
from quarry.v1 import ingest_pb2, ingest_pb2_grpc, units_pb2

TRACKING_FILE = "files.sqlite3"
EPOCH_CAVEAT = "the shards or the parsers changed since the last ingest: every file was read again"


class IngestServicer(ingest_pb2_grpc.IngestServiceServicer):
    def __init__(self, router: ShardRouter, tracker: FileTracker) -> None:
        self.router = router
        self.tracker = tracker
        self.epoch_prefix = f"quarry {importlib.metadata.version('quarry')}"

    @typed_errors
    def IngestSessions(self, request_iterator: Iterator[units_pb2.Session], context: grpc.ServicerContext):
        report = ingest_pb2.IngestReport()
        self.router.ingest(request_iterator, report)
        return report

    @typed_errors
    def IngestPaths(self, request: ingest_pb2.IngestPathsRequest, context: grpc.ServicerContext):
        """One round over the files under the paths; with `follow`, another round whenever files
        appear or grow, until the client cancels."""
        roots = [Path(p).expanduser() for p in request.paths]
        if request.standard_locations:
            roots.extend(standard_locations())
        report = ingest_pb2.IngestReport()
        for root in roots:
            if not root.exists():
                report.issues.add(path=str(root), code="unreadable", reason="no such file or directory")
        if not request.follow:
            yield from self._round(list(iter_source_files([r for r in roots if r.exists()])), report, live=False)
            return
        stopped = threading.Event()
        context.add_callback(stopped.set)
        watcher = Watcher(roots)  # a root missing now is watched too: its files count once it appears
        yield from self._round(watcher.due(), report, live=True)
        while not stopped.wait(watcher.interval):
            if files := watcher.due():
                yield from self._round(files, ingest_pb2.IngestReport(), live=True)

    def _round(
        self, files: list[Path], report: ingest_pb2.IngestReport, live: bool
    ) -> Iterator[ingest_pb2.IngestProgress]:
        """Read and parse the files that changed on a worker thread feeding one routed stream; yield
        progress per file, then the report once every shard has acknowledged and the files' marks
        are recorded."""
        if files and self.tracker.enter_epoch(f"{self.epoch_prefix} · shards {' '.join(self.router.store_ids())}"):
            report.caveats.append(EPOCH_CAVEAT)
        events: queue.Queue[ingest_pb2.FileProgress | BaseException | None] = queue.Queue()
        marks: list[tuple[str, FileMark]] = []

        def sessions() -> Iterator[units_pb2.Session]:
            for done, path in enumerate(files, start=1):
                progress = ingest_pb2.FileProgress(path=str(path), files_done=done, files_total=len(files))
                yield from self._file(path, live, report, progress, marks)
                events.put(progress)

        def work() -> None:
            try:
                self.router.ingest(sessions(), report)
                self.tracker.record(marks)
                events.put(None)
            except BaseException as error:
                events.put(error)

        worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True)
        worker.start()
        while (event := events.get()) is not None:
            if isinstance(event, BaseException):
                raise event
            yield ingest_pb2.IngestProgress(file=event)
        yield ingest_pb2.IngestProgress(report=report)

    def _file(
        self,
        path: Path,
        live: bool,
        report: ingest_pb2.IngestReport,
        progress: ingest_pb2.FileProgress,
        marks: list[tuple[str, FileMark]],
    ) -> Iterator[units_pb2.Session]:
        """The sessions of one file that changed since its mark; counts it in `report` and
        `progress`, and adds the mark to record once the shards have acknowledged them."""
        name = str(path)
        report.files += 1
        mark = self.tracker.get(name)
        try:
            seen = examine(path, mark, live)
        except OSError as error:
            if not (live and isinstance(error, FileNotFoundError)):  # followed: removed since the scan
                report.issues.add(path=name, code="unreadable", reason=error.strerror or str(error))
            return
        progress.change = seen.change
        if seen.change is Change.PENDING:
            return
        if seen.change is Change.UNCHANGED:
            sessions = mark.sessions if mark else 0
            report.files_unchanged += 1
            report.sessions_unchanged += sessions
            progress.sessions = sessions
            if seen.data:  # same bytes under a new mtime: remember it, so the next look is a stat again
                marks.append((name, FileMark.of(seen.data, seen.mtime_ns, sessions)))
            return
        if seen.change is Change.APPENDED:
            report.files_appended += 1
        elif seen.change is not Change.NEW:
            report.files_rewritten += 1
        parsed = parse_bytes(seen.data, name)
        report.issues.extend(parsed.issues)
        for record_type, count in parsed.skipped_record_types.items():
            report.skipped_record_types[record_type] += count
        progress.sessions = len(parsed.sessions)
        progress.format = parsed.format
        yield from parsed.sessions
        marks.append((name, FileMark.of(seen.data, seen.mtime_ns, len(parsed.sessions))))


def serve_ingest(index_addresses: list[str], data_dir: Path, host: str, port: int, run_file: Path | None) -> None:
    router = ShardRouter(index_addresses)
    tracker = FileTracker(Path(data_dir) / TRACKING_FILE)

    def stop() -> None:
        router.close()
        tracker.close()

    service = Service(
        ingest_pb2.DESCRIPTOR.services_by_name["IngestService"],
        ingest_pb2_grpc.add_IngestServiceServicer_to_server,
        IngestServicer(router, tracker),
    )
    serve("ingest", "ingest", [service], host, port, run_file, on_stop=stop)
