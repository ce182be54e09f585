"""How fast could a lexical partition ingest if nothing else cost anything? In one process, on one core,
the same sessions go through (1) the FTS5 baseline's build and (2) each piece of a partition's write
path on its own: taking sessions apart into rows and documents (`session_rows.decompose`), Tantivy
indexing and commits (`add_json`, the partition's writer settings), and the SQLite rows
(`Store.replace`, `synchronous=FULL`).

    python bench/partition_ceiling.py --messages 200000

The partition's per-message cost is the sum of the three; two partitions on two cores can at best run twice
as fast as one, and only if the client, the transport and the ingest node cost nothing. That bound,
as a ratio to FTS5's build rate, is what the ingest target is measured against.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fts5_baseline import Fts5Archive  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.index.lexical import schema, session_rows  # noqa: E402
from quarry.index.lexical.partition import _WRITER_HEAP_BYTES, _WRITER_THREADS  # noqa: E402
from quarry.index.lexical.store import Store  # noqa: E402

BATCH_SESSIONS = 500  # per commit, about the size of one ingest-node batch on one of two partitions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    messages = sum(len(s.messages) for s in sessions)
    with tempfile.TemporaryDirectory(prefix="quarry-ceiling-") as tmp:
        work = Path(tmp)
        archive = Fts5Archive(work / "fts5.db")
        fts5_rate = archive.build(sessions).messages_per_s
        archive.close()

        started = time.perf_counter()
        batch, first_message = [], 0
        for session_ord, session in enumerate(sessions):
            ords = range(first_message, first_message + len(session.messages))
            batch.append(session_rows.decompose(session, session_ord, ords, "sha256:bench", change_seq=session_ord + 1))
            first_message += len(session.messages)
        decompose_s = time.perf_counter() - started

        index = schema.open_index(work / "tantivy")
        writer = index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=_WRITER_THREADS)
        started = time.perf_counter()
        for start in range(0, len(batch), BATCH_SESSIONS):
            for item in batch[start : start + BATCH_SESSIONS]:
                for doc in item.documents:
                    writer.add_json(doc)
            writer.commit()
        writer.wait_merging_threads()
        tantivy_s = time.perf_counter() - started

        store = Store(work / "store.sqlite3")
        started = time.perf_counter()
        for start in range(0, len(batch), BATCH_SESSIONS):
            store.replace(batch[start : start + BATCH_SESSIONS], set())
        sqlite_s = time.perf_counter() - started
        store.close()

    per_message = {
        "decompose (Python)": decompose_s,
        "Tantivy add + commit + merges": tantivy_s,
        "SQLite rows (synchronous=FULL)": sqlite_s,
    }
    partition_s = sum(per_message.values())
    print(f"{messages:,} messages in {len(sessions):,} sessions (seed {args.seed}), one process")
    print(f"  {'FTS5 build (baseline)':<34} {fts5_rate:>9,.0f} msg/s  {1e6 / fts5_rate:6.1f} µs/msg")
    for name, seconds in per_message.items():
        print(f"  {name:<34} {messages / seconds:>9,.0f} msg/s  {seconds / messages * 1e6:6.1f} µs/msg")
    one_partition = messages / partition_s
    print(
        f"  {'one partition, all three':<34} {one_partition:>9,.0f} msg/s  {partition_s / messages * 1e6:6.1f} µs/msg"
    )
    print(
        f"  ceiling, two partitions on two cores, nothing else: {2 * one_partition:,.0f} msg/s = "
        f"{2 * one_partition / fts5_rate:.2f}x FTS5"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
