"""gRPC face of the ingest node (IngestService)."""

from __future__ import annotations

import contextvars
import importlib.metadata
import queue
import socket
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

import grpc

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.core.node import Service, serve, typed_errors
from quarry.core.public_refs import REF_KINDS, parse_ref
from quarry.core.tokens import DEFAULT_SCOPE, check_scope
from quarry.ingest.acks import METADATA_KEY
from quarry.ingest.changed_files import read_changed
from quarry.ingest.discover import iter_source_files, standard_locations
from quarry.ingest.follow import Watcher
from quarry.ingest.receive import carries_scope, receive
from quarry.ingest.roots import IngestRoots
from quarry.ingest.tracking import FileMark, FileTracker
from quarry.ingest.validate import valid_sessions
from quarry.v1 import errors_pb2, ingest_pb2, ingest_pb2_grpc, units_pb2

TRACKING_FILE = "files.sqlite3"
EPOCH_CAVEAT = "the partitions or the parsers changed since the last ingest: every file was read again"


class Router(Protocol):
    """Where sessions go: the partitions' index nodes directly (router.DirectRouter), or the
    replicated log (quarry.ingest.publisher.LogPublisher). The sessions a router is given are valid
    and counted as received already (quarry.ingest.validate.valid_sessions): it only routes them."""

    def epoch(self) -> str: ...

    def ingest(self, sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport, ack: str) -> None: ...

    def delete(self, session_ids: list[str], ack: str) -> ingest_pb2.DeleteReport: ...

    def close(self) -> None: ...


def target_scope(named: str, parameter: str) -> str:
    """The scope a write goes into: the one named, which the caller must be allowed to write, or without
    a name the caller's only writable scope (`default` on a cluster without authentication)."""
    writable = auth.SCOPES.get()
    if named:
        check_scope(named, parameter)
        if writable is not None and named not in writable:
            raise auth.denied(f"the token grants no write on scope {named!r}")
        return named
    if writable is None:
        return DEFAULT_SCOPE
    if len(writable) > 1:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"the token may write {len(writable)} scopes ({', '.join(sorted(writable))}): name one",
            parameter=parameter,
        )
    return next(iter(writable))


def pusher_name() -> str:
    """Who writes: the caller's token's name (empty on a cluster without tokens)."""
    caller = auth.CALLER.get()
    return caller.label if caller is not None else ""


