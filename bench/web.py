"""The web reader's server time: the search page beside the same search through `/api`, and a
1,000-message session's page (issue 27).

    python bench/web.py [--messages 100000] [--rounds 20] [--long 1000] [--out bench/results/web.json]
                        [--screenshots DIR]

1. Generates the synthetic archive (`generate_sessions`, as bench/run.py does) and one session of
   `--long` messages written as a Claude Code log (the reader shows a log's events: a session read from
   its log, as people's are), starts a local cluster (2 index partitions, no embedder, no tokens: the
   loopback default) with the HTTP server on a free loopback port, ingests the archive through
   IngestSessions and the log through IngestPaths, and waits until both are searchable.
2. Search: one query of each class of bench/queries.py that finds something, each asked `--rounds`
   times as the search page (`/?q=…`) and as the API (`/api/sessions?query=…`), in pairs whose order
   alternates (ABBA), one keep-alive connection, one request at a time. Server time is the node's own
   `Server-Timing: app;dur=` header (request in to answer's headers out: both answers are rendered whole
   before their headers); the client's wall time beside it.
   Beside them, the facet sidebar the page loads after its hits (`/search/facets?q=…`), timed alone.
3. The long session's page (`/sessions/{id}`), `--rounds` x 5 times: server time p50 / p95 and the
   page's size (the reader pages events in, so the first page holds one page of them).
4. With `--screenshots DIR` (and chromium with chromium-driver installed), a second cluster holding
   only the demo's sample archive (`quarry.cli.sample_archive`: people's sessions, not the benchmark's
   word lists) and one PNG of each page, at a query and a session of it.
Prints the figures and writes them to `--out`; ratios are page ÷ API of the same requests in this run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.http_api import free_port, tree_state, wait_http  # noqa: E402
from bench.queries import CLASSES, build_queries  # noqa: E402
from bench.run import log, wait_visible  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.sample_archive import write_sample_archive  # noqa: E402
from quarry.cli.synthetic.claude_code import write_claude_code_archive  # noqa: E402
from quarry.cli.synthetic.generator import generate_session, generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

LIMIT = 20
LONG_SESSION_ROUNDS = 5  # the session page is asked this many times per round


class Server:
    """One keep-alive connection; each GET answers (status, server ms, wall ms, bytes)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def get(self, target: str) -> tuple[float, float, int]:
        started = time.perf_counter()
        self.conn.request("GET", target)
        response = self.conn.getresponse()
        body = response.read()
        wall_ms = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"GET {target}: HTTP {response.status}: {body[:300]!r}")
        timing = response.getheader("server-timing", "")
        server_ms = float(timing.split("dur=", 1)[1]) if "dur=" in timing else float("nan")
        return server_ms, wall_ms, len(body)


def p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def searches(client: QuarryClient) -> list[str]:
    """The first query of each class that finds something."""
    chosen = []
    queries = build_queries(per_class=10)
    for kind in CLASSES:
        found = next((q.quarry for q in queries if q.kind == kind and client.search(q.quarry, limit=LIMIT).hits), None)
        if found is None:
            raise RuntimeError(f"no query of class {kind!r} finds anything: is the archive ingested?")
        chosen.append(found)
    return chosen


def time_search(server: Server, queries: Sequence[str], rounds: int) -> dict[str, Any]:
    page_ms: list[float] = []
    api_ms: list[float] = []
    sidebar_ms: list[float] = []
    walls: dict[str, list[float]] = {"page": [], "api": []}
    for round_number in range(rounds + 1):  # round 0 warms both up, untimed
        for i, query in enumerate(queries):
            targets = {
                "page": "/?" + urllib.parse.urlencode({"q": query, "limit": LIMIT}),
                "api": "/api/sessions?" + urllib.parse.urlencode({"query": query, "limit": LIMIT}),
            }
            order = ("page", "api") if (round_number + i) % 2 == 0 else ("api", "page")
            for which in order:
                server_ms, wall_ms, _ = server.get(targets[which])
                if round_number:
                    (page_ms if which == "page" else api_ms).append(server_ms)
                    walls[which].append(wall_ms)
            sidebar = server.get("/search/facets?" + urllib.parse.urlencode({"q": query}))[0]
            if round_number:
                sidebar_ms.append(sidebar)
    return {
        "requests_each": len(page_ms),
        "page_server_ms": {"p50": p(page_ms, 0.5), "p95": p(page_ms, 0.95)},
        "api_server_ms": {"p50": p(api_ms, 0.5), "p95": p(api_ms, 0.95)},
        "page_wall_ms_p50": p(walls["page"], 0.5),
        "api_wall_ms_p50": p(walls["api"], 0.5),
        "page_over_api_p50": round(statistics.median(page_ms) / statistics.median(api_ms), 3),
        "facet_sidebar_server_ms": {"p50": p(sidebar_ms, 0.5), "p95": p(sidebar_ms, 0.95)},
    }


