"""What each part of a lexical partition takes on disk, beside FTS5's index of the same messages (issue 13).

    python bench/index_size.py --messages N [--seed S] [--no-fields] [--out bench/results/index-size-<N>.json]

Writes the synthetic archive (the generator bench/run.py uses) as Claude Code logs and ingests the folder
into a local cluster (2 index partitions, no embedder) through IngestPaths: the path that also fills the session API's
raw event store, which IngestSessions of ready sessions (bench/run.py) leaves empty. After the cluster has
stopped (each store checkpointed its WAL on close), it reports per partition and summed:
- every SQLite table and index: the pages it holds (`dbstat`, `SUM(pgsize)`), the bytes in use on them
  (`SUM(pgsize - unused)`), and the free pages of the file; the other files of the partition, and the
  WAL files as they were after the ingest, before the nodes stopped (bench/run.py's index size counts them);
- the Tantivy directory by file kind (.idx postings, .pos positions, .term dictionary, .fieldnorm, .fast,
  .store, .del, meta);
- with fields (the default), each Tantivy field's cost: the partitions' documents indexed again in this
  process, once with every field and once without each field in turn (segment files are per kind, not per
  field), each merged into one segment so that the figures compare;
then the FTS5 baseline (bench/fts5_baseline.py) built from the same sessions, and the ratio of the partitions'
bytes to it, with and without the raw event store (tables log_events, log_event_chunks and their index).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tantivy  # noqa: E402

from bench.fts5_baseline import Fts5Archive  # noqa: E402
from bench.run import log  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions, write_claude_code_archive  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.index.lexical import analyzer, schema  # noqa: E402
from quarry.index.lexical.session_rows import decompose  # noqa: E402
from quarry.index.lexical.store import Store  # noqa: E402

PARTITIONS = 2
# The session API's raw event store: its tables and their indexes (a rowid table's primary key is an autoindex).
EVENT_STORE = ("log_events", "log_events_message", "log_event_chunks", "sqlite_autoindex_log_event_chunks_1")
TANTIVY_KINDS = (".idx", ".pos", ".term", ".fieldnorm", ".fast", ".store", ".del")
FIELD_HEAP_BYTES = 256 << 20
MB = 2**20


def sqlite_parts(path: Path) -> dict[str, dict[str, int]]:
    """Per table and index: pages held and bytes in use on them; the file's free pages as `(free)`."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize), SUM(pgsize - unused) FROM dbstat GROUP BY name").fetchall()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
    finally:
        conn.close()
    parts = {name: {"bytes": size, "used": used} for name, size, used in rows}
    parts["(free pages)"] = {"bytes": free * page_size, "used": 0}
    return parts


def tantivy_kinds(directory: Path) -> dict[str, int]:
    """Bytes of the index directory by segment file kind; everything else under `meta`."""
    kinds: dict[str, int] = defaultdict(int)
    for path in directory.rglob("*"):
        if path.is_file():
            kinds[path.suffix if path.suffix in TANTIVY_KINDS else "meta"] += path.stat().st_size
    return dict(kinds)


def partition_report(directory: Path) -> dict[str, object]:
    files = {p.name: p.stat().st_size for p in directory.iterdir() if p.is_file()}
    sqlite = sqlite_parts(directory / "store.sqlite3")
    return {
        "files": files,
        "sqlite": sqlite,
        "tantivy": tantivy_kinds(directory / "tantivy"),
        "bytes": sum(files.values()) + sum(p.stat().st_size for p in (directory / "tantivy").rglob("*") if p.is_file()),
        "event_store_bytes": sum(sqlite[name]["bytes"] for name in EVENT_STORE if name in sqlite),
    }


def summed(reports: Iterable[dict[str, object]]) -> dict[str, object]:
    total: dict[str, object] = {"sqlite": defaultdict(lambda: {"bytes": 0, "used": 0}), "tantivy": defaultdict(int)}
    files: dict[str, int] = defaultdict(int)
    bytes_ = events = 0
    for report in reports:
        for name, part in report["sqlite"].items():  # type: ignore[attr-defined]
            for key in ("bytes", "used"):
                total["sqlite"][name][key] += part[key]  # type: ignore[index]
        for kind, size in report["tantivy"].items():  # type: ignore[attr-defined]
            total["tantivy"][kind] += size  # type: ignore[index]
        for name, size in report["files"].items():  # type: ignore[attr-defined]
            files[name] += size
        bytes_ += report["bytes"]  # type: ignore[operator]
        events += report["event_store_bytes"]  # type: ignore[operator]
    return {
        "files": dict(files),
        "sqlite": dict(total["sqlite"]),  # type: ignore[call-overload]
        "tantivy": dict(total["tantivy"]),  # type: ignore[call-overload]
        "bytes": bytes_,
        "event_store_bytes": events,
    }


def field_costs(partitions: Sequence[Path], workdir: Path) -> dict[str, object]:
    """Each Tantivy field's bytes: the index of every partition's documents without it, against all fields.

    The documents are those the partition indexes, rebuilt from each store (`Store.load_sessions` and
    session_rows.decompose, as a re-index does), so the figures hold for exactly what was ingested."""
    documents: list[str] = []
    for directory in partitions:
        store = Store(directory / "store.sqlite3")
        try:
            for session, session_ord, message_ords in store.load_sessions(store.all_ords()):
                documents.extend(decompose(session, session_ord, message_ords, rows=False).documents)
        finally:
            store.close()
    fields = schema.FIELDS
    full = _index_bytes(documents, workdir / "all", omit=None)
    costs = {}
    for name in fields:
        without = _index_bytes(documents, workdir / name, omit=name)
        costs[name] = {kind: full.get(kind, 0) - without.get(kind, 0) for kind in full}
        log(f"field {name}: {sum(costs[name].values()) / MB:,.1f} MB")
    return {"documents": len(documents), "all_fields": full, "cost_by_field": costs}


