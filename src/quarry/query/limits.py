"""The ranges of the numeric request parameters the query node takes, on gRPC and HTTP alike.

The coordinator, the session API and ref resolution check every number a request carries here before
anything is asked of a node, so no value reaches a partition that would overflow its message (an offset of
2**31 - 1 plus the page), wait past a bounded time or compare against NaN. A value out of range is
INVALID_REQUEST naming the parameter and saying its range.
"""

from __future__ import annotations

import math

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

MAX_LIMIT = 1000
MAX_OFFSET = 10_000  # offset paging is best effort; a cursor walks any depth
MAX_DEADLINE_MS = 120_000.0
MAX_CHARS = 100_000  # ResolveRef's bound on each text window
MAX_SEQ = 2**31 - 1  # event seqs are int32


def page(limit: int, offset: int, default: int, max_limit: int = MAX_LIMIT) -> tuple[int, int]:
    """(limit, offset) of a paged request: 0 asks for `default`; limit 1..max_limit, offset 0..MAX_OFFSET."""
    if not 0 <= limit <= max_limit:
        raise invalid("limit", f"limit must be 1..{max_limit} (0: {default}), not {limit}")
    check_offset(offset, "offset")
    return (limit or default), offset


def check_offset(offset: int, parameter: str, what: str = "") -> None:
    """An offset (or the row a page starts at: `what` says how it was reached) within MAX_OFFSET."""
    if not 0 <= offset <= MAX_OFFSET:
        reached = f" ({what})" if what else ""
        raise invalid(
            parameter,
            f"a page starts at row 0..{MAX_OFFSET}, not {offset}{reached}: walk further with the envelope's "
            "next_cursor",
        )


def check_cursor_offset(cursor: str, offset: int) -> None:
    """A cursor continues a walk where it stands: a request that carries one takes no offset."""
    if cursor and offset:
        raise invalid("offset", "a cursor continues a walk: it takes no offset")


def deadline_ms(value: float, default: float) -> float:
    """A request's time budget in ms: finite, 0 (the default) up to MAX_DEADLINE_MS."""
    if not math.isfinite(value) or not 0 <= value <= MAX_DEADLINE_MS:
        raise invalid(
            "deadline_ms",
            f"deadline_ms must be a finite number of ms, 0..{MAX_DEADLINE_MS:.0f} (0: {default:.0f}), not {value}",
        )
    return value or default


def check_max_chars(value: int) -> None:
    if not 0 <= value <= MAX_CHARS:
        raise invalid("max_chars", f"max_chars must be 0..{MAX_CHARS} characters (0: the default), not {value}")


def check_seq_bound(value: int, parameter: str) -> None:
    if not 0 <= value <= MAX_SEQ:
        raise invalid(parameter, f"an event seq is 0..{MAX_SEQ}, not {value}")


def invalid(parameter: str, message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)