def time_session_page(server: Server, session_id: str, rounds: int) -> dict[str, Any]:
    target = f"/sessions/{urllib.parse.quote(session_id, safe='')}"
    server.get(target)  # warm-up
    samples = [server.get(target) for _ in range(rounds * LONG_SESSION_ROUNDS)]
    server_ms = [s[0] for s in samples]
    return {
        "requests": len(samples),
        "server_ms": {"p50": p(server_ms, 0.5), "p95": p(server_ms, 0.95)},
        "wall_ms_p50": p([s[1] for s in samples], 0.5),
        "page_bytes": samples[0][2],
    }


def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    log(f"generating {args.messages:,} messages and one session of {args.long:,}")
    sessions = list(generate_sessions(args.messages, seed=7))
    long_session = generate_session(args.long, seed=27)
    logs = home / "logs-to-read"
    write_claude_code_archive([long_session], logs)
    port = free_port()
    local = LocalCluster(home / "cluster", partitions=2, embedder="none", http=f"127.0.0.1:{port}", ingest_roots=[logs])
    local.start()
    try:
        with QuarryClient(local.info().query, local.info().ingest) as client:
            client.ingest_sessions(sessions)
            list(client.ingest_paths([logs]))
            wait_visible(client, [*sessions, long_session])
            wait_http("127.0.0.1", port)
            queries = searches(client)
            server = Server(port)
            log(f"timing the search page and /api over {len(queries)} queries x {args.rounds} rounds")
            search = time_search(server, queries, args.rounds)
            log(f"timing the {args.long:,}-message session page")
            session_page = time_session_page(server, long_session.id, args.rounds)
    finally:
        local.stop()
    shots = screenshots(home / "sample", args.screenshots) if args.screenshots is not None else []
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "tree": tree_state(),
        "messages": args.messages,
        "long_session_messages": args.long,
        "queries": queries,
        "search": search,
        "session_page": session_page,
        "screenshots": shots,
    }


def screenshots(home: Path, folder: Path) -> list[str]:
    """One PNG per page over a cluster of the sample archive alone (where the browser is installed)."""
    from tests.web.browser import open_browser

    browser = open_browser()
    if browser is None:
        log("no chromium / chromium-driver: no screenshots")
        return []
    logs = home / "sample-sessions"
    write_sample_archive(logs, date.today())
    port = free_port()
    local = LocalCluster(home / "cluster", partitions=2, embedder="none", http=f"127.0.0.1:{port}", ingest_roots=[logs])
    local.start()
    try:
        with QuarryClient(local.info().query, local.info().ingest) as client:
            list(client.ingest_paths([logs]))
            deadline = time.monotonic() + 60
            while not (hits := client.search("repo:ledger alembic", limit=1).hits) and time.monotonic() < deadline:
                time.sleep(0.5)  # the archive's last commit
        compacted = hits[0].session.id  # the schema migration whose context was compacted
        return _shoot(browser, f"http://127.0.0.1:{port}", compacted, folder)
    finally:
        browser.quit()
        local.stop()


def _shoot(browser: WebDriver, base: str, compacted: str, folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    pages = {
        "search": "/?" + urllib.parse.urlencode({"q": "why does the connection pool time out"}),
        "reader": f"/sessions/{urllib.parse.quote(compacted, safe='')}",
        "units": "/units?" + urllib.parse.urlencode({"q": "actions where session.repo:ledger | group by tool | count"}),
        "usage": "/usage?" + urllib.parse.urlencode({"by": "model", "since": "30d"}),
    }
    saved = []
    for name, path in pages.items():
        browser.get(base + path)
        time.sleep(1.0)  # the facet sidebar settles
        browser.save_screenshot(str(folder / f"web-{name}.png"))
        saved.append(str(folder / f"web-{name}.png"))
    return saved


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "web.json")
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quarry-web-bench-") as home:
        result = run(args, Path(home))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("search", "session_page")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
