"""The query node's HTTP JSON API under load, beside the same requests over gRPC (issue 12).

    python bench/http_api.py [--messages 100000] [--requests 10000] [--clients 32] [--data-dir DIR]
                             [--round 1000] [--profile] [--out bench/results/http-<N>.json]

1. Generates the synthetic archive (`generate_sessions`, as bench/run.py does), starts a local cluster
   (2 index partitions, no embedder) with the HTTP API on a free loopback port, ingests the archive through
   IngestSessions and waits until its last session is searchable.
2. Builds a fixed dashboard mix: one search per query class of bench/queries.py (the first of each class
   that finds something, lane `auto`, limit 20), a unit query, facets scoped to a query, and the resolve
   of a session ref (the first search's top hit). Each request exists in both forms: a GET on the HTTP
   API and the QuarryClient call the route maps to; both answer the same hits (checked before timing).
3. Sends the mix, cycled, `--requests` times over each surface from `--clients` concurrent client
   threads, in rounds of `--round` requests that alternate HTTP and gRPC (H G, G H, H G, …: ABBA), so
   the machine's swings fall on both; one untimed warm-up round of each first.
   - HTTP: each client thread holds its own keep-alive connection (`http.client.HTTPConnection`, the
     standard library: no pool, no retry logic of its own) and parses the body (orjson). A connection
     the server closed while idle (uvicorn's keep-alive timeout) is reopened before the request,
     as any pooling client does; those reopenings are counted (`reconnects`), and the request's time
     includes them.
   - gRPC: each client thread holds its own QuarryClient (its own channel); gRPC's global subchannel
     pool may still carry all of them on one TCP connection: the run counts the connections it sees.
   Every non-200 answer, every failed call and every exception is an error: the bench prints them and
   exits with status 1 (after writing the results).
4. Per surface: requests/s (requests over the summed wall time of its rounds), client wall latency
   p50 / p95 / p99 overall and per request kind, the query node's own `timings_ms.total` where the
   answer carries it (searches, unit queries) and the client time beyond it; HTTP ÷ gRPC for each.
   CPU milliseconds per request of the clients (this process), the query node and the index nodes,
   from their user + system time across the rounds. Beside them, in this process, what one answer
   costs to encode each way (proto3 JSON as the route renders it, the same with orjson, protobuf bytes).
5. With `--profile`, one more untimed round of each surface while py-spy samples the query node
   (`--gil`: the thread holding the GIL, the node's one CPU lane): GIL milliseconds per request and
   where they go (`PROFILE_CATEGORIES`).
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import platform
import re
import select
import shutil
import socket
import subprocess
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
sys.path.insert(0, str(REPO))  # `python bench/http_api.py` puts bench/ on the path, not the repository root

import numpy as np  # noqa: E402
import orjson  # noqa: E402
from google.protobuf.message import Message  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from bench.queries import CLASSES, BenchQuery, build_queries  # noqa: E402
from bench.run import corpus_stats, log, process_cpu_s, wait_visible  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.core.proto_json import to_json  # noqa: E402

PARTITIONS = 2
LIMIT = 20
UNIT_QUERY = "messages where role:assistant AND output_tokens >= 200 | sort by time desc"
TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0
SURFACES = ("http", "grpc")
ENCODE_REPEAT = 200
PROFILE_RATE = 250  # py-spy samples per second
# Where the query node's GIL time goes: a py-spy sample (a stack of `func (file:line)` frames, outermost
# first; files as py-spy shortens them) goes to the first category that claims it. The route's own work
# first, then the query work both surfaces share, then the servers' per-request machinery.
QUERY_FILES = ("query/", "core/", "dsl/", "cluster/", "client/", "lark/")  # lark: the query parser
PROFILE_CATEGORIES: tuple[tuple[str, Callable[[list[tuple[str, str]]], bool]], ...] = (
    ("route: proto3 JSON dict (to_json)", lambda st: any(f == "to_json" and p == "core/proto_json.py" for f, p in st)),
    ("route: JSON text (JSONResponse.render)", lambda st: any(f == "JSONResponse.render" for f, _ in st)),
    ("route: request from parameters", lambda st: any(f == "request_from_params" for f, _ in st)),
    (
        "query work (coordinator, fan-out, merge)",
        lambda st: any(p.startswith(QUERY_FILES) and p != "query/http_api.py" for _, p in st),
    ),
    ("gRPC server (grpc/)", lambda st: any(p.startswith("grpc/") for _, p in st)),
    ("HTTP parsing (h11)", lambda st: st[-1][1].startswith("h11/")),
    ("uvicorn protocol", lambda st: st[-1][1].startswith("uvicorn/")),
    ("starlette routing", lambda st: st[-1][1].startswith("starlette/") or st[-1][1] == "query/http_api.py"),
    ("event loop (asyncio, anyio)", lambda st: st[-1][1].startswith(("asyncio/", "anyio/", "selectors.py"))),
    (
        "thread hand-offs (threading, futures)",
        lambda st: any(p.startswith(("threading.py", "concurrent/")) for _, p in st),
    ),
)
FRAME = re.compile(r"^(.*) \((.*?):\d+\)$")
THREAD_NUMBER = re.compile(r"[_ -]*\d+(_\d+)?$")  # query_3, scatter_12, AnyIO worker thread: one group each


def frames_of(stack: str) -> list[tuple[str, str]]:
    """(function, file) of each frame of a py-spy raw stack, outermost first."""
    out = []
    for frame in stack.split(";"):
        match = FRAME.match(frame)
        out.append((match[1], match[2]) if match else (frame, ""))
    return out


@dataclass(frozen=True)
class Request:
    """One request of the mix, in both forms: a GET on the HTTP API and the QuarryClient call."""

    kind: str
    path: str
    params: dict[str, Any]
    grpc: Callable[[QuarryClient], Message]

    @property
    def target(self) -> str:
        return f"{self.path}?{urllib.parse.urlencode(self.params, doseq=True)}"


@dataclass
class Sample:
    kind: str
    ms: float
    server_ms: float | None  # the answer's timings_ms.total, when it has one


@dataclass
class RoundResult:
    surface: str
    requests: int
    seconds: float
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reconnects: int = 0
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds the round cost, per process group


# ----- the request mix ---------------------------------------------------------------------------


def search_request(kind: str, query: str) -> Request:
    params = {"query": query, "lane": "auto", "limit": LIMIT}
    return Request(f"search:{kind}", "/api/sessions", params, lambda c: c.search(query, lane="auto", limit=LIMIT))


def build_mix(client: QuarryClient, queries: Sequence[BenchQuery]) -> list[Request]:
    """A search of each class (the first query of the class that finds something), a unit query,
    facets scoped to the first search's query, and the ref of the first search's top hit."""
    searches: list[Request] = []
    top_hit = ""
    for kind in CLASSES:
        for q in (q for q in queries if q.kind == kind):
            envelope = client.search(q.quarry, lane="auto", limit=LIMIT)
            if envelope.hits:
                searches.append(search_request(kind, q.quarry))
                top_hit = top_hit or envelope.hits[0].session.id
                break
        else:
            raise RuntimeError(f"no query of class {kind!r} finds anything: is the archive ingested?")
    first = searches[0].params["query"]
    ref = f"session:{top_hit}"
    return [
        *searches,
        Request(
            "query-units",
            "/api/query-units",
            {"expression": UNIT_QUERY, "limit": LIMIT},
            lambda c: c.query_units(UNIT_QUERY, limit=LIMIT),
        ),
        Request("facets", "/api/facets", {"query": first}, lambda c: c.facets(first)),
        Request("resolve-ref", "/api/refs/resolve", {"ref": ref}, lambda c: c.resolve_ref(ref)),
    ]


def comparable(kind: str, answer: dict[str, Any]) -> object:
    """What both surfaces must agree on for a request of `kind` (timings and cursors aside)."""
    if kind.startswith("search:"):
        return [h["session"]["id"] for h in answer.get("hits", [])]
    if kind == "query-units":
        return answer.get("rows", [])
    if kind == "facets":
        return answer.get("scoped", answer.get("global"))
    return {k: v for k, v in answer.items() if k != "timingsMs"}


# ----- clients -----------------------------------------------------------------------------------


class HttpClient:
    """One keep-alive HTTP/1.1 connection, reopened when the server has closed it while it was idle."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
        self.reconnects = 0

    def _stale(self) -> bool:
        sock = self.conn.sock
        if sock is None:
            return False
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)  # an idle keep-alive connection is readable only when the server closed it

    def get(self, target: str) -> tuple[int, bytes]:
        if self._stale():
            self.conn.close()
            self.reconnects += 1
        self.conn.request("GET", target)
        response = self.conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.conn.close()