def _index_bytes(documents: Sequence[str], directory: Path, omit: str | None) -> dict[str, int]:
    directory.mkdir(parents=True)
    index = tantivy.Index(schema.build_schema(omit=omit), path=str(directory))
    analyzer.register(index)
    writer = index.writer(heap_size=FIELD_HEAP_BYTES, num_threads=1)
    for doc in documents:
        if omit is not None:
            parsed = json.loads(doc)
            parsed.pop(omit, None)
            doc = json.dumps(parsed)
        writer.add_json(doc)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    segments = index.searcher().num_segments
    if segments > 1:
        raise RuntimeError(f"{directory}: {segments} segments; raise FIELD_HEAP_BYTES so the figures compare")
    return tantivy_kinds(directory)


def run(messages: int, seed: int, fields: bool, workdir: Path) -> dict[str, object]:
    log(f"generating {messages:,} messages (seed {seed})")
    sessions = list(generate_sessions(messages, seed))
    archive = workdir / "archive"
    paths = write_claude_code_archive(sessions, archive)
    source_bytes = sum(p.stat().st_size for p in paths)
    log(f"wrote {len(paths):,} files, {source_bytes / MB:,.1f} MB; FTS5 baseline")
    fts5 = Fts5Archive(workdir / "fts5.db")
    try:
        build = fts5.build(sessions).as_dict()
    finally:
        fts5.close()
    fts5_parts = sqlite_parts(workdir / "fts5.db")
    home = workdir / "quarry"
    cluster = LocalCluster(home, partitions=PARTITIONS, embedder="none")
    cluster.start()
    client = QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"]))
    try:
        started = time.perf_counter()
        report = list(client.ingest_paths([archive]))[-1].report
        log(f"ingested {report.sessions_written:,} sessions in {time.perf_counter() - started:.1f} s")
        live_wal = {str(p.relative_to(home)): p.stat().st_size for p in home.glob("nodes/index-*/**/*-wal")}
    finally:
        client.close()
        cluster.stop()
    partitions = sorted(p.parent for p in home.glob("nodes/index-*/**/store.sqlite3"))
    reports = {str(p.relative_to(home)): partition_report(p) for p in partitions}
    total = summed(reports.values())
    fts5_bytes = build["db_bytes"]
    result: dict[str, object] = {
        "messages": sum(len(s.messages) for s in sessions),
        "sessions": len(sessions),
        "seed": seed,
        "source_log_bytes": source_bytes,
        "fts5": {"db_bytes": fts5_bytes, "sqlite": fts5_parts, "build": build},
        "live_wal_bytes": live_wal,  # before the nodes stopped (bench/run.py measures its index size then)
        "partitions": reports,
        "total": total,
        "ratio_to_fts5": round(total["bytes"] / fts5_bytes, 3),  # type: ignore[operator]
        "ratio_to_fts5_without_event_store": round(
            (total["bytes"] - total["event_store_bytes"]) / fts5_bytes,  # type: ignore[operator]
            3,
        ),
    }
    if fields:
        log("Tantivy per field: indexing the documents again without each field")
        result["tantivy_fields"] = field_costs(partitions, workdir / "fields")
    return result


def render(result: dict) -> str:  # type: ignore[type-arg]
    total, fts5 = result["total"], result["fts5"]
    lines = [
        f"{result['messages']:,} messages in {result['sessions']:,} sessions, {len(result['partitions'])} partitions",
        "SQLite (summed over partitions)                MB held   MB used",
    ]
    for name, part in sorted(total["sqlite"].items(), key=lambda item: -item[1]["bytes"]):
        lines.append(f"  {name:<42} {part['bytes'] / MB:>9.1f} {part['used'] / MB:>9.1f}")
    lines.append("Tantivy by file kind                            MB")
    for kind, size in sorted(total["tantivy"].items(), key=lambda item: -item[1]):
        lines.append(f"  {kind:<42} {size / MB:>9.1f}")
    lines.append("files in the partition directories               MB")
    for name, size in sorted(total["files"].items()):
        lines.append(f"  {name:<42} {size / MB:>9.1f}")
    if "tantivy_fields" in result:
        lines.append("Tantivy per field (all fields minus the index without it)   MB")
        for name, kinds in result["tantivy_fields"]["cost_by_field"].items():
            detail = ", ".join(f"{k} {v / MB:.1f}" for k, v in kinds.items() if abs(v) >= MB / 10)
            lines.append(f"  {name:<12} {sum(kinds.values()) / MB:>8.1f}   {detail}")
    wal = sum(result["live_wal_bytes"].values())
    lines += [
        f"WAL files after the ingest, before the nodes stopped: {wal / MB:,.1f} MB (not counted below)",
        f"partitions total {total['bytes'] / MB:,.1f} MB (raw event store {total['event_store_bytes'] / MB:,.1f} MB); "
        f"FTS5 {fts5['db_bytes'] / MB:,.1f} MB",
        f"ratio to FTS5: {result['ratio_to_fts5']:.2f}x; without the raw event store "
        f"{result['ratio_to_fts5_without_event_store']:.2f}x",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-fields", action="store_true", help="skip the per-field Tantivy builds")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quarry-index-size-") as tmp:
        result = run(args.messages, args.seed, not args.no_fields, Path(tmp))
    out = args.out or REPO / "bench" / "results" / f"index-size-{args.messages}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
