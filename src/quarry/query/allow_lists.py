"""Which sessions the vector node may answer with. It does not know the query's filters, so the
partitions compute the list a filtered search is restricted to; the caller's scopes it enforces itself
(`VectorStats.scopes_enforced`; a vector node that does not is sent the list of every session the caller may
read, which cost a search ~10 ms at 5.6k sessions) (docs/access.md#scopes):

- the semantic lane's allow-list: the sessions the structured part of the query admits (its text
  taken out: plans.without_text), within the caller's scopes; none when that is every session the vector
  node would answer with anyway;
- a `semantic:` / `near:` leaf of a query (docs/query-language.md) becomes the list of the
  SEMANTIC_LEAF_DEPTH sessions nearest it that the caller may read, before any lane runs; `near:id:` of a
  session the caller may not read fails exactly as one of an unknown session.
"""

from __future__ import annotations

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.query.cluster_client import ClusterClient
from quarry.query.plans import resolve_semantic_leaves, without_text
from quarry.query.run import Run
from quarry.query.scatter import Deadline
from quarry.query.vector_client import VectorClient
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, vector_pb2

SEMANTIC_LEAF_DEPTH = 100  # sessions a `semantic:` leaf admits


class AllowLists:
    def __init__(self, cluster: ClusterClient, vector: VectorClient) -> None:
        self.cluster = cluster
        self.vector = vector

    def for_semantic_lane(self, run: Run) -> list[str] | None:
        """Sessions the structured part of the query admits (and the caller may read); None when that is
        every session the vector node would answer with anyway (every one, or every one of the caller's
        scopes when it enforces them). Partitions that do not answer are reported missing."""
        where = without_text(run.plan.where) if run.plan.HasField("where") else None
        if where is None:
            return self._visible_unless_enforced(run.deadline)
        fanned = self.cluster.match_session_ids(
            lambda partitions: index_pb2.MatchSessionIdsRequest(where=where, partitions=partitions),
            run.deadline,
        )
        run.missing.update(fanned.missing)
        return sorted(sid for r in fanned.results.values() for sid in r.session_ids)

    def visible_sessions(self, deadline: Deadline) -> list[str] | None:
        """Every session the caller may read, when a scope limits the call (None: no limit)."""
        if auth.SCOPES.get() is None:
            return None
        fanned = self.cluster.match_session_ids(
            lambda partitions: index_pb2.MatchSessionIdsRequest(partitions=partitions),
            deadline,
        )
        return sorted(sid for r in fanned.results.values() for sid in r.session_ids)

    def _visible_unless_enforced(self, deadline: Deadline) -> list[str] | None:
        """Every session the caller may read, unless the vector node restricts its searches to the caller's
        scopes itself (None: no list needed)."""
        if auth.SCOPES.get() is None or self.vector.scopes_enforced(deadline):
            return None
        return self.visible_sessions(deadline)

    def resolve_semantic_leaves(self, plan: plan_pb2.QueryPlan, deadline: Deadline) -> plan_pb2.QueryPlan:
        """The plan with each `semantic:` / `near:` leaf replaced by the sessions nearest it."""
        if not plan.HasField("where"):
            return plan
        resolved = plan_pb2.QueryPlan()
        resolved.CopyFrom(plan)

        def nearest(leaf: plan_pb2.Predicate) -> list[str]:
            request = vector_pb2.VectorSearchRequest(limit=SEMANTIC_LEAF_DEPTH)
            if leaf.WhichOneof("node") == "near_session":
                self._require_visible_probe(leaf.near_session, deadline)
                request.near_session_id = leaf.near_session
            else:
                request.text = leaf.semantic
            visible = self._visible_unless_enforced(deadline)
            if visible is not None:
                request.allow_session_ids.extend(visible)
                request.restrict_to_allowed = True
            return [hit.session_id for hit in self.vector.search(request, deadline).hits]

        resolved.where.CopyFrom(resolve_semantic_leaves(plan.where, nearest))
        return resolved

    def _require_visible_probe(self, session_id: str, deadline: Deadline) -> None:
        """`near:id:` of a session the caller may not read fails exactly as one of an unknown session."""
        if auth.SCOPES.get() is None:
            return
        if not self.cluster.holds_session(session_id, deadline):
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"session {session_id!r} has no embedded messages (unknown, or not embedded yet)",
                parameter="near_session_id",
            )
