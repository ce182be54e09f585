"""Quarry on the replicated log next to the embedded default: ingest, search latency, a killed replica,
a joining node, memory, and BM25 quality over many partitions.

    python bench/cluster.py --messages N [--seed S] [--out bench/results/cluster-<N>.json] [--skip-quality]
                            [--dataset PATH] [--limit-queries N] [--query-rate R] [--kill-seconds S]

Generates the synthetic corpus once, then one cluster at a time (never two: they share the cores):
1. direct push, the embedded default (2 index partitions, no embedder): ingest through IngestSessions with
   ack applied, timed from the first send to the IngestReport; the dialogue query set (bench/queries.py)
   through Search after a warm-up pass; RSS of each index node;
2. a cluster on the log with one replica per partition (3 NATS servers, 2 index nodes, 16 partitions):
   ingest with ack applied, and its rate as a share of direct push's;
3. the replicated cluster (3 NATS servers, 3 index nodes, 16 partitions on 2 replicas each):
   a. ingest with ack log, then the time until every replica has applied every record;
   b. a fresh identical cluster, ingest with ack applied;
   c. the dialogue query set through it, p50 as a multiple of direct push's;
   d. kill -9 of index-1 under a steady dialogue query load (--query-rate per second, deadline 5 s):
      windows before (10 s), during (--kill-seconds from the kill), recovering (from the restart until
      the cluster converged again) and after (10 s), each with queries, failures, partial answers and
      latency;
   e. a fourth index node joining under the same load: seconds until its partitions are active and no
      replica is catching up or draining anywhere, and the queries that failed meanwhile;
   f. resident memory of every index node and NATS server;
4. quality: BEIR SciFact on the dialogue lane through a cluster on the log with 2 and then 16
   partitions (BM25 statistics are per partition): nDCG@10 and recall@100 of each, and the difference.
Prints a table with every figure, ratio and target and writes everything as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# `python bench/cluster.py` puts bench/ on the path, not the repository root.
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from bench.beir import Dataset, doc_session, load_dataset, mean_metrics  # noqa: E402
from bench.quality import DEFAULT_DATASET, LANES, ask  # noqa: E402
from bench.queries import BenchQuery, Latency, build_queries, measure  # noqa: E402
from bench.run import corpus_stats, log, process_cpu_s, process_memory, wait_visible  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.core.errors import QuarryError  # noqa: E402
from quarry.v1 import ingest_pb2, query_pb2, units_pb2  # noqa: E402

SEARCH_LIMIT = 20
LOAD_DEADLINE_MS = 5000.0
STEADY_S = 10.0  # the load's before and after windows
VICTIM = "index-1"
NODE_LEFT_DELAY_MS = 10_000
CONVERGE_TIMEOUT_S = 300.0
MIN_APPLY_PER_S = 200.0  # messages applied per second slower than this means something is wrong
POLL_S = 0.2
QUALITY_PARTITIONS = (2, 16)
TARGETS = {
    "single_replica_ingest_ratio_min": 0.8,
    "replicated_ingest_ratio_min": 0.4,
    "replicated_p50_ratio_max": 1.2,
    "kill_p95_ratio_max": 3.0,
    "kill_failed_max": 0,
    "join_failed_max": 0,
    "quality_ndcg_loss_max": 0.005,
}
DIRECT = {"partitions": 2, "embedder": "none"}
SINGLE_REPLICA = {
    "log": "nats", "index_nodes": 2, "replicas": 1, "partitions": 16, "nats_servers": 3, "embedder": "none",
}  # fmt: skip
REPLICATED = {
    "log": "nats", "index_nodes": 3, "replicas": 2, "partitions": 16, "nats_servers": 3, "embedder": "none",
    "node_left_delay_ms": NODE_LEFT_DELAY_MS,
}  # fmt: skip
QUALITY_SHAPE = {"log": "nats", "index_nodes": 2, "replicas": 1, "nats_servers": 1, "embedder": "none"}


# ----- clusters and ingest ---------------------------------------------------------------------------


@contextmanager
def running(home: Path, what: str, shape: dict[str, object]) -> Iterator[tuple[LocalCluster, QuarryClient]]:
    """A started cluster and a client of it; the cluster is stopped however the block ends."""
    cluster = LocalCluster(home, **shape)  # type: ignore[arg-type]
    log(f"{what}: starting {shape}")
    try:
        cluster.start()
        with QuarryClient(cluster.node_addresses["query"], cluster.node_addresses["ingest"]) as client:
            yield cluster, client
    finally:
        cluster.stop()


def ingest(
    cluster: LocalCluster, client: QuarryClient, sessions: Sequence[units_pb2.Session], ack: str
) -> tuple[ingest_pb2.IngestReport, float, dict[str, float]]:
    """Every session in one IngestSessions call: the report, the seconds from the first send to it, and
    the CPU seconds each kind of process spent meanwhile (this process, the client, included)."""
    marks: dict[str, float] = {}

    def stream() -> Iterator[units_pb2.Session]:
        marks["first_send"] = time.perf_counter()
        yield from sessions

    before = cpu_seconds(cluster)
    report = client.ingest_sessions(stream(), ack=ack)
    seconds = time.perf_counter() - marks["first_send"]
    after = cpu_seconds(cluster)
    if report.sessions_written != len(sessions) or report.issues:
        raise RuntimeError(f"ingest wrote {report.sessions_written} of {len(sessions)} sessions: {report.issues[:3]}")
    spent: dict[str, float] = {}
    for name, used in after.items():
        kind = name.split("-")[0]
        spent[kind] = round(spent.get(kind, 0.0) + used - before.get(name, 0.0), 2)
    return report, seconds, spent


def cpu_seconds(cluster: LocalCluster) -> dict[str, float]:
    """User + system CPU seconds of every node process so far, and of this process (`client`)."""
    out = {"client": time.process_time()}
    for name, proc in cluster.procs.items():
        try:
            out[name] = process_cpu_s(proc.pid)
        except OSError:
            continue
    return out


def ingest_figures(
    report: ingest_pb2.IngestReport, messages: int, seconds: float, ack: str, cpu: dict[str, float]
) -> dict[str, object]:
    """The ingest's rate, and where the CPU went: on 2 cores a rate is bounded by messages / (total CPU
    seconds / 2), whatever the wall clock."""
    total = sum(cpu.values())
    return {
        "ack": ack,
        "messages": messages,
        "sessions_written": report.sessions_written,
        "in_log": report.in_log,
        "searchable": report.searchable,
        "seconds": round(seconds, 3),
        "messages_per_s": round(messages / seconds, 1),
        "cpu_seconds": {**cpu, "total": round(total, 2)},
        "cpu_bound_messages_per_s": round(messages / (total / (os.cpu_count() or 1)), 1) if total else None,
    }


def message_count(sessions: Sequence[units_pb2.Session]) -> int:
    return sum(len(s.messages) for s in sessions)


def memory(cluster: LocalCluster, prefixes: tuple[str, ...] = ("index-", "nats-")) -> dict[str, dict[str, int]]:
    """RssAnon / RssFile / VmRSS (kB) of the cluster's live processes whose names start with a prefix."""
    return {
        name: process_memory(proc.pid)
        for name, proc in sorted(cluster.procs.items())
        if name.startswith(prefixes) and proc.poll() is None
    }


