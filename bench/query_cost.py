"""The bill of a query: CPU per search and throughput at 8, 32 and 128 clients, per lane, over gRPC and
HTTP, beside SQLite FTS5 in-process driven by as many threads, in one run.

    python bench/query_cost.py [--messages 100000] [--requests 1500] [--clients 8,32,128]
                               [--shapes colocated,split] [--out bench/results/query-cost-<N>.json]

1. Generates the synthetic archive (`generate_sessions`, as bench/run.py does) and the query classes of
   bench/queries.py (their first `--per-class` queries each, cycled).
2. FTS5: builds the same archive into SQLite FTS5 (bench/fts5_baseline.py); its cells run `--requests`
   searches from as many threads as clients, each with its own read-only connection (SQLite runs them
   in parallel), and take this process's CPU time across them.
3. Starts a fresh local cluster of each shape of the embedded default (2 partitions, no embedder, the
   HTTP API on a free port), both at once, each ingesting the archive through IngestSessions:
   - `colocated`: the query node holds the partitions and calls them in-process (`quarry up`);
   - `split`: an index node per partition, called over gRPC (as index nodes on other machines).
   Then for each client count, surface (gRPC through QuarryClient, HTTP through keep-alive
   connections) and lane (dialogue, actions), a cell of `--requests` searches per shape, each client
   thread taking the next as soon as its previous one is answered, after an untimed warm-up of a
   tenth as many; the CPU of every node process (from /proc) and of this process (the clients) across
   them, per request. Each cell runs in two halves in mirrored order (colocated, split, split,
   colocated; FTS5 before and after its client count's cells), so the machine's swings fall on all.
4. Prints requests/s, latency p50/p95 and CPU ms per request (nodes, clients), and the ratios the
   cost of a query is judged by: CPU per request ÷ FTS5's, requests/s ÷ FTS5's, HTTP ÷ gRPC, and
   colocated ÷ split. Every failed request is an error: the bench exits 1 after writing its results.
5. Last in each shape: dialogue searches from 8 clients while another archive of the same size is
   ingested, beside the same searches with nothing else running (p50 / p95).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import orjson  # noqa: E402

from bench.fts5_baseline import Fts5Archive  # noqa: E402
from bench.http_api import HttpClient, free_port, wait_http  # noqa: E402
from bench.queries import BenchQuery, build_queries  # noqa: E402
from bench.run import log, process_cpu_s, wait_visible  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402

LIMIT = 20
LANES = ("dialogue", "actions")
SURFACES = ("grpc", "http")
SHAPES = ("colocated", "split")
INGEST_BATCH = 500
WARM_UP_SHARE = 10  # a tenth of the requests, untimed, before each timed cell
DURING_CLIENTS = 8
DURING_IDLE_REQUESTS = 800


@dataclass
class Cell:
    """One timed run of requests: what it answered, how fast, and what it cost."""

    requests: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)

    def merged(self, other: Cell) -> Cell:
        """Two halves of one cell as the whole (their requests, time, latencies and CPU summed)."""
        cpu = {k: self.cpu_s.get(k, 0.0) + other.cpu_s.get(k, 0.0) for k in {*self.cpu_s, *other.cpu_s}}
        return Cell(
            self.requests + other.requests,
            self.seconds + other.seconds,
            self.latencies_ms + other.latencies_ms,
            self.errors + other.errors,
            cpu,
        )

    def summary(self) -> dict[str, Any]:
        p50, p95 = np.percentile(self.latencies_ms, [50, 95]) if self.latencies_ms else (0.0, 0.0)
        answered = len(self.latencies_ms)
        return {
            "requests": self.requests,
            "answered": answered,
            "errors": len(self.errors),
            "requests_per_s": round(answered / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(float(p50), 3),
            "p95_ms": round(float(p95), 3),
            "cpu_ms_per_request": {k: round(v * 1000 / max(1, answered), 3) for k, v in self.cpu_s.items()},
            "cpu_ms_per_request_total": round(sum(self.cpu_s.values()) * 1000 / max(1, answered), 3),
        }


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def drive(workers: Sequence[Callable[[int], None]], requests: int, stop: threading.Event | None = None) -> Cell:
    """`requests` calls spread over the workers (one thread each), each taking the next request number
    as soon as its previous call returned; with `stop`, calls until it is set."""
    counter = itertools.count()
    lock = threading.Lock()
    cell = Cell(requests, 0.0)
    barrier = threading.Barrier(len(workers) + 1)

    def work(call: Callable[[int], None]) -> None:
        mine: list[float] = []
        barrier.wait()
        while not (stop is not None and stop.is_set()) and (i := next(counter)) < requests:
            started = time.perf_counter()
            try:
                call(i)
            except Exception as error:  # every failure is an error of the cell
                with lock:
                    cell.errors.append(f"{type(error).__name__}: {error}"[:300])
                continue
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            cell.latencies_ms.extend(mine)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    cell.seconds = time.perf_counter() - started
    if stop is not None:  # as many as were made before it was set
        cell.requests = len(cell.latencies_ms) + len(cell.errors)
    return cell


def measured(workers: Sequence[Callable[[int], None]], requests: int, pids: dict[str, int]) -> Cell:
    """A warm-up, then the timed cell with the CPU every process and this one spent on it."""
    drive(workers, max(len(workers), requests // WARM_UP_SHARE))
    before = {name: process_cpu_s(pid) for name, pid in pids.items()}
    client_before = own_cpu_s()
    cell = drive(workers, requests)
    cell.cpu_s = {name: process_cpu_s(pid) - before[name] for name, pid in pids.items()}
    cell.cpu_s["clients"] = own_cpu_s() - client_before
    return cell


# ----- FTS5 in-process ------------------------------------------------------------------------------


def fts5_cell(db: Path, queries: Sequence[BenchQuery], count: int, requests: int) -> Cell:
    """`requests` FTS5 searches from `count` threads, each with its own read-only connection."""
    readers = [Fts5Archive.reader(db) for _ in range(count)]
    try:
        cell = measured([_fts5_worker(reader, queries) for reader in readers], requests, {})
    finally:
        for reader in readers:
            reader.close()
    cell.cpu_s = {"in_process": cell.cpu_s.pop("clients")}
    return cell


def _fts5_worker(reader: Fts5Archive, queries: Sequence[BenchQuery]) -> Callable[[int], None]:
    def call(i: int) -> None:
        q = queries[i % len(queries)]
        reader.search(q.fts_match, q.role, LIMIT)

    return call


# ----- Quarry -------------------------------------------------------------------------------------------


@dataclass
class Shape:
    """A running local cluster of one shape, with its HTTP API's port."""

    name: str
    cluster: LocalCluster
    http_port: int


