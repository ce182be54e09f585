"""The session API under load: read, trace and search latency, and the disk its events take.

    python bench/sessions.py --messages N [--seed S] [--out bench/results/sessions-<N>.json]

Writes the synthetic archive as Claude Code logs (every 20th session with two subagent runs in the 2.1
layout, so lineage has families), ingests the folder into a local cluster (2 index nodes, no embedder)
through IngestPaths, then measures through the query node, after an untimed warm-up pass each:
- ReadEvent with a window of 10 (5 before, 5 after) on random events;
- SearchEvents within one session, a word of that session's own text;
- SearchSessions with the bench's dialogue queries, and the dialogue lane (Search, limit 20) on the
  same queries, the two alternating query by query (so that the machine's swings fall on both): the
  ratio the target names;
- TraceSession on a subagent family's main session.
Then the bytes the events take in the partition stores (their two tables and index, from dbstat) beside
the bytes of the source logs they came from.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.queries import Latency, build_queries  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions, session_records, write_claude_code_archive  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.index.lexical import analyzer  # noqa: E402
from quarry.v1 import units_pb2  # noqa: E402

PARTITIONS = 2
SAMPLES = 200
FAMILY_EVERY = 20
CHILDREN = 2
CHILD_RECORDS = 8
TARGETS = {"read_event_p50_ms_max": 5.0, "search_sessions_p50_ratio_max": 1.2, "events_disk_ratio_max": 0.5}
EVENT_TABLES = ("log_events", "log_events_message", "log_event_chunks")  # the tables and their index


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_archive(sessions: Sequence[units_pb2.Session], out: Path) -> tuple[list[Path], list[str]]:
    """The sessions as Claude Code logs, with subagent runs under every FAMILY_EVERY-th; the family roots."""
    paths = write_claude_code_archive(sessions, out)
    roots = []
    for index, (session, path) in enumerate(zip(sessions, list(paths), strict=True)):
        if index % FAMILY_EVERY:
            continue
        roots.append(session.id)
        donor = list(session_records(sessions[(index + 1) % len(sessions)]))[1 : 1 + CHILD_RECORDS]
        folder = path.parent / session.native_id / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        for child in range(CHILDREN):
            agent = f"a{index:06d}{child}"
            lines = []
            for record in donor:
                copied = dict(record)
                copied.update(sessionId=session.native_id, isSidechain=True, agentId=agent)
                copied["uuid"] = f"{agent}-{record.get('uuid', '')}"
                parent = record.get("parentUuid")
                copied["parentUuid"] = f"{agent}-{parent}" if parent else None
                lines.append(json.dumps(copied))
            target = folder / f"agent-{agent}.jsonl"
            target.write_text("\n".join(lines) + "\n")
            paths.append(target)
    return paths, roots


def timed(run: Callable[[object], object], items: Sequence[object]) -> Latency:
    for item in items:
        run(item)  # warm-up
    samples = []
    for item in items:
        started = time.perf_counter()
        run(item)
        samples.append((time.perf_counter() - started) * 1000)
    return Latency(tuple(samples))


def timed_pair(
    first: Callable[[object], object], second: Callable[[object], object], items: Sequence[object]
) -> tuple[Latency, Latency]:
    """Both runs on each item, in alternating order, so that the machine's swings fall on both alike."""
    for item in items:
        first(item)
        second(item)
    samples: tuple[list[float], list[float]] = ([], [])
    for index, item in enumerate(items):
        order = ((0, first), (1, second)) if index % 2 == 0 else ((1, second), (0, first))
        for slot, run in order:
            started = time.perf_counter()
            run(item)
            samples[slot].append((time.perf_counter() - started) * 1000)
    return Latency(tuple(samples[0])), Latency(tuple(samples[1]))