# ----- the cluster map -------------------------------------------------------------------------------


def wait_until(client: QuarryClient, check: Callable[[query_pb2.ClusterStatusResponse], bool], timeout: float) -> bool:
    """Polls ClusterStatus until `check` holds (True) or `timeout` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check(client.status()):
                return True
        except QuarryError:
            pass  # the query node's view is being rebuilt: ask again
        time.sleep(POLL_S)
    return False


def converged(status: query_pb2.ClusterStatusResponse) -> bool:
    """Every partition on as many replicas as the map wants, each active, alive and with no lag."""
    wanted = status.map.replicas
    return status.map.partitions > 0 and all(
        len(p.replicas) == wanted and all(r.state == "active" and r.alive and r.lag == 0 for r in p.replicas)
        for p in status.map.partition_replicas
    )


def fully_applied(status: query_pb2.ClusterStatusResponse, watermarks: dict[int, int]) -> bool:
    """Every replica of every partition has applied the partition's last written record, with no lag."""
    for entry in status.map.partition_replicas:
        applied = {r.applied_seq for r in entry.replicas}
        if any(r.lag != 0 for r in entry.replicas) or len(applied) != 1:
            return False
        if applied.pop() < watermarks.get(entry.partition, 0):
            return False
    return True


def re_replicated(status: query_pb2.ClusterStatusResponse, gone: str) -> bool:
    """Every partition has as many active live replicas as the map wants without the `gone` node."""
    return all(
        sum(1 for r in p.replicas if r.node != gone and r.state == "active" and r.alive) >= status.map.replicas
        for p in status.map.partition_replicas
    )


