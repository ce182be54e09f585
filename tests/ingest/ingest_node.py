"""An ingest node in this process over a real partition (Tantivy + SQLite behind a gRPC index server on
127.0.0.1): `IngestPaths` as `quarry ingest PATH` calls it, without starting a cluster."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from quarry.ingest.roots import IngestRoots
from quarry.ingest.router import DirectRouter
from quarry.ingest.server import IngestServicer
from quarry.ingest.tracking import FileTracker
from quarry.v1 import ingest_pb2, units_pb2
from tests.partition_servers import PartitionServer

_T = TypeVar("_T")


def within(seconds: float, work: Callable[[], _T]) -> _T:
    """`work()`, failing the test (not hanging it) when it has not returned after `seconds`."""
    done: list[_T] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"still running after {seconds}s: the call hangs"
    return done[0]


class _Context:
    """The little of a gRPC context the servicer reads."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def add_callback(self, callback: object) -> None:
        pass


@dataclass
class IngestNode:
    servicer: IngestServicer
    server: PartitionServer
    progress: dict[str, ingest_pb2.FileProgress] = field(default_factory=dict)  # the last call's, by path

    def ingest(self, *paths: Path, scope: str = "") -> ingest_pb2.IngestReport:
        """One IngestPaths call over `paths`: its final report (its files' progress in `progress`)."""
        request = ingest_pb2.IngestPathsRequest(paths=[str(path) for path in paths], scope=scope)
        self.progress = {}
        reports = []
        for event in self.servicer.IngestPaths(request, _Context()):
            if event.HasField("report"):
                reports.append(event.report)
            else:
                self.progress[event.file.path] = event.file
        assert len(reports) == 1
        return reports[0]

    def stored(self, session_id: str) -> units_pb2.Session | None:
        """The stored summary of a session (None: not stored)."""
        found = self.server.lexical(0).get_sessions([session_id])
        return found[0] if found else None


@contextmanager
def ingest_node(data: Path, root: Path) -> Iterator[IngestNode]:
    """An ingest node that may read below `root`, writing to one partition kept under `data`."""
    server = PartitionServer(data / "index", [0], 1)
    router = DirectRouter([server.address])
    tracker = FileTracker(data / "files.sqlite3")
    try:
        yield IngestNode(IngestServicer(router, tracker, IngestRoots([root])), server)
    finally:
        router.close()
        tracker.close()
        server.stop()
