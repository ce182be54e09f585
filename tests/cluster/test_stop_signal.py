"""A process waiting for SIGTERM stops on it wherever the kernel delivers it: the signal a node is sent
may land on any of its threads, and a main thread blocked without a timeout was never woken (a joined
index node once ran on for a minute after SIGTERM)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest

from quarry.core.stop_signal import POLL_S, StopSignal


@pytest.fixture
def usr1() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGUSR1)
    yield
    signal.signal(signal.SIGUSR1, previous)


def test_a_signal_delivered_to_another_thread_ends_the_main_threads_wait(usr1: None) -> None:
    stop = StopSignal(signal.SIGUSR1)

    def signal_this_thread() -> None:
        time.sleep(0.2)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)  # delivered here, not to the main thread
        time.sleep(2)

    threading.Thread(target=signal_this_thread, daemon=True).start()
    started = time.monotonic()
    assert stop.wait(timeout=5)
    assert time.monotonic() - started < 0.2 + 3 * POLL_S
    assert stop.received == signal.SIGUSR1


def test_a_wait_with_a_timeout_and_no_signal_says_so(usr1: None) -> None:
    stop = StopSignal(signal.SIGUSR1)
    started = time.monotonic()
    assert not stop.wait(timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 1
    assert not stop.is_set()