def joined(status: query_pb2.ClusterStatusResponse, node: str) -> bool:
    """The map gives `node` partitions, and every partition is on as many replicas as it wants, all active
    (none catching up or draining anywhere), `node`'s alive."""
    wanted = status.map.replicas
    settled = all(
        len(p.replicas) == wanted and all(r.state == "active" for r in p.replicas)
        for p in status.map.partition_replicas
    )
    mine = [r for p in status.map.partition_replicas for r in p.replicas if r.node == node]
    return settled and bool(mine) and all(r.alive for r in mine)


def partitions_of(status: query_pb2.ClusterStatusResponse, node: str) -> list[int]:
    return sorted(p.partition for p in status.map.partition_replicas if any(r.node == node for r in p.replicas))


# ----- latency ---------------------------------------------------------------------------------------


def latency_dict(latency: dict[str, Latency]) -> dict[str, dict[str, float]]:
    return {k: {**v.as_dict(), "max_ms": round(max(v.samples_ms), 3)} for k, v in latency.items()}


def query_set_latency(client: QuarryClient, queries: Sequence[BenchQuery]) -> dict[str, object]:
    """The query set on the dialogue lane, after a warm-up pass: latency per class and overall; a failed
    query is timed until it failed and listed, a partial answer counted."""
    failed: dict[str, str] = {}
    partial: dict[str, list[str]] = {}

    def search(q: BenchQuery) -> None:
        try:
            envelope = client.search(q.quarry, lane="dialogue", limit=SEARCH_LIMIT)
            if envelope.partial:
                partial[q.quarry] = [f"{m.partition}: {m.reason}" for m in envelope.missing]
        except QuarryError as error:
            failed[q.quarry] = str(error)

    latency = measure(search, queries)
    return {"latency": latency_dict(latency), "failed": failed, "partial": partial}


@dataclass(frozen=True)
class Sample:
    """One query of the steady load."""

    at: float  # time.monotonic() when it was sent
    ms: float
    failed: str  # "" or the error
    partial: bool
    missing: tuple[int, ...]
    reasons: tuple[str, ...] = ()  # why the missing partitions were missing


class QueryLoad:
    """Dialogue searches from a thread, one at a time, one every 1/rate seconds: a query slower than
    that delays the next, and missed slots are not made up. Every query is kept with when it was sent."""

    def __init__(self, address: str, queries: Sequence[BenchQuery], rate: float) -> None:
        self.samples: list[Sample] = []
        self._client = QuarryClient(address)
        self._queries = [q.quarry for q in queries]
        self._interval = 1.0 / rate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="query-load", daemon=True)

    def __enter__(self) -> QueryLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=LOAD_DEADLINE_MS / 1000 + 5)
        self._client.close()

    def _run(self) -> None:
        next_at = time.monotonic()
        for query in itertools.cycle(self._queries):
            if self._stop.is_set():
                return
            self.samples.append(self._one(query))
            next_at = max(next_at + self._interval, time.monotonic())
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _one(self, query: str) -> Sample:
        at = time.monotonic()
        try:
            envelope = self._client.search(query, lane="dialogue", limit=SEARCH_LIMIT, deadline_ms=LOAD_DEADLINE_MS)
        except Exception as error:  # a failure is a result of the load, never the end of it
            return Sample(at, (time.monotonic() - at) * 1000, f"{type(error).__name__}: {error}", False, ())
        missing = tuple(m.partition for m in envelope.missing)
        reasons = tuple(sorted({m.reason for m in envelope.missing}))
        return Sample(at, (time.monotonic() - at) * 1000, "", envelope.partial, missing, reasons)

    def window(self, start: float, end: float) -> dict[str, object]:
        """The queries sent in [start, end) (time.monotonic())."""
        chosen = [s for s in list(self.samples) if start <= s.at < end]
        ms = [s.ms for s in chosen]
        return {
            "seconds": round(end - start, 2),
            "queries": len(chosen),
            "failed": sum(1 for s in chosen if s.failed),
            "partial": sum(1 for s in chosen if s.partial),
            "p50_ms": round(float(np.percentile(ms, 50)), 3) if ms else None,
            "p95_ms": round(float(np.percentile(ms, 95)), 3) if ms else None,
            "max_ms": round(max(ms), 3) if ms else None,
            "errors": sorted({s.failed for s in chosen if s.failed})[:5],
            "missing_partitions": sorted({p for s in chosen for p in s.missing}),
            "missing_reasons": sorted({r for s in chosen for r in s.reasons})[:5],
        }


