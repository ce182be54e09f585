"""Partial results (docs/search-api.md#partial-results): what a fan-out to the partitions answered, what
did not and why, and how envelopes and errors say so.

A partition none of whose replicas answered is left out of an answer and named in the envelope's
`missing` (with `partial`), or fails the request PARTITION_UNAVAILABLE when the request requires a
complete answer (or the call cannot do without it: a read of one session's partition).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2

BRIEF_CHARS = 160
MAX_MESSAGE_CHARS = 2000

R = TypeVar("R")


@dataclass
class Fanned(Generic[R]):
    """Per-partition results of a fan-out: what answered, by whom, and what did not and why."""

    results: dict[int, R] = field(default_factory=dict)
    served_by: dict[int, str] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)

    def ordered(self) -> list[R]:
        return [self.results[p] for p in sorted(self.results)]


def unavailable(missing: dict[int, str]) -> QuarryError:
    """PARTITION_UNAVAILABLE naming each missing partition and why (partitions failing alike together;
    the message stays short enough for gRPC's trailers, the detail lists every partition)."""
    by_reason: dict[str, list[int]] = {}
    for partition, why in sorted(missing.items()):
        by_reason.setdefault(why, []).append(partition)
    named = "; ".join(
        f"{'partition' if len(ps) == 1 else 'partitions'} {', '.join(map(str, ps))} ({why})"
        for why, ps in by_reason.items()
    )
    if len(named) > MAX_MESSAGE_CHARS:
        named = named[: MAX_MESSAGE_CHARS - 1] + "…"
    return QuarryError(
        errors_pb2.PARTITION_UNAVAILABLE,
        f"no replica answered for {len(missing)} partition(s): {named}",
        partitions=sorted(missing),
    )


def brief(message: str) -> str:
    """A node's failure in a few words: gRPC's connection errors are long and say little more."""
    first = message.splitlines()[0] if message else ""
    for marker, said in (("Connection refused", "connection refused"), ("Deadline Exceeded", "deadline exceeded")):
        if marker in first:
            return said
    return first[:BRIEF_CHARS]


def missing_partitions(missing: dict[int, str]) -> list[query_pb2.MissingPartition]:
    """The envelopes' MissingPartition entries, in partition order."""
    return [query_pb2.MissingPartition(partition=p, reason=why) for p, why in sorted(missing.items())]


def require(missing: dict[int, str], complete: bool) -> None:
    """PARTITION_UNAVAILABLE when a complete answer is required and partitions are missing."""
    if complete and missing:
        raise unavailable(missing)
