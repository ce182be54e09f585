"""Whether an ingest (or a push) did what was asked: the issues that mean a file, or a session of it,
was not ingested. A line that could not be read inside a file that was otherwise ingested is no such
failure (its neighbours are in), nor is a file a folder held that is no session log (it is named in
the report's `skipped`, with why)."""

from __future__ import annotations

from quarry.v1 import ingest_pb2

FAILURES = frozenset(
    {
        "unreadable",
        "unknown_format",
        "invalid_record",
        "source_conflict",
        "scope_conflict",
        "not_regular",
        "outside_roots",
    }
)


def failures(report: ingest_pb2.IngestReport) -> list[ingest_pb2.IngestIssue]:
    return [issue for issue in report.issues if issue.code in FAILURES]