# ----- phases ----------------------------------------------------------------------------------------


def run_direct(
    sessions: Sequence[units_pb2.Session], queries: Sequence[BenchQuery], workdir: Path
) -> dict[str, object]:
    with running(workdir / "direct", "direct push", DIRECT) as (cluster, client):
        log("direct push: ingesting (ack applied)")
        report, seconds, cpu = ingest(cluster, client, sessions, "applied")
        figures = ingest_figures(report, message_count(sessions), seconds, "applied", cpu)
        log(f"direct push: {figures['messages_per_s']:,.0f} messages/s; querying")
        latency = query_set_latency(client, queries)
        return {"ingest": figures, **latency, "memory_kB": memory(cluster)}


def run_single_replica(sessions: Sequence[units_pb2.Session], workdir: Path) -> dict[str, object]:
    with running(workdir / "single", "log, one replica", SINGLE_REPLICA) as (cluster, client):
        log("log, one replica: ingesting (ack applied)")
        report, seconds, cpu = ingest(cluster, client, sessions, "applied")
        figures = ingest_figures(report, message_count(sessions), seconds, "applied", cpu)
        log(f"log, one replica: {figures['messages_per_s']:,.0f} messages/s")
        return {"ingest": figures}


def run_ack_log(sessions: Sequence[units_pb2.Session], workdir: Path) -> dict[str, object]:
    """Ingest with ack log, then the time from the first send until every replica applied everything."""
    messages = message_count(sessions)
    with running(workdir / "replicated-log", "replicated, ack log", REPLICATED) as (cluster, client):
        settled = wait_until(client, converged, CONVERGE_TIMEOUT_S)
        log("replicated: ingesting (ack log)")
        started = time.perf_counter()
        report, seconds, cpu = ingest(cluster, client, sessions, "log")
        figures = ingest_figures(report, messages, seconds, "log", cpu)
        log(f"replicated: {figures['messages_per_s']:,.0f} messages/s to the log; waiting for every replica")
        watermarks = {w.partition: w.seq for w in report.watermarks}
        applied = wait_until(
            client, lambda s: fully_applied(s, watermarks), CONVERGE_TIMEOUT_S + messages / MIN_APPLY_PER_S
        )
        applied_s = time.perf_counter() - started
    return {
        "converged_before_ingest": settled,
        "ingest": figures,
        "fully_applied": {
            "reached": applied,
            "seconds": round(applied_s, 3),
            "messages_per_s": round(messages / applied_s, 1) if applied else None,
        },
    }


def run_replicated(
    sessions: Sequence[units_pb2.Session], queries: Sequence[BenchQuery], workdir: Path, args: argparse.Namespace
) -> dict[str, object]:
    """A fresh replicated cluster: ingest with ack applied, the query set, the kill, the join, memory."""
    with running(workdir / "replicated", "replicated, ack applied", REPLICATED) as (cluster, client):
        settled = wait_until(client, converged, CONVERGE_TIMEOUT_S)
        log("replicated: ingesting (ack applied)")
        report, seconds, cpu = ingest(cluster, client, sessions, "applied")
        figures = ingest_figures(report, message_count(sessions), seconds, "applied", cpu)
        log(f"replicated: {figures['messages_per_s']:,.0f} messages/s; waiting until converged, then querying")
        wait_until(client, converged, CONVERGE_TIMEOUT_S)
        latency = query_set_latency(client, queries)
        after_queries = memory(cluster)
        log_status = client.status().log
        with QueryLoad(cluster.node_addresses["query"], queries, args.query_rate) as load:
            kill = kill_and_recover(cluster, client, load, args.kill_seconds)
            join = join_node(cluster, client, load)
        return {
            "converged_before_ingest": settled,
            "ingest": figures,
            **latency,
            "kill": kill,
            "join": join,
            "memory_kB": after_queries,
            "memory_after_join_kB": memory(cluster),
            "log": {"messages": log_status.messages, "bytes": log_status.bytes, "leader": log_status.leader},
        }