def event_bytes(home: Path) -> int:
    """Bytes of the event tables in every partition store (pages in use, from dbstat)."""
    total = 0
    for store in home.glob("nodes/index-*/**/store.sqlite3"):
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            names = json.dumps(list(EVENT_TABLES))
            (used,) = conn.execute(
                "SELECT COALESCE(SUM(pgsize - unused), 0) FROM dbstat WHERE name IN (SELECT value FROM json_each(?))",
                (names,),
            ).fetchone()
            total += used
        finally:
            conn.close()
    return total


def run(messages: int, seed: int, workdir: Path) -> dict[str, object]:
    log(f"generating {messages:,} messages")
    sessions = list(generate_sessions(messages, seed))
    archive = workdir / "archive"
    paths, roots = write_archive(sessions, archive)
    source_bytes = sum(p.stat().st_size for p in paths)
    log(f"wrote {len(paths):,} files, {source_bytes / 1e6:,.1f} MB")
    home = workdir / "quarry"
    cluster = LocalCluster(home, partitions=PARTITIONS, embedder="none")
    cluster.start()
    client = QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"]))
    rnd = random.Random(seed)
    try:
        started = time.perf_counter()
        report = list(client.ingest_paths([archive]))[-1].report
        ingest_s = time.perf_counter() - started
        log(f"ingested {report.sessions_written:,} sessions in {ingest_s:.1f} s")
        picked = rnd.sample(sessions, min(SAMPLES, len(sessions)))
        events = {s.id: len(client.sessions.events(s.id).events) for s in picked}
        windows = [(s.id, rnd.randrange(events[s.id])) for s in picked]
        read_event = timed(lambda w: client.sessions.event(w[0], w[1], before=5, after=5), windows)
        words = [(s.id, _word(s, rnd)) for s in picked]
        search_events = timed(lambda w: client.sessions.search_events(w[0], w[1]), words)
        queries = [" ".join(q.words) for q in build_queries() if q.kind == "and"]
        search_sessions, dialogue = timed_pair(
            lambda q: client.sessions.search_sessions(q, limit=20),
            lambda q: client.search(q, lane="dialogue", limit=20),
            queries,
        )
        families = rnd.sample(roots, min(SAMPLES // 4, len(roots)))
        lineage = timed(lambda r: client.sessions.lineage(r), families)
        assert all(len(client.sessions.lineage(r).descendants) == CHILDREN for r in families[:5])
    finally:
        client.close()
        cluster.stop()
    stored = event_bytes(home)
    result = {
        "messages": messages,
        "seed": seed,
        "files": len(paths),
        "sessions_written": report.sessions_written,
        "ingest_seconds": round(ingest_s, 1),
        "source_bytes": source_bytes,
        "event_bytes": stored,
        "events_disk_ratio": round(stored / source_bytes, 3),
        "read_event_window_10": read_event.as_dict(),
        "search_events_in_session": search_events.as_dict(),
        "search_sessions": search_sessions.as_dict(),
        "dialogue_lane_same_queries": dialogue.as_dict(),
        "search_sessions_p50_ratio": round(search_sessions.p50 / dialogue.p50, 3),
        "trace_session_family": lineage.as_dict(),
        "targets": TARGETS,
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    result["verdicts"] = {
        "read_event_p50": read_event.p50 <= TARGETS["read_event_p50_ms_max"],
        "search_sessions_p50_ratio": result["search_sessions_p50_ratio"] <= TARGETS["search_sessions_p50_ratio_max"],
        "events_disk_ratio": result["events_disk_ratio"] <= TARGETS["events_disk_ratio_max"],
    }
    return result


def _word(session: units_pb2.Session, rnd: random.Random) -> str:
    words = [
        w
        for m in session.messages
        for b in m.blocks
        for w in b.text.split()
        if w.isalpha() and len(w) > 4 and analyzer.stem(w.lower())  # a word that ranks: no stopword
    ]
    return rnd.choice(words) if words else "error"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quarry-bench-sessions-") as tmp:
        result = run(args.messages, args.seed, Path(tmp))
    text = json.dumps(result, indent=2)
    out = args.out or REPO / "bench" / "results" / f"sessions-{args.messages}.json"
    out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
