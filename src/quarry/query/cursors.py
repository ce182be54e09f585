"""Search cursors: opaque, self-contained continuation tokens (docs/search-api.md#cursors).

A token is a versioned orjson envelope sealed with the cluster's key (cursor_seal.py: AES-SIV, so
opaque, tamper-evident and deterministic). It binds the request it was minted for (a digest of the
compiled plan's deterministic bytes, the resolved lane, the limit, the cluster's partition count, a
digest of the effective search controls: admission, fusion and min_score select and order the hits;
include_scores is left out, since it only adds metadata to the same hits in the same order) and
carries where the walk stands:

- lexical lanes: one anchor per partition, that partition's last session consumed so far, under the
  partition's natural order (ranked: BM25 desc then session id; unranked lists: sort_time_ms desc then
  session id), with the replica that served it. Each partition pages strictly after its own anchor, so
  every partition's ranking is walked as one stream: no session is served twice and none is skipped,
  whatever the scores of other partitions do meanwhile. The walk asks the same replica again while it
  lives (its scores are those the anchor was taken under); on another replica after a failover the
  anchor is re-scored there, as it is after any change to the corpus.
- fused / vector lanes: one global anchor (rrf score desc, or vector distance asc, then session id).

Partitions are fixed when a cluster is created, so a cursor survives index nodes joining, leaving and
partitions moving between them; only another partition count makes it stale.

The clock the first page resolved relative dates against (`since:7d`) travels too, so every page
of a walk selects the same window. Nothing is kept on the server: a cursor survives any restart, and
any query node of the cluster continues it. Only the cluster mints cursors: an edited, cut or foreign
token does not open (INVALID_CURSOR), and the binding makes one replayed for another request, or by a
caller of other scopes, stale (STALE_CURSOR).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.query import cursor_seal
from quarry.v1 import errors_pb2, plan_pb2

VERSION = 2
GLOBAL = -1  # the anchor key of lanes ordered after fusion (hybrid, semantic)


@dataclass(frozen=True)
class Anchor:
    """The last session served: its sort key under the lane's order (BM25, sort_time_ms, rrf score or
    vector distance) and its id, the tie-breaker."""

    key: float
    session_id: str
    node: str = ""  # the replica that served it (lexical lanes): asked again while it lives


@dataclass(frozen=True)
class Binding:
    """What a cursor is valid for: another query, lane, limit or partition count makes it stale."""

    query: str  # hex digest of the compiled plan
    lane: str
    limit: int
    partitions: int
    controls: str = ""  # digest of the effective search controls (controls.Effective.digest)


@dataclass(frozen=True)
class Cursor:
    binding: Binding
    now_ms: int  # the clock relative dates resolved against on the first page
    served: int  # hits served before this cursor's page: the next rank is served + 1
    anchors: dict[int, Anchor] = field(default_factory=dict)  # partition (or GLOBAL) -> anchor


def binding(plan: plan_pb2.QueryPlan, lane: str, limit: int, partitions: int, controls: str = "") -> Binding:
    """What a cursor is bound to: the plan and the scopes it ran within, the lane, limit, partitions and
    controls (a cursor replayed by a caller of other scopes is stale)."""
    digest = hashlib.sha256(plan.SerializeToString(deterministic=True) + auth.scopes_key()).hexdigest()[:32]
    return Binding(query=digest, lane=lane, limit=limit, partitions=partitions, controls=controls)


def encode(cursor: Cursor) -> str:
    body = {
        "v": VERSION,
        "q": cursor.binding.query,
        "lane": cursor.binding.lane,
        "limit": cursor.binding.limit,
        "partitions": cursor.binding.partitions,
        "controls": cursor.binding.controls,
        "now": cursor.now_ms,
        "served": cursor.served,
        "after": [[partition, a.key, a.session_id, a.node] for partition, a in sorted(cursor.anchors.items())],
    }
    return seal(body)


def seal(body: dict[str, object]) -> str:
    """An opaque token of a JSON object (its keys sorted, so the same object seals to the same token)."""
    return cursor_seal.current().seal(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))


def unseal(token: str) -> dict[str, Any]:
    """The object a token sealed; INVALID_CURSOR when this cluster did not seal it, or it was changed or cut."""
    payload = cursor_seal.current().open(token)
    if payload is None:
        raise _invalid(
            "the cursor is not one this cluster minted, or it was changed or cut: pass a page's next_cursor "
            "unchanged (a query node without a cluster key accepts only its own, until it restarts)"
        )
    body = orjson.loads(payload)
    if not isinstance(body, dict):
        raise _invalid("the cursor holds no cursor: pass a page's next_cursor unchanged")
    return body


def decode(token: str) -> Cursor:
    """The cursor a token carries; INVALID_CURSOR when it is not one this node minted the format of."""
    body = unseal(token)
    try:
        if body.get("kind") == "units":
            raise _invalid("this cursor continues a unit query, not a search: pass it to QueryUnits with its query")
        if body.get("v") != VERSION:
            raise _invalid(f"cursor version {body.get('v')!r} is not {VERSION}: restart the walk from page 1")
        anchors = {int(p): Anchor(float(key), str(sid), str(node)) for p, key, sid, node in body["after"]}
        return Cursor(
            binding=Binding(
                query=str(body["q"]),
                lane=str(body["lane"]),
                limit=int(body["limit"]),
                partitions=int(body["partitions"]),
                controls=str(body["controls"]),
            ),
            now_ms=int(body["now"]),
            served=int(body["served"]),
            anchors=anchors,
        )
    except QuarryError:
        raise
    except (ValueError, TypeError, KeyError) as error:
        raise _invalid(f"the cursor does not decode ({error}): pass an envelope's next_cursor unchanged") from None


def check(cursor: Cursor, expected: Binding) -> None:
    """STALE_CURSOR naming each part of the request that differs from the one the cursor was minted for."""
    minted = cursor.binding
    differs = []
    if minted.query != expected.query:
        differs.append("the query (or its filters)")
    if minted.lane != expected.lane:
        differs.append(f"the lane ({minted.lane} → {expected.lane})")
    if minted.limit != expected.limit:
        differs.append(f"the limit ({minted.limit} → {expected.limit})")
    if minted.partitions != expected.partitions:
        differs.append(f"the cluster's partition count ({minted.partitions} → {expected.partitions})")
    if minted.controls != expected.controls:
        differs.append("the search controls (admission, fusion or min_score)")
    if differs:
        raise QuarryError(
            errors_pb2.STALE_CURSOR,
            f"the cursor was minted for another request: {', '.join(differs)} changed",
            parameter="cursor",
        )


def _invalid(message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_CURSOR, message, parameter="cursor")