def kill_and_recover(
    cluster: LocalCluster, client: QuarryClient, load: QueryLoad, kill_seconds: float
) -> dict[str, object]:
    """kill -9 of VICTIM under the load, its restart, and the load's windows around them."""
    log(f"kill: {STEADY_S:.0f} s of steady load")
    start = time.monotonic()
    time.sleep(STEADY_S)
    killed = time.monotonic()
    log(f"kill: kill -9 {VICTIM}; {kill_seconds:.0f} s window")
    cluster.kill(VICTIM, signal.SIGKILL)
    moved = wait_until(client, lambda s: re_replicated(s, VICTIM), kill_seconds - (time.monotonic() - killed))
    moved_after = time.monotonic() - killed
    time.sleep(max(0.0, killed + kill_seconds - time.monotonic()))
    restarted = time.monotonic()
    log(f"kill: restarting {VICTIM}; waiting until the cluster converged")
    cluster.restart(VICTIM)
    settled = wait_until(client, converged, CONVERGE_TIMEOUT_S)
    recovered = time.monotonic()
    log(f"kill: converged={settled} after {recovered - restarted:.1f} s; {STEADY_S:.0f} s of steady load")
    time.sleep(STEADY_S)
    return {
        "victim": VICTIM,
        "node_left_delay_ms": NODE_LEFT_DELAY_MS,
        "re_replicated_after_s": round(moved_after, 2) if moved else None,
        "converged": settled,
        "converged_after_restart_s": round(recovered - restarted, 2),
        "windows": {
            "before": load.window(start, killed),
            "during": load.window(killed, restarted),
            "recovering": load.window(restarted, recovered),
            "after": load.window(recovered, time.monotonic()),
        },
    }


def join_node(cluster: LocalCluster, client: QuarryClient, load: QueryLoad) -> dict[str, object]:
    """A new index node under the load: seconds from the call until its partitions are active and no
    replica anywhere is catching up or draining."""
    log("join: adding an index node")
    called = time.monotonic()
    node = cluster.add_index_node()
    done = wait_until(client, lambda s: joined(s, node), CONVERGE_TIMEOUT_S)
    seconds = time.monotonic() - called
    log(f"join: {node} done={done} after {seconds:.1f} s")
    return {
        "node": node,
        "done": done,
        "seconds": round(seconds, 2),
        "partitions": partitions_of(client.status(), node),
        "queries": load.window(called, called + seconds),
    }


# ----- quality ---------------------------------------------------------------------------------------


def quality_at(dataset: Dataset, partitions: int, workdir: Path) -> dict[str, object]:
    """Every document ingested (ack applied) and every judged query on the dialogue lane."""
    shape = {**QUALITY_SHAPE, "partitions": partitions}
    sessions = [doc_session(d) for d in dataset.docs]
    with running(workdir / f"quality-{partitions}", f"quality, {partitions} partitions", shape) as (cluster, client):
        _, seconds, _ = ingest(cluster, client, sessions, "applied")
        wait_visible(client, sessions)
        log(f"quality, {partitions} partitions: asking {len(dataset.queries)} queries")
        answers = ask(client, LANES["dialogue"], dataset.queries)
    metrics = mean_metrics(answers.ranked, dataset.qrels)
    return {
        "partitions": partitions,
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "recall@100": round(metrics["recall@100"], 4),
        "ingest_s": round(seconds, 3),
        "query_ms": Latency(tuple(answers.wall_ms) or (0.0,)).as_dict(),
        "failed": answers.failed,
    }


def run_quality(args: argparse.Namespace, workdir: Path) -> dict[str, object]:
    if args.skip_quality:
        return {"skipped": "--skip-quality"}
    if not (args.dataset / "corpus.jsonl").is_file():
        return {"skipped": f"no BEIR dataset at {args.dataset}"}
    dataset = load_dataset(args.dataset)
    if args.limit_queries > 0:
        kept = dict(list(dataset.queries.items())[: args.limit_queries])
        dataset = Dataset(dataset.name, dataset.docs, kept, {q: dataset.qrels[q] for q in kept})
    runs = {str(p): quality_at(dataset, p, workdir) for p in QUALITY_PARTITIONS}
    low, high = (runs[str(p)] for p in QUALITY_PARTITIONS)
    return {
        "dataset": dataset.name,
        "docs": len(dataset.docs),
        "queries": len(dataset.queries),
        "lane": LANES["dialogue"].describe(),
        "runs": runs,
        "ndcg_difference": round(high["ndcg@10"] - low["ndcg@10"], 4),  # type: ignore[operator]
        "recall_difference": round(high["recall@100"] - low["recall@100"], 4),  # type: ignore[operator]
    }


