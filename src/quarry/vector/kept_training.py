"""The serving index's IVF-SQ8 training, kept in the vector store so a start past the switch point
does not run k-means again (55-87 s at 500k vectors, bench/RESULTS.md).

What is kept is the trained, empty index: the coarse centroids and the 8-bit quantizer's ranges,
~1.5 MiB at nlist 1024 x 384 dimensions. Its vectors are not: every start adds the stored vectors to
it, so appends and removals since it was trained need no bookkeeping, and the store stays the only
copy of the data. It lives in the store (one row of `ann_training`) rather than in a file beside it,
so it is written in one transaction and goes with that store: a new store has none.

A kept training is used only for the same `IvfParams`, with bytes matching their digest, and when it
is what AnnIndex would have trained (type, dimension, metric, quantizer, lists); otherwise the log
says why and the index trains again as before, replacing it.
"""

from __future__ import annotations

import hashlib
import logging

import faiss
import numpy as np
import pysqlite3.dbapi2 as sqlite3

from quarry.vector.ann import IvfParams
from quarry.vector.store import AnnTraining, VectorStore

log = logging.getLogger(__name__)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class StoredTraining:
    """The TrainingKeeper (ann.py) of one vector store."""

    def __init__(self, store: VectorStore) -> None:
        self._store = store

    def load(self, params: IvfParams) -> faiss.IndexIVFScalarQuantizer | None:
        try:
            kept = self._store.ann_training()
        except sqlite3.Error as error:  # a row written by hand, say, with text for bytes
            log.warning("the IVF-SQ8 training kept in the store is unreadable (%s): training again", error)
            return None
        if kept is None:
            log.info("no IVF-SQ8 training kept in the store: training")
            return None
        problem = _mismatch(kept, params)
        if problem is None:
            try:
                ivf = faiss.deserialize_index(np.frombuffer(kept.data, dtype=np.uint8))  # of its own type
            except RuntimeError as error:  # e.g. written by a FAISS this one cannot read
                problem = f"FAISS cannot read it: {error}"
            else:
                problem = _unlike(ivf, params)
                if problem is None:
                    return ivf
        log.warning("the IVF-SQ8 training kept in the store is unusable (%s): training again", problem)
        return None

    def save(self, params: IvfParams, ivf: faiss.IndexIVFScalarQuantizer) -> None:
        """Keep `ivf` (trained, empty); a failure is logged: the index serves either way, and the next
        start trains again."""
        data = faiss.serialize_index(ivf).tobytes()
        try:
            self._store.save_ann_training(AnnTraining(params.key(), digest(data), data))
        except sqlite3.Error:
            log.exception("could not keep the IVF-SQ8 training in the store")


def _mismatch(kept: AnnTraining, params: IvfParams) -> str | None:
    """Why the kept row cannot be deserialized for `params`, checked before FAISS reads a byte."""
    if kept.params != params.key():
        return f"trained for {kept.params}, the node now uses {params.key()}"
    if digest(kept.data) != kept.digest:
        return "its bytes do not match their digest"
    return None


def _unlike(ivf: faiss.Index, params: IvfParams) -> str | None:
    """How a deserialized index differs from what AnnIndex trains for `params`."""
    if not isinstance(ivf, faiss.IndexIVFScalarQuantizer):
        return f"a {type(ivf).__name__}, not an IndexIVFScalarQuantizer"
    checks = {
        "dimension": (ivf.d, params.dimension),
        "metric": (ivf.metric_type, faiss.METRIC_INNER_PRODUCT),
        "quantizer": (ivf.sq.qtype, faiss.ScalarQuantizer.QT_8bit),
        "trained": (ivf.is_trained, True),
        "vectors": (ivf.ntotal, 0),
    }
    for name, (found, wanted) in checks.items():
        if found != wanted:
            return f"{name} {found}, expected {wanted}"
    if not 1 <= ivf.nlist <= params.nlist:
        return f"{ivf.nlist} lists, expected at most {params.nlist}"
    return None
