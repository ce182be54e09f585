"""The serving index, keyed by store rowid: exact inner product over unit vectors while the node is
small, an inverted-file index once it holds more than `approximate_above` vectors: FAISS IVF over
8-bit scalar-quantized codes (IVF-SQ8) finds REFINE x k candidates, which are ranked again on their
exact vectors (kept beside it, by rowid).

Why IVF and these numbers: `bench/ann.py`, recorded in bench/RESULTS.md ("Approximate vector index
(issue 13)"): 500k vectors grown from real MiniLM embeddings, real held-out queries, one thread.
- A flat scan costs ~0.075 ms per 1,000 vectors per query on a quiet machine (~15 ms at 200k,
  ~37 ms at 500k): past 200k it is no longer the small part of a search.
- IVF-Flat, nlist 1024: recall@10 0.925 / 0.971 / 0.982 / 0.990 at nprobe 32 / 64 / 96 / 128.
  Trained at the switch point instead, nprobe 96 / 128 / 160 gave 0.971 / 0.980 / 0.992: k-means
  varies from one training to the next, hence 160. A query scans ~nprobe/nlist of the vectors:
  160 is ~6x faster than the flat scan (~6 ms at 500k on a quiet machine).
- IVF-SQ8 with the candidates re-ranked exactly (4x k) keeps IVF-Flat's recall (0.990 / 0.992 at nprobe
  128 / 160) at half its time: its lists scan a quarter of the bytes (5.4 against 11.0 ms at nprobe 128
  in one run where the flat scan took 65 ms, so ~3 ms on a quiet machine). As the node builds it
  (trained at the switch point), nprobe 160: recall 0.992, 0.116 of a flat scan (~4.3 ms quiet).
  Its memory is the codes (~0.2 GB at 500k) beside the exact vectors the flat index held.
- Twice the lists, now that training is paid once (kept below): nlist 2048 (trained at the switch
  point), nprobe 96 / 128 / 160 gave recall 0.982 / 0.992 / 0.995 at 3.3 / 4.0 / 5.1 ms where nlist
  1024 gave 0.971 / 0.980 / 0.992 at 5.1 / 7.1 / 8.1 ms, the flat scan taking 67-77 ms beside them
  (`bench/ann.py` at 500k, one run, alternating): nprobe 128 of 2048, 0.057 of a flat scan. Training
  takes ~3x longer (k-means over 131k sampled vectors, ~2 minutes here), while searches go on over the
  flat index.
- HNSW (M 32, efConstruction 40) reached only 0.47-0.81 at efSearch 64-512: near-duplicate messages
  (retried commands, repeated errors) form dense clouds its greedy walk reaches but does not
  exhaust, while an inverted list holds the whole cloud. It also cannot remove a vector (every
  edited message would leave a tombstone to filter and rebuild away), and it built 500k in 157 s
  against IVF's 87 s.

Training (k-means, a few minutes at the switch point of 200k) happens once: the trained, empty index
goes to a `TrainingKeeper` (the node's store, kept_training.py), and a later switch, at the next start
or after removals and appends, takes it from there instead of training again when its `IvfParams`
are the same.

A search restricted to a small allow-list probes every list with the allow-list as a selector, so
every allowed vector is a candidate (the work the flat index does for it) and the best by their codes
are re-ranked exactly. An allow-list of more than a tenth of the vectors is searched like an
unrestricted query (the probed lists, filtered), and through every list if those hold too few of them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Protocol

import faiss
import numpy as np

# The switch point: a flat scan of 200k vectors takes ~15 ms per query on a quiet machine, about
# what the rest of a hybrid search costs; below it exact search is cheap enough and needs no training.
DEFAULT_APPROXIMATE_ABOVE = 200_000
# Inverted lists, and lists probed per query (recall@10 0.99 at 500k, bench/ann.py); the lists grow
# with the index, so a query costs ~nprobe/nlist of a flat scan at any size.
NLIST = 2048
NPROBE = 128
# Candidates the quantized lists give per result wanted, re-ranked on the exact vectors.
REFINE = 4
# k-means trains on at most this many vectors per list (FAISS warns below 39), sampled with a fixed seed.
TRAIN_PER_LIST = 64
# An allow-list holding more than this share of the vectors is searched through the probed lists.
EXACT_ALLOWED_SHARE = 0.1

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IvfParams:
    """What a training depends on: a kept training serves an index only with the same parameters."""

    dimension: int
    nlist: int  # at most; fewer when the switch point gives under TRAIN_PER_LIST vectors per list
    approximate_above: int  # the sample (TRAIN_PER_LIST per list) is drawn from the switch point's vectors

    def key(self) -> str:
        """These parameters and the fixed ones (index type, metric, sample size), as one comparable string."""
        fixed = {"index": "IVF,SQ8", "metric": "inner_product", "train_per_list": TRAIN_PER_LIST}
        return json.dumps(fixed | asdict(self), sort_keys=True)


class TrainingKeeper(Protocol):
    """Keeps a trained, empty IVF-SQ8 index across starts."""

    def load(self, params: IvfParams) -> faiss.IndexIVFScalarQuantizer | None:
        """The kept training for `params`; None (and why, in the log) when there is none usable."""
        ...

    def save(self, params: IvfParams, ivf: faiss.IndexIVFScalarQuantizer) -> None: ...


def _one_thread() -> None:
    """One OpenMP thread for FAISS on the calling thread: two on a shared 2-core box are slower than
    one (14.7 vs 7.5 ms per flat query). The setting is per thread (an OpenMP ICV), so each thread
    that reaches FAISS (the gRPC handlers, the embedding worker) sets it, not only the constructor's."""
    faiss.omp_set_num_threads(1)


