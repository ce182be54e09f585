"""Says when a node's asyncio loop stops answering, and where every thread is then.

An index node's heartbeats, its following of the log and its controller all run on one loop
(quarry.cluster.loop). If something holds that loop (a long synchronous step on it, or the process
starved of the interpreter lock), the node goes silent without any call failing, and the cluster takes
it for gone after its delay with nothing in the node's log to say why. A watch thread asks the loop to
answer every CHECK_S; past STALL_S without an answer it logs a warning with the stack of every thread,
and another when the loop answers again, with how long it was held.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback

CHECK_S = 0.5
STALL_S = 3.0
STACK_FRAMES = 8
_log = logging.getLogger(__name__)


class LoopWatch:
    def __init__(self, loop: asyncio.AbstractEventLoop, name: str, stall_s: float = STALL_S) -> None:
        self.loop = loop
        self.name = name
        self.stall_s = stall_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"{name}-loop-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.stall_s + CHECK_S)

    def _watch(self) -> None:
        while not self._stopping.wait(CHECK_S):
            answered = threading.Event()
            asked = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop is closed: the node is stopping
                return
            if answered.wait(self.stall_s) or self._stopping.is_set():
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


def _stacks() -> str:
    frames = sys._current_frames()
    out = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        if frame is not None:
            stack = "".join(traceback.format_stack(frame)[-STACK_FRAMES:])
            out.append(f"--- {thread.name}\n{stack}")
    return "\n".join(out)
