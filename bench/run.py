"""Quarry's benchmark: ingest throughput, vector throughput and search latency next to SQLite FTS5.

    python bench/run.py --messages N [--seed S] [--out bench/results/run-<N>.json]

Generates the synthetic corpus once, then, one phase at a time so no phase competes for the cores:
1. SQLite FTS5 (the peer tool's engine): build (rows and index) and the query set, in-process;
2. a local Quarry cluster (2 index partitions, no embedder): ingest through IngestSessions, timed from the
   first send to the IngestReport (lexical acknowledgement); the same queries through the query
   node's Search RPC (dialogue lane, limit 20, read as the query language, as FTS5 reads them) after a
   warm-up pass; then the default search a user gets (no lane, no reading: two words are prose) of the
   `and` class's words; RssAnon of the query node and of each partition afterwards;
3. vectors, on a slice of the corpus: the embedder's own rate in-process on the dialogue texts the
   vector node embeds (`dialogue_items`), then a fresh cluster with the MiniLM embedder, timed from the
   first send until the vector node has nothing pending (in its queue or the partitions' feeds) and holds
   every vector.
Prints a table with the ratios the targets name and writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

# `python bench/run.py` puts bench/ on the path, not the repository root.
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


from bench.cli_start import cli_env, timed_run  # noqa: E402
from bench.fts5_baseline import Fts5Archive  # noqa: E402
from bench.queries import CLASSES, BenchQuery, Latency, build_queries, measure  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.core.config import QUERY_NODE  # noqa: E402
from quarry.core.dialogue import dialogue_items  # noqa: E402
from quarry.core.errors import QuarryError  # noqa: E402
from quarry.index.lexical.schema import dialogue_text  # noqa: E402
from quarry.v1 import query_pb2, units_pb2, vector_pb2, vector_pb2_grpc  # noqa: E402
from quarry.vector.embed import load_embedder  # noqa: E402

FULL_MESSAGES = 1_000_000
FULL_VECTOR_SLICE = 20_000
QUICK_VECTOR_SLICE = 2_000
EMBED_BATCH = 32
SEARCH_LIMIT = 20
DESCRIBED = "and"  # the query class whose words the default search is timed on
PAIRED_ROUNDS = 3  # the default and the dialogue search of each of those queries, in turn
PARTITIONS = 2
TARGETS = {"ingest_ratio_min": 1.0, "p50_ratio_max": 0.2, "p95_ratio_max": 0.1}
# Issue 13's, each a ratio from this run (CLI start in seconds): dialogue p50 through the query node
# against in-process FTS5's (1.0 below FULL_MESSAGES, 0.2 at it), the partitions' disk against FTS5's, the
# vector node's embedding rate against the bare model's on the same texts, `quarry search` / `--help`.
SPEED_TARGETS = {
    "dialogue_p50_ratio_max": 1.0,
    "dialogue_p50_ratio_max_full": 0.2,
    "index_size_ratio_max": 3.5,
    "vector_rate_ratio_min": 0.9,
    "cli_search_s_max": 0.25,
    "cli_help_s_max": 0.2,
    "default_p50_ratio_max": 1.3,  # the default search (prose) beside the dialogue lane, the same words
}
CLI_RUNS = 10
VISIBLE_TIMEOUT_S = 300.0
READY_TIMEOUT_S = 300.0
VECTOR_TIMEOUT_S = 300.0
MIN_VECTORS_PER_S = 2.0  # slower than this means something is wrong, not slow


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ----- corpus ----------------------------------------------------------------------------------------


def corpus_stats(sessions: Sequence[units_pb2.Session], seconds: float) -> dict[str, object]:
    messages = sum(len(s.messages) for s in sessions)
    texts = [dialogue_text(m) for s in sessions for m in s.messages]
    with_text = [t for t in texts if t]
    words = sum(len(t.split()) for t in with_text)
    return {
        "sessions": len(sessions),
        "messages": messages,
        "messages_with_dialogue_text": len(with_text),
        "dialogue_words": words,
        "mean_words_per_dialogue_message": round(words / max(1, len(with_text)), 1),
        "actions": sum(len(s.actions) for s in sessions),
        "serialized_bytes": sum(s.ByteSize() for s in sessions),
        "generate_seconds": round(seconds, 2),
    }


def head_slice(sessions: Sequence[units_pb2.Session], messages: int) -> list[units_pb2.Session]:
    """The first whole sessions holding at least `messages` messages."""
    out: list[units_pb2.Session] = []
    total = 0
    for s in sessions:
        if total >= messages:
            break
        out.append(s)
        total += len(s.messages)
    return out


# ----- phase 1: FTS5 ---------------------------------------------------------------------------------


def run_fts5(
    sessions: Sequence[units_pb2.Session], queries: Sequence[BenchQuery], workdir: Path
) -> tuple[dict[str, object], dict[BenchQuery, list[str]]]:
    archive = Fts5Archive(workdir / "fts5.db")
    try:
        log("FTS5: building")
        build = archive.build(sessions)
        log(f"FTS5: {build.messages_per_s:,.0f} messages/s; querying")
        latency = measure(lambda q: archive.search(q.fts_match, q.role, SEARCH_LIMIT), queries)
        results = {q: [h.session_id for h in archive.search(q.fts_match, q.role, SEARCH_LIMIT)] for q in queries}
    finally:
        archive.close()
    return {"build": build.as_dict(), "latency": _latency_dict(latency)}, results


# ----- phase 2: Quarry lexical -----------------------------------------------------------------------


def _timed_stream(sessions: Sequence[units_pb2.Session], marks: dict[str, float]) -> Iterator[units_pb2.Session]:
    marks["first_send"] = time.perf_counter()
    yield from sessions


def wait_visible(client: QuarryClient, sessions: Sequence[units_pb2.Session]) -> float:
    """Seconds after the acknowledgement until the last session is searchable on its partition."""
    started = time.perf_counter()
    last = sessions[-1].id
    while time.perf_counter() - started < VISIBLE_TIMEOUT_S:
        stored = sum(n.sessions for n in client.status().nodes if n.partitions)
        if stored >= len(sessions) and [h.session.id for h in client.search(f"session:{last}").hits] == [last]:
            return time.perf_counter() - started
        time.sleep(0.1)
    raise RuntimeError(f"the corpus was acknowledged but not searchable after {VISIBLE_TIMEOUT_S:.0f} s")


def process_memory(pid: int) -> dict[str, int]:
    """RssAnon / RssFile / VmRSS of a live process, in kB (from /proc/<pid>/status)."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "VmRSS"):
            out[key + "_kB"] = int(value.split()[0])
    return out


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (from /proc/<pid>/stat; the kernel
    counts them in clock ticks, 10 ms here)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_quarry_lexical(
    sessions: Sequence[units_pb2.Session],
    queries: Sequence[BenchQuery],
    fts_results: dict[BenchQuery, list[str]],
    workdir: Path,
) -> dict[str, object]:
    home = workdir / "quarry-lexical"
    cluster = LocalCluster(home, partitions=PARTITIONS, embedder="none")
    log("Quarry: starting a local cluster (2 partitions, no embedder)")
    cluster.start()
    client = QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"]))
    try:
        log("Quarry: ingesting")
        marks: dict[str, float] = {}
        report = client.ingest_sessions(_timed_stream(sessions, marks))
        seconds = time.perf_counter() - marks["first_send"]
        messages = sum(len(s.messages) for s in sessions)
        log(f"Quarry: {messages / seconds:,.0f} messages/s to lexical acknowledgement; waiting until searchable")
        visible_after = wait_visible(client, sessions)
        log("Quarry: querying")
        envelopes: dict[BenchQuery, query_pb2.SearchEnvelope] = {}

        errors: dict[str, str] = {}

        def search(q: BenchQuery) -> None:
            # A failed query is recorded (and timed until it failed) rather than ending the run.
            try:
                envelopes[q] = client.search(q.quarry, lane="dialogue", limit=SEARCH_LIMIT, reading="query")
            except QuarryError as error:
                envelopes[q] = query_pb2.SearchEnvelope(query=q.quarry)
                errors[q.quarry] = str(error)

        latency = measure(search, queries)
        log("Quarry: the default search of the same words, interleaved with their dialogue search")
        described_latency, default_latency = paired_latency(client, _described(queries))
        memory = {name: process_memory(pid) for name, pid in cluster.pids.items()}
        # The nodes holding partitions: the query node itself in the embedded default, else the index nodes.
        partitions = [name for name in cluster.pids if name.startswith("index-")] or [QUERY_NODE]
        log("Quarry: timing the CLI against the warm cluster")
        cli = cli_start(home, queries[0].words[0])
    finally:
        client.close()
        cluster.stop()
    disk = {name: dir_bytes(home / "nodes" / name) for name in partitions}  # stopped: each WAL checkpointed
    results = {q: [h.session.id for h in env.hits] for q, env in envelopes.items()}
    server_total = {
        k: Latency(tuple(env.timings_ms.get("total", 0.0) for q, env in envelopes.items() if q.kind == k))
        for k in CLASSES
    }
    stages = sorted({stage for env in envelopes.values() for stage in env.timings_ms})
    server_stages = {
        stage: Latency(tuple(env.timings_ms[stage] for env in envelopes.values() if stage in env.timings_ms))
        for stage in stages
    }
    # The client's hop: its wall time less the query node's total, query by query (measure() times each
    # class's queries in their order).
    hop = [
        wall - envelopes[q].timings_ms.get("total", 0.0)
        for kind in CLASSES
        for q, wall in zip([q for q in queries if q.kind == kind], latency[kind].samples_ms, strict=True)
    ]
    server_stages["client_hop"] = Latency(tuple(hop))
    return {
        "ingest": {
            "messages": messages,
            "sessions_written": report.sessions_written,
            "sessions_unchanged": report.sessions_unchanged,
            "messages_written": report.messages_written,
            "issues": len(report.issues),
            "caveats": list(report.caveats),
            "seconds": round(seconds, 3),
            "messages_per_s": round(messages / seconds, 1),
            "searchable_after_ack_s": round(visible_after, 3),
        },
        "latency": _latency_dict(latency),
        "default_search_latency": default_latency.as_dict(),
        "described_dialogue_latency": described_latency.as_dict(),
        "server_total_latency": _latency_dict(server_total),
        "server_stage_latency": _latency_dict(server_stages),
        "agreement_with_fts5": agreement(queries, results, fts_results),
        "failed_queries": errors,
        "memory_kB": memory,
        "index_bytes": disk,
        "cli_start_s": cli,
    }