# ----- report ----------------------------------------------------------------------------------------


def ratios(result: dict) -> dict[str, object]:  # type: ignore[type-arg]
    direct, replicated = result["direct"], result["replicated"]
    base = direct["ingest"]["messages_per_s"]
    windows = replicated["kill"]["windows"]
    before, during = windows["before"]["p95_ms"], windows["during"]["p95_ms"]
    return {
        "single_replica_ingest": round(result["single_replica"]["ingest"]["messages_per_s"] / base, 3),
        "ack_log_ingest": round(result["ack_log"]["ingest"]["messages_per_s"] / base, 3),
        "replicated_ingest": round(replicated["ingest"]["messages_per_s"] / base, 3),
        "replicated_p50": {
            kind: round(ours["p50_ms"] / direct["latency"][kind]["p50_ms"], 3)
            for kind, ours in replicated["latency"].items()
        },
        "kill_p95": round(during / before, 3) if before and during else None,
    }


def verdicts(result: dict, r: dict) -> dict[str, bool]:  # type: ignore[type-arg]
    replicated = result["replicated"]
    out = {
        "single_replica_ingest": r["single_replica_ingest"] >= TARGETS["single_replica_ingest_ratio_min"],
        "replicated_ingest": r["replicated_ingest"] >= TARGETS["replicated_ingest_ratio_min"],
        "kill_p95": r["kill_p95"] is not None and r["kill_p95"] <= TARGETS["kill_p95_ratio_max"],
        "kill_failed": replicated["kill"]["windows"]["during"]["failed"] <= TARGETS["kill_failed_max"],
        "join_failed": replicated["join"]["done"]
        and replicated["join"]["queries"]["failed"] <= TARGETS["join_failed_max"],
    }
    for kind, ratio in r["replicated_p50"].items():
        out[f"replicated_p50_{kind}"] = ratio <= TARGETS["replicated_p50_ratio_max"]
    if "ndcg_difference" in result["quality"]:
        out["quality_ndcg"] = result["quality"]["ndcg_difference"] >= -TARGETS["quality_ndcg_loss_max"]
    return out


def _mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def render_ingest(result: dict, r: dict, ok: dict) -> list[str]:  # type: ignore[type-arg]
    applied = result["ack_log"]["fully_applied"]
    to_applied = "-" if applied["messages_per_s"] is None else f"{applied['messages_per_s']:,.0f}"
    single, replicated = r["single_replica_ingest"], r["replicated_ingest"]
    single_min, replicated_min = TARGETS["single_replica_ingest_ratio_min"], TARGETS["replicated_ingest_ratio_min"]
    return [
        "ingest (first send -> report)                  messages/s   ratio to direct (target)",
        f"  direct push, 2 partitions, ack applied          {result['direct']['ingest']['messages_per_s']:>12,.0f}",
        f"  log, 2 nodes, 16 partitions x1, applied     {result['single_replica']['ingest']['messages_per_s']:>12,.0f}"
        f"   {single:.2f}x (>= {single_min}) {_mark(ok['single_replica_ingest'])}",
        f"  log, 3 nodes, 16 partitions x2, ack log     {result['ack_log']['ingest']['messages_per_s']:>12,.0f}"
        f"   {r['ack_log_ingest']:.2f}x",
        f"    first send -> every replica applied       {to_applied:>12}   {applied['seconds']:.1f} s"
        + ("" if applied["reached"] else " (NOT reached)"),
        f"  log, 3 nodes, 16 partitions x2, applied     {result['replicated']['ingest']['messages_per_s']:>12,.0f}"
        f"   {replicated:.2f}x (>= {replicated_min}) {_mark(ok['replicated_ingest'])}",
        "",
        "where the CPU went, seconds (index nodes, log servers, ingest node, the rest; this process: the client)",
        "  and the rate the machine's cores bound it to (messages / (total CPU / cores))",
        *(
            _cpu_line(label, result[key]["ingest"])
            for label, key in (
                ("direct push", "direct"),
                ("log, 16 partitions x1", "single_replica"),
                ("log, 16 partitions x2, ack log", "ack_log"),
                ("log, 16 partitions x2, applied", "replicated"),
            )
        ),
    ]


