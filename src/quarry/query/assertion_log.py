"""Cluster mode: assertion writes and judgments go through the replicated log.

Every replica of a partition must hold the same assertions, so the query node does not write to one
replica: it publishes the operation as a record of the partition (with its own clock, so that every
replica computes the same timestamps), and every replica applies it in log order
(quarry.index.apply). The answer is the operation's outcome once every replica that reads may go to
has applied it (as an ingest at `applied` waits for every active replica), so a read that follows the
write finds it on whichever replica serves the read: the assertion as stored, the judgment, or the
typed error it failed with on every replica alike. A replica that does not answer is not waited for
(reads go elsewhere); one that answers but lags past OUTCOME_TIMEOUT_S does not fail a write that
others applied: it holds the operation once it catches up.
"""

from __future__ import annotations

import time

from nats.aio.client import Client

from quarry.cluster.cluster_map import now_ms
from quarry.cluster.log_records import OP_ID, assertion_record
from quarry.cluster.loop import LoopThread
from quarry.cluster.publish import publish_all
from quarry.core.errors import QuarryError
from quarry.query.cluster_client import ClusterClient
from quarry.query.scatter import Deadline
from quarry.v1 import assertions_pb2, errors_pb2

PUBLISH_TIMEOUT_S = 30.0
OUTCOME_TIMEOUT_S = 10.0
POLL_S = 0.02


class AssertionLog:
    def __init__(self, loop: LoopThread, nc: Client, cluster: ClusterClient) -> None:
        self.loop = loop
        self.nc = nc
        self.cluster = cluster

    def apply(self, partition: int, op: str, request: bytes) -> assertions_pb2.OperationOutcome:
        """Publish the operation to the partition and wait for a replica's outcome of it; its typed error
        is raised as it is."""
        record = assertion_record(partition, op, request, now_ms())
        self.loop.run(publish_all(self.nc, [record], PUBLISH_TIMEOUT_S), timeout=PUBLISH_TIMEOUT_S + 5)
        outcome = self._outcome(partition, record.headers[OP_ID])
        if outcome.HasField("error"):
            raise QuarryError.from_detail(outcome.error)
        return outcome

    def _outcome(self, partition: int, op_id: str) -> assertions_pb2.OperationOutcome:
        deadline = time.monotonic() + OUTCOME_TIMEOUT_S
        request = assertions_pb2.PartitionOpOutcomeRequest(partition=partition, op_id=op_id)
        while True:
            answers = self.cluster.assertions.op_outcome(partition, request, Deadline(OUTCOME_TIMEOUT_S * 1000))
            outcomes = [a for a in answers.values() if not isinstance(a, QuarryError)]
            applied = [o for o in outcomes if o.applied]
            if applied and (len(applied) == len(outcomes) or time.monotonic() > deadline):
                return applied[0]
            if time.monotonic() > deadline:
                raise QuarryError(
                    errors_pb2.NODE_UNAVAILABLE,
                    f"the operation is in the log, but no replica of partition {partition} applied it within "
                    f"{OUTCOME_TIMEOUT_S:.0f} s: it takes effect as the replicas catch up",
                    partitions=[partition],
                )
            time.sleep(POLL_S)