def paired_latency(
    client: QuarryClient, queries: Sequence[BenchQuery], rounds: int = PAIRED_ROUNDS
) -> tuple[Latency, Latency]:
    """Wall times of the dialogue search (every word needed) and of the default search (no lane, no reading:
    prose) of the same words, each query asked both ways in turn, `rounds` times after a warm-up: on a
    noisy machine two passes one after the other drift apart, pairs do not."""
    dialogue, default = [], []
    for q in queries:
        client.search(q.quarry, limit=SEARCH_LIMIT)
    for _ in range(rounds):
        for q in queries:
            started = time.perf_counter()
            client.search(q.quarry, lane="dialogue", limit=SEARCH_LIMIT, reading="query")
            between = time.perf_counter()
            client.search(q.quarry, limit=SEARCH_LIMIT)
            dialogue.append((between - started) * 1000)
            default.append((time.perf_counter() - between) * 1000)
    return Latency(tuple(dialogue)), Latency(tuple(default))


def _described(queries: Sequence[BenchQuery]) -> list[BenchQuery]:
    """The queries a person would type as words (the `and` class: two words, read as prose by default)."""
    return [q for q in queries if q.kind == DESCRIBED]


def cli_start(home: Path, term: str) -> dict[str, float]:
    """Median wall time of `quarry search TERM` against the running cluster and of `quarry --help`,
    each a fresh process, after one untimed run (bench/cli_start.py does this with a baseline beside)."""
    quarry = str(Path(sys.executable).parent / "quarry")
    env = cli_env()
    out = {}
    for name, argv in {"search": [quarry, "--home", str(home), "search", term], "help": [quarry, "--help"]}.items():
        timed_run(argv, env)
        out[name] = round(statistics.median(timed_run(argv, env) for _ in range(CLI_RUNS)), 4)
    return out


