"""Retrieval quality on a BEIR-format dataset: nDCG@10 and recall@100 per lane, through a real cluster.

    python bench/quality.py [--dataset ../shared/datasets/scifact] [--out bench/results/quality.json]
                            [--limit-queries N] [--embedder minilm|minilm-torch|minilm-int8]

Starts a fresh local cluster (2 index partitions, the MiniLM embedder) in a temporary directory, ingests
every document as a session through IngestSessions (the public ingest API, `bench.beir.doc_session`),
waits until the vector node has embedded every document, then asks every judged query of the split
on each lane with limit 100:
- dialogue: BM25 over the message text, OR of the analyzed query terms (admission
  {lexical_coverage: 0, lexical_min_matched_terms: 1}: one matching term admits a document);
- semantic: MiniLM nearest messages;
- hybrid: the dialogue, actions and vector channels (the same admission) fused by RRF (k = 60);
- hybrid_minmax: the same channels fused by per-query min-max score normalization;
- default: no lane and no controls, what a user gets (the claims are prose: the hybrid lane with prose's
  admission, fusion and weights, docs/searching.md).
Prints a table next to the reference goals and published baselines and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # `python bench/quality.py` puts bench/ on the path, not the repository root

from google.protobuf.json_format import MessageToDict  # noqa: E402

from bench.beir import Dataset, doc_id, doc_session, load_dataset, mean_metrics, ndcg_at, recall_at  # noqa: E402
from bench.queries import Latency  # noqa: E402
from bench.run import log, wait_embedder_ready, wait_visible  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.core.dialogue import dialogue_items  # noqa: E402
from quarry.core.errors import QuarryError  # noqa: E402
from quarry.dsl import plain_text_query  # noqa: E402
from quarry.v1 import query_pb2  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"
DEFAULT_OUT = REPO / "bench" / "results" / "quality.json"
PARTITIONS = 2
LIMIT = 100
EMBED_THREADS = "2"  # the vector node may take both cores: nothing else runs while it embeds the corpus
VECTOR_TIMEOUT_S = 300.0
MIN_VECTORS_PER_S = 2.0  # slower than this means something is wrong, not slow


@dataclass(frozen=True)
class LaneRun:
    """How one reported lane is asked: the Search lane, and the controls sent with it."""

    lane: str
    fusion: str = ""  # rrf | minmax for hybrid lanes
    lexical: bool = True  # a lexical channel runs: send the OR admission

    def controls(self) -> query_pb2.SearchControls:
        controls = query_pb2.SearchControls()
        if self.lexical:
            controls.admission.lexical_coverage = 0.0
            controls.admission.lexical_min_matched_terms = 1
        if self.fusion:
            controls.fusion.method = self.fusion
        return controls

    def describe(self) -> dict[str, object]:
        return {"lane": self.lane, "controls": MessageToDict(self.controls(), preserving_proto_field_name=True)}


LANES = {
    "dialogue": LaneRun("dialogue"),
    "semantic": LaneRun("semantic", lexical=False),
    "hybrid": LaneRun("hybrid", fusion="rrf"),
    "hybrid_minmax": LaneRun("hybrid", fusion="minmax"),
    "default": LaneRun("auto", lexical=False),
}

# SciFact test split (300 queries). Goals: the reference run of issue 5 on our machines with the same
# libraries (Tantivy BM25 with lowercase + ASCII folding + English stemming, OR of the analyzed terms;
# all-MiniLM-L6-v2 with FAISS FlatIP; fusion over each lane's top 100). Published: bench/RESULTS.md and
# ../shared/datasets/scifact/SOURCE.md give the sources.
GOALS = {
    "scifact": {
        "dialogue": {"ndcg@10": 0.687},
        "semantic": {"ndcg@10": 0.645},
        "hybrid": {"ndcg@10": 0.714, "recall@100": 0.955},
        "hybrid_minmax": {"ndcg@10": 0.728},
    }
}
PUBLISHED = {
    "scifact": {
        "dialogue": "BM25: BEIR 0.665; Anserini flat 0.679 (R@100 0.925)",
        "semantic": "all-MiniLM-L6-v2 ~0.645 (MTEB, unverified)",
        "hybrid": "bge-small-en-v1.5 0.713 (R@100 0.945)",
        "hybrid_minmax": "",
        "default": "",
    }
}


# ----- cluster ----------------------------------------------------------------------------------------


def wait_vectors(client: QuarryClient, expected: int, started: float) -> float:
    """Seconds from `started` (a perf_counter) until the vector node holds `expected` vectors with
    nothing pending in its queue or the partitions' feeds."""
    deadline = started + VECTOR_TIMEOUT_S + expected / MIN_VECTORS_PER_S
    while True:
        vector = next(n for n in client.status().nodes if n.role == "vector")
        if vector.vectors_pending == 0 and vector.vectors >= expected:
            return time.perf_counter() - started
        if time.perf_counter() > deadline:
            raise RuntimeError(
                f"{vector.vectors} of {expected} vectors after {time.perf_counter() - started:.0f} s, "
                f"{vector.vectors_pending} pending ({vector.detail})"
            )
        time.sleep(0.5)


