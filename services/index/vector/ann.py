"""The serving index, keyed by store rowid: exact inner product over unit vectors while the node is
small, an inverted-file index (FAISS IVF-Flat) once it holds more than `approximate_above` vectors.

Why IVF and these numbers: `bench/ann.py`, recorded in bench/RESULTS.md ("Approximate vector index
(issue 13)"): 500k vectors grown from real MiniLM embeddings, real held-out queries, one thread.
- A flat scan costs ~0.075 ms per 1,000 vectors per query on a quiet machine (~15 ms at 200k,
  ~37 ms at 500k): past 200k it is no longer the small part of a search.
- IVF-Flat, nlist 1024: recall@10 0.925 / 0.971 / 0.982 / 0.990 at nprobe 32 / 64 / 96 / 128.
  Trained at the switch point instead, nprobe 96 / 128 / 160 gave 0.971 / 0.980 / 0.992: k-means
  varies from one training to the next, hence 160. A query scans ~nprobe/nlist of the vectors:
  160 is ~6x faster than the flat scan (~6 ms at 500k on a quiet machine).
- HNSW (M 32, efConstruction 40) reached only 0.47-0.81 at efSearch 64-512: near-duplicate messages
  (retried commands, repeated errors) form dense clouds its greedy walk reaches but does not
  exhaust, while an inverted list holds the whole cloud. It also cannot remove a vector (every
  edited message would leave a tombstone to filter and rebuild away), and it built 500k in 157 s
  against IVF's 87 s, a cost every start pays.

A search restricted to a small allow-list stays exact: IVF probes every list with the allow-list as
a selector, so only the allowed vectors are compared, the work the flat index does for it. An
allow-list of more than a tenth of the vectors is searched like an unrestricted query (the probed
lists, filtered), and exactly again if those hold fewer than k of them.
"""

from __future__ import annotations

import threading

import faiss
import numpy as np

# The switch point: a flat scan of 200k vectors takes ~15 ms per query on a quiet machine, about
# what the rest of a hybrid search costs; below it exact search is cheap enough and needs no training.
DEFAULT_APPROXIMATE_ABOVE = 200_000
# Inverted lists, and lists probed per query (recall@10 0.99 at 500k, bench/ann.py); the lists grow
# with the index, so a query costs ~nprobe/nlist of a flat scan at any size.
NLIST = 1024
NPROBE = 160
# k-means trains on at most this many vectors per list (FAISS warns below 39), sampled with a fixed seed.
TRAIN_PER_LIST = 64
# An allow-list holding more than this share of the vectors is searched through the probed lists.
EXACT_ALLOWED_SHARE = 0.1


def _one_thread() -> None:
    """One OpenMP thread for FAISS on the calling thread: two on a shared 2-core box are slower than
    one (14.7 vs 7.5 ms per flat query). The setting is per thread (an OpenMP ICV), so each thread
    that reaches FAISS (the gRPC handlers, the embedding worker) sets it, not only the constructor's."""
    faiss.omp_set_num_threads(1)


def l2_from_inner_product(inner: np.ndarray) -> np.ndarray:
    """L2 distance between unit vectors: |a - b| = sqrt(2 - 2·a·b)."""
    return np.sqrt(np.maximum(0.0, 2.0 - 2.0 * inner.astype(np.float64)))


class AnnIndex:
    """IndexIDMap2 over IndexFlatIP, then IndexIVFFlat (inner product) past `approximate_above`.

    The switch happens in `add` (also while start() rebuilds from the store) and is one-way: removals
    that bring the count back down keep the trained index. `_lock` keeps searches and changes to the
    index apart; `_write_lock` orders changes, and is the only lock held while IVF trains, so
    searches go on over the flat index meanwhile.
    """

    def __init__(
        self,
        dimension: int,
        approximate_above: int = DEFAULT_APPROXIMATE_ABOVE,
        nlist: int = NLIST,
        nprobe: int = NPROBE,
    ) -> None:
        self.dimension = dimension
        self.approximate_above = approximate_above
        self._nlist = nlist
        self._nprobe = nprobe
        self._index: faiss.Index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self._ivf: faiss.IndexIVFFlat | None = None
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
        with self._write_lock:
            with self._lock:
                self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), rowids)
            if self._ivf is None and self.ntotal > self.approximate_above:
                ivf = self._train_from_flat()
                with self._lock:
                    self._index = self._ivf = ivf

    def remove(self, rowids: list[int]) -> None:
        if rowids:
            _one_thread()
            with self._write_lock, self._lock:
                self._index.remove_ids(np.array(rowids, dtype=np.int64))

    def _train_from_flat(self) -> faiss.IndexIVFFlat:
        """An IVF index holding the flat index's vectors; reads the flat index in place (no copy)."""
        flat = faiss.downcast_index(self._index.index)
        count = self.ntotal
        vectors = faiss.rev_swig_ptr(flat.get_xb(), count * self.dimension).reshape(count, self.dimension)
        rowids = faiss.vector_to_array(self._index.id_map)
        nlist = max(1, min(self._nlist, count // TRAIN_PER_LIST))
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(self.dimension), self.dimension, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).choice(count, min(count, TRAIN_PER_LIST * nlist), replace=False)
        ivf.train(vectors[np.sort(sample)])
        ivf.add_with_ids(vectors, rowids)
        ivf.nprobe = min(self._nprobe, nlist)
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
            elif selector is None:
                inner, rowids = ivf.search(query, k)
            else:
                assert allowed_rowids is not None
                inner, rowids = self._search_allowed(ivf, query, k, selector, len(allowed_rowids))
        found = rowids[0] >= 0
        return l2_from_inner_product(inner[0][found]), rowids[0][found]

    def _search_allowed(
        self, ivf: faiss.IndexIVFFlat, query: np.ndarray, k: int, selector: faiss.IDSelector, allowed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact among the allowed (every list probed) unless they are many and the probed lists hold k."""
        if allowed > EXACT_ALLOWED_SHARE * ivf.ntotal:
            inner, rowids = ivf.search(query, k, params=faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe))
            if rowids[0][-1] >= 0:
                return inner, rowids
        return ivf.search(query, k, params=faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nlist))