def _cpu_line(label: str, figures: dict) -> str:  # type: ignore[type-arg]
    cpu = figures["cpu_seconds"]
    parts = " ".join(f"{kind} {cpu[kind]:.1f}" for kind in ("index", "nats", "ingest", "client") if kind in cpu)
    rest = cpu["total"] - sum(cpu.get(kind, 0.0) for kind in ("index", "nats", "ingest", "client"))
    bound = figures["cpu_bound_messages_per_s"]
    return f"  {label:<32} {parts} other {rest:.1f} = {cpu['total']:.1f} -> at most {bound:,.0f} messages/s"


def render_latency(result: dict, r: dict, ok: dict) -> list[str]:  # type: ignore[type-arg]
    direct, replicated = result["direct"]["latency"], result["replicated"]["latency"]
    lines = [
        "dialogue search latency, ms   direct p50    p95    max   replicated p50    p95    max   "
        f"p50 ratio (<= {TARGETS['replicated_p50_ratio_max']})"
    ]
    for kind, d in direct.items():
        q = replicated[kind]
        lines.append(
            f"  {kind:<24} {d['p50_ms']:>9.2f} {d['p95_ms']:>6.2f} {d['max_ms']:>6.1f} {q['p50_ms']:>16.2f} "
            f"{q['p95_ms']:>6.2f} {q['max_ms']:>6.1f}   {r['replicated_p50'][kind]:.2f} "
            + _mark(ok[f"replicated_p50_{kind}"])
        )
    for name in ("direct", "replicated"):
        failed, partial = result[name]["failed"], result[name]["partial"]
        if failed or partial:
            lines.append(f"  {name}: {len(failed)} queries failed, {len(partial)} partial")
    return lines


def render_kill(result: dict, r: dict, ok: dict) -> list[str]:  # type: ignore[type-arg]
    kill, args = result["replicated"]["kill"], result["settings"]
    lines = [
        f"kill -9 of {kill['victim']} under {args['query_rate']:g} dialogue queries/s (deadline "
        f"{LOAD_DEADLINE_MS:.0f} ms), node_left_delay {kill['node_left_delay_ms'] / 1000:g} s",
        "  window        seconds  queries  failed  partial     p50     p95     max (ms)",
    ]
    for name, w in kill["windows"].items():
        lines.append(
            f"  {name:<12} {w['seconds']:>8.1f} {w['queries']:>8} {w['failed']:>7} {w['partial']:>8} "
            f"{_ms(w['p50_ms']):>7} {_ms(w['p95_ms']):>7} {_ms(w['max_ms']):>7}"
        )
        lines += [f"      error: {e}" for e in w["errors"]]
    moved = kill["re_replicated_after_s"]
    lines += [
        f"  during p95 / before p95: {'-' if r['kill_p95'] is None else format(r['kill_p95'], '.2f')}x "
        f"(<= {TARGETS['kill_p95_ratio_max']:g}) {_mark(ok['kill_p95'])}; failed during: "
        f"{kill['windows']['during']['failed']} (target 0) {_mark(ok['kill_failed'])}",
        "  re-replicated (every partition on 2 active replicas without the victim): "
        + ("not within the window" if moved is None else f"{moved:.1f} s after the kill"),
        f"  converged after the restart: {kill['converged']} in {kill['converged_after_restart_s']:.1f} s",
    ]
    return lines


def render_join(result: dict, ok: dict) -> list[str]:  # type: ignore[type-arg]
    join = result["replicated"]["join"]
    q = join["queries"]
    state = "active" if join["done"] else "NOT active"
    return [
        f"join of {join['node']} under the same load: {state} after {join['seconds']:.1f} s, "
        f"{len(join['partitions'])} partitions {join['partitions']}",
        f"  queries {q['queries']}, failed {q['failed']} (target 0) {_mark(ok['join_failed'])}, "
        f"partial {q['partial']}, p50 {_ms(q['p50_ms'])} / p95 {_ms(q['p95_ms'])} / max {_ms(q['max_ms'])} ms",
        *[f"      error: {e}" for e in q["errors"]],
    ]


def render_memory(result: dict) -> list[str]:  # type: ignore[type-arg]
    lines = ["resident memory, MB                     RssAnon    VmRSS"]
    for label, figures in (
        ("direct push, after the queries", result["direct"]["memory_kB"]),
        ("replicated, after ingest and queries", result["replicated"]["memory_kB"]),
        ("replicated, after the kill and the join", result["replicated"]["memory_after_join_kB"]),
    ):
        lines.append(f"  {label}")
        for name, mem in figures.items():
            lines.append(
                f"    {name:<34} {mem.get('RssAnon_kB', 0) / 1024:>8.1f} {mem.get('VmRSS_kB', 0) / 1024:>8.1f}"
            )
    log_status = result["replicated"]["log"]
    lines.append(
        f"  the log: {log_status['messages']:,} records, {log_status['bytes'] / 2**20:,.1f} MB "
        "(a copy on each log server)"
    )
    return lines