def load_corpus(client: QuarryClient, dataset: Dataset) -> dict[str, float]:
    """Ingest every document and wait until it is searchable on both lexical and vector sides."""
    sessions = [doc_session(d) for d in dataset.docs]
    started = time.perf_counter()
    report = client.ingest_sessions(sessions)
    ingest_s = time.perf_counter() - started
    if report.sessions_written != len(sessions) or report.issues:
        raise RuntimeError(f"ingest wrote {report.sessions_written} of {len(sessions)} sessions: {report}")
    wait_visible(client, sessions)
    log(f"ingested {len(sessions):,} documents in {ingest_s:.1f} s; waiting for their vectors")
    embed_s = wait_vectors(client, sum(len(dialogue_items(s)) for s in sessions), started)
    log(f"every document embedded {embed_s:.1f} s after the first send")
    return {"ingest_s": round(ingest_s, 3), "embed_s": round(embed_s, 3)}


# ----- queries ----------------------------------------------------------------------------------------


@dataclass
class LaneAnswers:
    ranked: dict[str, list[str]]  # query id -> doc ids, best first
    wall_ms: list[float]
    embed_ms: list[float]  # the query node's `embed` stage, where the lane embeds the query
    failed: dict[str, str]  # query id -> error
    effective_controls: dict[str, object]  # as the server echoed them on the first answer


def ask(client: QuarryClient, run: LaneRun, queries: dict[str, str]) -> LaneAnswers:
    answers = LaneAnswers({}, [], [], {}, {})
    for n, (qid, text) in enumerate(queries.items()):
        query, controls = plain_text_query(text), run.controls()
        try:
            if n == 0:  # one untimed warm-up request per lane
                client.search(query, lane=run.lane, limit=LIMIT, controls=controls)
            started = time.perf_counter()
            envelope = client.search(query, lane=run.lane, limit=LIMIT, controls=controls)
        except QuarryError as error:
            answers.failed[qid] = str(error)
            answers.ranked[qid] = []
            continue
        answers.wall_ms.append((time.perf_counter() - started) * 1000)
        answers.ranked[qid] = [doc_id(hit.session.id) for hit in envelope.hits]
        if "embed" in envelope.timings_ms:
            answers.embed_ms.append(envelope.timings_ms["embed"])
        if n == 0:
            answers.effective_controls = MessageToDict(envelope.controls, preserving_proto_field_name=True)
    return answers


# ----- report -----------------------------------------------------------------------------------------


def evaluate(dataset: Dataset, answers: dict[str, LaneAnswers]) -> dict[str, object]:
    qrels = {q: dataset.qrels[q] for q in next(iter(answers.values())).ranked}
    lanes = {name: {k: round(v, 4) for k, v in mean_metrics(a.ranked, qrels).items()} for name, a in answers.items()}
    per_query = {
        q: {
            name: {
                "ndcg@10": round(ndcg_at(a.ranked[q], judged, 10), 4),
                "recall@100": round(recall_at(a.ranked[q], judged, 100), 4),
            }
            for name, a in answers.items()
        }
        for q, judged in qrels.items()
    }
    return {"lanes": lanes, "per_query": per_query}


