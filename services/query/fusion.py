"""Reciprocal Rank Fusion (k=60) over per-lane rankings of sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60


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