def agreement(
    queries: Sequence[BenchQuery], ours: dict[BenchQuery, list[str]], theirs: dict[BenchQuery, list[str]]
) -> dict[str, dict[str, float]]:
    """Per class: the mean share of FTS5's top sessions that Quarry also returns, and how many queries
    each engine answered with nothing. A sanity check that both engines answer the same question
    (BM25 variants differ, so the top lists are not expected to be identical)."""
    out: dict[str, dict[str, float]] = {}
    for kind in CLASSES:
        qs = [q for q in queries if q.kind == kind]
        shared = [len(set(ours[q]) & set(theirs[q])) / len(theirs[q]) for q in qs if theirs[q]]
        out[kind] = {
            "mean_overlap_at_20": round(sum(shared) / len(shared), 3) if shared else 0.0,
            "quarry_empty": sum(1 for q in qs if not ours[q]),
            "fts5_empty": sum(1 for q in qs if not theirs[q]),
        }
    return out


# ----- phase 3: vectors ------------------------------------------------------------------------------


def embedder_rate(texts: Sequence[str]) -> dict[str, float]:
    """The bare model's rate on the texts, each embedded as the passages the vector node embeds of it."""
    embedder = load_embedder("minilm")
    assert embedder is not None
    passages = [passage for text in texts for passage in embedder.passages(text)]
    embedder.embed(passages[:EMBED_BATCH])  # loads the model; not timed
    started = time.perf_counter()
    for i in range(0, len(passages), EMBED_BATCH):
        embedder.embed(passages[i : i + EMBED_BATCH])
    seconds = time.perf_counter() - started
    return {
        "texts": len(texts),
        "passages": len(passages),
        "batch": EMBED_BATCH,
        "seconds": round(seconds, 3),
        "texts_per_s": round(len(texts) / seconds, 2),
    }