def call_http(client: HttpClient, request: Request) -> float | None:
    status, body = client.get(request.target)
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
    answer = orjson.loads(body)
    total = answer.get("timingsMs", {}).get("total")
    return float(total) if total is not None else None


def call_grpc(client: QuarryClient, request: Request) -> float | None:
    answer = request.grpc(client)
    timings = getattr(answer, "timings_ms", None)
    return float(timings["total"]) if timings is not None and "total" in timings else None


def run_round(surface: str, clients: Sequence[object], mix: Sequence[Request], start: int, count: int) -> RoundResult:
    """`count` requests of the mix (from position `start`, cycled) from every client at once, each
    thread taking the next request as soon as its previous one is answered."""
    counter = itertools.count(start)
    end = start + count
    per_thread: list[RoundResult] = [RoundResult(surface, 0, 0.0) for _ in clients]
    barrier = threading.Barrier(len(clients) + 1)
    call = call_http if surface == "http" else call_grpc

    def work(slot: int, client: Any) -> None:
        out = per_thread[slot]
        barrier.wait()
        while (i := next(counter)) < end:
            request = mix[i % len(mix)]
            started = time.perf_counter()
            try:
                server_ms = call(client, request)
            except Exception as error:  # every failure is an error of the surface
                out.errors.append(f"{surface} {request.kind} {request.target}: {type(error).__name__}: {error}")
                if surface == "http":  # a failed exchange leaves the connection in an unknown state
                    client.conn.close()
                continue
            out.samples.append(Sample(request.kind, (time.perf_counter() - started) * 1000, server_ms))

    threads = [threading.Thread(target=work, args=(i, c), daemon=True) for i, c in enumerate(clients)]
    before = sum(c.reconnects for c in clients) if surface == "http" else 0
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    result = RoundResult(surface, count, seconds)
    for out in per_thread:
        result.samples += out.samples
        result.errors += out.errors
    result.reconnects = (sum(c.reconnects for c in clients) - before) if surface == "http" else 0
    return result


