"""A dialogue search's latency in cluster mode beside the embedded default, in one run, by stage.

    python bench/cluster_latency.py --messages N [--seed S] [--per-class K] [--rounds R] [--out PATH]

Starts three shapes at once and ingests the same synthetic corpus into each (ack applied): the embedded
default (`quarry up`: 2 partitions in the query node's process), the same with an index node process per
partition (`quarry up --index-processes`, `split`: the hop to the partitions without the cluster's 16
partitions) and the replicated cluster on the log (3 NATS servers, 3 index nodes, 16 partitions on 2
replicas each). Then, after one warm-up pass on each, `--rounds` rounds of the query set (bench/queries.py,
lane dialogue, limit 20, one client) go through them in turn, every other round in reverse order, so the
machine's drift falls on all alike. Reports each one's p50 / p95 per query class and overall, the ratios to
the default (target for the cluster: ≤ 1.3), and the p50 of every stage the query node reports (`timings_ms`:
the lexical fan-out, the slowest partition's own work and its rank / hydrate / snippets, parse, merge), with
the client's hop (wall minus the query node's total).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # `python bench/cluster_latency.py` puts bench/ on the path, not the repository root

import numpy as np  # noqa: E402

from bench.cluster import CONVERGE_TIMEOUT_S, DIRECT, REPLICATED, converged, ingest, running, wait_until  # noqa: E402
from bench.partition_cost import corpus  # noqa: E402
from bench.queries import CLASSES, BenchQuery, build_queries  # noqa: E402
from bench.run import log, wait_visible  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402

SEARCH_LIMIT = 20
TARGET_RATIO = 1.3
SHAPES = {"default": DIRECT, "split": {**DIRECT, "colocate": False}, "cluster": REPLICATED}


class Samples:
    """One shape's timed searches: wall time per query class, and each stage the query node reported."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {k: [] for k in (*CLASSES, "all")}
        self.stages: dict[str, list[float]] = {}

    def add(self, kind: str, wall_ms: float, timings: dict[str, float]) -> None:
        self.wall[kind].append(wall_ms)
        self.wall["all"].append(wall_ms)
        for stage, value in timings.items():
            self.stages.setdefault(stage, []).append(value)
        self.stages.setdefault("client_hop", []).append(wall_ms - timings.get("total", 0.0))

    def summary(self) -> dict[str, object]:
        return {
            "latency": {k: _percentiles(v) for k, v in self.wall.items() if v},
            "stages_p50_ms": {k: round(float(np.median(v)), 3) for k, v in sorted(self.stages.items())},
        }


def _percentiles(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(samples, 50)), 3),
        "p95_ms": round(float(np.percentile(samples, 95)), 3),
        "n": len(samples),
    }


def one_pass(client: QuarryClient, queries: Sequence[BenchQuery], samples: Samples | None) -> None:
    """The query set once; timed into `samples` (None: a warm-up pass)."""
    for q in queries:
        started = time.perf_counter()
        envelope = client.search(q.quarry, lane="dialogue", limit=SEARCH_LIMIT)
        wall_ms = (time.perf_counter() - started) * 1000
        if envelope.partial:
            raise RuntimeError(f"a partial answer to {q.quarry!r}: {list(envelope.missing)}")
        if samples is not None:
            samples.add(q.kind, wall_ms, dict(envelope.timings_ms))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-class", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=4, help="timed passes per shape (mirrored order)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    log(f"generating {args.messages:,} messages (seed {args.seed})")
    sessions = corpus(args.messages, args.seed)
    queries = build_queries(args.per_class)
    samples = {name: Samples() for name in SHAPES}
    with tempfile.TemporaryDirectory(prefix="quarry-cluster-latency-") as tmp, ExitStack() as stack:
        clients: dict[str, QuarryClient] = {}
        for name, shape in SHAPES.items():
            cluster, client = stack.enter_context(running(Path(tmp) / name, name, shape))
            wait_until(client, converged, CONVERGE_TIMEOUT_S)
            ingest(cluster, client, sessions, "applied")
            wait_until(client, converged, CONVERGE_TIMEOUT_S)
            wait_visible(client, sessions)
            one_pass(client, queries, None)
            clients[name] = client
            log(f"{name}: {len(sessions):,} sessions ingested, warmed")
        order = list(SHAPES)
        for round_ in range(args.rounds):
            for name in order if round_ % 2 == 0 else order[::-1]:
                one_pass(clients[name], queries, samples[name])
            log(f"round {round_ + 1} of {args.rounds} done")
    result = {
        "messages": args.messages,
        "sessions": len(sessions),
        "queries": len(queries),
        "rounds": args.rounds,
        "command": " ".join(["python", *sys.argv]),
        "shapes": {name: {"shape": SHAPES[name], **samples[name].summary()} for name in SHAPES},
    }
    default = result["shapes"]["default"]["latency"]  # type: ignore[index]
    result["over_default_p50"] = {
        name: {k: round(result["shapes"][name]["latency"][k]["p50_ms"] / default[k]["p50_ms"], 3) for k in default}  # type: ignore[index]
        for name in SHAPES
        if name != "default"
    }
    print(render(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


def render(result: dict) -> str:  # type: ignore[type-arg]
    shapes = result["shapes"]
    names = list(shapes)
    lines = [
        f"dialogue search, {result['messages']:,} messages, {result['queries']} queries x {result['rounds']} rounds",
        "  p50 / p95 ms, and the ratio of p50s to the default's",
        "  class    " + "".join(f"{name:>24}" for name in names),
    ]
    for kind in shapes["default"]["latency"]:
        cells = []
        for name in names:
            figures = shapes[name]["latency"][kind]
            ratio = "" if name == "default" else f" ({result['over_default_p50'][name][kind]:.2f}x)"
            cells.append(f"{figures['p50_ms']:.2f} / {figures['p95_ms']:.2f}{ratio}".rjust(24))
        lines.append(f"  {kind:<8} " + "".join(cells))
    lines.append(f"  target: cluster's p50 over all classes <= {TARGET_RATIO}x the default's")
    lines.append("  stage p50 ms          " + "".join(f"{name:>10}" for name in names))
    stages = sorted({stage for name in names for stage in shapes[name]["stages_p50_ms"]})
    for stage in stages:
        lines.append(f"  {stage:<22}" + "".join(_cell(shapes[name]["stages_p50_ms"].get(stage)) for name in names))
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return f"{'-':>10}" if value is None else f"{value:>10.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