def wait_embedder_ready(cluster: LocalCluster) -> None:
    """Waits until the vector node has loaded its model, so loading is not counted as embedding."""
    with cluster.node_channel("vector") as channel:
        stub = vector_pb2_grpc.VectorServiceStub(channel)
        started = time.perf_counter()
        while time.perf_counter() - started < READY_TIMEOUT_S:
            if stub.Stats(vector_pb2.VectorStatsRequest(), timeout=5).ready:
                return
            time.sleep(0.25)
    raise RuntimeError(f"the vector node's embedder was not ready after {READY_TIMEOUT_S:.0f} s")


def cluster_vector_rate(sessions: Sequence[units_pb2.Session], workdir: Path) -> dict[str, float]:
    expected = sum(len(dialogue_items(s)) for s in sessions)
    cluster = LocalCluster(workdir / "quarry-vectors", partitions=PARTITIONS, embedder="minilm")
    log("vectors: starting a local cluster with the MiniLM embedder")
    cluster.start()
    client = QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"]))
    try:
        wait_embedder_ready(cluster)
        log("vectors: ingesting the slice")
        marks: dict[str, float] = {}
        client.ingest_sessions(_timed_stream(sessions, marks))
        acked = time.perf_counter() - marks["first_send"]
        deadline = time.perf_counter() + VECTOR_TIMEOUT_S + expected / MIN_VECTORS_PER_S
        while True:
            vector = next(n for n in client.status().nodes if n.role == "vector")
            if vector.vectors_pending == 0 and vector.vectors == expected:
                break
            if time.perf_counter() > deadline:
                raise RuntimeError(f"vectors still pending: {vector.vectors_pending} ({vector.detail})")
            time.sleep(0.25)
        seconds = time.perf_counter() - marks["first_send"]
    finally:
        client.close()
        cluster.stop()
    return {
        "vectors_expected": expected,
        "vectors": vector.vectors,
        "lexical_ack_seconds": round(acked, 3),
        "seconds": round(seconds, 3),
        "vectors_per_s": round(expected / seconds, 2),
    }


