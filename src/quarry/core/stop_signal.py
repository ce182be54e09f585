"""A stop asked for by a signal (SIGTERM, SIGINT), waited for by the process's main thread.

The obvious `signal.signal(SIGTERM, lambda *_: event.set())` then `event.wait()` hangs now and then,
seen as a node that never exits after SIGTERM, for two reasons:

- CPython runs a Python signal handler in the main thread only. The kernel may deliver a signal sent to
  the process to any of its threads (gRPC's, Tantivy's and FAISS's native threads among them); then a
  main thread blocked in a lock acquire without a timeout is never woken to run the handler.
- A handler that sets a `threading.Event` takes the Event's lock; if the signal lands while the main
  thread holds that lock (inside `Event.wait`), the handler waits for a lock its own thread holds.

So the handler only records the signal, and waiting is sleeping in short slices: a signal delivered to
another thread is handled within one slice.
"""

from __future__ import annotations

import signal
import time
from typing import Protocol

POLL_S = 0.2


class Stop(Protocol):
    """What a loop that runs until told to stop needs (a `threading.Event` is one, a `StopSignal` another)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class StopSignal:
    """Set once one of `signums` arrives; installs their handlers (so: made on the main thread)."""

    def __init__(self, *signums: signal.Signals) -> None:
        self.received: int | None = None
        for signum in signums:
            signal.signal(signum, self._record)

    def _record(self, signum: int, _frame: object) -> None:
        self.received = signum

    def is_set(self) -> bool:
        return self.received is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Whether a stop was asked for, waiting up to `timeout` seconds (None: until it is)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.received is None:
            left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if left <= 0:
                return False
            time.sleep(left)
        return True
