"""Count, numeric and date comparisons -> FieldClause (op + decimal-string values).

Numbers are non-negative integers, compared as written: `>`, `>=`, `<`, `<=`, `=` stay distinct
(`=` is Comparison COMPARISON_UNSPECIFIED with one value), `between a and b` is BETWEEN [a, b]
inclusive.

Dates are resolved here, at compile time, to Unix epoch milliseconds (UTC), so every partition compares
the same instants. A date value names an interval [start, end] (end inclusive, in ms):
- `2026-01-02`: that whole UTC day (start 00:00:00.000, end 23:59:59.999);
- `today`, `yesterday`: that whole UTC day, relative to the compile time;
- `2026-01-02T10:30[:00][Z|+hh:mm]`: that instant (a time without an offset is UTC);
- `7d`, `24h`, `2w`: the instant that long before the compile time.
Each comparison keeps its meaning over the interval: `>= D` is >= start, `> D` is > end,
`<= D` is <= end, `< D` is < start, `= D` is BETWEEN start and end, `between A and B` is BETWEEN
A's start and B's end; `since:D` is `>= D` and `until:D` is `<= D`. The clause field is `date`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from quarry.v1 import plan_pb2

OPS: dict[str, int] = {
    ">=": plan_pb2.GE,
    "<=": plan_pb2.LE,
    ">": plan_pb2.GT,
    "<": plan_pb2.LT,
    "=": plan_pb2.COMPARISON_UNSPECIFIED,
    "between": plan_pb2.BETWEEN,
}
# A compact value may open with an operator: `messages:>=5`, `date:<2026-01-02`.
_COMPACT = re.compile(r"(>=|<=|>|<|=)?(.*)", re.DOTALL)
_NUMBER = re.compile(r"[0-9]{1,18}")
_DECIMAL = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_RELATIVE = re.compile(r"([0-9]{1,6})([hdw])")
_RELATIVE_MS = {"h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_DAY_MS = 86_400_000
DATE_FORMS = ("2026-01-02", "2026-01-02T10:30Z", "today", "yesterday", "7d", "24h", "2w")


class BadComparisonValue(Exception):
    """A comparison value that does not read as its field's type (the compiler adds the position)."""


def split_compact(text: str) -> tuple[str, str]:
    """`>=5` -> (">=", "5"); `5` -> ("=", "5")."""
    match = _COMPACT.fullmatch(text)
    assert match is not None  # the pattern matches every string
    return match.group(1) or "=", match.group(2)


def number(text: str, decimal: bool = False) -> int | float:
    """A whole number, or for a decimal field (`cost_usd`) a decimal one (`0.25`)."""
    if decimal and _DECIMAL.fullmatch(text):
        return float(text)
    if not _NUMBER.fullmatch(text):
        raise BadComparisonValue(f"{text!r} is not a {'number' if decimal else 'whole number'}")
    return int(text)


def date_interval(text: str, now_ms: int) -> tuple[int, int]:
    """[start, end] in epoch ms (end inclusive) of a date value; see the module docstring."""
    lowered = text.lower()
    if lowered in ("today", "yesterday"):
        today = datetime.fromtimestamp(now_ms / 1000, UTC).date()
        return _day(today - timedelta(days=1) if lowered == "yesterday" else today)
    relative = _RELATIVE.fullmatch(lowered)
    if relative:
        instant = now_ms - int(relative.group(1)) * _RELATIVE_MS[relative.group(2)]
        return instant, instant
    try:
        if _DAY.fullmatch(text):
            return _day(date.fromisoformat(text))
        if "T" in text and _DAY.match(text):
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            instant = int(moment.timestamp() * 1000)
            return instant, instant
    except ValueError:
        pass
    raise BadComparisonValue(f"{text!r} is not a date (forms: {', '.join(DATE_FORMS)})")


def _day(day: date) -> tuple[int, int]:
    start = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
    return start, start + _DAY_MS - 1


def date_clause(op: str, intervals: list[tuple[int, int]]) -> tuple[int, list[int]]:
    """The (Comparison, epoch-ms bounds) of `date op value(s)` over resolved intervals."""
    (start, end), last = intervals[0], intervals[-1]
    match op:
        case ">=":
            return plan_pb2.GE, [start]
        case ">":
            return plan_pb2.GT, [end]
        case "<=":
            return plan_pb2.LE, [end]
        case "<":
            return plan_pb2.LT, [start]
        case "between":
            return plan_pb2.BETWEEN, [start, last[1]]
    return plan_pb2.BETWEEN, [start, end]