def run_vectors(sessions: Sequence[units_pb2.Session], slice_messages: int, workdir: Path) -> dict[str, object]:
    """The bare model on the slice's distinct texts beside the cluster's vector node on the slice: the
    node embeds each distinct text once (identical texts share its vector), so the ratio compares
    distinct texts per second, what the model's time is spent on either way."""
    part = head_slice(sessions, slice_messages)
    texts = list(dict.fromkeys(item.text for s in part for item in dialogue_items(s)))
    log(f"vectors: embedder in-process on {len(texts):,} distinct texts")
    own = embedder_rate(texts)
    cluster = cluster_vector_rate(part, workdir)
    node_rate = len(texts) / cluster["seconds"]
    return {
        "slice_messages": sum(len(s.messages) for s in part),
        "slice_sessions": len(part),
        "embedder": own,
        "cluster": {**cluster, "distinct_texts_per_s": round(node_rate, 2)},
        "ratio": round(node_rate / own["texts_per_s"], 3),
    }


# ----- report ----------------------------------------------------------------------------------------


def _latency_dict(latency: dict[str, Latency]) -> dict[str, dict[str, float]]:
    return {k: v.as_dict() for k, v in latency.items()}


def ratios(fts5: dict, quarry: dict) -> dict[str, object]:  # type: ignore[type-arg]
    out: dict[str, object] = {
        "ingest": round(quarry["ingest"]["messages_per_s"] / fts5["build"]["messages_per_s"], 3),
    }
    for kind, ours in quarry["latency"].items():
        theirs = fts5["latency"][kind]
        out[kind] = {
            "p50": round(ours["p50_ms"] / theirs["p50_ms"], 4),
            "p95": round(ours["p95_ms"] / theirs["p95_ms"], 4),
        }
    return out


def verdicts(r: dict) -> dict[str, bool]:  # type: ignore[type-arg]
    out = {"ingest": r["ingest"] >= TARGETS["ingest_ratio_min"]}
    for kind in (*CLASSES, "all"):
        out[f"{kind}_p50"] = r[kind]["p50"] <= TARGETS["p50_ratio_max"]
        out[f"{kind}_p95"] = r[kind]["p95"] <= TARGETS["p95_ratio_max"]
    return out


