"""Fusion of per-channel rankings of sessions (rrf, minmax), the hybrid lane built on it, and the
normalized retrieval scores in [0, 1] that min_score compares (docs/search-api.md#fusion, #scores).

Channels (quarry.core.lanes): text (BM25 over dialogue), action (BM25 over tool traffic), vector
(nearest messages). A channel the request gives no weight weighs DEFAULT_WEIGHT.

- rrf: score = sum over channels of w / (k + rank), rank 1-based, scaled up for a session some channel
  cannot rank (the actions channel, a session without a tool call) by sum over every fused channel of
  w / (k + 1) over that sum for the channels that could rank it; components `<channel>_rank` and
  `<channel>_rrf` (the weighted term, unscaled). Retrieval: score / sum over the fused channels of
  w / (k + 1), so 1.0 is "ranked first by every channel that could rank it".
- minmax: each channel's raw scores (BM25; the vector channel's similarity 1 - d^2/2) min-max
  normalised over its top FUSION_DEPTH, clipped to [0, 1] below that (one hit, or all equal: 1.0);
  score = sum w * norm / sum w over the fused channels that could rank the session, absent channels
  adding 0; components `<channel>_rank` and `<channel>_norm`. Retrieval: the score itself.

Channels weighing 0 still rank (their components and raw scores are reported), but a hit only they
found is dropped. Equal RRF sums (ranks 1 and 2 against 2 and 1) are ordered by the sessions' min-max
score, which sees how far each rank's score stood from its channel's best; what still ties breaks on
session id, so equal scores page deterministically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from quarry.core.lanes import ACTION, DEFAULT_WEIGHT, MINMAX, RRF, RRF_K, TEXT, VECTOR
from quarry.query.envelope import action_match, channel_scores, lexical_match, vector_match
from quarry.v1 import index_pb2, query_pb2, units_pb2, vector_pb2

FUSION_DEPTH = 100  # each channel's top-N that fusion ranks


@dataclass(frozen=True)
class FusionSpec:
    method: str = RRF
    rank_constant: int = RRF_K
    weights: Mapping[str, float] = field(default_factory=dict)  # channel -> weight; missing: DEFAULT_WEIGHT


@dataclass
class FusedHit:
    session_id: str
    score: float
    retrieval: float = 0.0  # normalized [0, 1]
    components: dict[str, float] = field(default_factory=dict)


# ----- normalized retrieval scores ---------------------------------------------------------------------


def bm25_retrieval(bm25: float) -> float:
    """r / (1 + r) of a (positive) Tantivy BM25."""
    r = max(0.0, bm25)
    return r / (1.0 + r)


def similarity(distance: float) -> float:
    """The cosine similarity of unit vectors at L2 distance d: clip(1 - d^2 / 2, -1, 1)."""
    return min(1.0, max(-1.0, 1.0 - distance * distance / 2.0))


def vector_retrieval(distance: float) -> float:
    return max(0.0, similarity(distance))


# ----- fusion -------------------------------------------------------------------------------------------


Unrankable = Mapping[str, frozenset[str]]  # channel -> the sessions it cannot rank (none: every one it can)


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    unrankable: Unrankable | None = None,
    tiebreak: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse channel rankings (channel -> session ids, best first) by weighted Reciprocal Rank Fusion. A
    session a channel cannot rank (`unrankable`: the actions channel and a session without a tool call)
    is not punished for its absence there: its sum is scaled to the channels that could rank it, so two
    first places among the two channels that could rank it are as good as three among three. Equal sums
    (first in one channel against first in the other) are ordered by `tiebreak`, higher first, then by id."""
    weights = weights or {}
    unrankable = unrankable or {}
    fused: dict[str, FusedHit] = {}
    selected: set[str] = set()
    for channel, ranking in rankings.items():
        w = weights.get(channel, DEFAULT_WEIGHT)
        rank_key, rrf_key = f"{channel}_rank", f"{channel}_rrf"
        for rank, session_id in enumerate(ranking, start=1):
            hit = _entry(fused, session_id)
            contribution = w / (k + rank)
            hit.score += contribution
            hit.components[rank_key] = float(rank)
            hit.components[rrf_key] = contribution
        if w > 0:
            selected.update(ranking)
    best = sum(weights.get(channel, DEFAULT_WEIGHT) / (k + 1) for channel in rankings)
    partly = _partly_rankable(unrankable)
    for hit in fused.values():
        if hit.session_id in partly:
            could = sum(
                weights.get(c, DEFAULT_WEIGHT) / (k + 1)
                for c in rankings
                if hit.session_id not in unrankable.get(c, ())
            )
            if 0 < could < best:
                hit.score *= best / could
        hit.retrieval = min(1.0, hit.score / best) if best > 0 else 0.0
    tiebreak = tiebreak or {}
    kept = (h for h in fused.values() if h.session_id in selected)
    return sorted(kept, key=lambda h: (-h.score, -tiebreak.get(h.session_id, 0.0), h.session_id))


