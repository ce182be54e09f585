"""Search cursors: opaque, self-contained continuation tokens (seed 000's Pagination).

A token is URL-safe base64 (no padding) of a versioned orjson envelope. It binds the request it was
minted for (a digest of the compiled plan's deterministic bytes, the resolved lane, the limit, the
shard count, a digest of the effective search controls: admission, fusion and min_score select and
order the hits; include_scores is left out, since it only adds metadata to the same hits in the same
order) and carries where the walk stands:

- lexical lanes: one anchor per shard, that shard's last session consumed so far, under the shard's
  natural order (ranked: BM25 desc then session id; unranked lists: sort_time_ms desc then session id).
  Each shard pages strictly after its own anchor, so every shard's ranking is walked as one stream:
  no session is served twice and none is skipped, whatever the scores of other shards do meanwhile.
- fused / vector lanes: one global anchor (rrf score desc, or vector distance asc, then session id).

The clock the first page resolved relative dates against (`since:7d`) travels too, so every page
of a walk selects the same window. Nothing is kept on the server: a cursor survives any restart.
A checksum over the payload catches a damaged or edited token (it is not a secret: anyone may mint
a cursor, which only ever selects what the same query could select).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass, field

import orjson

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, plan_pb2

VERSION = 1
GLOBAL = -1  # the anchor key of lanes ordered after fusion (hybrid, semantic)
_SUM_BYTES = 8


@dataclass(frozen=True)
class Anchor:
    """The last session served: its sort key under the lane's order (BM25, sort_time_ms, rrf score or
    vector distance) and its id, the tie-breaker."""

    key: float
    session_id: str


@dataclass(frozen=True)
class Binding:
    """What a cursor is valid for: another query, lane, limit or cluster shape makes it stale."""

    query: str  # hex digest of the compiled plan
    lane: str
    limit: int
    shards: int
    controls: str = ""  # digest of the effective search controls (controls.Effective.digest)


@dataclass(frozen=True)
class Cursor:
    binding: Binding
    now_ms: int  # the clock relative dates resolved against on the first page
    served: int  # hits served before this cursor's page: the next rank is served + 1
    anchors: dict[int, Anchor] = field(default_factory=dict)  # shard (or GLOBAL) -> anchor


def binding(plan: plan_pb2.QueryPlan, lane: str, limit: int, shards: int, controls: str = "") -> Binding:
    digest = hashlib.sha256(plan.SerializeToString(deterministic=True)).hexdigest()[:32]
    return Binding(query=digest, lane=lane, limit=limit, shards=shards, controls=controls)


def encode(cursor: Cursor) -> str:
    body = {
        "v": VERSION,
        "q": cursor.binding.query,
        "lane": cursor.binding.lane,
        "limit": cursor.binding.limit,
        "shards": cursor.binding.shards,
        "controls": cursor.binding.controls,
        "now": cursor.now_ms,
        "served": cursor.served,
        "after": [[shard, a.key, a.session_id] for shard, a in sorted(cursor.anchors.items())],
    }
    payload = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    token = payload + b"." + _checksum(payload).encode()
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode()


def decode(token: str) -> Cursor:
    """The cursor a token carries; INVALID_CURSOR when it is not one this node minted the format of."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload, _, checksum = raw.rpartition(b".")
        if not payload or checksum.decode() != _checksum(payload):
            raise ValueError("checksum mismatch")
        body = orjson.loads(payload)
        if body.get("v") != VERSION:
            raise _invalid(f"cursor version {body.get('v')!r} is not {VERSION}: restart the walk from page 1")
        anchors = {int(shard): Anchor(float(key), str(sid)) for shard, key, sid in body["after"]}
        return Cursor(
            binding=Binding(
                query=str(body["q"]),
                lane=str(body["lane"]),
                limit=int(body["limit"]),
                shards=int(body["shards"]),
                controls=str(body["controls"]),
            ),
            now_ms=int(body["now"]),
            served=int(body["served"]),
            anchors=anchors,
        )
    except QuarryError:
        raise
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, binascii.Error, orjson.JSONDecodeError) as error:
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
    if minted.shards != expected.shards:
        differs.append(f"the cluster's shard count ({minted.shards} → {expected.shards})")
    if minted.controls != expected.controls:
        differs.append("the search controls (admission, fusion or min_score)")
    if differs:
        raise QuarryError(
            errors_pb2.STALE_CURSOR,
            f"the cursor was minted for another request: {', '.join(differs)} changed",
            parameter="cursor",
        )


def _checksum(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()[: 2 * _SUM_BYTES]


def _invalid(message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_CURSOR, message, parameter="cursor")
