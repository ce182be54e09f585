"""Traces over a session's raw log events (the session API, docs/sessions.md#traces): replacement chains,
direct links, replay checks.

The events carry their direct links as ingest folded them (quarry.ingest.events): `replaced_by`,
`replaced_event_seqs`, `source_event_seqs`. What is not stored is computed here from the whole log:
the replacement chain (follow `replaced_by` to the final replacer) and the derived events (later
events citing the target). `check_log` is the replay validation a reader runs before it answers: a
log whose seqs are not 0..n-1, or whose links name events that are not there or not on the surface,
is corrupt.
"""

from __future__ import annotations

from collections.abc import Sequence

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2


def record_of(session_id: str, event: units_pb2.SessionEvent) -> sessions_pb2.SessionEventRecord:
    return sessions_pb2.SessionEventRecord(
        session_id=session_id, seq=event.seq, type=event.type, time_ms=event.time_ms, surface=event.surface
    )


def check_log(session_id: str, events: Sequence[units_pb2.SessionEvent]) -> None:
    """CORRUPT_SESSION unless `events` is a complete log whose surface links replay."""
    count = len(events)
    for index, event in enumerate(events):
        if event.seq != index:
            raise _corrupt(session_id, f"seq {event.seq} stands at position {index}: the log has a gap")
        if event.HasField("replaced_by"):
            replacer = event.replaced_by
            if not 0 <= replacer < count or event.surface != "shadowed":
                raise _corrupt(session_id, f"event {index} names replacer {replacer} of no surface event", "surface")
        for removed in event.replaced_event_seqs:
            if not 0 <= removed < count or events[removed].replaced_by != index:
                why = f"event {index} replaced {removed}, which is no surface event it removed"
                raise _corrupt(session_id, why, "surface")
        for source in event.source_event_seqs:
            if not 0 <= source < index:
                raise _corrupt(session_id, f"event {index} cites {source}, which is not an earlier event")


def trace(session_id: str, events: Sequence[units_pb2.SessionEvent], seq: int) -> sessions_pb2.EventTrace:
    """The trace of event `seq` of a checked log (check_log)."""
    target = events[seq]
    result = sessions_pb2.EventTrace(target=record_of(session_id, target))
    if target.HasField("replaced_by"):
        result.replaced_by = target.replaced_by
    chain: list[int] = []
    seen = {seq}
    current = target
    while current.HasField("replaced_by") and current.replaced_by not in seen:
        seen.add(current.replaced_by)
        chain.append(current.replaced_by)
        current = events[current.replaced_by]
    result.replacement_chain.extend(chain)
    result.replaced_event_seqs.extend(target.replaced_event_seqs)
    result.source_event_seqs.extend(target.source_event_seqs)
    result.derived_event_seqs.extend(e.seq for e in events[seq + 1 :] if seq in e.source_event_seqs)
    return result


def _corrupt(session_id: str, why: str, token: str = "seq") -> QuarryError:
    """CORRUPT_SESSION; `token` says what failed: the seq order, or the surface links."""
    return QuarryError(errors_pb2.CORRUPT_SESSION, f"the event log of {session_id} does not replay: {why}", token=token)
