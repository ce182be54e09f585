"""Per-hit evidence (SessionSearchMatch) for each lane, as docs/search-api.md#sessionsearchmatch lists
the score kinds.

bm25: lower is better. Tantivy's BM25 is higher-is-better, so the reported score is its negation,
the same convention as SQLite FTS5's bm25(). vector_distance: lower is closer. rrf: higher is better.
null (no score, only rank): action-lane hits, whose BM25 over action text the public contract does not
expose yet (score_kind null is the contract for action-only hits), and structural matches.

With include_scores (a search control, docs/search-api.md#scores) a hit also carries `scores`: the
normalized retrieval score and the raw score of each channel that admitted it, in that channel's own
metric (Tantivy BM25, higher is better; L2 distance, lower is better). A channel that did not admit the
hit is absent, never a zero.
"""

from __future__ import annotations

from quarry.core.lanes import ACTION, TEXT, VECTOR
from quarry.v1 import index_pb2, query_pb2, vector_pb2


def lexical_match(hit: index_pb2.PartitionHit) -> query_pb2.SessionSearchMatch:
    if not hit.ranked:
        return unranked_match(hit.session.id)
    return query_pb2.SessionSearchMatch(
        score=-hit.score,
        score_kind="bm25",
        matched_terms=hit.matched_terms,
        snippet=hit.snippet,
        match_surface=hit.match_surface or "message",
        message_id=hit.message_id,
        target_ref=f"message:{hit.message_id}" if hit.message_id else f"session:{hit.session.id}",
    )


def action_match(hit: index_pb2.PartitionHit) -> query_pb2.SessionSearchMatch:
    """An actions-lane hit: ranked by the partition's BM25 over action text, reported by rank alone."""
    if not hit.ranked:
        return unranked_match(hit.session.id)
    return query_pb2.SessionSearchMatch(
        matched_terms=hit.matched_terms,
        snippet=hit.snippet,
        match_surface="action",
        message_id=hit.message_id,
        target_ref=f"message:{hit.message_id}" if hit.message_id else f"session:{hit.session.id}",
    )


def vector_match(hit: vector_pb2.VectorHit | None) -> query_pb2.SessionSearchMatch:
    if hit is None:
        return query_pb2.SessionSearchMatch()
    return query_pb2.SessionSearchMatch(
        score=hit.distance,
        score_kind="vector_distance",
        match_surface="message",
        message_id=hit.message_id,
        target_ref=f"message:{hit.message_id}",
    )


def channel_scores(
    retrieval: float,
    text: index_pb2.PartitionHit | None = None,
    action: index_pb2.PartitionHit | None = None,
    vector: vector_pb2.VectorHit | None = None,
) -> query_pb2.HitScores:
    """The retrieval score and the raw score of each channel that found the hit."""
    scores = query_pb2.HitScores(retrieval=retrieval)
    for channel, hit in ((TEXT, text), (ACTION, action)):
        if hit is not None and hit.ranked:
            scores.channels[channel].CopyFrom(_bm25(hit.score))
    if vector is not None:
        scores.channels[VECTOR].CopyFrom(_l2(vector.distance))
    return scores


def _bm25(raw: float) -> query_pb2.ChannelScore:
    return query_pb2.ChannelScore(raw=raw, metric="tantivy_bm25", higher_is_better=True)


def _l2(raw: float) -> query_pb2.ChannelScore:
    return query_pb2.ChannelScore(raw=raw, metric="l2_distance", higher_is_better=False)


def unranked_match(session_id: str) -> query_pb2.SessionSearchMatch:
    """A structural match (filters only): rank but no score (score_kind null)."""
    return query_pb2.SessionSearchMatch(match_surface="session", target_ref=f"session:{session_id}")
