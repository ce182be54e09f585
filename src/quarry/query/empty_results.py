"""The diagnose phase: what an empty first page says (docs/search-api.md#empty-results).

Only a first page that found nothing and missed no partition is diagnosed. Its caveats come from the
cluster's state (the partitions' stats, the vector node's, the origins the archive holds: worded in
diagnostics.py), then from other searches of the same text, each one page of one hit within what is
left of the request's deadline: the text read as prose, the words without the query's field clauses,
the actions lane, the semantic lane (docs/searching.md#when-nothing-is-found).
"""

from __future__ import annotations

from collections.abc import Callable

from quarry.core.errors import QuarryError
from quarry.core.lanes import ACTIONS, DIALOGUE, VECTOR_LANES
from quarry.core.vocab import ORIGINS
from quarry.dsl.reading import PROSE, QUERY_LANGUAGE, without_field_clauses
from quarry.query.cluster_client import ClusterClient
from quarry.query.diagnostics import Found, empty_result_caveats, named_origins, what_would_find
from quarry.query.run import Prepared
from quarry.query.scatter import Deadline
from quarry.query.vector_client import VectorClient
from quarry.v1 import index_pb2, plan_pb2, query_pb2

Search = Callable[[query_pb2.SearchRequest], query_pb2.SearchEnvelope]  # a search that is not diagnosed


class EmptyResults:
    def __init__(self, cluster: ClusterClient, vector: VectorClient, search: Search) -> None:
        self.cluster = cluster
        self.vector = vector
        self.search = search

    def caveats(self, prepared: Prepared) -> list[str]:
        """What applies to the empty page, then what would find something."""
        run = prepared.run
        why = self._why_empty(run.plan, prepared.lane, run.deadline)
        return why + what_would_find(self._found_elsewhere(prepared))

    def _why_empty(self, plan: plan_pb2.QueryPlan, lane: str, deadline: Deadline) -> list[str]:
        """The empty-result diagnostics that apply, from the cluster's state."""
        partitions = self.cluster.stats(lambda ps: index_pb2.PartitionStatsRequest(partitions=ps), deadline)
        vectors = None
        if lane in VECTOR_LANES and self.vector.stub is not None:
            vectors = self.vector.stats(deadline)
        stored = self._stored_origins(deadline) if named_origins(plan) else None
        return empty_result_caveats(plan, lane, partitions.ordered(), vectors, stored)

    def _found_elsewhere(self, prepared: Prepared) -> Found:
        """What other searches of the text find, where they could (quarry.query.diagnostics.Found)."""
        request, how, lane, deadline = prepared.request, prepared.reading, prepared.lane, prepared.run.deadline

        def finds(query: str, lane: str, reading: str) -> bool:
            probe = query_pb2.SearchRequest(query=query, lane=lane, reading=reading, limit=1, controls=request.controls)
            probe.deadline_ms = max(1.0, deadline.remaining_s() * 1000)
            try:
                return bool(self.search(probe).hits)
            except QuarryError:  # a probe that cannot run (a control of another lane, no time left) finds nothing
                return False

        if not prepared.run.compiled.has_text:
            return Found()
        words, filters = without_field_clauses(request.query) if how == QUERY_LANGUAGE else ("", ())
        return Found(
            as_prose=finds(request.query, DIALOGUE, PROSE) if how == QUERY_LANGUAGE else None,
            without_filters=finds(words, lane, QUERY_LANGUAGE) if filters and words else None,
            filters=filters,
            on_actions=finds(request.query, ACTIONS, how) if lane == DIALOGUE else None,
            on_meaning=self.vector.usable(deadline) if lane not in VECTOR_LANES else None,
        )

    def _stored_origins(self, deadline: Deadline) -> set[str]:
        """The origins the archive holds sessions of (each partition asked for one session per origin;
        the query language admits no other origin names)."""
        stored = set()
        for origin in sorted(ORIGINS):
            where = plan_pb2.Predicate(field=plan_pb2.FieldClause(field="origin", values=[origin]))
            plan = plan_pb2.QueryPlan(unit="sessions", where=where)

            def build(partitions: list[int], plan: plan_pb2.QueryPlan = plan) -> index_pb2.PartitionSearchRequest:
                anchors = [index_pb2.PartitionAnchor(partition=p) for p in partitions]
                return index_pb2.PartitionSearchRequest(plan=plan, limit=1, partitions=anchors)

            if any(r.hits for r in self.cluster.search_sessions(build, deadline).ordered()):
                stored.add(origin)
        return stored
