"""Sessions are routed by their lineage root: a family shares a partition, families spread evenly."""

from __future__ import annotations

from collections import Counter

from quarry.core.routing import lineage_root, partition_for


def test_a_child_session_lands_on_its_roots_partition() -> None:
    root = "claude-code-session:d4fd5afb-e837-4595-a12a-6c44c0f09739"
    for partitions in (1, 2, 3, 7):
        assert partition_for(f"{root}/agent-ada37e8b5cf03a018", partitions) == partition_for(root, partitions)
        assert partition_for(f"{root}/sidechain-1f2e", partitions) == partition_for(root, partitions)
    assert lineage_root(f"{root}/agent-x") == root
    assert lineage_root(root) == root


def test_roots_spread_over_the_partitions() -> None:
    counts = Counter(partition_for(f"codex-session:{n:08x}", 3) for n in range(3000))
    assert set(counts) == {0, 1, 2}
    assert min(counts.values()) > 900
