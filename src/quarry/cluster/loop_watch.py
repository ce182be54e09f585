"""Says when a node's asyncio loop stops answering, or its heartbeats stop being sent, and where every
thread and task is then.

An index node's heartbeats, its following of the log and its controller all run on one loop
(quarry.cluster.loop). If something holds that loop (a long synchronous step on it, or the process
starved of the interpreter lock), the node goes silent without any call failing, and the cluster takes
it for gone after its delay with nothing in the node's log to say why. A watch thread asks the loop to
answer every CHECK_S; past STALL_S without an answer it logs a warning with the stack of every thread,
and another when the loop answers again, with how long it was held.

The loop may also answer while the heartbeat job itself no longer runs (a task that waits on something
that never comes, or is gone): `pulse` is the monotonic time of the job's last attempt, and past
`pulse_s` without one the watch logs a warning with every task on the loop and where it waits.

And the whole interpreter may stop (native code that holds the interpreter lock and never returns):
then no Python thread runs, this watch included. So each round re-arms faulthandler's watchdog, a C
thread that needs no lock: when the watch has not re-armed it for WATCHDOG_S, it writes every thread's
Python stack to stderr (the node's log) by itself.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType

CHECK_S = 0.5
STALL_S = 3.0
PULSE_S = 6.0  # no heartbeat attempt for this long (they are 1 s apart, each given up after 2.5 s)
STACK_FRAMES = 8
WATCHDOG_S = 10.0  # no Python thread ran this long: faulthandler dumps every thread's stack
STOP_WATCHDOG_S = 30.0  # a node's stop that takes longer than this: the same dump
TASK_FRAMES = 6
_log = logging.getLogger(__name__)


class LoopWatch:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        name: str,
        stall_s: float = STALL_S,
        pulse: Callable[[], float] | None = None,
        pulse_s: float = PULSE_S,
    ) -> None:
        self.loop = loop
        self.name = name
        self.stall_s = stall_s
        self.pulse = pulse
        self.pulse_s = pulse_s
        self._pulse_missing = False
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"{name}-loop-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching the loop; the watchdog stays armed for the rest of the node's stop (STOP_WATCHDOG_S:
        a stop that hangs leaves every thread's stack in the log) until `finish`."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.stall_s + CHECK_S)
        faulthandler.dump_traceback_later(STOP_WATCHDOG_S, exit=False)

    def finish(self) -> None:
        """The node has stopped: disarm the watchdog."""
        faulthandler.cancel_dump_traceback_later()

    def _watch(self) -> None:
        while not self._stopping.wait(CHECK_S):
            faulthandler.dump_traceback_later(WATCHDOG_S, exit=False)
            answered = threading.Event()
            asked = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop is closed: the node is stopping
                return
            if answered.wait(self.stall_s) or self._stopping.is_set():
                self._check_pulse()
                continue
            _log.warning(
                "%s: the event loop has not answered for %.1f s (heartbeats and log following wait on it); "
                "every thread:\n%s",
                self.name,
                self.stall_s,
                _stacks(),
            )
            while not answered.wait(CHECK_S):
                if self._stopping.is_set():
                    return
            _log.warning("%s: the event loop answers again, after %.1f s", self.name, time.monotonic() - asked)

    def _check_pulse(self) -> None:
        if self.pulse is None:
            return
        silent = time.monotonic() - self.pulse()
        if silent <= self.pulse_s:
            if self._pulse_missing:
                _log.warning("%s: heartbeats are sent again", self.name)
            self._pulse_missing = False
            return
        if self._pulse_missing:
            return
        self._pulse_missing = True
        _log.warning(
            "%s: no heartbeat attempted for %.1f s while the event loop answers; its tasks:\n%s",
            self.name,
            silent,
            _tasks(self.loop),
        )


def _tasks(loop: asyncio.AbstractEventLoop) -> str:
    """Every task of the loop and where it waits, read on the loop itself (one second at most)."""

    def describe() -> str:
        out = []
        for task in asyncio.all_tasks(loop):
            frames = task.get_stack(limit=TASK_FRAMES)
            where = " -> ".join(_frame(f) for f in frames)
            out.append(f"--- {task.get_name()}: {where or 'not started'}")
        return "\n".join(sorted(out))

    future = asyncio.run_coroutine_threadsafe(_call(describe), loop)
    try:
        return future.result(timeout=1.0)
    except Exception as error:  # the loop did not answer: the threads say why
        return f"(the loop did not list them: {error!r})\n{_stacks()}"


def _frame(frame: FrameType) -> str:
    return f"{frame.f_code.co_name} ({frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})"


async def _call(function: Callable[[], str]) -> str:
    return function()


def _stacks() -> str:
    frames = sys._current_frames()
    out = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        if frame is not None:
            stack = "".join(traceback.format_stack(frame)[-STACK_FRAMES:])
            out.append(f"--- {thread.name}\n{stack}")
    return "\n".join(out)