def render_quality(result: dict, ok: dict) -> list[str]:  # type: ignore[type-arg]
    quality = result["quality"]
    if "skipped" in quality:
        return [f"quality: skipped ({quality['skipped']})"]
    lines = [
        f"quality: {quality['dataset']}, {quality['docs']:,} documents, {quality['queries']} queries, dialogue lane "
        "(OR admission, limit 100), 2 index nodes, 1 replica",
        "  partitions   nDCG@10   R@100   failed   query p50 / p95 ms",
    ]
    for run in quality["runs"].values():
        lines.append(
            f"  {run['partitions']:>10} {run['ndcg@10']:>9.4f} {run['recall@100']:>7.4f} {len(run['failed']):>8}"
            f"   {run['query_ms']['p50_ms']:>8.1f} / {run['query_ms']['p95_ms']:.1f}"
        )
    lines.append(
        f"  16 - 2 partitions: nDCG@10 {quality['ndcg_difference']:+.4f}, R@100 {quality['recall_difference']:+.4f} "
        f"(flag a loss > {TARGETS['quality_ndcg_loss_max']}) {_mark(ok['quality_ndcg'])}"
    )
    return lines


def render(result: dict) -> str:  # type: ignore[type-arg]
    c, r, ok = result["corpus"], result["ratios"], result["pass"]
    sections = [
        [
            f"Quarry cluster benchmark: {c['messages']:,} messages in {c['sessions']:,} sessions "
            f"(seed {result['seed']}), {result['machine']['cpus']} CPUs, {result['seconds']:.0f} s",
            f"command: {result['command']}",
        ],
        render_ingest(result, r, ok),
        render_latency(result, r, ok),
        render_kill(result, r, ok),
        render_join(result, ok),
        render_memory(result),
        render_quality(result, ok),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections)


# ----- main ------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, required=True, help="corpus size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="JSON result (default bench/results/cluster-<N>.json)")
    parser.add_argument("--per-class", type=int, default=50, help="queries per class in the query set")
    parser.add_argument("--query-rate", type=float, default=20.0, help="steady load, dialogue queries per second")
    parser.add_argument("--kill-seconds", type=float, default=15.0, help="the window after the kill")
    parser.add_argument("--skip-quality", action="store_true", help="skip the SciFact phase")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="a BEIR-format folder")
    parser.add_argument("--limit-queries", type=int, default=0, help="quality: only the first N judged queries")
    return parser.parse_args(argv)


def machine() -> dict[str, object]:
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out or REPO / "bench" / "results" / f"cluster-{args.messages}.json"
    started_at, began = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.perf_counter()
    host = machine()
    log(f"generating {args.messages:,} messages (seed {args.seed})")
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    corpus = corpus_stats(sessions, time.perf_counter() - began)
    queries = build_queries(per_class=args.per_class)

    with tempfile.TemporaryDirectory(prefix="quarry-cluster-bench-") as tmp:
        workdir = Path(tmp)
        result: dict[str, object] = {
            "direct": run_direct(sessions, queries, workdir),
            "single_replica": run_single_replica(sessions, workdir),
            "ack_log": run_ack_log(sessions, workdir),
            "replicated": run_replicated(sessions, queries, workdir, args),
            "quality": run_quality(args, workdir),
        }
    result = {
        "command": "python bench/cluster.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "messages": args.messages,
        "seed": args.seed,
        "machine": host,
        "started": started_at,
        "seconds": round(time.perf_counter() - began, 1),
        "settings": {
            "query_rate": args.query_rate,
            "kill_seconds": args.kill_seconds,
            "per_class": args.per_class,
            "shapes": {"direct": DIRECT, "single_replica": SINGLE_REPLICA, "replicated": REPLICATED},
        },
        "corpus": corpus,
        "queries": [{"kind": q.kind, "quarry": q.quarry} for q in queries],
        **result,
    }
    result["ratios"] = r = ratios(result)
    result["targets"] = TARGETS
    result["pass"] = verdicts(result, r)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"\nresult: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
