"""The page phase: the page a request asks for out of its lane's order (docs/search-api.md#cursors).

min_score (docs/search-api.md#min_score) applies to the normalized retrieval score, after fusion and
before the page is cut: hits below it are dropped, never back-filled, and a cursor walk ends there. The
page's hits are numbered over the whole walk; their `scores` are dropped unless the request asked for
them.

Paging: `offset` (best effort), or a cursor (cursors.py) for a stable walk. On the lexical lanes each
partition pages after its own anchor, so a walk serves every session that matched when it started
exactly once while sessions are being ingested: a new session sorting before a partition's anchor is
never served and never shifts later pages; one sorting after it may appear on a later page. A cursor
page that missed a partition anchors nothing there: that partition's walk starts on a later page. On
the semantic and hybrid lanes the anchor applies after fusion, here, over each lane's top
`fusion_depth`: a cursor walk there ends with the fused list, and ingest between pages can reorder what
fusion ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from quarry.query import cursors
from quarry.query.fusion import FUSION_DEPTH, Channels, FusedHit, fused_hit
from quarry.query.hits import lexical_hit, vector_hit
from quarry.query.run import LaneHit, Prepared
from quarry.v1 import query_pb2

_T = TypeVar("_T")


@dataclass(frozen=True)
class Ordered:
    """A session in a lane ordered over the whole archive (semantic: distance, lower first; hybrid: fused
    score, higher first), with its retrieval score and what its hit is built from."""

    session_id: str
    score: float
    retrieval: float
    found: query_pb2.SearchHit | FusedHit

    def after(self, anchor: cursors.Anchor, lower_is_better: bool) -> bool:
        """Whether it sorts after a cursor's anchor (ties on the score: by session id)."""
        if self.score == anchor.key:
            return self.session_id > anchor.session_id
        return self.score > anchor.key if lower_is_better else self.score < anchor.key

    def hit(self, channels: Channels | None) -> query_pb2.SearchHit:
        if isinstance(self.found, FusedHit):
            assert channels is not None
            return fused_hit(self.found, channels)
        return self.found


@dataclass(frozen=True)
class PartitionRanking:
    """A lexical lane's order: the partitions' rankings merged, each hit with its partition and replica."""

    lane: str
    hits: list[LaneHit]


@dataclass(frozen=True)
class GlobalRanking:
    """A lane ordered over the whole archive: the semantic lane by distance, the hybrid lane by fusion."""

    ordered: list[Ordered]
    lower_is_better: bool
    channels: Channels | None = None  # hybrid: what each channel found, to build the page's hits from


Ranking = PartitionRanking | GlobalRanking


@dataclass(frozen=True)
class Page:
    hits: list[query_pb2.SearchHit]
    next_cursor: str  # "" on the walk's last page


def by_distance(lane_hits: list[LaneHit]) -> GlobalRanking:
    """The semantic lane's order: nearest first."""
    hits = [vector_hit(h) for h in lane_hits]
    ordered = [Ordered(h.session.id, h.match.score, h.match.scores.retrieval, h) for h in hits]
    return GlobalRanking(ordered, lower_is_better=True)


def by_fusion(fused: list[FusedHit], channels: Channels | None) -> GlobalRanking:
    """The hybrid lane's fused order; only the page's hits are built (fused_hit)."""
    return GlobalRanking([Ordered(f.session_id, f.score, f.retrieval, f) for f in fused], False, channels)


def page(prepared: Prepared, ranking: Ranking) -> Page:
    """The requested page of the lane's order, ranks numbered over the walk, and the next page's cursor
    when more follow."""
    if isinstance(ranking, PartitionRanking):
        hits, more, anchors = _partition_page(prepared, ranking)
    else:
        hits, more, anchors = _global_page(prepared, ranking)
    served = prepared.served
    for rank, hit in enumerate(hits, start=served + prepared.offset + 1):
        hit.match.rank = rank
    next_cursor = ""
    if more:
        walked = served + prepared.offset + prepared.limit
        next_cursor = cursors.encode(cursors.Cursor(prepared.bound, prepared.now_ms, walked, anchors))
    if not prepared.run.controls.include_scores:
        for hit in hits:
            hit.match.ClearField("scores")
    return Page(hits, next_cursor)


