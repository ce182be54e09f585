"""One search as its phases hand it on (the recipe in root.py): `Prepared`, what the request resolved to
before the archive is asked, and `Run`, what the phases report as they go."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from quarry.dsl import CompiledQuery
from quarry.query import controls, cursors
from quarry.query.fusion import Channels
from quarry.query.scatter import Deadline
from quarry.v1 import index_pb2, plan_pb2, query_pb2, vector_pb2


@dataclass
class LaneHit:
    """One session in one lane's ranking, with what that lane knows about why it matched."""

    session_id: str
    partition_hit: index_pb2.PartitionHit | None = None
    vector_hit: vector_pb2.VectorHit | None = None
    partition: int = cursors.GLOBAL  # the lexical partition it came from
    node: str = ""  # the replica that served it


@dataclass
class Run:
    """What one search carries through its lanes: the plan, its budget, and what it reports."""

    plan: plan_pb2.QueryPlan  # semantic leaves resolved
    compiled: CompiledQuery
    deadline: Deadline
    controls: controls.Effective
    vector_stats: vector_pb2.VectorStats | None = None  # from the capability check, for vector lanes
    timings: dict[str, float] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    missing: dict[int, str] = field(default_factory=dict)  # partitions no replica answered for, and why
    # Hybrid: the lexical lanes answer rank-only; the page's hits are explained afterwards where the lane
    # whose evidence they show (`evidence`: session id -> lane) ranked them (`ranked`: lane -> session id ->
    # its rank-only hit, with the best message's place).
    evidence: dict[str, str] = field(default_factory=dict)
    ranked: dict[str, dict[str, LaneHit]] = field(default_factory=dict)
    # Hybrid: what each channel found, from which the page's fused hits are built.
    channels: Channels | None = None


@dataclass(frozen=True)
class Prepared:
    """A search checked and compiled, ready to rank: the page it asks for and where its walk stands."""

    request: query_pb2.SearchRequest
    reading: str  # how the text was read: prose or the query language
    requested: str  # the lane asked for, `auto` included
    lane: str  # the lane that runs
    limit: int
    offset: int
    cursor: cursors.Cursor | None
    bound: cursors.Binding  # what the page's cursor binds
    now_ms: int  # the clock relative dates resolved against
    run: Run

    @property
    def depth(self) -> int:
        """How deep into the lane's order the page reaches, and one more to tell whether another follows."""
        return self.offset + self.limit + 1

    @property
    def anchors(self) -> dict[int, cursors.Anchor]:
        return self.cursor.anchors if self.cursor else {}

    @property
    def served(self) -> int:
        """Hits the walk served before this page."""
        return self.cursor.served if self.cursor else 0

    @property
    def first_page(self) -> bool:
        return self.cursor is None and self.offset == 0


def ms(started: float) -> float:
    """Milliseconds since `started` (time.perf_counter)."""
    return (time.perf_counter() - started) * 1000.0