def cell_of(shape: Shape, surface: str, lane: str, count: int, queries: Sequence[BenchQuery], requests: int) -> Cell:
    info = shape.cluster.info()
    if surface == "grpc":
        connections: list[Any] = [QuarryClient(info.query, info.ingest) for _ in range(count)]
        workers = [_grpc_worker(c, queries, lane) for c in connections]
    else:
        connections = [HttpClient("127.0.0.1", shape.http_port) for _ in range(count)]
        workers = [_http_worker(c, queries, lane) for c in connections]
    try:
        return measured(workers, requests, dict(shape.cluster.pids))
    finally:
        for connection in connections:
            connection.close()


def every_cell(
    shapes: Sequence[Shape], db: Path, queries: Sequence[BenchQuery], clients: Sequence[int], requests: int
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each Quarry cell of each shape, and FTS5's per client count. A cell's requests are cut in two
    halves run in mirrored order (shapes A B, then B A; FTS5 before and after its client count's Quarry
    cells), so that the machine's swings fall on every contender alike."""
    cells: dict[str, dict[str, Any]] = {shape.name: {} for shape in shapes}
    fts5: dict[str, Any] = {}
    half = requests // 2
    for count in clients:
        fts5_first = fts5_cell(db, queries, count, half)
        for surface in SURFACES:
            for lane in LANES:
                halves: dict[str, list[Cell]] = {shape.name: [] for shape in shapes}
                for shape in [*shapes, *reversed(shapes)]:
                    halves[shape.name].append(cell_of(shape, surface, lane, count, queries, half))
                key = f"{surface}/{lane}/{count}"
                for name, (first, second) in halves.items():
                    whole = first.merged(second)
                    cells[name][key] = {**whole.summary(), "first_errors": whole.errors[:3]}
                    log(
                        f"{name}/{key}: {cells[name][key]['requests_per_s']} req/s, "
                        f"{cells[name][key]['cpu_ms_per_request_total']} ms CPU each"
                    )
        fts5[str(count)] = fts5_first.merged(fts5_cell(db, queries, count, half)).summary()
        log(f"FTS5, {count} threads: {fts5[str(count)]['requests_per_s']} req/s")
    return cells, fts5


def _grpc_worker(client: QuarryClient, queries: Sequence[BenchQuery], lane: str) -> Callable[[int], None]:
    def call(i: int) -> None:
        client.search(queries[i % len(queries)].quarry, lane=lane, limit=LIMIT)

    return call


def _http_worker(client: HttpClient, queries: Sequence[BenchQuery], lane: str) -> Callable[[int], None]:
    targets = [
        "/api/sessions?" + urllib.parse.urlencode({"query": q.quarry, "lane": lane, "limit": LIMIT}) for q in queries
    ]

    def call(i: int) -> None:
        status, body = client.get(targets[i % len(targets)])
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body[:200]!r}")
        orjson.loads(body)

    return call


