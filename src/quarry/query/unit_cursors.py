"""Cursors of unit-row listings: keyset continuation tokens over the listing's total order.

A unit query lists rows by (sort time in the query's direction, row id ascending), the same order on
every partition and after the merge (units.py). A cursor carries the last row served, by that key, and
the next page asks every partition for the rows after it (`PartitionUnitsRequest.after`): rows ingested
meanwhile neither repeat a row nor push one off the walk, whatever page they fall on, and no server
keeps anything. It is bound as a search cursor is (cursors.binding: the compiled plan and the
caller's scopes, the limit, the partition count; the lane is `units`), carries the clock the first page
resolved relative dates against, and is sealed the same way (cursors.seal).
"""

from __future__ import annotations

from dataclasses import dataclass

from quarry.core.errors import QuarryError
from quarry.query import cursors
from quarry.v1 import errors_pb2, index_pb2, plan_pb2

KIND = "units"
VERSION = 1


@dataclass(frozen=True)
class UnitCursor:
    binding: cursors.Binding
    now_ms: int  # the clock relative dates resolved against on the first page
    after: index_pb2.UnitAnchor  # the last row served


def binding(plan: plan_pb2.QueryPlan, limit: int, partitions: int) -> cursors.Binding:
    return cursors.binding(plan, KIND, limit, partitions)


def encode(cursor: UnitCursor) -> str:
    bound = cursor.binding
    return cursors.seal(
        {
            "v": VERSION,
            "kind": KIND,
            "q": bound.query,
            "limit": bound.limit,
            "partitions": bound.partitions,
            "now": cursor.now_ms,
            "after": [cursor.after.time_ms, cursor.after.id],
        }
    )


def decode(token: str) -> UnitCursor:
    """The cursor a token carries; INVALID_CURSOR when it is damaged or not a unit listing's."""
    body = cursors.unseal(token)
    if body.get("kind") != KIND:
        raise _invalid("this cursor continues a search, not a unit query: pass it to Search with its query")
    if body.get("v") != VERSION:
        raise _invalid(f"cursor version {body.get('v')!r} is not {VERSION}: restart the walk from page 1")
    try:
        time_ms, row_id = body["after"]
        return UnitCursor(
            binding=cursors.Binding(str(body["q"]), KIND, int(body["limit"]), int(body["partitions"])),
            now_ms=int(body["now"]),
            after=index_pb2.UnitAnchor(time_ms=int(time_ms), id=str(row_id)),
        )
    except (ValueError, TypeError, KeyError) as error:
        raise _invalid(f"the cursor does not decode ({error}): pass an envelope's next_cursor unchanged") from None


def _invalid(message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_CURSOR, message, parameter="cursor")