def render(result: dict) -> str:  # type: ignore[type-arg]
    goals = GOALS.get(result["dataset"], {})
    published = PUBLISHED.get(result["dataset"], {})
    lines = [
        f"{result['dataset']}: {result['docs']:,} documents, {result['queries']} {result['split']} queries, "
        f"{PARTITIONS} partitions, limit {LIMIT}",
        f"command: {result['command']}",
        f"ingest {result['timings']['ingest_s']:.1f} s; every vector {result['timings']['embed_s']:.1f} s "
        "after the first send",
        "",
        f"{'lane':<14} {'nDCG@10':>8} {'R@100':>7}  {'goal':<22} {'query p50 ms':>12}  published",
    ]
    for name, metrics in result["lanes"].items():
        goal = ", ".join(f"{k} >= {v}" for k, v in goals.get(name, {}).items())
        p50 = result["timings"]["query_ms"][name]["p50_ms"]
        lines.append(
            f"{name:<14} {metrics['ndcg@10']:>8.4f} {metrics['recall@100']:>7.4f}  {goal:<22} {p50:>12.1f}  "
            f"{published.get(name, '')}"
        )
    for name, failed in result["failed"].items():
        if failed:
            first = next(iter(failed.items()))
            lines.append(f"  {name}: {len(failed)} queries failed, e.g. {first[0]}: {first[1]}")
    return "\n".join(lines)


def dumps(result: dict) -> str:  # type: ignore[type-arg]
    """Indented JSON with one line per query in `per_query`, so the file stays readable at 300 queries."""
    head = json.dumps({k: v for k, v in result.items() if k != "per_query"}, indent=2)
    rows = ",\n".join(f"    {json.dumps(q)}: {json.dumps(v)}" for q, v in result["per_query"].items())
    return head[: -len("\n}")] + ',\n  "per_query": {\n' + rows + "\n  }\n}\n"


def run(dataset: Dataset, workdir: Path, embedder: str) -> tuple[dict[str, float], dict[str, LaneAnswers]]:
    env = {"QUARRY_EMBED_THREADS": os.environ.get("QUARRY_EMBED_THREADS", EMBED_THREADS)}
    cluster = LocalCluster(workdir / "cluster", partitions=PARTITIONS, embedder=embedder, env=env)
    log(f"starting a local cluster ({PARTITIONS} partitions, embedder {embedder})")
    cluster.start()
    client = QuarryClient(str(cluster.addresses["query"]), str(cluster.addresses["ingest"]))
    try:
        wait_embedder_ready(cluster)
        timings = load_corpus(client, dataset)
        answers = {}
        for name, lane in LANES.items():
            log(f"asking {len(dataset.queries)} queries on {name}")
            answers[name] = ask(client, lane, dataset.queries)
    finally:
        client.close()
        cluster.stop()
    return timings, answers


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="a BEIR-format folder")
    parser.add_argument("--split", default="test", help="qrels/<split>.tsv")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--limit-queries", type=int, default=0, help="only the first N judged queries (quick runs)")
    parser.add_argument("--embedder", default="minilm", help="the vector node's --embedder (minilm-torch, minilm-int8)")
    args = parser.parse_args(argv)
    if not (args.dataset / "corpus.jsonl").is_file():
        parser.error(f"{args.dataset} is not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/{args.split}.tsv)")

    dataset = load_dataset(args.dataset, args.split)
    if args.limit_queries > 0:
        kept = dict(list(dataset.queries.items())[: args.limit_queries])
        dataset = Dataset(dataset.name, dataset.docs, kept, {q: dataset.qrels[q] for q in kept})
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with tempfile.TemporaryDirectory(prefix="quarry-quality-") as tmp:
        timings, answers = run(dataset, Path(tmp), args.embedder)
    scores = evaluate(dataset, answers)
    result = {
        "dataset": dataset.name,
        "split": args.split,
        "docs": len(dataset.docs),
        "queries": len(dataset.queries),
        "embedder": args.embedder,
        "command": " ".join(["python bench/quality.py", *(sys.argv[1:] if argv is None else argv)]),
        "started": started_at,
        "lanes": scores["lanes"],
        "goals": GOALS.get(dataset.name, {}),
        "settings": {name: lane.describe() for name, lane in LANES.items()}
        | {"limit": LIMIT, "partitions": PARTITIONS},
        "effective_controls": {name: a.effective_controls for name, a in answers.items()},
        "timings": {
            **timings,
            "query_ms": {name: Latency(tuple(a.wall_ms) or (0.0,)).as_dict() for name, a in answers.items()},
            "query_embed_ms": {name: Latency(tuple(a.embed_ms)).as_dict() for name, a in answers.items() if a.embed_ms},
        },
        "failed": {name: a.failed for name, a in answers.items()},
        "per_query": scores["per_query"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(result))
    print(render(result))
    print(f"\nresult: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
