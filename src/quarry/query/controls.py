"""Search controls (docs/search-api.md#search-controls): strict validation and the effective values a
search runs with.

`validate` runs in Coordinator.search before any partition or vector node is asked, so an empty archive
never bypasses it. Every rejection is INVALID_REQUEST naming the parameter path
(`controls.fusion.params.weights.vector`). What it checks:

- unknown fields on any controls message (a client built from a newer schema): the path ends in the
  field number, `controls.fusion.params.#7`;
- ranges: lexical_coverage [0, 1], lexical_min_matched_terms [1, 64], min_semantic_similarity
  [-1, 1], min_score [0, 1], rank_constant [1, 10000], weights [0, 100]; floats must be finite;
- fusion method rrf (the default) or minmax; a rank constant is rrf's alone;
- channels: each lane enables its own (quarry.core.lanes.CHANNELS: dialogue: text; actions: action;
  semantic: vector; hybrid: all three); a weight key must name one of them, even with weight 0, and
  the enabled channels' total weight must be positive; lexical admission fields are for lanes with a
  lexical channel, the semantic threshold for lanes with the vector channel (explicit values, even
  equal to a default);
- min_score needs a ranked result: a lexical query without text lists sessions unranked.

The capability check (a vector lane needs a vector node with an embedder) needs the cluster, so the
coordinator makes it right after this, from `Effective.vector_requirement`, still before the archive
is touched.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from google.protobuf import unknown_fields
from google.protobuf.message import Message

from quarry.core.errors import QuarryError
from quarry.core.lanes import (
    ACTION,
    CHANNELS,
    DEFAULT_WEIGHT,
    FUSION_METHODS,
    LEXICAL_CHANNELS,
    LEXICAL_LANES,
    MINMAX,
    RRF,
    RRF_K,
    TEXT,
    VECTOR,
)
from quarry.query.prose import PROSE_ADMISSION, prose_weights
from quarry.v1 import errors_pb2, index_pb2, query_pb2

DEFAULT_COVERAGE = 0.25
DEFAULT_MIN_MATCHED_TERMS = 2
MAX_MATCHED_TERMS = 64
MAX_RANK_CONSTANT = 10_000
MAX_WEIGHT = 100.0

_ROOT = "controls"


@dataclass(frozen=True)
class Effective:
    """The controls a search runs with: the request's values, defaults filled in."""

    lane: str
    channels: tuple[str, ...]  # enabled by the lane
    lexical_admission: tuple[float, int] | None  # (coverage, min matched terms); None: every term (AND)
    min_similarity: float | None  # the vector channel's threshold; None: none
    method: str  # rrf | minmax
    rank_constant: int  # rrf's k (unused by minmax)
    weights: dict[str, float]  # every enabled channel
    min_score: float | None
    include_scores: bool
    vector_requirement: str  # the parameter that needs a vector node with an embedder; "" when nothing does

    def partition_admission(self) -> index_pb2.LexicalAdmission | None:
        if self.lexical_admission is None:
            return None
        coverage, min_terms = self.lexical_admission
        return index_pb2.LexicalAdmission(coverage=coverage, min_matched_terms=min_terms)

    def to_proto(self) -> query_pb2.SearchControls:
        """What the envelope echoes: every value the search used."""
        out = query_pb2.SearchControls(include_scores=self.include_scores)
        out.admission.SetInParent()
        if self.lexical_admission is not None:
            out.admission.lexical_coverage, out.admission.lexical_min_matched_terms = self.lexical_admission
        if self.min_similarity is not None:
            out.admission.min_semantic_similarity = self.min_similarity
        out.fusion.method = self.method
        if self.method == RRF:
            out.fusion.params.rank_constant = self.rank_constant
        out.fusion.params.weights.update(self.weights)
        if self.min_score is not None:
            out.min_score = self.min_score
        return out

    def digest(self) -> str:
        """What a cursor binds: everything that selects or orders hits. include_scores only adds
        metadata to the same hits in the same order, so a walk may switch it between pages."""
        echoed = self.to_proto()
        echoed.ClearField("include_scores")
        return hashlib.sha256(echoed.SerializeToString(deterministic=True)).hexdigest()[:16]


def validate(
    controls: query_pb2.SearchControls | None, lane: str, has_text: bool, prose: str | None = None
) -> Effective:
    """The effective controls of a search on the resolved `lane`; INVALID_REQUEST naming the path of
    the first invalid parameter. `has_text`: whether the query has text a lexical lane can rank.
    `prose`: the search's text when it was read as prose, whose admission, fusion method and channel
    weights, where the caller sets none, are those of quarry.query.prose."""
    controls = controls if controls is not None else query_pb2.SearchControls()
    _reject_unknown(controls, _ROOT)
    channels = CHANNELS[lane]
    admission = controls.admission
    lexical = _lexical_admission(admission, channels)
    if lexical is None and prose is not None and any(c in LEXICAL_CHANNELS for c in channels):
        lexical = PROSE_ADMISSION
    min_similarity = _semantic_admission(admission, channels)
    fuses_prose = prose is not None and len(channels) > 1 and not controls.fusion.params.HasField("rank_constant")
    prose_method = MINMAX if fuses_prose else RRF
    method, rank_constant, weights = _fusion(controls.fusion, channels, prose_method)
    if prose is not None and not controls.fusion.params.weights:
        weights = prose_weights(prose, channels)
    min_score = None
    if controls.HasField("min_score"):
        min_score = _bounded(controls.min_score, 0.0, 1.0, f"{_ROOT}.min_score")
        if lane in LEXICAL_LANES and not has_text:
            raise _invalid(
                "min_score compares a ranking score, and a query without text lists sessions unranked "
                "(newest first, no score): add words to rank by, or drop min_score",
                f"{_ROOT}.min_score",
            )
    return Effective(
        lane=lane,
        channels=channels,
        lexical_admission=lexical,
        min_similarity=min_similarity,
        method=method,
        rank_constant=rank_constant,
        weights=weights,
        min_score=min_score,
        include_scores=controls.include_scores,
        vector_requirement=_vector_requirement(controls, lane),
    )