def during_ingest(cluster: LocalCluster, queries: Sequence[BenchQuery], more: Sequence[Any]) -> dict[str, Any]:
    """Dialogue searches from DURING_CLIENTS gRPC clients while `more` sessions are ingested (batches of
    INGEST_BATCH, one after the other), beside the same searches with nothing else running."""
    info = cluster.info()
    clients = [QuarryClient(info.query, info.ingest) for _ in range(DURING_CLIENTS)]
    workers = [_grpc_worker(c, queries, "dialogue") for c in clients]
    idle = drive(workers, DURING_IDLE_REQUESTS)
    done = threading.Event()
    during: list[Cell] = []
    searching = threading.Thread(target=lambda: during.append(drive(workers, sys.maxsize, done)), daemon=True)
    searching.start()
    started = time.perf_counter()
    with QuarryClient(info.query, info.ingest) as writer:
        for start in range(0, len(more), INGEST_BATCH):
            writer.ingest_sessions(more[start : start + INGEST_BATCH])
    ingest_s = time.perf_counter() - started
    done.set()
    searching.join()
    for client in clients:
        client.close()
    messages = sum(len(s.messages) for s in more)
    return {
        "idle": idle.summary(),
        "during": during[0].summary(),
        "ingest_messages_per_s": round(messages / ingest_s, 1),
    }


def start_shape(name: str, home: Path, sessions: Sequence[Any]) -> Shape:
    """A fresh local cluster of the shape `name`, holding `sessions`."""
    port = free_port()
    cluster = LocalCluster(home, partitions=2, embedder="none", http=f"127.0.0.1:{port}", colocate=name == "colocated")
    cluster.start()
    try:
        wait_http("127.0.0.1", port)
        with QuarryClient(cluster.info().query, cluster.info().ingest) as client:
            for start in range(0, len(sessions), INGEST_BATCH):
                client.ingest_sessions(sessions[start : start + INGEST_BATCH])
            wait_visible(client, sessions)
    except BaseException:
        cluster.stop()
        raise
    log(f"{name}: ingested")
    return Shape(name, cluster, port)


# ----- the report ------------------------------------------------------------------------------------


