"""Reciprocal Rank Fusion (k=60) over per-lane rankings of sessions, and the hybrid lane built on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from quarry.query.envelope import action_match, lexical_match, vector_match
from quarry.v1 import index_pb2, query_pb2, units_pb2, vector_pb2

RRF_K = 60
# The hybrid lane's inputs, by the names its score components carry (seed 000: <lane>_rank, <lane>_rrf).
TEXT, ACTION, VECTOR = "text", "action", "vector"


@dataclass
class FusedHit:
    session_id: str
    score: float
    components: dict[str, float] = field(default_factory=dict)  # <lane>_rank, <lane>_rrf


def rrf(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> list[FusedHit]:
    """Fuse lane rankings (lane name -> session ids, best first).

    fused_score = sum over lanes of 1 / (k + rank), rank 1-based. Ordered by fused score
    descending, then session id ascending, so equal scores page deterministically."""
    fused: dict[str, FusedHit] = {}
    for lane, ranking in rankings.items():
        for rank, session_id in enumerate(ranking, start=1):
            hit = fused.setdefault(session_id, FusedHit(session_id, 0.0))
            contribution = 1.0 / (k + rank)
            hit.score += contribution
            hit.components[f"{lane}_rank"] = float(rank)
            hit.components[f"{lane}_rrf"] = contribution
    return sorted(fused.values(), key=lambda h: (-h.score, h.session_id))


def hybrid_hits(
    text: Sequence[index_pb2.ShardHit],
    action: Sequence[index_pb2.ShardHit],
    vector: Sequence[vector_pb2.VectorHit],
    k: int = RRF_K,
) -> list[query_pb2.SearchHit]:
    """RRF over the dialogue (text), action and vector lanes, each list best first.

    Every hit scores the sum of its lanes' RRF terms (score_kind rrf) and carries `<lane>_rank` /
    `<lane>_rrf` for each lane it appeared in. Its evidence is the best one it has: the dialogue match
    when the text lane found it, else the action match (match_surface action), else its nearest
    message. Sessions only the vector lane found carry just their id (the caller hydrates them)."""
    texts = {h.session.id: h for h in text}
    actions = {h.session.id: h for h in action}
    vectors = {h.session_id: h for h in vector}
    rankings = {TEXT: list(texts), ACTION: list(actions), VECTOR: list(vectors)}
    hits: list[query_pb2.SearchHit] = []
    for fused in rrf(rankings, k):
        sid = fused.session_id
        if sid in texts:
            session, match = texts[sid].session, lexical_match(texts[sid])
        elif sid in actions:
            session, match = actions[sid].session, action_match(actions[sid])
        else:
            session, match = units_pb2.Session(id=sid), vector_match(vectors[sid])
        match.score = fused.score
        match.score_kind = "rrf"
        match.score_components.clear()
        match.score_components.update(fused.components)
        hits.append(query_pb2.SearchHit(session=session, match=match))
    return hits
