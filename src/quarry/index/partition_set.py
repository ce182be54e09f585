"""The partition replicas one index node holds, and running a read over several of them at once.

Layout: `<node data>/partitions/p<nn>/` per partition (store.sqlite3, tantivy/, assertions.sqlite3).
A node of the embedded default holds the partitions it was started with; a node of a cluster on the
log opens and removes them as the cluster map assigns them (quarry.index.replica).

Tantivy memory: every open partition has its own index writer. The node has one indexing budget
(`writer_budget_bytes`, 128 MB by default) that its partitions share evenly, each at least Tantivy's
floor of 15 MB; a writer holds that memory only while a batch is being indexed, and an idle one about
2.5 MB, so sixteen partitions on a node cost one budget while ingesting, not sixteen heaps. SQLite's
page cache likewise: one budget (64 MB, what a node of one partition had), split evenly, each at least
2 MB. A store's cache fills to its limit as the store grows past it and stays full, so sixteen full
64 MB caches were 1 GB of a node's memory at 1M messages (bench/RESULTS.md).

Reads over several partitions (`each`) run on a node-wide thread pool (Tantivy and SQLite release the
GIL), and a partition that cannot answer becomes a PartitionFailure beside the others' results, so
the query node retries just that partition on another replica. A session search over them (`search`)
keeps the node's best `limit` sessions and explains those only.
"""

from __future__ import annotations

import heapq
import logging
import math
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from quarry.core.errors import QuarryError
from quarry.core.fanout import submit_in_context
from quarry.core.term_sums import summed_stats
from quarry.index.lexical import visibility
from quarry.index.lexical.assertions import AssertionStore
from quarry.index.lexical.leaf import DEFAULT_SESSIONS
from quarry.index.lexical.partition import WRITER_HEAP_BYTES, LexicalPartition
from quarry.index.lexical.search_text import CompiledSearch, compile_search
from quarry.index.lexical.store import CACHE_BYTES
from quarry.index.lexical.unit_tables import ASSERTIONS_FILE
from quarry.v1 import errors_pb2, index_pb2

R = TypeVar("R")
PARTITIONS_DIR = "partitions"
LEGACY_SHARD_PREFIX = "shard-"  # the layout before partitions: <data>/shard-<n>/

_log = logging.getLogger(__name__)


def partition_dir(data_dir: Path, partition: int) -> Path:
    return Path(data_dir) / PARTITIONS_DIR / f"p{partition:02d}"


@dataclass
class PartitionReplica:
    """One partition held here: its archive (Tantivy + SQLite) and its assertions."""

    partition: int
    lexical: LexicalPartition
    assertions: AssertionStore

    def close(self) -> None:
        self.lexical.close()
        self.assertions.close()


