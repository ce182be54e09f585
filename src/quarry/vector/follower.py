"""The vector node follows the lexical partitions: it pulls what to embed from each partition's change feed
(IndexService.EmbedFeed) into its local queue, where the embed worker takes them the most recently
active sessions first.

Every partition store numbers the sessions it writes with an increasing change_seq and has a random
store_uuid. The node keeps one cursor per store_uuid (the last change_seq taken), committed in the
same transaction as the texts it pulled (VectorStore.enqueue), so a restart resumes where it stopped,
and a wiped or rebuilt partition (a new uuid) is followed from 0; texts already embedded unchanged are
recognized by their hash and not embedded again.

The loop pulls every feed to its end (the queue is on disk, and only a whole queue can be taken in
the newest-first order): it asks the partitions in turn for the sessions after their cursor; a session's
items replace what the node held for that session, so messages that are gone lose their vectors.
With nothing new it polls every POLL_S. A partition that does not answer is logged, named in
`last_error`, skipped, and asked again on the next round. `fill` pulls on the caller's thread until
the queue holds what it needs (a preflight's or a backfill's window); one pull runs at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

from quarry.core import telemetry
from quarry.v1 import index_pb2, index_pb2_grpc

log = logging.getLogger(__name__)

POLL_S = 0.5
FEED_TIMEOUT_S = 30.0
BACKLOG_TIMEOUT_S = 1.0
DEFAULT_MAX_SESSIONS = 32

# The sink: store (items, ids of the sessions they replace, (store_uuid, change_seq)) in one transaction.
Store = Callable[[Sequence[index_pb2.EmbedItem], Sequence[str], tuple[str, int]], object]


@dataclass
class _Followed:
    address: str
    stub: index_pb2_grpc.IndexServiceStub
    partition: int
    store_uuid: str = ""  # learned from the partition's answers; "" until it first answers
    backlog: int = 0  # texts after the node's cursor, as last reported
    error: str = ""


def _describe(error: grpc.RpcError) -> str:
    code = error.code() if isinstance(error, grpc.Call) else None
    details = error.details() if isinstance(error, grpc.Call) else str(error)
    return f"{code.name if code else 'ERROR'}: {details}"


class FeedFollower:
    def __init__(
        self,
        addresses: Sequence[str],
        cursor: Callable[[str], int],
        store: Store,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        """`cursor` reads the stored cursor of a partition store."""
        self._followed = [
            _Followed(a, index_pb2_grpc.IndexServiceStub(telemetry.traced_channel(a)), partition)
            for partition, a in enumerate(addresses)
        ]
        self._cursor = cursor
        self._store = store
        self._max_sessions = max_sessions
        self._pull_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quarry-follow", daemon=True)

    @property
    def last_error(self) -> str:
        return "; ".join(s.error for s in self._followed if s.error)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = FEED_TIMEOUT_S) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- the loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            progressed = False
            for partition in self._followed:
                if self._stop.is_set():
                    break
                progressed |= self._follow(partition)
            if not progressed:
                self._wake.wait(POLL_S)

    def fill(self, enough: Callable[[], bool]) -> None:
        """Pull from the partitions in turn, on this thread, until `enough()` or no partition has more now."""
        while True:
            progressed = False
            for partition in self._followed:
                if enough():
                    return
                progressed |= self._follow(partition)
            if not progressed:
                return

    def _follow(self, partition: _Followed) -> bool:
        """One pull from one partition, errors recorded; True when it may have more right away."""
        try:
            with self._pull_lock:
                more = self._pull(partition)
        except grpc.RpcError as error:
            self._failed(partition, f"partition {partition.address}: {_describe(error)}")
            return False
        except Exception as error:  # e.g. the store failing: the loop outlives it and retries
            self._failed(partition, f"following partition {partition.address}: {type(error).__name__}: {error}")
            return False
        if partition.error:
            log.info("following partition %s again", partition.address)
            partition.error = ""
        return more

    def _failed(self, partition: _Followed, message: str) -> None:
        if message != partition.error:  # once per new failure, not every poll
            log.warning("%s; retrying every %.1f s", message, POLL_S)
        partition.error = message

    def _pull(self, partition: _Followed) -> bool:
        if not partition.store_uuid:
            partition.store_uuid = self._ask(partition, 0, 0, FEED_TIMEOUT_S).store_uuid
        after = self._cursor(partition.store_uuid)
        response = self._ask(partition, after, self._max_sessions, FEED_TIMEOUT_S)
        if response.store_uuid != partition.store_uuid:  # the partition's store was replaced since: use its cursor
            log.info(
                "partition %s has a new store %s: following it from its cursor", partition.address, response.store_uuid
            )
            partition.store_uuid = response.store_uuid
            return True
        if response.head_seq < after:
            # The same store went back in time (restored from a copy): what it numbered again after
            # its head would hide behind the cursor, so follow it from the start.
            log.warning(
                "partition %s is behind this node's cursor (%d < %d): following it from 0",
                partition.address,
                response.head_seq,
                after,
            )
            self._store([], [], (partition.store_uuid, 0))
            return True
        partition.backlog = response.backlog_texts - sum(len(s.items) for s in response.sessions)
        if not response.sessions:
            return False
        self._store(
            [item for s in response.sessions for item in s.items],
            [s.session_id for s in response.sessions],
            (partition.store_uuid, response.sessions[-1].change_seq),
        )
        return True

    @staticmethod
    def _ask(partition: _Followed, after_seq: int, max_sessions: int, timeout: float) -> index_pb2.EmbedFeedResponse:
        request = index_pb2.EmbedFeedRequest(
            after_seq=after_seq, max_sessions=max_sessions, partition=partition.partition
        )
        return partition.stub.EmbedFeed(request, timeout=timeout)

    # -- backlog -------------------------------------------------------------------------------------

    def backlog(self, live: bool = True) -> int:
        """Texts the partitions hold after this node's cursors, asked live (in parallel, ~1 s at most);
        a partition that does not answer counts with the backlog it last reported. Not `live`: as each last
        reported it (the loop pulls every POLL_S)."""
        if not live:
            return sum(partition.backlog for partition in self._followed)
        calls = []
        for partition in self._followed:
            after = self._cursor(partition.store_uuid) if partition.store_uuid else 0
            request = index_pb2.EmbedFeedRequest(after_seq=after, max_sessions=0, partition=partition.partition)
            calls.append(partition.stub.EmbedFeed.future(request, timeout=BACKLOG_TIMEOUT_S))
        total = 0
        for partition, call in zip(self._followed, calls, strict=True):
            try:
                response = call.result()
                if response.store_uuid != partition.store_uuid:  # not followed yet, or a new store
                    if not partition.store_uuid:
                        partition.store_uuid = response.store_uuid  # learned once (the loop may not run)
                    after = self._cursor(response.store_uuid)
                    response = self._ask(partition, after, 0, BACKLOG_TIMEOUT_S)
                partition.backlog = response.backlog_texts
            except grpc.RpcError:
                pass
            total += partition.backlog
        return total