def render(result: dict) -> str:  # type: ignore[type-arg]
    c, f, q, r, ok = result["corpus"], result["fts5"], result["quarry"], result["ratios"], result["pass"]

    def mark(key: str) -> str:
        return "PASS" if ok[key] else "FAIL"

    lines = [
        f"Quarry benchmark: {c['messages']:,} messages in {c['sessions']:,} sessions (seed {result['seed']}), "
        f"{PARTITIONS} partitions, {result['machine']['cpus']} CPUs",
        f"command: {result['command']}",
        "",
        "ingest (to lexical acknowledgement)              messages/s",
        f"  SQLite FTS5 build (rows + index)         {f['build']['messages_per_s']:>14,.0f}",
        f"  Quarry IngestSessions -> 2 partitions        {q['ingest']['messages_per_s']:>14,.0f}"
        f"   ratio {r['ingest']:.2f}x (target >= {TARGETS['ingest_ratio_min']:.1f}x) {mark('ingest')}",
        "",
        "search latency, ms   FTS5 p50    p95   Quarry p50    p95    p50 ratio (<= 0.2)   p95 ratio (<= 0.1)",
    ]
    for kind in (*CLASSES, "all"):
        fl, ql = f["latency"][kind], q["latency"][kind]
        lines.append(
            f"  {kind:<16} {fl['p50_ms']:>9.2f} {fl['p95_ms']:>8.2f} {ql['p50_ms']:>10.2f} {ql['p95_ms']:>8.2f}"
            f"   {r[kind]['p50']:>8.3f} {mark(kind + '_p50'):<10} {r[kind]['p95']:>8.3f} {mark(kind + '_p95')}"
        )
    own = q["server_total_latency"]
    lines.append(
        "  query node's own total (timings_ms), p50 / p95: "
        + ", ".join(f"{k} {own[k]['p50_ms']:.2f} / {own[k]['p95_ms']:.2f}" for k in CLASSES)
    )
    lines += ["", "agreement with FTS5 (mean share of FTS5's top 20 also in Quarry's; empty answers)"]
    for kind, a in q["agreement_with_fts5"].items():
        lines.append(
            f"  {kind:<16} {a['mean_overlap_at_20']:.2f}   quarry empty {a['quarry_empty']}, "
            f"fts5 empty {a['fts5_empty']}"
        )
    for query, error in q["failed_queries"].items():
        lines.append(f"  FAILED {query!r}: {error}")
    lines += ["", "memory after the query phase (RssAnon)"]
    for name, mem in sorted(q["memory_kB"].items()):
        lines.append(
            f"  {name:<10} {mem.get('RssAnon_kB', 0) / 1024:>8.1f} MB   (VmRSS {mem.get('VmRSS_kB', 0) / 1024:.1f} MB)"
        )
    lines.append(
        f"index size: FTS5 {f['build']['db_bytes'] / 2**20:,.0f} MB; Quarry "
        + ", ".join(f"{k} {v / 2**20:,.0f} MB" for k, v in sorted(q["index_bytes"].items()))
    )
    v = result.get("vectors")
    if v:
        lines += [
            "",
            f"vectors on a slice of {v['slice_messages']:,} messages ({v['embedder']['texts']:,} dialogue texts)"
            + ("" if v["slice_messages"] >= FULL_VECTOR_SLICE else "  [quick mode: smaller slice]"),
            f"  embedder in-process (batches of {EMBED_BATCH})  {v['embedder']['texts_per_s']:>8.1f} distinct texts/s",
            f"  cluster, first send -> nothing pending  {v['cluster']['distinct_texts_per_s']:>8.1f} distinct texts/s"
            f" ({v['cluster']['vectors_per_s']:.1f} vectors/s)   ratio {v['ratio']:.2f}x",
        ]
    lines += ["", *render_stages(q["server_stage_latency"], q["latency"]["all"]), "", *render_speed(result)]
    return "\n".join(lines)


STAGE_ROWS = (  # (label, how it is computed from the stage p50s)
    ("client hop (client wall - query node total)", ("client_hop",)),
    ("parse", ("parse",)),
    ("fan-out: gRPC hop and the nodes' answers, less the slowest partition", ("lexical", "-slowest_partition")),
    ("partition: rank (compile, Tantivy, contenders' ids)", ("partition_rank",)),
    ("partition: hydrate (rows, messages, matched terms)", ("partition_hydrate",)),
    ("partition: snippets", ("partition_snippets",)),
    (
        "partition: the rest of its handler",
        ("slowest_partition", "-partition_rank", "-partition_hydrate", "-partition_snippets"),
    ),
    ("merge", ("merge",)),
    ("query node: the rest (hydration, envelope)", ("total", "-parse", "-lexical", "-merge")),
)


def render_stages(stages: dict, client: dict) -> list[str]:  # type: ignore[type-arg]
    """Where a dialogue search's time goes, p50 of each stage over every query (p50s do not add up
    exactly; the rows built from differences show the order of size)."""
    lines = [f"dialogue search by stage, p50 ms over all queries (client wall p50 {client['p50_ms']:.2f})"]
    for label, parts in STAGE_ROWS:
        if not all(part.lstrip("-") in stages for part in parts):
            continue
        value = sum(-stages[p[1:]]["p50_ms"] if p.startswith("-") else stages[p]["p50_ms"] for p in parts)
        lines.append(f"  {label:<72} {value:>7.2f}")
    return lines


