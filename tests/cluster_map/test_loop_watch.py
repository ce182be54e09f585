"""A node's event loop held past the stall time is reported with every thread's stack (the holder's
among them), and again when it answers; a loop that answers is never reported."""

from __future__ import annotations

import logging
import time

import pytest

from quarry.cluster.loop import LoopThread
from quarry.cluster.loop_watch import LoopWatch


def hold_the_loop_for_a_while() -> None:
    time.sleep(1.2)


def test_a_held_loop_is_reported_with_the_stack_that_holds_it(caplog: pytest.LogCaptureFixture) -> None:
    loop = LoopThread("held")
    watch = LoopWatch(loop.loop, "index-9", stall_s=0.3)
    watch.start()
    try:
        with caplog.at_level(logging.WARNING, logger="quarry.cluster.loop_watch"):
            loop.loop.call_soon_threadsafe(hold_the_loop_for_a_while)
            time.sleep(2.5)
    finally:
        watch.stop()
        loop.stop()
    messages = [r.getMessage() for r in caplog.records]
    stalled = next(m for m in messages if "has not answered" in m)
    assert "index-9" in stalled and "hold_the_loop_for_a_while" in stalled
    assert any("answers again" in m for m in messages)


def test_a_loop_that_answers_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    loop = LoopThread("free")
    watch = LoopWatch(loop.loop, "index-9", stall_s=0.3)
    watch.start()
    try:
        with caplog.at_level(logging.WARNING, logger="quarry.cluster.loop_watch"):
            time.sleep(1.0)
    finally:
        watch.stop()
        loop.stop()
    assert not caplog.records