# ----- measurement -------------------------------------------------------------------------------


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {
        "n": len(values),
        "p50_ms": round(float(p50), 3),
        "p95_ms": round(float(p95), 3),
        "p99_ms": round(float(p99), 3),
        "mean_ms": round(float(np.mean(values)), 3),
        "max_ms": round(float(np.max(values)), 3),
    }


def summarize(rounds: Sequence[RoundResult]) -> dict[str, object]:
    samples = [s for r in rounds for s in r.samples]
    seconds = sum(r.seconds for r in rounds)
    requests = sum(r.requests for r in rounds)
    kinds = sorted({s.kind for s in samples})
    timed = [s for s in samples if s.server_ms is not None]
    return {
        "requests": requests,
        "answered": len(samples),
        "errors": sum(len(r.errors) for r in rounds),
        "reconnects": sum(r.reconnects for r in rounds),
        "cpu_ms_per_request": {k: round(sum(r.cpu_s[k] for r in rounds) * 1000 / requests, 3) for k in rounds[0].cpu_s},
        "seconds": round(seconds, 3),
        "requests_per_s": round(requests / seconds, 1),
        "rounds_requests_per_s": [round(r.requests / r.seconds, 1) for r in rounds],
        "latency": percentiles([s.ms for s in samples]),
        "by_kind": {k: percentiles([s.ms for s in samples if s.kind == k]) for k in kinds},
        "server_total": percentiles([s.server_ms for s in timed]),  # type: ignore[misc]
        "beyond_server_total": percentiles([s.ms - s.server_ms for s in timed]),  # type: ignore[operator]
    }


