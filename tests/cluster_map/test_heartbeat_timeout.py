"""A heartbeat put that never answers is given up, with where it waited logged, and the next one is
sent: one stuck call to NATS does not silence an index node until the map takes it for gone."""

from __future__ import annotations

import asyncio
import logging

import pytest

from quarry.cluster.cluster_map import Heartbeat
from quarry.index.replica import ReplicaNode


class _StuckOnce:
    """A cluster watch whose first heartbeat put never answers (as a NATS flush waiting forever)."""

    def __init__(self) -> None:
        self.puts: list[Heartbeat] = []

    async def beat(self, heartbeat: Heartbeat) -> None:
        self.puts.append(heartbeat)
        if len(self.puts) == 1:
            await asyncio.Event().wait()


def test_a_stuck_heartbeat_is_given_up_and_the_next_one_sent(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    node = ReplicaNode("index-7", tmp_path, urls=[])
    watch = _StuckOnce()
    node.watch = watch  # type: ignore[assignment]
    try:
        with caplog.at_level(logging.WARNING, logger="quarry.index.replica"):
            with pytest.raises(TimeoutError):
                node.loop.run(node._beat_within(0.2), timeout=5)
            node.loop.run(node._beat_within(0.2), timeout=5)
    finally:
        node.loop.stop()
    assert len(watch.puts) == 2
    warning = next(r.getMessage() for r in caplog.records if "did not answer" in r.getMessage())
    assert "index-7" in warning and "beat" in warning  # the stack it waited in names the put
