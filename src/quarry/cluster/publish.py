"""Publishing records to the log until the stream acknowledges them.

A record whose payload is held (quarry.cluster.payloads) has its payload stored first, each until the
object store acknowledged it, so no record the stream acknowledged names a payload the store lacks.
Records are published asynchronously; a record whose acknowledgement does not come within
ACK_TIMEOUT_S (a log server died, the stream is electing a new leader: about 5 to 10 s here) or comes
as an error is published again with the same message id, which the stream stores once, until
PUBLISH_TIMEOUT_S has passed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext

from quarry.cluster.log_records import Outgoing
from quarry.cluster.payloads import store
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

ACK_TIMEOUT_S = 5.0
PUBLISH_TIMEOUT_S = 120.0
RETRY_S = 0.5


async def publish_all(nc: Client, records: Sequence[Outgoing], timeout: float = PUBLISH_TIMEOUT_S) -> list[int]:
    """Each record's stream sequence once the stream acknowledged it; NODE_UNAVAILABLE when some are
    still unacknowledged after `timeout`."""
    js = nc.jetstream()
    sequences: list[int | None] = [None] * len(records)
    deadline = time.monotonic() + timeout
    for record in records:
        if record.held_bytes:
            await _store(js, record, deadline, timeout)
    pending = list(range(len(records)))
    last_error: BaseException | None = None
    while pending:
        futures = []
        for i in pending:
            record = records[i]
            futures.append(await js.publish_async(record.subject, record.payload, headers=dict(record.headers)))
        outcomes = await asyncio.gather(*(asyncio.wait_for(f, ACK_TIMEOUT_S) for f in futures), return_exceptions=True)
        retry = []
        for i, outcome in zip(pending, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                retry.append(i)
                last_error = outcome
            else:
                sequences[i] = outcome.seq
        pending = retry
        if pending:
            if time.monotonic() > deadline:
                raise QuarryError(
                    errors_pb2.NODE_UNAVAILABLE,
                    f"the log did not acknowledge {len(pending)} record(s) within {timeout:.0f} s "
                    f"({type(last_error).__name__}: {last_error}): they may or may not be in the log",
                )
            await asyncio.sleep(RETRY_S)
    return [s for s in sequences if s is not None]


async def _store(js: JetStreamContext, record: Outgoing, deadline: float, timeout: float) -> None:
    """Store the record's held payload, again after a failure (a log server failing over) until `deadline`."""
    while True:
        try:
            return await asyncio.wait_for(store(js, record), max(ACK_TIMEOUT_S, deadline - time.monotonic()))
        except (NatsError, TimeoutError) as error:
            if time.monotonic() > deadline:
                raise QuarryError(
                    errors_pb2.NODE_UNAVAILABLE,
                    f"the object store did not take the payload of {record.subject} within {timeout:.0f} s "
                    f"({type(error).__name__}: {error}); its record was not published",
                ) from None
            await asyncio.sleep(RETRY_S)