class IngestServicer(ingest_pb2_grpc.IngestServiceServicer):
    def __init__(self, router: Router, tracker: FileTracker, roots: IngestRoots) -> None:
        self.router = router
        self.tracker = tracker
        self.roots = roots
        self.host = socket.gethostname()
        self.epoch_prefix = f"quarry {importlib.metadata.version('quarry')}"

    @typed_errors
    def IngestSessions(self, request_iterator: Iterator[units_pb2.Session], context: grpc.ServicerContext):
        """Sessions as a client parsed them, each into the scope it names (default: the caller's one
        writable scope), placed there and stamped by `receive`."""
        ack = dict(context.invocation_metadata()).get(METADATA_KEY, "")
        report = ingest_pb2.IngestReport()
        scopes: dict[str, str] = {}
        pusher = pusher_name()

        def received() -> Iterator[units_pb2.Session]:
            for session in request_iterator:
                if session.scope not in scopes:
                    scopes[session.scope] = target_scope(session.scope, "scope")
                if carries_scope(session.id):
                    report.sessions_received += 1
                    report.issues.add(
                        path=session.source_path,
                        code="invalid_record",
                        reason=f"{session.id}: a sent session id carries no scope (`<scope>@`): name the scope "
                        "in Session.scope and send the id its parser gave",
                    )
                    continue
                receive(session, scopes[session.scope], pusher, host="", trusted_hash=False)
                yield session

        self.router.ingest(valid_sessions(received(), report), report, ack)
        return report

    @typed_errors
    def DescribeArchive(self, request: ingest_pb2.DescribeArchiveRequest, context: grpc.ServicerContext):
        return ingest_pb2.ArchiveDescription(archive_id=self.router.epoch(), scope=target_scope(request.scope, "scope"))

    @typed_errors
    def DeleteSessions(self, request: ingest_pb2.DeleteRequest, context: grpc.ServicerContext):
        if not request.refs:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "name at least one session to delete", parameter="refs")
        session_ids = []
        for n, ref in enumerate(request.refs):
            named_kind = ref.partition(":")[0] in REF_KINDS
            parsed = parse_ref(ref if named_kind else f"session:{ref}", f"refs[{n}]")
            if parsed.kind != "session":
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"{ref!r} names a {parsed.kind}: delete takes sessions (session:<id> or a session id)",
                    parameter=f"refs[{n}]",
                )
            session_ids.append(parsed.session_id)
        return self.router.delete(session_ids, request.ack)

    @typed_errors
    def IngestPaths(self, request: ingest_pb2.IngestPathsRequest, context: grpc.ServicerContext):
        """One round over the files under the paths; with `follow`, another round whenever files
        appear or grow, until the client cancels."""
        scope = target_scope(request.scope, "scope")
        roots = self.roots.confine(request.paths)
        if request.standard_locations:
            roots.extend(self.roots.within(standard_locations()))
        report = ingest_pb2.IngestReport()
        for root in roots:
            if not root.exists():
                report.issues.add(path=str(root), code="unreadable", reason="no such file or directory")
        named = frozenset(roots)
        if not request.follow:

            def skipped(path: Path, code: str, reason: str) -> None:
                report.skipped.add(path=str(path), code=code, reason=reason)

            files = list(iter_source_files([r for r in roots if r.exists()], skipped))
            yield from self._round(files, report, live=False, ack=request.ack, scope=scope, named=named)
            return
        stopped = threading.Event()
        context.add_callback(stopped.set)
        watcher = Watcher(roots)  # a root missing now is watched too: its files count once it appears
        yield from self._round(watcher.due(), report, live=True, ack=request.ack, scope=scope, named=named)
        while not stopped.wait(watcher.interval):
            if files := watcher.due():
                round_report = ingest_pb2.IngestReport()
                yield from self._round(files, round_report, live=True, ack=request.ack, scope=scope, named=named)

    def _round(
        self,
        files: list[Path],
        report: ingest_pb2.IngestReport,
        live: bool,
        ack: str,
        scope: str,
        named: frozenset[Path],
    ) -> Iterator[ingest_pb2.IngestProgress]:
        """Read and parse the files that changed on a worker thread feeding one routed stream; yield
        progress per file, then the report once the sessions are acknowledged (`ack`) and the files'
        marks are recorded."""
        if files and self.tracker.enter_epoch(f"{self.epoch_prefix} · {self.router.epoch()}"):
            report.caveats.append(EPOCH_CAVEAT)
        events: queue.Queue[ingest_pb2.FileProgress | BaseException | None] = queue.Queue()
        marks: list[tuple[str, FileMark]] = []

        pusher = pusher_name()

        def sessions() -> Iterator[units_pb2.Session]:
            for done, path in enumerate(files, start=1):
                progress = ingest_pb2.FileProgress(path=str(path), files_done=done, files_total=len(files))
                for session in self._file(path, live, report, progress, marks, scope, path in named):
                    receive(session, scope, pusher, self.host, trusted_hash=True)
                    yield session
                events.put(progress)

        def work() -> None:
            try:
                self.router.ingest(valid_sessions(sessions(), report), report, ack)
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
        scope: str,
        named: bool,
    ) -> Iterator[units_pb2.Session]:
        """The sessions of one file that changed since its mark; counts it in `report` and
        `progress`, and adds the mark to record once their acknowledgement came. A file's mark is kept
        per scope: the same file ingested into another scope is read again. `named`: the caller named
        the file itself (one a folder held that is no session log is passed over, not failed)."""
        name = str(path)
        key = name if scope == DEFAULT_SCOPE else f"{name} (scope {scope})"
        if not self.roots.admits(path):  # a symlink in a root that leads out of it
            report.files += 1
            report.issues.add(path=name, code="outside_roots", reason="leads outside the folders this node may read")
            return
        mark = self.tracker.get(key)
        read = read_changed(path, mark, live, named, report)
        if read is None:
            return
        progress.change = read.change
        if read.parsed is not None:
            progress.sessions = len(read.parsed.sessions)
            progress.format = read.parsed.format
            yield from read.parsed.sessions
        elif mark is not None:
            progress.sessions = mark.sessions
        if read.mark is not None:
            marks.append((key, read.mark))


def serve_ingest(
    router: Router, data_dir: Path, host: str, port: int, run_file: Path | None, roots: list[Path]
) -> None:
    """Serve IngestService, writing through `router`, until SIGTERM / SIGINT; IngestPaths reads only below
    `roots`."""
    tracker = FileTracker(Path(data_dir) / TRACKING_FILE)

    def stop() -> None:
        router.close()
        tracker.close()

    service = Service(
        ingest_pb2.DESCRIPTOR.services_by_name["IngestService"],
        ingest_pb2_grpc.add_IngestServiceServicer_to_server,
        IngestServicer(router, tracker, IngestRoots(roots)),
    )
    serve("ingest", "ingest", [service], host, port, run_file, on_stop=stop)