def _lexical_admission(admission: query_pb2.Admission, channels: tuple[str, ...]) -> tuple[float, int] | None:
    supplied = [name for name in ("lexical_coverage", "lexical_min_matched_terms") if admission.HasField(name)]
    if not supplied:
        return None
    coverage, min_terms = DEFAULT_COVERAGE, DEFAULT_MIN_MATCHED_TERMS
    if admission.HasField("lexical_coverage"):
        coverage = _bounded(admission.lexical_coverage, 0.0, 1.0, f"{_ROOT}.admission.lexical_coverage")
    if admission.HasField("lexical_min_matched_terms"):
        min_terms = admission.lexical_min_matched_terms
        if not 1 <= min_terms <= MAX_MATCHED_TERMS:
            raise _invalid(
                f"lexical_min_matched_terms must be 1..{MAX_MATCHED_TERMS}, got {min_terms}",
                f"{_ROOT}.admission.lexical_min_matched_terms",
            )
    if not any(c in LEXICAL_CHANNELS for c in channels):
        raise _invalid(
            f"{supplied[0]} admits lexical matches, and the {_lane_of(channels)} lane has no lexical channel",
            f"{_ROOT}.admission.{supplied[0]}",
        )
    return coverage, min_terms


def _semantic_admission(admission: query_pb2.Admission, channels: tuple[str, ...]) -> float | None:
    if not admission.HasField("min_semantic_similarity"):
        return None
    path = f"{_ROOT}.admission.min_semantic_similarity"
    value = _bounded(admission.min_semantic_similarity, -1.0, 1.0, path)
    if VECTOR not in channels:
        raise _invalid(
            f"min_semantic_similarity admits vector matches, and the {_lane_of(channels)} lane has no vector "
            "channel (use --lane semantic or hybrid)",
            path,
        )
    return value


def _fusion(
    fusion: query_pb2.Fusion, channels: tuple[str, ...], default_method: str
) -> tuple[str, int, dict[str, float]]:
    method = fusion.method or default_method
    if method not in FUSION_METHODS:
        raise _invalid(
            f"fusion method {fusion.method!r} is not one of {', '.join(FUSION_METHODS)}", f"{_ROOT}.fusion.method"
        )
    params = fusion.params
    rank_constant = RRF_K
    if params.HasField("rank_constant"):
        path = f"{_ROOT}.fusion.params.rank_constant"
        if method != RRF:
            raise _invalid(f"rank_constant is a parameter of {RRF}; the {method} method ranks by scores", path)
        rank_constant = params.rank_constant
        if not 1 <= rank_constant <= MAX_RANK_CONSTANT:
            raise _invalid(f"rank_constant must be 1..{MAX_RANK_CONSTANT}, got {rank_constant}", path)
    weights = dict.fromkeys(channels, DEFAULT_WEIGHT)
    for name in sorted(params.weights):
        path = f"{_ROOT}.fusion.params.weights.{name}"
        value = _bounded(params.weights[name], 0.0, MAX_WEIGHT, path)
        if name not in channels:
            known = "an enabled channel" if name in (TEXT, ACTION, VECTOR) else "a channel"
            raise _invalid(
                f"{name!r} is not {known} of the {_lane_of(channels)} lane (its channels: {', '.join(channels)})",
                path,
            )
        weights[name] = value
    if sum(weights.values()) == 0:
        raise _invalid(
            f"the channels of the {_lane_of(channels)} lane weigh 0 in total: nothing could rank",
            f"{_ROOT}.fusion.params.weights",
        )
    return method, rank_constant, weights


def _vector_requirement(controls: query_pb2.SearchControls, lane: str) -> str:
    """Which part of the request needs vectors (lane first: it is why the others were allowed)."""
    if VECTOR in CHANNELS[lane]:
        return "lane"
    if controls.admission.HasField("min_semantic_similarity"):
        return f"{_ROOT}.admission.min_semantic_similarity"
    if VECTOR in controls.fusion.params.weights:
        return f"{_ROOT}.fusion.params.weights.{VECTOR}"
    return ""


def _reject_unknown(message: Message, path: str) -> None:
    """Fields this node's schema does not know, in this message or a nested controls message."""
    for field in unknown_fields.UnknownFieldSet(message):
        raise _invalid(
            f"unknown field number {field.field_number} in {path} (a client built from a newer schema?)",
            f"{path}.#{field.field_number}",
        )
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and not descriptor.message_type.GetOptions().map_entry:
            _reject_unknown(value, f"{path}.{descriptor.name}")


def _bounded(value: float, low: float, high: float, path: str) -> float:
    if not math.isfinite(value) or not low <= value <= high:
        raise _invalid(f"{path.rsplit('.', 1)[-1]} must be a finite number in [{low:g}, {high:g}], got {value}", path)
    return value


def _lane_of(channels: tuple[str, ...]) -> str:
    return next(lane for lane, enabled in CHANNELS.items() if enabled == channels)


def _invalid(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)
