"""A node's event loop held past the stall time is reported with every thread's stack (the holder's
among them), and again when it answers; a loop that answers is never reported; heartbeats that stop
while it answers are reported with every task."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from pathlib import Path

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
        watch.finish()
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
        watch.finish()
        loop.stop()
    assert not caplog.records


async def wait_for_an_answer_that_never_comes() -> None:
    await asyncio.Event().wait()


def test_heartbeats_that_stop_while_the_loop_answers_are_reported_with_where_each_task_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = LoopThread("beating")
    attempted = [time.monotonic()]
    watch = LoopWatch(loop.loop, "index-9", stall_s=0.3, pulse=lambda: attempted[0], pulse_s=0.8)
    stuck = loop.spawn(wait_for_an_answer_that_never_comes())
    watch.start()
    try:
        with caplog.at_level(logging.WARNING, logger="quarry.cluster.loop_watch"):
            time.sleep(2.0)
            attempted[0] = time.monotonic()
            time.sleep(1.0)
    finally:
        stuck.cancel()
        watch.stop()
        watch.finish()
        loop.stop()
    messages = [r.getMessage() for r in caplog.records]
    silent = [m for m in messages if "no heartbeat attempted" in m]
    assert len(silent) == 1, messages  # once per silence
    assert "wait_for_an_answer_that_never_comes" in silent[0]
    assert any("heartbeats are sent again" in m for m in messages)


WEDGED = """
import re, time
from quarry.cluster import loop_watch
from quarry.cluster.loop import LoopThread
loop_watch.WATCHDOG_S = 1.0
loop = LoopThread("wedged")
watch = loop_watch.LoopWatch(loop.loop, "index-9")
watch.start()
time.sleep(1.0)
re.match(r"(a|aa)+$", "a" * 36 + "b")  # backtracks for seconds in C, holding the interpreter lock
watch.stop()
watch.finish()
"""


def test_an_interpreter_held_by_native_code_still_dumps_every_thread(tmp_path: Path) -> None:
    """No Python thread runs, the watch included: faulthandler's C watchdog writes the stacks itself."""
    done = subprocess.run([sys.executable, "-c", WEDGED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Timeout (0:00:01)!" in done.stderr
    assert done.stderr.count("(most recent call first)") >= 2  # the wedged thread and the watch
