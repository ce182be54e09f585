"""A node's memory does not grow with the partitions it holds: its partitions share one SQLite page
cache budget (sixteen full caches were a gigabyte of an index node at 1M messages) as they share one
Tantivy indexing budget."""

from __future__ import annotations

from pathlib import Path

from quarry.index.lexical.store import CACHE_BYTES, MIN_CACHE_BYTES
from quarry.index.partition_set import PartitionSet
from tests.index.sessions import Msg, session


def cache_limit_bytes(partitions: PartitionSet, partition: int) -> int:
    """The page cache limit of the partition's store connections (the writer's and a reader's), checked
    to be one value."""
    store = partitions.get(partition).lexical._store
    limits = {conn.execute("PRAGMA cache_size").fetchone()[0] for conn in (store._writer, store.reader())}
    assert len(limits) == 1
    (kib,) = limits
    return -kib * 1024


def test_sixteen_partitions_share_one_cache_budget(tmp_path: Path) -> None:
    partitions = PartitionSet(tmp_path, expected_partitions=16)
    try:
        for p in range(16):
            partitions.open(p).lexical.upsert([session(f"claude-code:s{p}", [Msg("user", "hello there")])])
        assert sum(cache_limit_bytes(partitions, p) for p in range(16)) <= CACHE_BYTES
    finally:
        partitions.close_all()


def test_a_node_of_one_partition_keeps_the_whole_budget_and_a_crowded_node_the_floor(tmp_path: Path) -> None:
    alone = PartitionSet(tmp_path / "alone", expected_partitions=1)
    crowded = PartitionSet(tmp_path / "crowded", expected_partitions=1024)
    try:
        alone.open(0)
        crowded.open(0)
        assert cache_limit_bytes(alone, 0) == CACHE_BYTES
        assert cache_limit_bytes(crowded, 0) == MIN_CACHE_BYTES
    finally:
        alone.close_all()
        crowded.close_all()
