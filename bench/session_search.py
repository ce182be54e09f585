"""Search quality on agent sessions: the judged queries of bench/domain/ over the real agent logs, per lane
and per kind of query, through a real cluster.

    python bench/session_search.py [--logs ../shared/real-logs] [--out bench/results/session-search.json]
                                   [--embedder minilm]

The queries (bench/domain/*.jsonl, see bench/domain/README.md) are what a person types to find a session
they half remember: paraphrases, errors, tasks and exact terms, in several languages, each with graded
judgments (3 the session sought, 2 highly relevant, 1 related) made by reading the sessions. A fresh
local cluster (2 partitions, the MiniLM embedder) ingests the logs of every agent Quarry reads
(IngestPaths), waits until every session is embedded, then asks every query, limit 100, as:
- default: what a user gets with no flag (the text decides its reading; auto lane);
- dialogue, semantic, hybrid, actions: that lane, the text read as prose;
- syntax: the dialogue lane, the text read as the query language (every word needed: the default before
  prose was read as prose).
Reports nDCG@10 and recall@100 per run, overall and per kind, the queries a run refused (an error) and
those it answered with nothing, and writes everything, per query too, as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.beir import ndcg_at, recall_at  # noqa: E402
from bench.run import log, wait_embedder_ready  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.core.errors import QuarryError  # noqa: E402
from tests.ingest.test_real_logs import READ_FOLDERS  # noqa: E402

DOMAIN = REPO / "bench" / "domain"
DEFAULT_LOGS = REPO.parent / "shared" / "real-logs"
DEFAULT_OUT = REPO / "bench" / "results" / "session-search.json"
LIMIT = 100
PARTITIONS = 2
EMBED_TIMEOUT_S = 900.0
KINDS = ("paraphrase", "error", "task", "exact")


@dataclass(frozen=True)
class Judged:
    id: str
    kind: str
    lang: str
    query: str
    judgments: dict[str, int]


@dataclass(frozen=True)
class Run:
    """How one reported run asks: the lane and the reading ("" lets the text decide)."""

    lane: str
    reading: str


RUNS = {
    "default": Run("auto", ""),
    "dialogue": Run("dialogue", "prose"),
    "semantic": Run("semantic", "prose"),
    "hybrid": Run("hybrid", "prose"),
    "actions": Run("actions", "prose"),
    "syntax": Run("dialogue", "query"),
}


def load_judged(folder: Path = DOMAIN) -> list[Judged]:
    queries = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                judgments = {sid: int(grade) for sid, grade in row["judgments"].items()}
                queries.append(Judged(row["id"], row["kind"], row["lang"], row["query"], judgments))
    return queries


def load_logs(client: QuarryClient, logs: Path) -> set[str]:
    """Ingest every folder of an agent Quarry reads; the ids of the sessions stored."""
    report = list(client.ingest_paths([logs / folder for folder in READ_FOLDERS]))[-1].report
    log(f"ingested {report.sessions_written} sessions from {report.files} files")
    return set(client.sessions.all_ids())


def wait_embedded(client: QuarryClient) -> None:
    deadline = time.monotonic() + EMBED_TIMEOUT_S
    while time.monotonic() < deadline:
        vector = next(n for n in client.status().nodes if n.role == "vector")
        if vector.up and vector.vectors > 0 and vector.vectors_pending == 0:
            return
        time.sleep(1.0)
    raise RuntimeError("the vector node did not embed every session in time")


def ask(client: QuarryClient, run: Run, queries: Sequence[Judged]) -> tuple[dict[str, list[str]], dict[str, str]]:
    ranked: dict[str, list[str]] = {}
    refused: dict[str, str] = {}
    for judged in queries:
        try:
            envelope = client.search(judged.query, lane=run.lane, limit=LIMIT, reading=run.reading)
        except QuarryError as error:
            refused[judged.id] = str(error)
            ranked[judged.id] = []
            continue
        ranked[judged.id] = [hit.session.id for hit in envelope.hits]
    return ranked, refused


def score(queries: Sequence[Judged], ranked: dict[str, list[str]]) -> dict[str, object]:
    def mean(selected: list[Judged], metric: str) -> float:
        if not selected:
            return 0.0
        if metric == "ndcg@10":
            values = [ndcg_at(ranked[q.id], q.judgments, 10) for q in selected]
        else:
            values = [recall_at(ranked[q.id], q.judgments, 100) for q in selected]
        return round(sum(values) / len(values), 4)

    by_kind = {kind: mean([q for q in queries if q.kind == kind], "ndcg@10") for kind in KINDS}
    other = [q for q in queries if q.lang != "en"]
    return {
        "ndcg@10": mean(list(queries), "ndcg@10"),
        "recall@100": mean(list(queries), "recall@100"),
        "by_kind": by_kind,
        "not_english": mean(other, "ndcg@10"),
        "empty": sum(1 for q in queries if not ranked[q.id]),
    }


def render(result: dict) -> str:  # type: ignore[type-arg]
    lines = [
        f"session search: {result['queries']} judged queries over {result['sessions']} sessions of real agent logs "
        f"({result['embedder']}, {PARTITIONS} partitions, limit {LIMIT})",
        f"command: {result['command']}",
        "",
        f"{'run':<10} {'nDCG@10':>8} {'R@100':>7} " + " ".join(f"{k:>10}" for k in KINDS) + "  not-en  empty refused",
    ]
    for name, metrics in result["runs"].items():
        kinds = " ".join(f"{metrics['by_kind'][k]:>10.4f}" for k in KINDS)
        lines.append(
            f"{name:<10} {metrics['ndcg@10']:>8.4f} {metrics['recall@100']:>7.4f} {kinds}  {metrics['not_english']:.4f}"
            f"  {metrics['empty']:>5} {len(result['refused'][name]):>7}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=DEFAULT_LOGS, help="the real agent logs (a folder per agent)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args(argv)
    if not args.logs.is_dir():
        parser.error(f"{args.logs} is not a folder of agent logs")
    queries = load_judged()
    logs = args.logs.resolve()
    with tempfile.TemporaryDirectory(prefix="quarry-session-search-") as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster", partitions=PARTITIONS, embedder=args.embedder, ingest_roots=[logs]
        )
        cluster.start()
        try:
            with QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"])) as client:
                wait_embedder_ready(cluster)
                stored = load_logs(client, logs)
                unknown = sorted({sid for q in queries for sid in q.judgments} - stored)
                if unknown:
                    raise RuntimeError(f"judged sessions the archive does not hold: {unknown[:5]}")
                wait_embedded(client)
                answers = {}
                for name, run in RUNS.items():
                    log(f"asking {len(queries)} queries: {name}")
                    answers[name] = ask(client, run, queries)
        finally:
            cluster.stop()
    result = {
        "queries": len(queries),
        "sessions": len(stored),
        "embedder": args.embedder,
        "command": " ".join(["python bench/session_search.py", *(sys.argv[1:] if argv is None else argv)]),
        "runs": {name: score(queries, ranked) for name, (ranked, _) in answers.items()},
        "refused": {name: refused for name, (_, refused) in answers.items()},
        "per_query": {
            q.id: {
                "kind": q.kind,
                "lang": q.lang,
                **{name: round(ndcg_at(ranked[q.id], q.judgments, 10), 4) for name, (ranked, _) in answers.items()},
            }
            for q in queries
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(render(result))
    print(f"\nresult: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
