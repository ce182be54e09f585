"""Local embedders side by side: MiniLM's two backends, torch (sentence-transformers) and ONNX Runtime int8,
by default; `--backends` names others (e5-multilingual, the default embedder).

Each backend runs in its own subprocess (one loaded model, its own thread settings, no allocator state
shared with the other), twice, alternating (A B, B A), so a slow minute of the shared machine hits both.
A run embeds the bench's texts (`quarry.core.dialogue.dialogue_items` of the synthetic sessions, the texts
the vector node embeds) in batches of 64, as the vector node's worker does, then times one short query at
a time (`embed_query`). The parent compares the vectors of MiniLM's two backends row by row when both ran.
Retrieval quality is `bench/quality.py`'s (SciFact through a real cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # `python bench/embed_backends.py` puts bench/ on the path, not the repository root

import numpy as np  # noqa: E402

from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.core.dialogue import dialogue_items  # noqa: E402
from quarry.vector.embed import load_embedder  # noqa: E402

MINILM_PAIR = ("minilm-torch", "minilm-int8")
BATCH = 64  # the vector node's worker batch
QUERY = "sqlite database is locked"
QUERY_REPEATS = 50
# Issue 13: the int8 backend takes the model's measured headroom over torch (1.3x at one thread), with
# vectors close to torch's (mean cosine at least 0.98 for int8).
SPEEDUP_TARGET = 1.3
COSINE_TARGET = 0.98


def bench_texts(count: int, seed: int = 7) -> list[str]:
    """The first `count` distinct dialogue texts of the synthetic corpus."""
    texts: dict[str, None] = {}
    for session in generate_sessions(count * 4, seed=seed):
        texts.update(dict.fromkeys(item.text for item in dialogue_items(session)))
        if len(texts) >= count:
            break
    return list(texts)[:count]


def child(spec: str, texts_count: int, vectors_out: Path) -> dict[str, object]:
    """One backend in this process: throughput, then query latency."""
    embedder = load_embedder(spec)
    assert embedder is not None
    texts = bench_texts(texts_count)
    started = time.perf_counter()
    embedder.embed(texts[:BATCH])
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    vectors = np.vstack([embedder.embed(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])
    seconds = time.perf_counter() - started
    np.save(vectors_out, vectors)
    query_ms = []
    for _ in range(QUERY_REPEATS):
        started = time.perf_counter()
        embedder.embed_query(QUERY)
        query_ms.append((time.perf_counter() - started) * 1000)
    result: dict[str, object] = {
        "backend": spec,
        "model": embedder.model,
        "first_batch_s": round(load_s, 2),  # the model load included
        "texts": len(texts),
        "seconds": round(seconds, 2),
        "texts_per_s": round(len(texts) / seconds, 1),
        "query_ms_p50": round(statistics.median(query_ms), 2),
        "query_ms_p95": round(float(np.percentile(query_ms, 95)), 2),
    }
    return result


def run_child(spec: str, args: argparse.Namespace, vectors_out: Path) -> dict[str, object]:
    command = [sys.executable, __file__, "--child", spec, "--texts", str(args.texts), "--vectors", str(vectors_out)]
    env = {**os.environ, "QUARRY_EMBED_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1, help="QUARRY_EMBED_THREADS for both backends")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "embed-backends.json")
    parser.add_argument("--backends", default=",".join(MINILM_PAIR), help="comma-separated embedder specs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.texts, args.vectors)))
        return 0

    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    runs: list[dict[str, object]] = []
    result: dict[str, object] = {
        "command": " ".join(["python bench/embed_backends.py", *(sys.argv[1:] if argv is None else argv)]),
        "started": started_at,
        "runs": runs,
    }
    with tempfile.TemporaryDirectory(prefix="quarry-embed-") as tmp:
        for round_ in range(args.rounds):
            order = backends if round_ % 2 == 0 else backends[::-1]
            for spec in order:
                runs.append(run_child(spec, args, Path(tmp) / f"{spec}.npy"))
                print(json.dumps(runs[-1]), flush=True)
        if set(MINILM_PAIR) <= set(backends):
            torch_rows, int8_rows = (np.load(Path(tmp) / f"{spec}.npy") for spec in MINILM_PAIR)
            result.update(_minilm_targets(runs, (torch_rows * int8_rows).sum(axis=1)))
    for spec in backends:
        rates = [r["texts_per_s"] for r in runs if r["backend"] == spec]
        queries = [r["query_ms_p50"] for r in runs if r["backend"] == spec]
        print(f"{spec}: texts/s {rates}, query ms p50 {queries}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"result: {args.out}")
    return 0


def _minilm_targets(runs: list[dict[str, object]], cosine: np.ndarray) -> dict[str, object]:
    """int8's speed-up over torch and how close their vectors are (issue 13's targets)."""
    summary = {
        "min": round(float(cosine.min()), 4),
        "p1": round(float(np.percentile(cosine, 1)), 4),
        "mean": round(float(cosine.mean()), 4),
    }
    rates = {spec: [float(r["texts_per_s"]) for r in runs if r["backend"] == spec] for spec in MINILM_PAIR}  # type: ignore[arg-type]
    speedup = statistics.median(rates["minilm-int8"]) / statistics.median(rates["minilm-torch"])
    print(f"cosine torch vs int8: {summary}")
    print("\nissue 13 targets, this run")
    print(
        f"  int8 texts/s / torch texts/s (medians)   {speedup:>6.2f}x   >= {SPEEDUP_TARGET}x   "
        f"{'PASS' if speedup >= SPEEDUP_TARGET else 'FAIL'}"
    )
    print(
        f"  mean cosine, int8 vs torch                 {summary['mean']:>6.3f}    >= {COSINE_TARGET}   "
        f"{'PASS' if summary['mean'] >= COSINE_TARGET else 'FAIL'}"
    )
    return {"cosine": summary, "targets": {"int8_over_torch": round(speedup, 2), "mean_cosine": summary["mean"]}}


if __name__ == "__main__":
    raise SystemExit(main())
