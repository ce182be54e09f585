"""Which of MiniLM's MatMuls cost the int8 model its distance to torch: each group kept in float, measured.

    python bench/int8_sensitivity.py [--texts 300] [--out bench/results/int8-sensitivity.jsonl]

Exports the package's MiniLM to ONNX in float (its vectors are torch's: cosine 1.0000), then, for every
group below, quantizes the other MatMul weights as `minilm-int8` does (dynamic int8, per channel, 7-bit on
x86 without VNNI) and embeds the same texts one per run on one thread: `--texts` dialogue texts of the
synthetic corpus and as many SciFact abstracts (long texts: truncated at 256 tokens). Prints, per group,
the cosine to the float model's vectors (mean, 1st percentile, minimum) and texts/s beside the float
model's rate from the same run. The group `minilm-int8` ships is named in `quarry.vector.embed_onnx`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.embed_backends import bench_texts  # noqa: E402
from quarry.vector.embed_onnx import export_fp32, load_tokenizer, quantize  # noqa: E402

SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"
# Each group: name -> substrings of the MatMul node names kept in float.
GROUPS: dict[str, tuple[str, ...]] = {
    "none (every MatMul int8)": (),
    "feed-forward outputs": tuple(f"layer.{n}/output/dense/MatMul" for n in range(6)),
    "feed-forward outputs and layer 0": (*(f"layer.{n}/output/dense/MatMul" for n in range(6)), "layer.0/"),
    "feed-forward inputs": ("intermediate/dense",),
    "attention outputs": ("attention/output/dense",),
    "query, key, value": ("self/query", "self/key", "self/value"),
    "layer 0": ("layer.0/",),
    "layer 5": ("layer.5/",),
}


def embed_all(model: Path, encodings: list) -> tuple[np.ndarray, float]:  # type: ignore[type-arg]
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    out = np.zeros((len(encodings), 384), dtype=np.float32)
    began = time.perf_counter()
    for row, encoding in enumerate(encodings):
        feeds = {
            "input_ids": np.array([encoding.ids]),
            "attention_mask": np.array([encoding.attention_mask]),
            "token_type_ids": np.array([encoding.type_ids]),
        }
        out[row] = session.run(None, feeds)[0][0]
    rate = len(encodings) / (time.perf_counter() - began)
    return out / np.linalg.norm(out, axis=1, keepdims=True), rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=300, help="dialogue texts, and as many SciFact abstracts")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "int8-sensitivity.jsonl")
    args = parser.parse_args()
    if not SCIFACT.is_file():
        parser.error(f"{SCIFACT} is missing (../shared/datasets/scifact)")
    import onnx

    with SCIFACT.open() as lines:
        abstracts = [f"{doc['title']} {doc['text']}" for doc in map(json.loads, lines)][: args.texts]
    encodings = load_tokenizer().encode_batch(bench_texts(args.texts) + abstracts)
    rows = []
    with tempfile.TemporaryDirectory(prefix="quarry-int8-") as work:
        fp32 = Path(work) / "fp32.onnx"
        export_fp32(fp32)
        reference, float_rate = embed_all(fp32, encodings)
        names = [node.name for node in onnx.load(str(fp32)).graph.node if node.op_type == "MatMul"]
        for group, patterns in GROUPS.items():
            kept = [name for name in names if any(p in name for p in patterns)]
            model = Path(work) / "int8.onnx"
            quantize(fp32, model, keep_float=kept)
            vectors, rate = embed_all(model, encodings)
            cosine = (vectors * reference).sum(axis=1)
            row = {
                "float": group,
                "matmuls_in_float": len(kept),
                "cosine_mean": round(float(cosine.mean()), 4),
                "cosine_p1": round(float(np.percentile(cosine, 1)), 4),
                "cosine_min": round(float(cosine.min()), 4),
                "texts_per_s": round(rate, 1),
                "float_model_texts_per_s": round(float_rate, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"result: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