class PartitionSet:
    def __init__(
        self,
        data_dir: Path,
        writer_budget_bytes: int = WRITER_HEAP_BYTES,
        expected_partitions: int = 1,
        durable: bool = True,
        cache_budget_bytes: int = CACHE_BYTES,
    ) -> None:
        """`expected_partitions`: how many partitions this node expects to hold, to split the budgets;
        `durable` False: replicas of the log (their stores need not fsync, store.py)."""
        self.data_dir = Path(data_dir)
        self._durable = durable
        self._writer_heap = writer_budget_bytes // max(1, expected_partitions)
        self._cache_bytes = cache_budget_bytes // max(1, expected_partitions)
        self._held: dict[int, PartitionReplica] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="partitions")

    def on_disk(self) -> list[int]:
        """Partitions whose directories exist under this node's data (from an earlier run)."""
        root = self.data_dir / PARTITIONS_DIR
        if not root.exists():
            return []
        return sorted(int(p.name[1:]) for p in root.iterdir() if p.is_dir() and p.name[1:].isdigit())

    def open(self, partition: int) -> PartitionReplica:
        """The partition's replica, opened (created when new) on first use."""
        with self._lock:
            held = self._held.get(partition)
            if held is not None:
                return held
            directory = partition_dir(self.data_dir, partition)
            self._adopt_legacy_partition(partition, directory)
            lexical = LexicalPartition(directory, partition, self._writer_heap, self._durable, self._cache_bytes)
            replica = PartitionReplica(partition, lexical, AssertionStore(directory / ASSERTIONS_FILE))
            self._held[partition] = replica
            return replica

    def _adopt_legacy_partition(self, partition: int, directory: Path) -> None:
        """A data directory written before partitions kept partition n under `partition-<n>/`: move it."""
        legacy = self.data_dir / f"{LEGACY_SHARD_PREFIX}{partition}"
        if legacy.is_dir() and not directory.exists():
            directory.parent.mkdir(parents=True, exist_ok=True)
            legacy.rename(directory)
            _log.info("moved %s to %s", legacy, directory)

    def get(self, partition: int) -> PartitionReplica:
        """The open replica of the partition; NOT_HOSTED when this node holds none."""
        held = self._held.get(partition)
        if held is None:
            raise QuarryError(errors_pb2.NOT_HOSTED, f"partition {partition} is not held by this node")
        return held

    def held(self) -> list[int]:
        return sorted(self._held)

    def close(self, partition: int) -> None:
        with self._lock:
            held = self._held.pop(partition, None)
        if held is not None:
            held.close()

    def remove(self, partition: int) -> None:
        """Close the partition and delete its files (its replica moved elsewhere)."""
        self.close(partition)
        shutil.rmtree(partition_dir(self.data_dir, partition), ignore_errors=True)

    def close_all(self) -> None:
        for partition in self.held():
            self.close(partition)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def each(
        self, partitions: Sequence[int], read: Callable[[PartitionReplica], R], concurrent: bool = True
    ) -> tuple[list[R], list[errors_pb2.PartitionFailure]]:
        """`read` on each partition's replica: the results of those that answered, in the order asked,
        and a failure for each that could not (not held here, closed, or erring). `concurrent` runs them
        on the node's pool: worth it for reads that spend their time in SQLite or Tantivy (which release
        the GIL), not for a search's sub-millisecond steps, which the pool's hand-offs and the GIL's
        contention would make slower (measured: 8 partitions' searches 1.5-2x faster in turn)."""
        if concurrent:
            futures = [submit_in_context(self._pool, self._read, p, read) for p in partitions[1:]]
            outcomes = [self._read(partitions[0], read), *(f.result() for f in futures)] if partitions else []
        else:
            outcomes = [self._read(p, read) for p in partitions]
        results: list[R] = []
        failures: list[errors_pb2.PartitionFailure] = []
        for partition, outcome in zip(partitions, outcomes, strict=True):
            if isinstance(outcome, QuarryError):
                failures.append(errors_pb2.PartitionFailure(partition=partition, error=outcome.to_detail()))
            else:
                results.append(outcome)
        return results, failures

    def search(self, request: index_pb2.PartitionSearchRequest) -> index_pb2.NodeSearchResponse:
        """The search on each partition it names, cut to the node's best `request.limit` sessions.

        Each partition ranks its sessions; the node keeps the best `limit` over all of them and only
        those are explained (message, matched terms, snippet), each in its partition's response: the
        explaining is most of a search's cost, and the query node uses no more than `limit` hits of one
        node. The cut is made on scores first, so a partition reads the ids (the tie-break) of only its
        contenders that score at least the node's `limit`-th best. A partition's hits still come in its
        own order, so the cursor anchors stay per partition. The text is compiled once for all of them.
        With `node_term_stats` (this node holds the whole archive) the partitions score with the sum of
        their term statistics."""
        started = time.perf_counter()
        anchors = {a.partition: a for a in request.partitions}
        compiled = compile_search(request)
        if request.explain:
            return self._explain(request, list(anchors), compiled, started)
        if request.node_term_stats and not request.HasField("global_stats"):
            stats, _ = self.each(list(anchors), lambda r: r.lexical.term_stats(request, compiled), concurrent=False)
            request = _scoring_with(request, summed_stats(stats))
        prepared, failures = self.each(
            list(anchors),
            lambda r: (
                r.partition,
                time.perf_counter(),
                r.lexical.prepare_search(request, anchors[r.partition], compiled),
            ),
            concurrent=False,
        )
        by_partition = {partition: (began, search) for partition, began, search in prepared}
        limit = request.limit if request.limit > 0 else DEFAULT_SESSIONS
        scores = heapq.nlargest(limit, (score for _, search in by_partition.values() for score in search.scores))
        at_least = scores[-1] if len(scores) == limit else -math.inf  # ties on it are cut on ids below
        keys = ((k, p) for p, (_, search) in by_partition.items() for k in search.keys(at_least))
        kept = Counter(p for _, p in heapq.nsmallest(limit, keys))

        def finish(replica: PartitionReplica) -> index_pb2.PartitionSearchResponse:
            began, search = by_partition[replica.partition]
            response = search.finish(kept[replica.partition])
            response.elapsed_ms = (time.perf_counter() - began) * 1000.0
            return response

        results, late = self.each(sorted(by_partition), finish, concurrent=False)
        return index_pb2.NodeSearchResponse(
            partitions=results, failures=[*failures, *late], elapsed_ms=(time.perf_counter() - started) * 1000.0
        )

    def _explain(
        self, request: index_pb2.PartitionSearchRequest, partitions: list[int], compiled: CompiledSearch, started: float
    ) -> index_pb2.NodeSearchResponse:
        """The rank-only hits `request.explain` names, explained in their partitions (no search); a
        partition it names none of answers with none."""
        named = {e.partition: e.hits for e in request.explain}
        visible = visibility.current()
        results, failures = self.each(
            partitions, lambda r: r.lexical.explain(request, named.get(r.partition, ()), compiled, visible), False
        )
        return index_pb2.NodeSearchResponse(
            partitions=results, failures=failures, elapsed_ms=(time.perf_counter() - started) * 1000.0
        )

    def _read(self, partition: int, read: Callable[[PartitionReplica], R]) -> R | QuarryError:
        try:
            return read(self.get(partition))
        except QuarryError as error:
            if error.code in (errors_pb2.NOT_HOSTED, errors_pb2.NODE_UNAVAILABLE, errors_pb2.INTERNAL):
                return error
            raise  # a bad request fails the same on every replica: the caller gets it as is
        except Exception as error:
            _log.exception("partition %d failed a read", partition)
            return QuarryError(errors_pb2.INTERNAL, f"partition {partition}: {type(error).__name__}: {error}")


def _scoring_with(
    request: index_pb2.PartitionSearchRequest, stats: index_pb2.GlobalTermStats
) -> index_pb2.PartitionSearchRequest:
    """A copy of the search scoring with `stats` (the caller's request is left as it was sent)."""
    scoring = index_pb2.PartitionSearchRequest()
    scoring.CopyFrom(request)
    scoring.global_stats.CopyFrom(stats)
    return scoring
