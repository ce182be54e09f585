"""An asyncio event loop on a thread of its own, for the NATS client (nats-py is asyncio) inside nodes
whose gRPC servers and stores are threaded: blocking code hands coroutines to the loop and waits.

One NATS connection per process lives on this loop (`connect`): it reconnects by itself to any server
of the list, forever, and its first connection is retried until a server answers, so a node may
start before the log does. It connects as the process's NATS user, over TLS when it has a CA
(quarry.cluster.nats_access); servers that refuse that user fail the connection at once, as a
permission the user lacks is logged as an error: both are a deployment to fix, not a moment to wait out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

import nats
from nats.aio.client import Client
from nats.errors import AuthorizationError

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

if TYPE_CHECKING:
    from quarry.cluster.nats_access import NatsAccess

T = TypeVar("T")
CONNECT_RETRY_S = 0.5
REFUSED_FOR_S = 5.0
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


async def connect(urls: Sequence[str], name: str, access: NatsAccess | None = None) -> Client:
    """A connection to the cluster's NATS servers that reconnects forever; the first attempt is
    retried until one of them answers. `access`: whom to connect as (default: this process's,
    `nats_access.configure`); UNAUTHENTICATED once the servers have refused that user for REFUSED_FOR_S
    (a while, not at once: servers reloading their authorization one by one may refuse it briefly)."""
    from quarry.cluster.nats_access import configured  # here: the access modules import setup, which imports this

    chosen = access if access is not None else configured()
    options = chosen.connect_options()
    refused = {"first": 0.0, "last": 0.0}  # when the servers first and last refused the user

    async def on_error(error: Exception) -> None:
        if refused_user(error):
            now = time.monotonic()
            refused["first"] = refused["first"] or now
            refused["last"] = now
        await _log_error(error)

    attempt = 0
    while True:
        connecting = asyncio.ensure_future(
            nats.connect(
                servers=list(urls),
                name=name,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=CONNECT_RETRY_S,
                connect_timeout=2,
                ping_interval=5,
                max_outstanding_pings=2,
                error_cb=on_error,
                **options,
            )
        )
        while not connecting.done() and not (refused["first"] and refused["last"] - refused["first"] >= REFUSED_FOR_S):
            await asyncio.wait({connecting}, timeout=CONNECT_RETRY_S)
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(BaseException):
                await connecting
            who = f"user {chosen.user!r} of {chosen.credentials}" if chosen.credentials else "a client without a user"
            raise QuarryError(
                errors_pb2.UNAUTHENTICATED,
                f"{name}: NATS at {', '.join(urls)} refused {who} for {REFUSED_FOR_S:.0f} s (authorization "
                "violation): give the node its role's credentials file, the one the servers' authorization "
                "was made from (--nats-credentials)",
                parameter="--nats-credentials",
            )
        try:
            return connecting.result()
        except Exception as error:  # nats-py gave up on its own (it does not, reconnecting forever): again
            attempt += 1
            if attempt in (1, 10) or attempt % 60 == 0:
                _log.warning("%s: NATS at %s does not answer yet (%s); retrying", name, ", ".join(urls), error)
            await asyncio.sleep(CONNECT_RETRY_S)


def refused_user(error: BaseException) -> bool:
    """Whether a connection failed because the server refused its user (nats-py raises a bare Error
    carrying the server's `-ERR 'Authorization Violation'` on a first connection)."""
    return isinstance(error, AuthorizationError) or "authorization violation" in str(error).lower()


async def _log_error(error: Exception) -> None:
    """Connection errors while reconnecting are expected (a server restarting): logged, not raised. A
    permissions violation is not: the server refused a subject this role's user may not use."""
    if "permissions violation" in str(error).lower():
        _log.error("NATS refused a subject to this node's user: %s", error)
        return
    if refused_user(error):
        _log.error("NATS refused this node's user: %s", error)
        return
    _log.info("NATS connection: %s", error)
