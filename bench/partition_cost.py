"""What a dialogue search costs an index node per partition it holds: the bound on the cluster's p50.

    python bench/partition_cost.py --messages N [--partitions 1,2,4,8,16] [--per-class 25] [--out PATH]

Builds the synthetic corpus into partition sets of each size (in this process: no gRPC, no other
node), then runs the bench's dialogue query set (bench/queries.py, limit 21: what the query node asks
for a page of 20) through the index node's own SearchSessions handler, once warm, once timed, over all
of a set's partitions. The embedded default answers a page from nodes holding one partition each; a
replicated cluster of 16 partitions on 3 nodes covers them with 2 nodes of 8. The node's p50 at 8
partitions against 1 is therefore the floor of the cluster's p50 against direct push's, before any
network or query-node cost: a fixed cost per partition (compile, rank, look up ids) that grows with
the partitions a node answers for.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # `python bench/partition_cost.py` puts bench/ on the path, not the repository root

import numpy as np  # noqa: E402

from bench.queries import build_queries  # noqa: E402
from bench.run import log  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.core.routing import partition_for  # noqa: E402
from quarry.dsl import compile_query  # noqa: E402
from quarry.index.partition_set import PartitionSet  # noqa: E402
from quarry.index.server import IndexServicer  # noqa: E402
from quarry.v1 import index_pb2, units_pb2  # noqa: E402

PAGE_DEPTH = 21  # a page of 20 and one more, as the query node asks
UPSERT_BATCH = 1000


def corpus(messages: int, seed: int) -> list[units_pb2.Session]:
    sessions: list[units_pb2.Session] = []
    total = 0
    for session in generate_sessions(10**9, seed=seed):
        sessions.append(session)
        total += len(session.messages)
        if total >= messages:
            break
    return sessions


def loaded(sessions: Sequence[units_pb2.Session], partitions: int, directory: Path) -> PartitionSet:
    held = PartitionSet(directory, expected_partitions=partitions)
    groups: dict[int, list[units_pb2.Session]] = {}
    for session in sessions:
        groups.setdefault(partition_for(session.id, partitions), []).append(session)
    for partition in range(partitions):
        replica = held.open(partition)
        batch = groups.get(partition, [])
        for start in range(0, len(batch), UPSERT_BATCH):
            replica.lexical.upsert(batch[start : start + UPSERT_BATCH])
    return held


def node_latency(held: PartitionSet, partitions: int, queries: Sequence[str]) -> dict[str, float]:
    servicer = IndexServicer(held, lambda: partitions)
    anchors = [index_pb2.PartitionAnchor(partition=p) for p in range(partitions)]
    requests = [
        index_pb2.PartitionSearchRequest(
            plan=compile_query(q).plan, lane="dialogue", limit=PAGE_DEPTH, with_snippets=True, partitions=anchors
        )
        for q in queries
    ]
    for request in requests:  # warm
        servicer.SearchSessions(request, None)
    samples = []
    for request in requests:
        started = time.perf_counter()
        servicer.SearchSessions(request, None)
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(float(np.percentile(samples, 50)), 3),
        "p95_ms": round(float(np.percentile(samples, 95)), 3),
        "n": len(samples),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--partitions", default="1,2,4,8,16")
    parser.add_argument("--per-class", type=int, default=25)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.partitions.split(",")]
    log(f"generating {args.messages:,} messages (seed {args.seed})")
    sessions = corpus(args.messages, args.seed)
    queries = [q.quarry for q in build_queries(args.per_class)]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="quarry-partition-cost-") as tmp:
        for size in sizes:
            log(f"{size} partitions: loading")
            held = loaded(sessions, size, Path(tmp) / f"p{size}")
            try:
                results[str(size)] = node_latency(held, size, queries)
            finally:
                held.close_all()
            log(f"{size} partitions: p50 {results[str(size)]['p50_ms']} ms")
    base = results[str(sizes[0])]["p50_ms"]
    print(f"one index node's dialogue search, {args.messages:,} messages, {len(queries)} queries (limit {PAGE_DEPTH})")
    print("  partitions held   p50 ms   p95 ms   p50 / one partition's")
    for size in sizes:
        figures = results[str(size)]
        print(f"  {size:>15} {figures['p50_ms']:>8.2f} {figures['p95_ms']:>8.2f} {figures['p50_ms'] / base:>10.2f}x")
    if args.out:
        args.out.write_text(
            json.dumps({"messages": args.messages, "queries": len(queries), "nodes": results}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