def ratios(http: dict[str, Any], grpc: dict[str, Any]) -> dict[str, float]:
    out = {"requests_per_s": round(http["requests_per_s"] / grpc["requests_per_s"], 3)}
    for p in ("p50_ms", "p95_ms", "p99_ms"):
        out[p] = round(http["latency"][p] / grpc["latency"][p], 3)
    return out


def encode_costs(client: QuarryClient, mix: Sequence[Request]) -> dict[str, dict[str, float]]:
    """Per request kind, in this process, µs to: make the answer's proto3 JSON dict (`to_json`), render it
    as the route does (Starlette's JSONResponse: json.dumps), render it with orjson instead, and
    serialize the message to protobuf bytes (what gRPC sends); and both sizes."""

    def us(fn: Callable[[], object]) -> float:
        started = time.perf_counter()
        for _ in range(ENCODE_REPEAT):
            fn()
        return round((time.perf_counter() - started) / ENCODE_REPEAT * 1e6, 1)

    out: dict[str, dict[str, float]] = {}
    for request in mix:
        answer = request.grpc(client)
        as_dict = to_json(answer)
        out[request.kind] = {
            "json_bytes": len(JSONResponse(as_dict).body),
            "proto_bytes": answer.ByteSize(),
            "to_json_us": us(lambda a=answer: to_json(a)),  # type: ignore[misc]
            "json_render_us": us(lambda d=as_dict: JSONResponse(d)),  # type: ignore[misc]
            "orjson_render_us": us(lambda d=as_dict: orjson.dumps(d)),  # type: ignore[misc]
            "proto_encode_us": us(answer.SerializeToString),
        }
    return out


def established(port: int) -> int:
    """TCP connections established to `port` on this machine (both ends local: count the client side)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            remote_port = int(parts[2].rsplit(":", 1)[1], 16)
            if remote_port == port and parts[3] == "01":
                count += 1
    return count


def node_threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


# ----- profile -----------------------------------------------------------------------------------


def profile_round(
    surface: str, pid: int, clients: Sequence[object], mix: Sequence[Request], count: int, out: Path
) -> dict[str, object]:
    """One untimed round while py-spy samples the query node's GIL holder; GIL ms per request by category."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    command = [py_spy, "record", "--pid", str(pid), "--gil", "--threads", "--nonblocking", "--format", "raw"]
    command += ["--rate", str(PROFILE_RATE), "--output", str(out)]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches
    result = run_round(surface, clients, mix, 0, count)
    spy.send_signal(2)  # SIGINT: py-spy writes what it has
    _, stderr = spy.communicate(timeout=60)
    if not out.exists():
        return {"error": stderr.decode(errors="replace")[-500:]}
    return {
        "requests": count,
        "round_requests_per_s": round(count / result.seconds, 1),
        "errors": len(result.errors),
        **profile_summary(out, count, result.seconds),
    }


def profile_summary(out: Path, count: int, seconds: float) -> dict[str, object]:
    """GIL samples of a py-spy raw file (recorded with --threads) per request: by category, by thread
    (also as a share of the round's wall time: a thread near 100% is a serial bottleneck) and by
    innermost frame."""
    groups: dict[str, int] = {}
    threads: dict[str, int] = {}
    frames: dict[str, int] = {}
    total = 0
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        samples = int(n)
        total += samples
        thread = "?"
        if stack.startswith("thread ("):
            head, _, stack = stack.partition(";")
            thread = THREAD_NUMBER.sub("", head.partition("): ")[2]) or "?"
        threads[thread] = threads.get(thread, 0) + samples
        leaf = stack.rsplit(";", 1)[-1]
        parsed = frames_of(stack)
        group = next((name for name, claims in PROFILE_CATEGORIES if claims(parsed)), "other")
        groups[group] = groups.get(group, 0) + samples
        frames[leaf] = frames.get(leaf, 0) + samples
    ms_per_request = 1000.0 / PROFILE_RATE / max(1, count)

    def per_request(counts: dict[str, int], top: int = 20) -> dict[str, float]:
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
        return {k: round(v * ms_per_request, 3) for k, v in ranked}

    return {
        "gil_samples": total,
        "gil_ms_per_request": round(total * ms_per_request, 3),
        "by_category_ms_per_request": per_request(groups),
        "by_thread_ms_per_request": per_request(threads),
        "by_thread_share_of_wall": {
            k: round(v / PROFILE_RATE / seconds, 3) for k, v in sorted(threads.items(), key=lambda kv: -kv[1])
        },
        "top_frames_ms_per_request": per_request(frames, 15),
    }