def _partition_page(
    prepared: Prepared, ranking: PartitionRanking
) -> tuple[list[query_pb2.SearchHit], bool, dict[int, cursors.Anchor]]:
    """The page's hits, whether more follow, and each partition's anchor after it."""
    end = prepared.offset + prepared.limit
    hits = [lexical_hit(h, ranking.lane) for h in ranking.hits]
    hits = _above(hits, prepared.run.controls.min_score, lambda h: h.match.scores.retrieval)
    anchors = _partition_anchors(ranking.hits[: min(len(hits), end)], prepared.anchors)
    return hits[prepared.offset : end], len(hits) > end, anchors


def _global_page(
    prepared: Prepared, ranking: GlobalRanking
) -> tuple[list[query_pb2.SearchHit], bool, dict[int, cursors.Anchor]]:
    """The page's hits, whether more follow, and the global anchor after it."""
    end = prepared.offset + prepared.limit
    ordered = _above(ranking.ordered, prepared.run.controls.min_score, lambda o: o.retrieval)
    if cursors.GLOBAL in prepared.anchors:
        ordered = after_anchor(ordered, prepared.anchors[cursors.GLOBAL], ranking.lower_is_better)
    consumed = ordered[:end]
    last = consumed[-1] if consumed else None
    anchors = {cursors.GLOBAL: cursors.Anchor(last.score, last.session_id)} if last else {}
    return [o.hit(ranking.channels) for o in ordered[prepared.offset : end]], len(ordered) > end, anchors


def _partition_anchors(consumed: list[LaneHit], previous: dict[int, cursors.Anchor]) -> dict[int, cursors.Anchor]:
    """Each partition's last consumed session (its BM25, or its sort time when unranked) and the replica
    that served it; a partition that served nothing more keeps its previous anchor."""
    anchors = dict(previous)
    for hit in consumed:
        assert hit.partition_hit is not None
        key = hit.partition_hit.score if hit.partition_hit.ranked else float(hit.partition_hit.sort_time_ms)
        anchors[hit.partition] = cursors.Anchor(key, hit.session_id, hit.node)
    return anchors


def after_anchor(ordered: list[Ordered], anchor: cursors.Anchor, lower_is_better: bool) -> list[Ordered]:
    """The sessions after a cursor's anchor: those after the anchor's session where the order still
    holds it with its score (fused ties are ordered by more than the score and the id), else by the
    score and the id."""
    for position, one in enumerate(ordered):
        if one.session_id == anchor.session_id and one.score == anchor.key:
            return ordered[position + 1 :]
    return [o for o in ordered if o.after(anchor, lower_is_better)]


def fusion_depth(wanted: int) -> int:
    """How many sessions each hybrid channel contributes to fill `wanted` fused hits: FUSION_DEPTH, or
    twice what is wanted when more are, because a fused list draws on the union of the channels, and a
    session low in one channel but present in another must still be there to be fused. On SciFact
    (bench/RESULTS.md), fusing each channel's top 200 for 100 hits raised recall@100 of RRF from 0.950
    to 0.965 with the same nDCG@10."""
    return max(FUSION_DEPTH, 2 * wanted)


def _above(hits: list[_T], min_score: float | None, retrieval: Callable[[_T], float]) -> list[_T]:
    """The hits before the first whose retrieval score is below min_score: every lane's order is
    descending in it, so this drops exactly the hits below it, and nothing after them is served."""
    if min_score is None:
        return hits
    for i, hit in enumerate(hits):
        if retrieval(hit) < min_score:
            return hits[:i]
    return hits
