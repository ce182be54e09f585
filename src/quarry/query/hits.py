"""A lane's sessions as the hits a page shows (docs/search-api.md#sessionsearchmatch): the evidence and
scores of the lane that found them. Every hit's `scores` is computed whatever the request says, so that
nothing can depend on include_scores; the page drops them unless it asked (paging.py)."""

from __future__ import annotations

from collections.abc import Callable

from quarry.core.lanes import ACTION, ACTIONS, DIALOGUE, TEXT
from quarry.query.envelope import action_match, channel_scores, lexical_match, vector_match
from quarry.query.fusion import bm25_retrieval, vector_retrieval
from quarry.query.run import LaneHit
from quarry.v1 import index_pb2, query_pb2, units_pb2

# A lexical lane's evidence, and the channel it ranks with.
EVIDENCE: dict[str, Callable[[index_pb2.PartitionHit], query_pb2.SessionSearchMatch]] = {
    DIALOGUE: lexical_match,
    ACTIONS: action_match,
}
CHANNEL = {DIALOGUE: TEXT, ACTIONS: ACTION}


def lexical_hit(lane_hit: LaneHit, lane: str) -> query_pb2.SearchHit:
    """A dialogue or actions hit: its evidence, and (ranked) its BM25 as scores."""
    partition_hit = lane_hit.partition_hit
    assert partition_hit is not None
    hit = _hit(lane_hit, EVIDENCE[lane](partition_hit))
    if partition_hit.ranked:
        channel = {CHANNEL[lane]: partition_hit}
        hit.match.scores.CopyFrom(channel_scores(bm25_retrieval(partition_hit.score), **channel))
    return hit


def vector_hit(lane_hit: LaneHit) -> query_pb2.SearchHit:
    """A semantic hit: its nearest message, and its distance as scores."""
    found = lane_hit.vector_hit
    assert found is not None
    hit = _hit(lane_hit, vector_match(found))
    hit.match.scores.CopyFrom(channel_scores(vector_retrieval(found.distance), vector=found))
    return hit


def explained(hit: query_pb2.SearchHit, found: index_pb2.PartitionHit, lane: str) -> None:
    """The hit given the summary and evidence its lane's explained answer has (the complete phase)."""
    hit.session.CopyFrom(found.session)
    evidence = EVIDENCE[lane](found)
    match = hit.match
    match.matched_terms[:] = evidence.matched_terms
    match.snippet, match.match_surface = evidence.snippet, evidence.match_surface
    match.message_id, match.target_ref = evidence.message_id, evidence.target_ref


def _hit(lane_hit: LaneHit, match: query_pb2.SessionSearchMatch) -> query_pb2.SearchHit:
    if lane_hit.partition_hit is not None:
        return query_pb2.SearchHit(session=lane_hit.partition_hit.session, match=match)
    return query_pb2.SearchHit(session=units_pb2.Session(id=lane_hit.session_id), match=match)
