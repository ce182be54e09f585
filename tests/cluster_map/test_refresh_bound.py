"""Reading the cluster map is bounded: a read that never answers (a KV listing waiting for a marker a
restarting log server never sends) fails with TimeoutError instead of holding the node forever."""

from __future__ import annotations

import asyncio
import time

import pytest

from quarry.cluster import cluster_map
from quarry.cluster.cluster_map import ClusterWatch


class NeverAnswers:
    async def get(self, key: str) -> object:
        await asyncio.Event().wait()

    async def keys(self) -> list[str]:
        await asyncio.Event().wait()
        return []


def test_a_refresh_that_never_answers_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_map, "REFRESH_TIMEOUT_S", 0.2)
    watch = ClusterWatch(nc=None)  # type: ignore[arg-type]
    watch._map_kv = watch._nodes_kv = NeverAnswers()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(asyncio.wait_for(watch.refresh(), 5))
    assert time.monotonic() - started < 2  # its own bound, not the test's 5 s
