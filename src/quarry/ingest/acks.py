"""What an ingest acknowledgement waits for: `applied` (default) or `log`.

`applied`: the sessions are searchable. In the embedded default that is the index nodes' durable
commit; in cluster mode, the records are in the replicated log and an active replica of each touched
partition has applied them. `log`: only in the replicated log (durable on a quorum of log servers,
not yet searchable); it needs a cluster on the log."""

from __future__ import annotations

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

APPLIED = "applied"
LOG = "log"
ACKS = (APPLIED, LOG)
METADATA_KEY = "quarry-ack"  # IngestSessions (client streaming) takes the level in its metadata


def check_ack(ack: str, has_log: bool) -> str:
    """The acknowledgement level asked for ("" is `applied`); INVALID_REQUEST for an unknown one, or
    `log` on a cluster without one."""
    level = ack or APPLIED
    if level not in ACKS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"ack {ack!r} is not one of {', '.join(ACKS)}",
            parameter="ack",
            expected=list(ACKS),
        )
    if level == LOG and not has_log:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "ack `log` needs a cluster on the replicated log (quarry up --log nats): this one writes to its "
            "index nodes directly, and acknowledges once they have committed",
            parameter="ack",
        )
    return level
