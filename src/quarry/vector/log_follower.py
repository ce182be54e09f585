"""The vector node of a cluster on the log follows the log itself, not a copy of a partition.

One ephemeral pull consumer over every session subject (`quarry.*.s.*`), from the node's checkpoint:
the last stream sequence it queued, committed in the same transaction as the texts it pulled
(VectorStore.enqueue, keyed by the log's identity: a new log is followed from its start). A session
record's dialogue texts replace what the node held of the session; a tombstone replaces them with
nothing, so a deleted session loses its vectors. A session whose payload is held in the object store
is read from there and verified first (quarry.cluster.payloads.resolve), one at a time; a record whose
payload a newer version replaced is passed over, the newer record following. The loop pulls the log to
its end as the partition follower does, and `fill` pulls on the caller's thread for a backfill's window.

Backlog: the texts queued here plus the records of the log after the checkpoint (sessions, whose
texts are not known until they are read).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence

from nats.js import api

from quarry.cluster.log_records import UPSERT, decode
from quarry.cluster.loop import LoopThread, connect
from quarry.cluster.payloads import resolve
from quarry.cluster.setup import SESSIONS_FILTER, STREAM
from quarry.core.dialogue import dialogue_items
from quarry.v1 import index_pb2

log = logging.getLogger(__name__)

POLL_S = 0.5
FETCH_WAIT_S = 1.0
DEFAULT_MAX_SESSIONS = 32

Store = Callable[[Sequence[index_pb2.EmbedItem], Sequence[str], tuple[str, int]], object]


class LogFollower:
    def __init__(
        self,
        urls: list[str],
        cursor: Callable[[str], int],
        store: Store,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        self._urls = urls
        self._cursor = cursor
        self._store = store
        self._max_sessions = max_sessions
        self._loop = LoopThread("quarry-vector-nats")
        self._nc = self._loop.run(connect(urls, "quarry-vector"))
        self._key = ""
        self._subscription = None
        self._pending = 0
        self._error = ""
        self._pull_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quarry-follow-log", daemon=True)

    @property
    def last_error(self) -> str:
        return self._error

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with contextlib.suppress(Exception):
            self._loop.run(self._nc.close(), timeout=5)
        self._loop.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            if not self._follow():
                self._wake.wait(POLL_S)

    def fill(self, enough: Callable[[], bool]) -> None:
        """Pull on this thread until `enough()` or the log has nothing more now."""
        while not enough():
            if not self._follow():
                return

    def backlog(self, live: bool = True) -> int:
        """What the log holds past this node's position, as its last pull saw it (`live` alike)."""
        return max(0, self._pending)

    def _follow(self) -> bool:
        """One pull; True when it queued something (there may be more right away)."""
        try:
            with self._pull_lock:
                return self._loop.run(self._pull(), timeout=60)
        except Exception as error:
            message = f"following the log: {type(error).__name__}: {error}"
            if message != self._error:
                log.warning("%s; retrying every %.1f s", message, POLL_S)
            self._error = message
            self._subscription = None
            return False

    async def _pull(self) -> bool:
        js = self._nc.jetstream()
        if self._subscription is None:
            info = await js.stream_info(STREAM)
            self._key = f"log:{STREAM}:{info.created}"
            start = self._cursor(self._key) + 1
            self._subscription = await js.pull_subscribe(
                SESSIONS_FILTER,
                stream=STREAM,
                config=api.ConsumerConfig(
                    ack_policy=api.AckPolicy.NONE,
                    deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                    opt_start_seq=start,
                    inactive_threshold=60.0,
                    mem_storage=True,
                    num_replicas=1,
                ),
            )
        try:
            messages = await self._subscription.fetch(self._max_sessions, timeout=FETCH_WAIT_S)
        except TimeoutError:  # nats-py raises its own subclass, or asyncio's, when nothing comes
            info = await self._subscription.consumer_info()
            self._pending = info.num_pending
            self._error = ""
            return False
        if not messages:
            return False
        items: list[index_pb2.EmbedItem] = []
        replaced: list[str] = []
        for message in messages:
            record = decode(message.subject, message.metadata.sequence.stream, message.headers, message.data)
            record = await resolve(js, record)
            if record.superseded or record.refused:
                continue  # a newer version of the session follows in the log, or a record no writer may put here
            replaced.append(record.session_id)
            if record.op == UPSERT:
                items.extend(dialogue_items(record.session()))
        self._store(items, replaced, (self._key, messages[-1].metadata.sequence.stream))
        self._pending = messages[-1].metadata.num_pending
        self._error = ""
        return True
