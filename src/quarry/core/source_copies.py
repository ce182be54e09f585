"""Two copies of one session read from two files: which one a partition keeps.

Agents' logs get copied, and a copy may be cut short (a partial copy, a backup taken mid-session, an
older version of a log that grew since). Whichever copy is read first, the complete one is kept: a copy
whose records are the start of the other's is the cut one, and its last record may itself be cut
mid-line (its text, kept as a JSON string by the parser that could not read it, the start of the other's
record there). Copies that disagree before either ends are
a true conflict (`source_conflict`), and the copy held first is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import orjson

from quarry.v1 import index_pb2, units_pb2

MALFORMED = "(malformed)"  # the event type of a line no parser could read (quarry.ingest.reader.feed_all)


class Verdict(StrEnum):
    TAKE = "take"  # the other copy continues the held one (or moved it): write it
    CUT = "cut"  # the other copy is the start of the held one: keep the held one
    CONFLICT = "conflict"  # they disagree before either ends: keep the held one


@dataclass(frozen=True, slots=True)
class Comparison:
    verdict: Verdict
    first_difference: int = 0  # the first seq whose raw record differs (CONFLICT)


def compare(held: Sequence[units_pb2.LogEvent], other: Sequence[units_pb2.LogEvent]) -> Comparison:
    """How `other`, a copy of the session read from another file, stands to the `held` copy."""
    for seq in range(min(len(held), len(other))):
        kept, new = held[seq].raw_json, other[seq].raw_json
        if kept == new:
            continue
        if seq == len(other) - 1 and kept.startswith(_line(other[seq])):
            return Comparison(Verdict.CUT)
        if seq == len(held) - 1 and new.startswith(_line(held[seq])):
            return Comparison(Verdict.TAKE)
        return Comparison(Verdict.CONFLICT, seq)
    return Comparison(Verdict.CUT if len(other) < len(held) else Verdict.TAKE)


def _line(event: units_pb2.LogEvent) -> bytes:
    """The bytes a record was read from: a line no parser could read is kept as the JSON string of its text."""
    if not event.type.endswith(MALFORMED):
        return event.raw_json
    try:
        text = orjson.loads(event.raw_json)
    except orjson.JSONDecodeError:
        return event.raw_json
    return text.encode() if isinstance(text, str) else event.raw_json


def refusal(session: units_pb2.Session, held_path: str, comparison: Comparison) -> index_pb2.SourceConflict:
    """The report of a copy not written (CUT or CONFLICT) because the copy from `held_path` is kept."""
    return index_pb2.SourceConflict(
        session_id=session.id,
        source_path=session.source_path,
        stored_source_path=held_path,
        first_difference=comparison.first_difference,
        cut=comparison.verdict is Verdict.CUT,
    )
