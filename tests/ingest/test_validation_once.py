"""Sessions are validated once, by the ingest servicer, before its router: the router is handed only valid
sessions, every session counts as received, and an invalid one is an `invalid_record` issue (IngestSessions
and IngestPaths alike)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from quarry.ingest.normalize import build_session
from quarry.ingest.roots import IngestRoots
from quarry.ingest.server import IngestServicer
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftSession
from quarry.ingest.tracking import FileTracker
from quarry.v1 import ingest_pb2, units_pb2
from tests.ingest.support import FIXTURES


class _Context:
    """The little of a gRPC context the servicer reads."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def add_callback(self, callback: object) -> None:
        pass


class _RecordingRouter:
    """Writes nothing: keeps the ids it was handed."""

    def __init__(self) -> None:
        self.routed: list[str] = []

    def epoch(self) -> str:
        return "test"

    def ingest(self, sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport, ack: str) -> None:
        for session in sessions:
            self.routed.append(session.id)
            report.sessions_written += 1

    def delete(self, session_ids: list[str], ack: str) -> ingest_pb2.DeleteReport:
        return ingest_pb2.DeleteReport()

    def close(self) -> None:
        pass


def _session(native_id: str) -> units_pb2.Session:
    draft = DraftSession("codex-session", native_id, "x.jsonl")
    message = draft.add_message(DraftMessage("user", True))
    draft.add_block(message, DraftBlock("text", text="hi"))
    return build_session(draft)


def _servicer(tmp_path: Path, roots: list[Path]) -> tuple[IngestServicer, _RecordingRouter]:
    router = _RecordingRouter()
    return IngestServicer(router, FileTracker(tmp_path / "files.sqlite3"), IngestRoots(roots)), router


def test_pushed_sessions_are_validated_before_the_router(tmp_path: Path) -> None:
    servicer, router = _servicer(tmp_path, [])
    invalid = _session("bad")
    invalid.messages[0].role = "robot"
    scoped = _session("scoped")
    scoped.id = "team@codex-session:scoped"
    report = servicer.IngestSessions(iter([_session("good"), invalid, scoped, _session("also")]), _Context())
    assert router.routed == ["codex-session:good", "codex-session:also"]
    assert report.sessions_received == 4
    assert report.sessions_written == 2
    assert [(issue.code, issue.path) for issue in report.issues] == [
        ("invalid_record", "x.jsonl"),
        ("invalid_record", "x.jsonl"),
    ]
    assert report.issues[0].reason.startswith("codex-session:bad: message codex-session:bad:m0: role 'robot'")
    assert "carries no scope" in report.issues[1].reason


def test_read_sessions_are_counted_as_received_once(tmp_path: Path) -> None:
    log = FIXTURES / "codex" / "rollout.jsonl"
    servicer, router = _servicer(tmp_path, [log.parent])
    request = ingest_pb2.IngestPathsRequest(paths=[str(log)])
    progress = list(servicer.IngestPaths(request, _Context()))
    report = progress[-1].report
    assert report.sessions_received == len(router.routed) == report.sessions_written >= 1
    assert not [issue for issue in report.issues if issue.code == "invalid_record"]
