"""An asyncio event loop on a thread of its own, for the NATS client (nats-py is asyncio) inside nodes
whose gRPC servers and stores are threaded: blocking code hands coroutines to the loop and waits.

One NATS connection per process lives on this loop (`connect`): it reconnects by itself to any server
of the list, forever, and its first connection is retried until a server answers, so a node may
start before the log does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import nats
from nats.aio.client import Client

T = TypeVar("T")
CONNECT_RETRY_S = 0.5
_log = logging.getLogger(__name__)


class LoopThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run the coroutine on the loop and wait for its result (its exception is raised here)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def spawn(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Start the coroutine on the loop without waiting."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def stop(self) -> None:
        """Cancel what still runs on the loop (waiting for it to unwind), then stop the loop."""
        if not self.loop.is_running():
            return

        async def cancel_the_rest() -> None:
            current = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(cancel_the_rest(), timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


async def connect(urls: Sequence[str], name: str) -> Client:
    """A connection to the cluster's NATS servers that reconnects forever; the first attempt is
    retried until one of them answers."""
    attempt = 0
    while True:
        try:
            return await nats.connect(
                servers=list(urls),
                name=name,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=CONNECT_RETRY_S,
                connect_timeout=2,
                ping_interval=5,
                max_outstanding_pings=2,
                error_cb=_quiet,
            )
        except Exception as error:
            attempt += 1
            if attempt in (1, 10) or attempt % 60 == 0:
                _log.warning("%s: NATS at %s does not answer yet (%s); retrying", name, ", ".join(urls), error)
            await asyncio.sleep(CONNECT_RETRY_S)


async def _quiet(error: Exception) -> None:
    """Connection errors while reconnecting are expected (a server restarting): logged, not raised."""
    _log.info("NATS connection: %s", error)
