"""Facet counts of one partition: how many of its sessions carry each value of a facet family.

Families (FAMILIES, counted in that order; their SQL: store_schema.FACET_SQL): `origins`, `tags`
(session_tags), `repos`, `hosts` and `pushers` (sessions without one are not counted), `action_types`
(sessions with at least one action of the category) and `count_buckets` (sessions by message count:
store_schema.BUCKETS). Each family is counted over every session of the partition (the global view)
and, when the request is scoped, over the sessions its predicate selects: the predicate is lowered
once (predicates.Lowering, as leaf.match_session_ids does; full-text leaves become ordinal sets
evaluated in Tantivy) and joined to every family's scan.

Budget: the families are scanned one after another on this thread's reader; once `budget_ms` has
passed no further family is started, and a scan still running is interrupted by an SQLite progress
handler (Store.interruptible). The families not counted in full come back as `unfinished`, never
half counted.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

import tantivy

from quarry.core.errors import QuarryError
from quarry.index.lexical.fulltext import FullText
from quarry.index.lexical.predicates import Lowering, Sql, scope_condition
from quarry.index.lexical.store import Store
from quarry.index.lexical.store_schema import FACET_SQL
from quarry.index.lexical.visibility import Visible
from quarry.v1 import errors_pb2, index_pb2

FAMILIES = tuple(FACET_SQL)
R = TypeVar("R")


class _BudgetSpent(Exception):
    pass


def count(
    index: tantivy.Index,
    store: Store,
    request: index_pb2.PartitionFacetsRequest,
    partition: int,
    visible: Visible = None,
) -> index_pb2.PartitionFacetsResponse:
    """The partition's facet counts for the requested families (all of them when none are named), over
    the `visible` sessions: the global view is every session the caller may read."""
    started = time.monotonic()
    end = started + request.budget_ms / 1000.0 if request.budget_ms > 0 else None
    families = _families(request.families)
    response = index_pb2.PartitionFacetsResponse(partition=partition)
    scope = None
    every = scope_condition(visible)
    pending = list(families)
    with store.interruptible(end) as spent:
        try:
            response.global_sessions = _run(lambda: store.count_sessions(every.text, every.params))
            if request.scoped:
                lowering = Lowering(FullText(index.searcher(), index.schema, store), assertions=store.ready_for_units())
                selected = lowering.session(request.where if request.where.WhichOneof("node") else None)
                scope = Sql(f"({every.text} AND {selected.text})", [*every.params, *selected.params])
                response.scoped_sessions = _run(lambda: store.count_sessions(scope.text, scope.params))
            while pending and not spent():
                family = pending[0]
                item = index_pb2.PartitionFacetFamily(family=family, global_counts=_counts(store, family, every))
                if scope is not None:
                    item.scoped_counts.extend(_counts(store, family, scope))
                response.families.append(item)
                pending.pop(0)
        except _BudgetSpent:
            pass
    response.unfinished.extend(pending)
    response.elapsed_ms = (time.monotonic() - started) * 1000.0
    return response


def _families(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in FACET_SQL]
    if unknown:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"unknown facet family {unknown[0]!r}: one of {', '.join(FAMILIES)}",
            parameter="families",
        )
    asked = set(names)
    return [f for f in FAMILIES if f in asked] if asked else list(FAMILIES)


def _counts(store: Store, family: str, where: Sql) -> list[index_pb2.PartitionFacetCount]:
    rows = _run(lambda: store.facet_counts(family, where.text, where.params))
    return [index_pb2.PartitionFacetCount(value=value, count=n) for value, n in rows]


def _run(read: Callable[[], R]) -> R:
    """`read`, its interruption past the budget raised as _BudgetSpent."""
    try:
        return read()
    except sqlite3.OperationalError as error:
        if "interrupted" in str(error):
            raise _BudgetSpent from None
        raise