# ----- the run -----------------------------------------------------------------------------------


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds so far: this process (the clients), the query node, the index nodes
    together, and the other nodes (ingest, vector) together."""
    own = os.times()
    out = {"clients (this process)": own.user + own.system, "query node": 0.0, "index nodes": 0.0, "other nodes": 0.0}
    for name, pid in pids.items():
        group = "query node" if name == "query" else "index nodes" if name.startswith("index-") else "other nodes"
        out[group] += process_cpu_s(pid)
    return out


def tree_state() -> dict[str, object]:
    """The commit measured and the files the working tree changes beside it (others' work in progress)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()

    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD"), "changed_files": changed}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_http(host: str, port: int) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", "/api/embedding/status")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP API on {host}:{port} did not answer in {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.1)


def run(args: argparse.Namespace, home: Path) -> dict[str, object]:
    log(f"generating {args.messages:,} messages (seed {args.seed})")
    started = time.perf_counter()
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    corpus = corpus_stats(sessions, time.perf_counter() - started)
    host, port = "127.0.0.1", free_port()
    cluster = LocalCluster(home, partitions=PARTITIONS, embedder="none", http=f"{host}:{port}")
    log(f"starting a local cluster ({PARTITIONS} partitions, no embedder, HTTP API on {host}:{port}) under {home}")
    cluster.start()
    query_address = str(cluster.addresses["query"])
    grpc_port = int(query_address.rsplit(":", 1)[1])
    admin = QuarryClient(query_address, str(cluster.addresses["ingest"]))
    http_clients: list[HttpClient] = []
    grpc_clients: list[QuarryClient] = []
    try:
        wait_http(host, port)
        log("ingesting through IngestSessions")
        started = time.perf_counter()
        report = admin.ingest_sessions(sessions)
        ingest_s = time.perf_counter() - started
        visible_s = wait_visible(admin, sessions)
        log(f"ingested {report.sessions_written:,} sessions in {ingest_s:.1f} s (+{visible_s:.1f} s until searchable)")
        mix = build_mix(admin, build_queries(per_class=args.per_class))
        check = HttpClient(host, port)
        for request in mix:
            status, body = check.get(request.target)
            if status != 200:
                raise RuntimeError(f"{request.kind}: HTTP {status}: {body[:300]!r}")
            if comparable(request.kind, orjson.loads(body)) != comparable(request.kind, to_json(request.grpc(admin))):
                raise RuntimeError(f"{request.kind}: the HTTP and gRPC answers differ")
        check.close()
        encoding = encode_costs(admin, mix)
        log(f"mix of {len(mix)}: " + ", ".join(r.kind for r in mix) + "; answers agree on both surfaces")

        http_clients = [HttpClient(host, port) for _ in range(args.clients)]
        grpc_clients = [QuarryClient(query_address) for _ in range(args.clients)]
        pool = {"http": http_clients, "grpc": grpc_clients}
        threads_before = node_threads(cluster.pids["query"])
        warm = min(args.round, args.requests)
        connections = {}
        for surface, server_port in zip(SURFACES, (port, grpc_port), strict=True):
            warmup = run_round(surface, pool[surface], mix, 0, warm)
            if warmup.errors:
                raise RuntimeError(f"warm-up: {len(warmup.errors)} errors, first: {warmup.errors[0]}")
            connections[surface] = established(server_port)  # right away: uvicorn drops idle ones after 5 s
        log(f"warmed up; client TCP connections to the query node: {connections}; timing")

        rounds: dict[str, list[RoundResult]] = {s: [] for s in SURFACES}
        done = 0
        index = 0
        while done < args.requests:
            count = min(args.round, args.requests - done)
            order = SURFACES if index % 2 == 0 else SURFACES[::-1]
            for surface in order:
                before = cpu_seconds(cluster.pids)
                result = run_round(surface, pool[surface], mix, done, count)
                after = cpu_seconds(cluster.pids)
                result.cpu_s = {k: after[k] - before[k] for k in before}
                rounds[surface].append(result)
                if result.errors:
                    log(f"{surface}: {len(result.errors)} errors in round {index + 1}, first: {result.errors[0]}")
            done += count
            index += 1
            h, g = rounds["http"][-1], rounds["grpc"][-1]
            log(
                f"round {index}: {done:,} of {args.requests:,} each; "
                f"http {h.requests / h.seconds:,.0f}/s, grpc {g.requests / g.seconds:,.0f}/s"
            )
        threads_after = node_threads(cluster.pids["query"])
        profile = {}
        if args.profile:
            for surface in SURFACES:
                log(f"profiling the query node over {surface}")
                target = home / f"profile-{surface}.txt"
                profile[surface] = profile_round(surface, cluster.pids["query"], pool[surface], mix, args.round, target)
    finally:
        for c in http_clients:
            c.close()
        for c in grpc_clients:
            c.close()
        admin.close()
        cluster.stop()
    surfaces = {s: summarize(rounds[s]) for s in SURFACES}
    errors = {s: [e for r in rounds[s] for e in r.errors] for s in SURFACES}
    return {
        "corpus": corpus,
        "ingest": {
            "sessions_written": report.sessions_written,
            "messages_written": report.messages_written,
            "seconds": round(ingest_s, 1),
            "searchable_after_s": round(visible_s, 1),
        },
        "mix": [{"kind": r.kind, "get": r.target} for r in mix],
        "grpc_clients": "one QuarryClient (one channel) per client thread",
        "http_clients": "one http.client.HTTPConnection (keep-alive) per client thread; orjson parses each body",
        "client_tcp_connections": connections,
        "query_node_threads": {"before": threads_before, "after": threads_after},
        "surfaces": surfaces,
        "http_over_grpc": ratios(surfaces["http"], surfaces["grpc"]),
        "encoding_in_process": encoding,
        "errors": {s: e[:50] for s, e in errors.items()},
        "profile": profile,
    }


