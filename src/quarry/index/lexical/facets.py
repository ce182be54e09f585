"""Facet counts of one partition: how many of its sessions carry each value of a facet family.

Families (FAMILIES, counted in that order): `origins`, `tags` (session_tags), `repos`, `hosts` and
`pushers` (sessions without one are not counted), `action_types` (sessions with at least one action
of the category) and `count_buckets` (sessions by message count: BUCKETS). Each family is counted over every session
of the partition (the global view) and, when the request is scoped, over the sessions its predicate
selects: the predicate is lowered once (predicates.Lowering, as leaf.match_session_ids does;
full-text leaves become ordinal sets evaluated in Tantivy) and joined to every family's scan.

Budget: the families are scanned one after another on this thread's reader; once `budget_ms` has
passed no further family is started, and a scan still running is interrupted by an SQLite progress
handler. The families not counted in full come back as `unfinished`, never half counted.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import tantivy

from quarry.core.errors import QuarryError
from quarry.index.lexical import visibility
from quarry.index.lexical.fulltext import FullText
from quarry.index.lexical.predicates import Lowering, Sql
from quarry.index.lexical.store import Store
from quarry.index.lexical.unit_tables import prepare
from quarry.v1 import errors_pb2, index_pb2

# (label, lowest message count, highest or None): every session falls in exactly one.
BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0", 0, 0),
    ("1-9", 1, 9),
    ("10-49", 10, 49),
    ("50-199", 50, 199),
    ("200+", 200, None),
)
_BUCKET_CASE = (
    "CASE "
    + " ".join(f"WHEN s.messages <= {high} THEN '{label}'" for label, _, high in BUCKETS if high is not None)
    + f" ELSE '{BUCKETS[-1][0]}' END"
)
# Per family: SQL over the sessions `s` that pass `{where}`, giving (value, sessions) rows.
_FAMILY_SQL: dict[str, str] = {
    "origins": "SELECT s.origin, COUNT(*) FROM sessions s WHERE {where} GROUP BY s.origin",
    "tags": (
        "SELECT t.tag, COUNT(*) FROM session_tags t JOIN sessions s ON s.ord = t.session_ord "
        "WHERE {where} GROUP BY t.tag"
    ),
    "repos": "SELECT s.repo, COUNT(*) FROM sessions s WHERE s.repo != '' AND {where} GROUP BY s.repo",
    "hosts": "SELECT s.host, COUNT(*) FROM sessions s WHERE s.host != '' AND {where} GROUP BY s.host",
    "pushers": "SELECT s.pusher, COUNT(*) FROM sessions s WHERE s.pusher != '' AND {where} GROUP BY s.pusher",
    "action_types": (
        "SELECT a.category, COUNT(DISTINCT a.session_ord) FROM actions a JOIN sessions s ON s.ord = a.session_ord "
        "WHERE {where} GROUP BY a.category"
    ),
    "count_buckets": f"SELECT {_BUCKET_CASE} AS bucket, COUNT(*) FROM sessions s WHERE {{where}} GROUP BY bucket",
}
FAMILIES = tuple(_FAMILY_SQL)
_PROGRESS_STEPS = 2_000  # SQLite VM steps between deadline checks


class _BudgetSpent(Exception):
    pass


def count(
    index: tantivy.Index,
    store: Store,
    request: index_pb2.PartitionFacetsRequest,
    partition: int,
    visible: visibility.Visible = None,
) -> index_pb2.PartitionFacetsResponse:
    """The partition's facet counts for the requested families (all of them when none are named), over
    the `visible` sessions: the global view is every session the caller may read."""
    started = time.monotonic()
    end = started + request.budget_ms / 1000.0 if request.budget_ms > 0 else None
    families = _families(request.families)
    conn = store.reader()
    response = index_pb2.PartitionFacetsResponse(partition=partition)
    scope = None
    every = visibility.sql(visible)
    pending = list(families)
    with _interruptible(conn, end) as spent:
        try:
            response.global_sessions = _total(conn, every)
            if request.scoped:
                lowering = Lowering(
                    FullText(index.searcher(), index.schema, store),
                    assertions=prepare(conn, store.path.parent),
                )
                selected = lowering.session(request.where if request.where.WhichOneof("node") else None)
                scope = Sql(f"({every.text} AND {selected.text})", [*every.params, *selected.params])
                response.scoped_sessions = _total(conn, scope)
            while pending and not spent():
                family = pending[0]
                item = index_pb2.PartitionFacetFamily(family=family, global_counts=_counts(conn, family, every))
                if scope is not None:
                    item.scoped_counts.extend(_counts(conn, family, scope))
                response.families.append(item)
                pending.pop(0)
        except _BudgetSpent:
            pass
    response.unfinished.extend(pending)
    response.elapsed_ms = (time.monotonic() - started) * 1000.0
    return response


def _families(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in _FAMILY_SQL]
    if unknown:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"unknown facet family {unknown[0]!r}: one of {', '.join(FAMILIES)}",
            parameter="families",
        )
    asked = set(names)
    return [f for f in FAMILIES if f in asked] if asked else list(FAMILIES)


def _total(conn: sqlite3.Connection, where: Sql) -> int:
    return int(_run(conn, f"SELECT COUNT(*) FROM sessions s WHERE {where.text}", where.params)[0][0])


def _counts(conn: sqlite3.Connection, family: str, where: Sql) -> list[index_pb2.PartitionFacetCount]:
    rows = _run(conn, _FAMILY_SQL[family].format(where=where.text), where.params)
    return [index_pb2.PartitionFacetCount(value=value, count=n) for value, n in rows]


def _run(conn: sqlite3.Connection, sql: str, params: list[object]) -> list[tuple[str, int]]:
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as error:
        if "interrupted" in str(error):
            raise _BudgetSpent from None
        raise


@contextmanager
def _interruptible(conn: sqlite3.Connection, end: float | None) -> Iterator[Callable[[], bool]]:
    """Interrupts statements on `conn` past `end` (monotonic seconds); yields "is the budget spent"."""

    def spent() -> bool:
        return end is not None and time.monotonic() >= end

    if end is None:
        yield spent
        return
    conn.set_progress_handler(lambda: 1 if spent() else 0, _PROGRESS_STEPS)
    try:
        yield spent
    finally:
        conn.set_progress_handler(None, 0)
