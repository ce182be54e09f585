"""gRPC face of the ingest node (IngestService)."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc

from quarry.core.node import Service, serve, typed_errors
from quarry.ingest.discover import iter_source_files, standard_locations
from quarry.ingest.parse import parse_file
from quarry.ingest.router import ShardRouter
from quarry.v1 import ingest_pb2, ingest_pb2_grpc, units_pb2


class IngestServicer(ingest_pb2_grpc.IngestServiceServicer):
    def __init__(self, router: ShardRouter) -> None:
        self.router = router

    @typed_errors
    def IngestSessions(self, request_iterator: Iterator[units_pb2.Session], context: grpc.ServicerContext):
        report = ingest_pb2.IngestReport()
        self.router.ingest(request_iterator, report)
        return report

    @typed_errors
    def IngestPaths(self, request: ingest_pb2.IngestPathsRequest, context: grpc.ServicerContext):
        """Parse files on a worker thread feeding one routed stream; yield progress per file, then
        the report once every shard has acknowledged."""
        roots = [Path(p).expanduser() for p in request.paths]
        if request.standard_locations:
            roots.extend(standard_locations())
        report = ingest_pb2.IngestReport()
        for root in roots:
            if not root.exists():
                report.issues.add(path=str(root), code="unreadable", reason="no such file or directory")
        files = list(iter_source_files([r for r in roots if r.exists()]))
        events: queue.Queue[ingest_pb2.FileProgress | BaseException | None] = queue.Queue()

        def sessions() -> Iterator[units_pb2.Session]:
            for done, path in enumerate(files, start=1):
                parsed = parse_file(path)
                report.files += 1
                report.issues.extend(parsed.issues)
                for record_type, count in parsed.skipped_record_types.items():
                    report.skipped_record_types[record_type] += count
                yield from parsed.sessions
                events.put(
                    ingest_pb2.FileProgress(
                        path=str(path),
                        files_done=done,
                        files_total=len(files),
                        sessions=len(parsed.sessions),
                        format=parsed.format,
                    )
                )

        def work() -> None:
            try:
                self.router.ingest(sessions(), report)
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


def serve_ingest(index_addresses: list[str], host: str, port: int, run_file: Path | None) -> None:
    router = ShardRouter(index_addresses)
    service = Service(
        ingest_pb2.DESCRIPTOR.services_by_name["IngestService"],
        ingest_pb2_grpc.add_IngestServiceServicer_to_server,
        IngestServicer(router),
    )
    serve("ingest", "ingest", [service], host, port, run_file, on_stop=router.close)
