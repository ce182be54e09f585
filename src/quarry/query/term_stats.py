"""The archive's term statistics for a search (Elasticsearch's dfs_query_then_fetch, with a cache).

BM25 in a partition weighs a term by that partition's IDF. With many partitions, each holding a small
share of the archive, the same term gets a different weight in each, and a session's rank depends on
where its partition cut the archive: on SciFact, 16 partitions scored 0.012 nDCG@10 below 2
(bench/RESULTS.md). So before a ranked lexical search the query node asks every partition for the
statistics it would score with (TermStats: its documents, each scored term's document frequency),
sums them, and sends the sums with the search; every partition then scores with the archive's IDF
(quarry.index.lexical.fts.to_query). The sums are cached per search (plan, lane, admission) for
TTL_S: term statistics move slowly, and a repeated search costs no extra round trip. A partition that
does not answer is left out of the sums (the search still runs, on the others' statistics).

Where one node holds every partition (the embedded default), there is no round trip to save: that node
sums its partitions' statistics itself within the search (rank.py, `node_term_stats`), fresh every time.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from quarry.core.term_sums import summed_stats
from quarry.query.cluster_client import ClusterClient
from quarry.query.scatter import Deadline
from quarry.v1 import index_pb2

TTL_S = 30.0
MAX_ENTRIES = 4096


class GlobalTermStats:
    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster
        self._cache: OrderedDict[str, tuple[float, index_pb2.GlobalTermStats]] = OrderedDict()
        self._lock = threading.Lock()

    def for_search(
        self, request: index_pb2.PartitionSearchRequest, deadline: Deadline
    ) -> index_pb2.GlobalTermStats | None:
        """The archive's statistics for the search (`request` without partitions); None when no
        partition answered."""
        key = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and now - cached[0] < TTL_S:
                self._cache.move_to_end(key)
                return cached[1]

        def build(partitions: list[int]) -> index_pb2.PartitionSearchRequest:
            node_request = index_pb2.PartitionSearchRequest()
            node_request.CopyFrom(request)
            node_request.partitions.extend(index_pb2.PartitionAnchor(partition=p) for p in partitions)
            return node_request

        fanned = self.cluster.term_stats(build, deadline)
        if not fanned.results:
            return None
        summed = summed_stats(fanned.ordered())
        with self._lock:
            self._cache[key] = (now, summed)
            self._cache.move_to_end(key)
            while len(self._cache) > MAX_ENTRIES:
                self._cache.popitem(last=False)
        return summed
