"""The order of row ids where rows tie on their sort key: natural, numbers by their value.

Unit rows list by time, ties broken on the row id (docs/query-language.md#sorting-and-paging-rows). The
ids end in sequence numbers (`<session>:m<seq>`, `<session>:action:<seq>`, `<message>:<index>`,
quarry.core.refs), so a plain string order lists the messages of a log that records no times (Aider
replies, Cursor exports) as m0, m1, m10, m11, …, m2. Here every run of digits compares by its value:
one session's rows come in their source order, and sessions keep one order among themselves. Each
partition sorts with it (`COLLATION`, registered on its SQLite readers) and the query node merges the
partitions' rows with the same `key`, so both agree.
"""

from __future__ import annotations

import functools
import re

COLLATION = "quarry_ids"  # ORDER BY u.id COLLATE quarry_ids
_DIGITS = re.compile(r"(\d+)")


@functools.lru_cache(maxsize=1 << 16)
def key(row_id: str) -> tuple[tuple[str | int, ...], str]:
    """The sort key of an id: its text and numbers alternating (every id starts with text, so the parts
    at one position are all text or all numbers), then the id itself (`m07` and `m7` differ)."""
    parts = tuple(int(p) if i % 2 else p for i, p in enumerate(_DIGITS.split(row_id)))
    return parts, row_id


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` comes before, with or after `b` (a SQLite collation)."""
    ka, kb = key(a), key(b)
    return -1 if ka < kb else int(ka > kb)