def speed_targets(result: dict) -> list[tuple[str, float, str, bool]]:  # type: ignore[type-arg]
    """The speed targets measured in this run: (what, figure, target, met)."""
    t, q, f = SPEED_TARGETS, result["quarry"], result["fts5"]
    full = result["messages"] >= FULL_MESSAGES
    dialogue_max = t["dialogue_p50_ratio_max_full"] if full else t["dialogue_p50_ratio_max"]
    dialogue = q["latency"]["all"]["p50_ms"] / f["latency"]["all"]["p50_ms"]
    size = sum(q["index_bytes"].values()) / f["build"]["db_bytes"]
    default = q["default_search_latency"]["p50_ms"] / q["described_dialogue_latency"]["p50_ms"]
    rows = [
        (
            "default search p50 / dialogue p50 of the same words",
            default,
            f"<= {t['default_p50_ratio_max']}x",
            default <= t["default_p50_ratio_max"],
        ),
        (
            "dialogue p50 through the query node / FTS5 in-process",
            dialogue,
            f"<= {dialogue_max}x",
            dialogue <= dialogue_max,
        ),
        (
            "index on disk / FTS5's (nodes stopped)",
            size,
            f"<= {t['index_size_ratio_max']}x",
            size <= t["index_size_ratio_max"],
        ),
    ]
    if result.get("vectors"):
        ratio = result["vectors"]["ratio"]
        rows.append(
            (
                "vector node / bare model, distinct texts/s",
                ratio,
                f">= {t['vector_rate_ratio_min']}x",
                ratio >= t["vector_rate_ratio_min"],
            )
        )
    cli = q["cli_start_s"]
    rows.append(
        (
            "`quarry search` wall time, s (median of 10)",
            cli["search"],
            f"<= {t['cli_search_s_max']} s",
            cli["search"] <= t["cli_search_s_max"],
        )
    )
    rows.append(
        (
            "`quarry --help` wall time, s (median of 10)",
            cli["help"],
            f"<= {t['cli_help_s_max']} s",
            cli["help"] <= t["cli_help_s_max"],
        )
    )
    return rows


def render_speed(result: dict) -> list[str]:  # type: ignore[type-arg]
    lines = ["speed targets, this run"]
    for what, figure, target, met in speed_targets(result):
        lines.append(f"  {what:<56} {figure:>8.3f}   {target:<10} {'PASS' if met else 'FAIL'}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, required=True, help="corpus size (1000000 for the full run)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="JSON result (default bench/results/run-<N>.json)")
    parser.add_argument("--per-class", type=int, default=50, help="queries per class")
    parser.add_argument(
        "--vector-slice",
        type=int,
        help=f"messages in the vector slice; 0 skips the phase (default {FULL_VECTOR_SLICE:,} "
        f"from {FULL_MESSAGES:,} messages, else {QUICK_VECTOR_SLICE:,})",
    )
    args = parser.parse_args(argv)
    slice_messages = args.vector_slice
    if slice_messages is None:
        slice_messages = FULL_VECTOR_SLICE if args.messages >= FULL_MESSAGES else QUICK_VECTOR_SLICE
    out = args.out or REPO / "bench" / "results" / f"run-{args.messages}.json"

    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    log(f"generating {args.messages:,} messages (seed {args.seed})")
    started = time.perf_counter()
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    corpus = corpus_stats(sessions, time.perf_counter() - started)
    queries = build_queries(per_class=args.per_class)

    with tempfile.TemporaryDirectory(prefix="quarry-bench-") as tmp:
        workdir = Path(tmp)
        fts5, fts_results = run_fts5(sessions, queries, workdir)
        quarry = run_quarry_lexical(sessions, queries, fts_results, workdir)
        vectors = run_vectors(sessions, slice_messages, workdir) if slice_messages > 0 else None

    r = ratios(fts5, quarry)
    result = {
        "command": "python bench/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "messages": args.messages,
        "seed": args.seed,
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "started": started_at,
        "corpus": corpus,
        "queries": [{"kind": q.kind, "quarry": q.quarry, "fts5": q.fts_match, "role": q.role} for q in queries],
        "fts5": fts5,
        "quarry": quarry,
        "vectors": vectors,
        "ratios": r,
        "targets": TARGETS,
        "pass": verdicts(r),
    }
    result["speed_targets"] = [
        {"what": what, "figure": round(figure, 4), "target": target, "met": met}
        for what, figure, target, met in speed_targets(result)
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"\nresult: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