def minmax(
    scored: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
    unrankable: Unrankable | None = None,
) -> list[FusedHit]:
    """Fuse channel score lists (channel -> (session id, raw score, higher better), best first) by
    weighted min-max normalisation, over the channels that could rank each session (as rrf)."""
    weights = weights or {}
    unrankable = unrankable or {}
    fused: dict[str, FusedHit] = {}
    selected: set[str] = set()
    for channel, hits in scored.items():
        w = weights.get(channel, DEFAULT_WEIGHT)
        top = [score for _, score in hits[:FUSION_DEPTH]]
        low, high = (min(top), max(top)) if top else (0.0, 0.0)
        rank_key, norm_key = f"{channel}_rank", f"{channel}_norm"
        for rank, (session_id, score) in enumerate(hits, start=1):
            norm = 1.0 if high == low else min(1.0, max(0.0, (score - low) / (high - low)))
            hit = _entry(fused, session_id)
            hit.score += w * norm
            hit.components[rank_key] = float(rank)
            hit.components[norm_key] = norm
        if w > 0:
            selected.update(session_id for session_id, _ in hits)
    every = sum(weights.get(c, DEFAULT_WEIGHT) for c in scored)
    partly = _partly_rankable(unrankable)
    for hit in fused.values():
        could = every
        if hit.session_id in partly:  # the same sum, in the same order, over the channels that could rank it
            could = sum(weights.get(c, DEFAULT_WEIGHT) for c in scored if hit.session_id not in unrankable.get(c, ()))
        hit.score = min(1.0, hit.score / could) if could > 0 else 0.0
        hit.retrieval = hit.score
    return _ordered(h for h in fused.values() if h.session_id in selected)


def _entry(fused: dict[str, FusedHit], session_id: str) -> FusedHit:
    """The session's fused hit, made on its first channel (not built again for every channel after)."""
    hit = fused.get(session_id)
    if hit is None:
        hit = fused[session_id] = FusedHit(session_id, 0.0)
    return hit


def _partly_rankable(unrankable: Unrankable) -> frozenset[str]:
    """The sessions some channel cannot rank: the only ones whose sums leave a channel out."""
    return frozenset().union(*unrankable.values())


def _ordered(hits: Sequence[FusedHit] | object) -> list[FusedHit]:
    return sorted(hits, key=lambda h: (-h.score, h.session_id))  # type: ignore[arg-type]


# ----- the hybrid lane ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Channels:
    """What each channel found, by session id: the evidence a fused hit is built from."""

    texts: dict[str, index_pb2.PartitionHit]
    actions: dict[str, index_pb2.PartitionHit]
    vectors: dict[str, vector_pb2.VectorHit]
    method: str


def fuse(
    text: Sequence[index_pb2.PartitionHit] | None,
    action: Sequence[index_pb2.PartitionHit] | None,
    vector: Sequence[vector_pb2.VectorHit],
    spec: FusionSpec | None = None,
) -> tuple[list[FusedHit], Channels]:
    """The fused order of the dialogue (text), action and vector channels, each list best first; None
    for a lexical channel that did not run (a query without text), which then takes no part in the
    normalization either. Cheap: `fused_hit` builds the hits a page shows."""
    spec = spec or FusionSpec()
    channels = Channels(
        {h.session.id: h for h in text or ()},
        {h.session.id: h for h in action or ()},
        {h.session_id: h for h in vector},
        spec.method,
    )
    ran = {TEXT: text is not None, ACTION: action is not None, VECTOR: True}
    # The actions channel ranks tool calls: a session the dialogue channel found holding none, it cannot rank.
    unrankable = {ACTION: frozenset(sid for sid, h in channels.texts.items() if h.without_tool_calls)}
    scored = {
        TEXT: [(sid, h.score) for sid, h in channels.texts.items()],
        ACTION: [(sid, h.score) for sid, h in channels.actions.items()],
        VECTOR: [(sid, similarity(h.distance)) for sid, h in channels.vectors.items()],
    }
    by_scores = minmax({c: s for c, s in scored.items() if ran[c]}, spec.weights, unrankable)
    if spec.method == MINMAX:
        return by_scores, channels
    rankings = {c: [sid for sid, _ in s] for c, s in scored.items() if ran[c]}
    tiebreak = {h.session_id: h.score for h in by_scores}
    return rrf(rankings, spec.rank_constant, spec.weights, unrankable, tiebreak), channels


def fused_hit(one: FusedHit, channels: Channels) -> query_pb2.SearchHit:
    """A fused session as a hit: it scores its fused score (score_kind rrf or minmax), carries its
    components and its `scores` (the retrieval score and the raw score of each channel that found it).
    Its evidence is the best one it has: the dialogue match when the text channel found it, else the
    action match (match surface action), else its nearest message. Sessions only the vector channel
    found carry just their id (the caller hydrates them)."""
    sid = one.session_id
    texts, actions, vectors = channels.texts, channels.actions, channels.vectors
    if sid in texts:
        session, match = texts[sid].session, lexical_match(texts[sid])
    elif sid in actions:
        session, match = actions[sid].session, action_match(actions[sid])
    else:
        session, match = units_pb2.Session(id=sid), vector_match(vectors[sid])
    match.score = one.score
    match.score_kind = channels.method
    match.score_components.clear()
    match.score_components.update(one.components)
    match.scores.CopyFrom(
        channel_scores(one.retrieval, text=texts.get(sid), action=actions.get(sid), vector=vectors.get(sid))
    )
    return query_pb2.SearchHit(session=session, match=match)
