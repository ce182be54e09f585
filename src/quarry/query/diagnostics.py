"""Why a search found nothing: the caveats an empty envelope carries (empty-result diagnostics,
docs/search-api.md#empty-results), from the plan and the cluster's state, never a guess about the
user's intent.

Each caveat names the check that applies and what to try next: an empty archive, an origin Quarry does
not read (a well-formed name of another agent's origin: valid, it matches nothing), an origin the
archive holds no session of, embeddings missing or still being built for a lane that needs them, a time
bound that may be too narrow; and, from other searches of the same text asked then, what would find
something: the text read as prose, the words without the query's field clauses, the actions lane
(tool calls and their output), the semantic lane (`what_would_find`).

A lexical index that is not ready never shows up here as an empty result: a partition brings its Tantivy
index in line with its store (after a crash or an analyzer upgrade) before it serves, and a partition that
does not answer fails the search with NODE_UNAVAILABLE instead of contributing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quarry.core import session_ids
from quarry.core.lanes import VECTOR_LANES
from quarry.core.vocab import ORIGINS
from quarry.v1 import index_pb2, plan_pb2, vector_pb2


def empty_result_caveats(
    plan: plan_pb2.QueryPlan,
    lane: str,
    partitions: Sequence[index_pb2.PartitionStats],
    vectors: vector_pb2.VectorStats | None,
    stored_origins: set[str] | None = None,
) -> list[str]:
    """`stored_origins`: the origins the archive holds sessions of, when the query names origins."""
    caveats: list[str] = []
    sessions = sum(s.sessions for s in partitions)
    if sessions == 0:
        caveats.append("the archive is empty: no session is stored yet (ingest logs with `quarry ingest`)")
        return caveats
    caveats.extend(unread_origin_caveats(plan))
    if stored_origins is not None:
        missing = [o for o in named_origins(plan) if o in ORIGINS and o not in stored_origins]
        if missing:
            held = ", ".join(sorted(stored_origins)) or "none"
            caveats.append(
                f"the archive holds no session of origin {', '.join(missing)}: check the spelling and the "
                f"sources ingested (origins stored: {held})"
            )
    if lane in VECTOR_LANES:
        if vectors is None or not vectors.embedder:
            caveats.append(f"the {lane} lane needs embeddings, and no embedder is configured")
        elif vectors.vectors == 0 or vectors.pending:
            caveats.append(
                f"embeddings are not ready: {vectors.vectors} stored, {vectors.pending} waiting "
                "(`quarry status` shows the backlog)"
            )
    where = plan.where if plan.HasField("where") else None
    if where is not None and _has_field(where, "date"):
        caveats.append("the query is bounded in time: widen the window (e.g. since:2024-01 instead of since:7d)")
    return caveats


@dataclass(frozen=True)
class Found:
    """What other searches of the same text find, asked when a search finds nothing (each None when it
    was not asked: it could not apply, or it is the search that found nothing)."""

    as_prose: bool | None = None  # the text read as prose, the query language's reading having found nothing
    on_actions: bool | None = None  # the actions lane: tool calls and their output
    on_meaning: bool | None = None  # the semantic lane, where vectors can rank
    without_filters: bool | None = None  # the words alone, without the query's field clauses
    filters: tuple[str, ...] = ()  # those field clauses, as written


def what_would_find(found: Found) -> list[str]:
    """The caveats of an empty answer that name a search that finds something, each with how to ask it."""
    caveats = []
    if found.as_prose:
        caveats.append("read as prose (its words, any of them: `--plain`, `reading: prose`), the text finds sessions")
    if found.without_filters and found.filters:
        caveats.append(
            f"the words alone find sessions: {', '.join(found.filters)} left them all out (check the values, or drop "
            f"{'it' if len(found.filters) == 1 else 'them'})"
        )
    if found.on_actions:
        caveats.append("the words are in tool calls and their output: `--lane actions` finds those sessions")
    if found.on_meaning:
        caveats.append("`--lane semantic` finds sessions by meaning, whatever words they use")
    return caveats


def unread_origin_caveats(plan: plan_pb2.QueryPlan) -> list[str]:
    """An origin the query names (by `origin:` or in a session id) that Quarry does not read: valid,
    and it matches nothing; said so, with the origins it reads."""
    unread = [o for o in named_origins(plan) if o not in ORIGINS]
    if not unread:
        return []
    return [
        f"Quarry does not read sessions of origin {', '.join(unread)} (yet): nothing can match it; the origins "
        f"it reads: {', '.join(ORIGINS)}"
    ]


def named_origins(plan: plan_pb2.QueryPlan) -> list[str]:
    """The origins the query asks for by name, by `origin:` or as a session id's origin (not under a
    negation), in the where clause and the session scope, in order of appearance."""
    named: list[str] = []

    def walk(predicate: plan_pb2.Predicate) -> None:
        kind = predicate.WhichOneof("node")
        if kind == "negate":
            return
        if kind == "field" and predicate.field.field in ("origin", "session"):
            origins = predicate.field.values
            if predicate.field.field == "session":
                origins = [session_ids.origin_of(value) for value in origins]
            named.extend(o for o in origins if o not in named)
        for child in _children(predicate):
            walk(child)

    for part in ("where", "session_scope"):
        if plan.HasField(part):
            walk(getattr(plan, part))
    return named


def _children(predicate: plan_pb2.Predicate) -> list[plan_pb2.Predicate]:
    kind = predicate.WhichOneof("node")
    if kind in ("all", "any"):
        return list(getattr(predicate, kind).items)
    if kind == "negate":
        return [predicate.negate]
    if kind == "exists":
        return [predicate.exists.where] if predicate.exists.HasField("where") else []
    if kind == "seq":
        return list(predicate.seq.steps)
    return []


def _has_field(predicate: plan_pb2.Predicate, name: str) -> bool:
    if predicate.WhichOneof("node") == "field" and predicate.field.field == name:
        return True
    return any(_has_field(child, name) for child in _children(predicate))