def ratios(result: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    fts5 = result["fts5"]
    for shape, cells in result["shapes"].items():
        for key, cell in cells.items():
            surface, lane, count = key.split("/")
            base = fts5[count]
            name = f"{shape}/{key}"
            out[f"{name} cpu/fts5"] = round(cell["cpu_ms_per_request_total"] / base["cpu_ms_per_request_total"], 2)
            out[f"{name} throughput/fts5"] = round(cell["requests_per_s"] / base["requests_per_s"], 3)
            if surface == "http":
                grpc = cells[f"grpc/{lane}/{count}"]
                out[f"{name} http/grpc"] = round(cell["requests_per_s"] / grpc["requests_per_s"], 3)
            if shape == "colocated" and "split" in result["shapes"]:
                split = result["shapes"]["split"][key]
                out[f"{name} colocated/split"] = round(cell["requests_per_s"] / split["requests_per_s"], 3)
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        f"the cost of a query: {result['messages']:,} messages, {result['requests']} requests per cell, "
        f"{result['cpus']} CPUs",
        f"command: {result['command']}",
        "",
        f"{'cell':<34} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'CPU ms/req':>11} {'nodes':>7} {'clients':>8}",
    ]
    for count, cell in result["fts5"].items():
        lines.append(
            f"{'fts5 in-process/' + count:<34} {cell['requests_per_s']:>8} {cell['p50_ms']:>8} {cell['p95_ms']:>8} "
            f"{cell['cpu_ms_per_request_total']:>11}"
        )
    for shape, cells in result["shapes"].items():
        for key, cell in cells.items():
            per = cell["cpu_ms_per_request"]
            nodes = round(sum(v for k, v in per.items() if k != "clients"), 3)
            lines.append(
                f"{shape + '/' + key:<34} {cell['requests_per_s']:>8} {cell['p50_ms']:>8} {cell['p95_ms']:>8} "
                f"{cell['cpu_ms_per_request_total']:>11} {nodes:>7} {per.get('clients', 0):>8}"
                + (f"  errors {cell['errors']}" if cell["errors"] else "")
            )
    for shape, during in result.get("during_ingest", {}).items():
        idle, busy = during["idle"], during["during"]
        lines.append(
            f"{shape}: dialogue p50/p95 {idle['p50_ms']}/{idle['p95_ms']} ms idle, "
            f"{busy['p50_ms']}/{busy['p95_ms']} ms while ingesting at {during['ingest_messages_per_s']:,.0f} "
            f"messages/s ({DURING_CLIENTS} clients)"
        )
    lines += ["", "ratios"]
    lines += [f"  {name:<52} {value}" for name, value in result["ratios"].items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=1500, help="timed requests per cell")
    parser.add_argument("--clients", type=lambda s: [int(c) for c in s.split(",")], default=[8, 32, 128])
    parser.add_argument("--shapes", type=lambda s: s.split(","), default=list(SHAPES))
    parser.add_argument("--per-class", type=int, default=10, help="queries of each class in the mix")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if unknown := set(args.shapes) - set(SHAPES):
        parser.error(f"unknown shapes {sorted(unknown)}: choose from {', '.join(SHAPES)}")
    out = args.out or REPO / "bench" / "results" / f"query-cost-{args.messages}.json"
    log(f"generating {args.messages:,} messages")
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    queries = build_queries(per_class=args.per_class)
    result: dict[str, Any] = {
        "messages": args.messages,
        "requests": args.requests,
        "cpus": len(os.sched_getaffinity(0)),
        "command": " ".join(["python bench/query_cost.py", *(sys.argv[1:] if argv is None else argv)]),
    }
    more = list(generate_sessions(args.messages, seed=args.seed + 1))  # the concurrent ingest's archive
    with tempfile.TemporaryDirectory(prefix="quarry-cost-") as tmp:
        db = Path(tmp) / "fts5.db"
        archive = Fts5Archive(db)
        archive.build(sessions)
        archive.close()
        shapes: list[Shape] = []
        try:
            for name in args.shapes:
                shapes.append(start_shape(name, Path(tmp) / name, sessions))
            result["shapes"], result["fts5"] = every_cell(shapes, db, queries, args.clients, args.requests)
            result["during_ingest"] = {}
            for shape in shapes:
                log(f"{shape.name}: searching while {len(more)} more sessions are ingested")
                result["during_ingest"][shape.name] = during_ingest(shape.cluster, queries, more)
        finally:
            for shape in shapes:
                shape.cluster.stop()
    result["ratios"] = ratios(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"\nresult: {out}")
    failed = sum(c["errors"] for cells in result["shapes"].values() for c in cells.values())
    failed += sum(d[phase]["errors"] for d in result["during_ingest"].values() for phase in ("idle", "during"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