def render(result: dict[str, Any]) -> str:
    s, r = result["surfaces"], result["http_over_grpc"]
    c = result["corpus"]

    def row(name: str, key: str, unit: str = "", ratio: str = "") -> str:
        cells = []
        for surface in SURFACES:
            value = s[surface]["latency"][key] if key.endswith("_ms") else s[surface][key]
            cells.append(f"{value:,.2f}{unit}" if isinstance(value, float) else f"{value:,}{unit}")
        return f"| {name} | {cells[0]} | {cells[1]} | {ratio} |"

    lines = [
        f"HTTP JSON API beside gRPC: {c['messages']:,} messages in {c['sessions']:,} sessions, "
        f"{PARTITIONS} partitions, "
        f"{result['clients']} concurrent clients, {result['requests']:,} requests per surface "
        f"(mix of {len(result['mix'])}, cycled)",
        f"command: {result['command']}",
        "",
        "| | HTTP | gRPC | HTTP ÷ gRPC |",
        "| --- | ---: | ---: | ---: |",
        row("errors", "errors"),
        row("throughput (requests/s)", "requests_per_s", ratio=f"{r['requests_per_s']:.2f}"),
        row("p50", "p50_ms", " ms", f"{r['p50_ms']:.2f}"),
        row("p95", "p95_ms", " ms", f"{r['p95_ms']:.2f}"),
        row("p99", "p99_ms", " ms", f"{r['p99_ms']:.2f}"),
        "",
        "| request kind | HTTP p50 / p95 ms | gRPC p50 / p95 ms | JSON / proto bytes "
        "| to_json + json.dumps (orjson) / proto µs |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind, enc in result["encoding_in_process"].items():
        h, g = s["http"]["by_kind"][kind], s["grpc"]["by_kind"][kind]
        lines.append(
            f"| {kind} | {h['p50_ms']:.2f} / {h['p95_ms']:.2f} | {g['p50_ms']:.2f} / {g['p95_ms']:.2f} | "
            f"{enc['json_bytes']:,} / {enc['proto_bytes']:,} | {enc['to_json_us']:,.0f} + "
            f"{enc['json_render_us']:,.0f} ({enc['orjson_render_us']:,.0f}) / {enc['proto_encode_us']:,.0f} |"
        )
    h, g = s["http"], s["grpc"]
    lines += [
        "",
        f"server timings_ms.total (searches, unit queries) p50: http {h['server_total']['p50_ms']:.2f} ms, "
        f"grpc {g['server_total']['p50_ms']:.2f} ms; client time beyond it p50: "
        f"http {h['beyond_server_total']['p50_ms']:.2f} ms, grpc {g['beyond_server_total']['p50_ms']:.2f} ms",
        "CPU ms per request: "
        + "; ".join(
            f"{k} http {h['cpu_ms_per_request'][k]:.2f} / grpc {g['cpu_ms_per_request'][k]:.2f}"
            for k in h["cpu_ms_per_request"]
        ),
        f"client TCP connections: {result['client_tcp_connections']}; HTTP reconnects after idle: "
        f"{h['reconnects']}; query node threads before/after: {result['query_node_threads']}",
    ]
    for surface, p in result["profile"].items():
        if "by_category_ms_per_request" not in p:
            lines.append(f"profile {surface}: {p}")
            continue
        parts = ", ".join(f"{k} {v:.2f}" for k, v in p["by_category_ms_per_request"].items())
        lines.append(f"profile {surface}: {p['gil_ms_per_request']:.2f} GIL ms/request: {parts}")
        shares = ", ".join(f"{k} {v:.0%}" for k, v in list(p["by_thread_share_of_wall"].items())[:5])
        lines.append(f"  GIL held, share of the round's wall time, by thread: {shares}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=10_000, help="requests per surface")
    parser.add_argument("--clients", type=int, default=32, help="concurrent client threads per surface")
    parser.add_argument("--round", type=int, default=1_000, help="requests per round; surfaces alternate by round")
    parser.add_argument("--data-dir", type=Path, help="the cluster's home, kept afterwards (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-class", type=int, default=50, help="candidate queries per class of bench/queries.py")
    parser.add_argument("--profile", action="store_true", help="py-spy the query node in one extra round each")
    parser.add_argument("--out", type=Path, help="default bench/results/http-<messages>.json")
    args = parser.parse_args(argv)
    out = args.out or REPO / "bench" / "results" / f"http-{args.messages}.json"

    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    tree = tree_state()
    load_before = os.getloadavg()
    if args.data_dir is not None:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        measured = run(args, args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="quarry-bench-http-") as tmp:
            measured = run(args, Path(tmp))
    result = {
        "command": " ".join(["python bench/http_api.py", *(sys.argv[1:] if argv is None else argv)]),
        "started": started_at,
        "messages": args.messages,
        "seed": args.seed,
        "requests": args.requests,
        "clients": args.clients,
        "round": args.round,
        "tree": tree,
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "load_average_before_after": [load_before, os.getloadavg()],  # others' work shares the machine
        },
        **measured,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"\nresult: {out}")
    errors = result["errors"]
    if any(errors.values()):
        total = sum(result["surfaces"][s]["errors"] for s in SURFACES)
        print(f"\nFAILED: {total} errors", file=sys.stderr)
        for surface in SURFACES:
            for line in errors[surface]:
                print(f"  {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