def l2_from_inner_product(inner: np.ndarray) -> np.ndarray:
    """L2 distance between unit vectors: |a - b| = sqrt(2 - 2·a·b)."""
    return np.sqrt(np.maximum(0.0, 2.0 - 2.0 * inner.astype(np.float64)))


class _RowVectors:
    """The exact vectors by rowid, for re-ranking the quantized index's candidates (a removed rowid's
    row stays until the node restarts; the index no longer returns it). Grown by swapping in a larger
    array, so a search reads either the old array or the new one, whole."""

    def __init__(self, dimension: int) -> None:
        self._rows = np.zeros((0, dimension), dtype=np.float32)

    def put(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        rows = self._rows
        top = int(rowids.max()) + 1
        if top > len(rows):
            grown = np.zeros((max(top, 2 * len(rows)), rows.shape[1]), dtype=np.float32)
            grown[: len(rows)] = rows
            rows = grown
        rows[rowids] = vectors
        self._rows = rows

    def inner(self, rowids: np.ndarray, query: np.ndarray) -> np.ndarray:
        return self._rows[rowids] @ query


class AnnIndex:
    """IndexIDMap2 over IndexFlatIP, then IndexIVFScalarQuantizer (8 bits, inner product) with exact
    re-ranking past `approximate_above`.

    The switch happens in `add` (also while start() rebuilds from the store) and is one-way: removals
    that bring the count back down keep the trained index. It trains only without a usable training
    from `keeper`, and gives it what it trained. `_lock` keeps searches and changes to the index
    apart; `_write_lock` orders changes, and is the only lock held while IVF trains, so searches go
    on over the flat index meanwhile.
    """

    def __init__(
        self,
        dimension: int,
        approximate_above: int = DEFAULT_APPROXIMATE_ABOVE,
        nlist: int = NLIST,
        nprobe: int = NPROBE,
        keeper: TrainingKeeper | None = None,
    ) -> None:
        self.dimension = dimension
        self.approximate_above = approximate_above
        self._params = IvfParams(dimension, nlist, approximate_above)
        self._nprobe = nprobe
        self._keeper = keeper
        self._index: faiss.Index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self._ivf: faiss.IndexIVFScalarQuantizer | None = None
        self._exact = _RowVectors(dimension)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    @property
    def approximate(self) -> bool:
        return self._ivf is not None

    def add(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        if not len(rowids):
            return
        _one_thread()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._write_lock:
            if self._ivf is not None:
                self._exact.put(rowids, vectors)  # before the index can return them
            with self._lock:
                self._index.add_with_ids(vectors, rowids)
            if self._ivf is None and self.ntotal > self.approximate_above:
                ivf = self._train_from_flat()
                with self._lock:
                    self._index = self._ivf = ivf

    def remove(self, rowids: list[int]) -> None:
        if rowids:
            _one_thread()
            with self._write_lock, self._lock:
                self._index.remove_ids(np.array(rowids, dtype=np.int64))

    def _train_from_flat(self) -> faiss.IndexIVFScalarQuantizer:
        """An IVF-SQ8 index holding the flat index's vectors, and those vectors kept for re-ranking;
        reads the flat index in place (no copy)."""
        flat = faiss.downcast_index(self._index.index)
        count = self.ntotal
        vectors = faiss.rev_swig_ptr(flat.get_xb(), count * self.dimension).reshape(count, self.dimension)
        rowids = faiss.vector_to_array(self._index.id_map)
        ivf = self._keeper.load(self._params) if self._keeper is not None else None
        if ivf is None:
            ivf = self._train(vectors)
        else:
            log.info("kept IVF-SQ8 training taken (nlist %d): k-means skipped", ivf.nlist)
        ivf.add_with_ids(vectors, rowids)
        ivf.nprobe = min(self._nprobe, ivf.nlist)
        self._exact.put(rowids, vectors)
        return ivf

    def _train(self, vectors: np.ndarray) -> faiss.IndexIVFScalarQuantizer:
        """A trained, empty IVF-SQ8 index (k-means over a seeded sample of `vectors`), handed to the keeper."""
        began = time.perf_counter()
        count = len(vectors)
        nlist = max(1, min(self._params.nlist, count // TRAIN_PER_LIST))
        ivf = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(self.dimension),
            self.dimension,
            nlist,
            faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )
        sample = np.random.default_rng(0).choice(count, min(count, TRAIN_PER_LIST * nlist), replace=False)
        ivf.train(vectors[np.sort(sample)])
        log.info("trained IVF-SQ8 (nlist %d) on %d vectors in %.1f s", nlist, len(sample), time.perf_counter() - began)
        if self._keeper is not None:
            self._keeper.save(self._params, ivf)
        return ivf

    def search(
        self, vector: np.ndarray, k: int, allowed_rowids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(L2 distances ascending, rowids) of the k nearest vectors, only among allowed_rowids if given."""
        _one_thread()
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1)
        selector = None if allowed_rowids is None else faiss.IDSelectorBatch(allowed_rowids)
        with self._lock:
            ivf = self._ivf
            if ivf is None:
                params = None if selector is None else faiss.SearchParameters(sel=selector)
                inner, rowids = self._index.search(query, k, params=params)
            else:
                wanted = min(ivf.ntotal, REFINE * k)
                if selector is None:
                    _, candidates = ivf.search(query, wanted)
                else:
                    assert allowed_rowids is not None
                    candidates = self._search_allowed(ivf, query, wanted, selector, len(allowed_rowids))
                exact = self._exact
        if ivf is None:
            found = rowids[0] >= 0
            return l2_from_inner_product(inner[0][found]), rowids[0][found]
        candidates = candidates[0][candidates[0] >= 0]
        scores = exact.inner(candidates, query[0])
        best = np.lexsort((candidates, -scores))[:k]  # nearest first, ties on the lower rowid
        return l2_from_inner_product(scores[best]), candidates[best]

    def _search_allowed(
        self, ivf: faiss.IndexIVFScalarQuantizer, query: np.ndarray, k: int, selector: faiss.IDSelector, allowed: int
    ) -> np.ndarray:
        """Candidates among the allowed: through every list (exact) unless they are many and the probed
        lists hold k."""
        if allowed > EXACT_ALLOWED_SHARE * ivf.ntotal:
            _, rowids = ivf.search(query, k, params=faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe))
            if rowids[0][-1] >= 0:
                return rowids
        return ivf.search(query, k, params=faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nlist))[1]
