"""Load for the tests of a cluster on the log, run as separate processes (as a user's clients are):

    python -m tests.cluster_log.load ingest QUERY INGEST OUT --prefix P --sessions N --batch B [--ack applied]
    python -m tests.cluster_log.load query QUERY OUT --rate R [--query WORDS]

`ingest` writes sessions `codex-session:<P>-<n>` in batches through IngestSessions and appends a JSON
line per acknowledged batch (its session ids, the report's in_log / searchable), so a test knows
exactly what was acknowledged even when it kills nodes meanwhile; a batch that fails is retried until
acknowledged (a client's job), its failure recorded. `query` searches at a fixed rate until SIGTERM and
appends a JSON line per query: its latency, whether it failed (and why), whether it was partial.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

import orjson

from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.v1 import units_pb2
from tests.index.sessions import BASE_MS, Msg, session

WORDS = ("steady", "replica", "ledger", "harbor", "quartz", "meadow", "signal", "cobalt")


def make_session(prefix: str, n: int) -> units_pb2.Session:
    """A small session found by `steady`, by its prefix and by its own token `<prefix>x<n>`."""
    token = f"{prefix}x{n}"
    text = f"{prefix} steady {WORDS[n % len(WORDS)]} work on {token} with {WORDS[(n * 3) % len(WORDS)]}"
    return session(
        f"{prefix}-{n}",
        [Msg("user", text), Msg("assistant", f"done: {token} is steady now")],
        origin="codex-session",
        repo=f"repo-{n % 5}",
        start_ms=BASE_MS + n * 1000,
    )


def ingest(args: argparse.Namespace) -> None:
    out = Path(args.out)
    with QuarryClient(args.query, args.ingest) as client:
        for start in range(0, args.sessions, args.batch):
            batch = [make_session(args.prefix, n) for n in range(start, min(start + args.batch, args.sessions))]
            while True:
                began = time.perf_counter()
                try:
                    report = client.ingest_sessions(batch, ack=args.ack)
                except QuarryError as error:
                    _append(out, {"failed": str(error), "at": time.time()})
                    time.sleep(0.5)
                    continue
                _append(
                    out,
                    {
                        "acked": [s.id for s in batch],
                        "in_log": report.in_log,
                        "searchable": report.searchable,
                        "seconds": time.perf_counter() - began,
                    },
                )
                break


def query(args: argparse.Namespace) -> None:
    out = Path(args.out)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    interval = 1.0 / args.rate
    with QuarryClient(args.query) as client:
        next_at = time.monotonic()
        while not stop.is_set():
            began = time.perf_counter()
            line: dict[str, object] = {"at": time.time()}
            try:
                envelope = client.search(args.query_text, limit=10, deadline_ms=5000)
                line["partial"] = envelope.partial
                line["missing"] = [m.partition for m in envelope.missing]
                line["reasons"] = sorted({m.reason for m in envelope.missing})
                line["hits"] = len(envelope.hits)
            except QuarryError as error:
                line["failed"] = str(error)
            line["ms"] = (time.perf_counter() - began) * 1000
            _append(out, line)
            next_at += interval
            stop.wait(max(0.0, next_at - time.monotonic()))


def _append(path: Path, line: dict[str, object]) -> None:
    with path.open("ab") as out:
        out.write(orjson.dumps(line) + b"\n")


def read_lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    feed = commands.add_parser("ingest")
    feed.add_argument("query")
    feed.add_argument("ingest")
    feed.add_argument("out")
    feed.add_argument("--prefix", required=True)
    feed.add_argument("--sessions", type=int, required=True)
    feed.add_argument("--batch", type=int, default=50)
    feed.add_argument("--ack", default="applied")
    load = commands.add_parser("query")
    load.add_argument("query")
    load.add_argument("out")
    load.add_argument("--rate", type=float, default=20.0)
    load.add_argument("--query-text", default="steady")
    args = parser.parse_args(argv)
    ingest(args) if args.command == "ingest" else query(args)


if __name__ == "__main__":
    main(sys.argv[1:])
