"""QueryService.Facets: session counts per facet value over the archive, summed across partitions.

Two views (docs/search-api.md#facets): `global`, every session of the archive, always
counted; `scoped`, the sessions a query and / or an origin filter select, counted only when one is
given (`scoped_to_query`). Each partition counts its own sessions for both views in one PartitionFacets call;
this node sums the counts per value and computes each value's IDF from the global sums:
idf = ln((1 + N) / (1 + n)), N the archive's sessions and n the sessions with the value (a smoothed
variant of ln(N / (1 + n)): never negative, 0 for a value every session has). A scoped value carries
the IDF of the same value in the global view.

Families: origins, tags and count_buckets by default; repos, hosts (the machines sessions were read
on), pushers (the tokens that wrote them) and action_types are deferred by default (archive-wide scans
over more rows, or needed by few) and counted when asked for by name or with include_deferred.

Budget: every partition is asked in parallel (one call per index node) with the time left, and
answered for at most that long; a partition stops starting family scans (and interrupts the running
one) a margin before it. A family is complete when every partition that answered counted it; the
others are marked deferred with reason `budget_exceeded`, and the response says `budget_exceeded`.
Nothing waits past the budget. A partition with no replica answering is left out and named in
`missing` (`partial`), its sessions absent from both views' totals.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence

from quarry.core.errors import QuarryError
from quarry.core.vocab import ORIGINS, well_formed_origin
from quarry.dsl import CompiledQuery
from quarry.query.cluster_client import ClusterClient
from quarry.query.partial import missing_partitions
from quarry.query.plans import conjoined
from quarry.query.scatter import Deadline
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, query_pb2

FAMILIES = ("origins", "tags", "repos", "hosts", "pushers", "action_types", "count_buckets")
DEFERRED_BY_DEFAULT = ("repos", "hosts", "pushers", "action_types")
DEFAULT_BUDGET_MS = 5000.0
MAX_BUDGET_MS = 60_000.0
PARTITION_SHARE = 0.8  # of the time left, what a partition may spend counting (the rest carries the answer back)

PlanResolver = Callable[[plan_pb2.QueryPlan, Deadline], plan_pb2.QueryPlan]


def _invalid(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)


class FacetCounter:
    """Serves Facets over the partitions. `compile` turns a query into a plan (with this node's
    clock); `resolve` resolves the plan's semantic leaves on the vector node within a deadline."""

    def __init__(
        self,
        cluster: ClusterClient,
        compile: Callable[[str], CompiledQuery],
        resolve: PlanResolver,
    ) -> None:
        self.cluster = cluster
        self.compile = compile
        self.resolve = resolve

    def facets(self, request: query_pb2.FacetsRequest) -> query_pb2.FacetsResponse:
        budget_ms = _budget(request.budget_ms)
        deadline = Deadline(budget_ms)
        generated_at = int(time.time() * 1000)
        wanted, skipped_reason = _families(request)
        origins = _origins(request.origins)
        where = self._scope(request.query, origins, deadline)
        scoped = where is not None
        partition_request = index_pb2.PartitionFacetsRequest(families=wanted, scoped=scoped)
        if where is not None:
            partition_request.where.CopyFrom(where)
        answers, missing = self._ask_partitions(partition_request, deadline)
        use_idf = request.idf if request.HasField("idf") else True
        response = query_pb2.FacetsResponse(
            query=request.query,
            origins=origins,
            scoped_to_query=scoped,
            generated_at=generated_at,
            budget_ms=budget_ms,
            idf=use_idf,
        )
        complete = [f for f in wanted if answers and all(f in _done(a) for a in answers)]
        global_total = sum(a.global_sessions for a in answers)
        global_counts = {f: _summed(answers, f, "global_counts") for f in complete}
        idf = _idf(global_total, global_counts) if use_idf else None
        getattr(response, "global").CopyFrom(_view(global_total, global_counts, idf))
        if scoped:
            scoped_counts = {f: _summed(answers, f, "scoped_counts") for f in complete}
            response.scoped.CopyFrom(_view(sum(a.scoped_sessions for a in answers), scoped_counts, idf))
        for family in FAMILIES:
            if family in complete:
                status = query_pb2.FacetFamilyStatus(family=family, status="complete")
                response.complete_families.append(family)
            else:
                reason = "budget_exceeded" if family in wanted else skipped_reason
                status = query_pb2.FacetFamilyStatus(family=family, status="deferred", reason=reason)
                response.deferred_families.append(family)
            response.family_status.append(status)
        response.budget_exceeded = len(complete) < len(wanted)
        if missing:
            response.partial = True
            response.missing.extend(missing_partitions(missing))
            response.caveats.append(
                f"{len(answers)} of {len(answers) + len(missing)} partitions answered within the {budget_ms:g} ms "
                "budget: session totals cover those partitions only"
            )
        return response

    def _scope(self, query: str, origins: list[str], deadline: Deadline) -> plan_pb2.Predicate | None:
        """The predicate of the scoped view: the query's and the origin filter's; None without either."""
        parts: list[plan_pb2.Predicate] = []
        if query.strip():
            compiled = self.compile(query)
            if compiled.kind != "sessions":
                raise QuarryError(
                    errors_pb2.UNSUPPORTED_FORM,
                    f"facets count sessions: `{compiled.unit} where …` selects rows; scope with a session query",
                )
            plan = self.resolve(compiled.plan, deadline)
            parts.append(plan.where if plan.HasField("where") else plan_pb2.Predicate(all=plan_pb2.PredicateList()))
        if origins:
            parts.append(plan_pb2.Predicate(field=plan_pb2.FieldClause(field="origin", values=origins)))
        return conjoined(*parts) if parts else None

    def _ask_partitions(
        self, request: index_pb2.PartitionFacetsRequest, deadline: Deadline
    ) -> tuple[list[index_pb2.PartitionFacetsResponse], dict[int, str]]:
        """The answers of the partitions that answered within the budget, and the others with why."""
        left = _left(deadline)
        if left <= 0:
            return [], {p: "the budget was spent before counting" for p in range(self.cluster.partitions)}
        request.budget_ms = left * 1000.0 * PARTITION_SHARE

        def build(partitions: list[int]) -> index_pb2.PartitionFacetsRequest:
            node_request = index_pb2.PartitionFacetsRequest()
            node_request.CopyFrom(request)
            node_request.partitions.extend(partitions)
            return node_request

        fanned = self.cluster.partition_facets(build, deadline)
        return fanned.ordered(), fanned.missing


def _left(deadline: Deadline) -> float:
    """Seconds left of the budget; 0 once it is spent."""
    try:
        return deadline.remaining_s()
    except QuarryError:
        return 0.0


def _budget(budget_ms: float) -> float:
    if budget_ms < 0 or budget_ms > MAX_BUDGET_MS or math.isnan(budget_ms):
        raise _invalid(f"budget_ms must be 0..{MAX_BUDGET_MS:.0f} (0: {DEFAULT_BUDGET_MS:.0f})", "budget_ms")
    return budget_ms or DEFAULT_BUDGET_MS


def _families(request: query_pb2.FacetsRequest) -> tuple[list[str], str]:
    """The families to count, in family order, and why the others are not counted."""
    unknown = [f for f in request.families if f not in FAMILIES]
    if unknown:
        raise _invalid(f"unknown facet family {unknown[0]!r}: one of {', '.join(FAMILIES)}", "families")
    if request.families:
        return [f for f in FAMILIES if f in set(request.families)], "not_requested"
    if request.include_deferred:
        return list(FAMILIES), "deferred_by_default"
    return [f for f in FAMILIES if f not in DEFERRED_BY_DEFAULT], "deferred_by_default"


def _origins(origins: Sequence[str]) -> list[str]:
    for origin in origins:
        if not well_formed_origin(origin):
            raise _invalid(
                f"{origin!r} is not an origin name (lower-case words joined by -, read here: {', '.join(ORIGINS)})",
                "origins",
            )
    return sorted(set(origins))


def _done(answer: index_pb2.PartitionFacetsResponse) -> set[str]:
    return {f.family for f in answer.families}


def _summed(answers: Sequence[index_pb2.PartitionFacetsResponse], family: str, view: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for answer in answers:
        for item in answer.families:
            if item.family == family:
                for count in getattr(item, view):
                    total[count.value] += count.count
    return total


def _idf(total: int, counts: dict[str, Counter[str]]) -> dict[str, dict[str, float]]:
    return {
        family: {value: round(math.log((1 + total) / (1 + n)), 6) for value, n in values.items()}
        for family, values in counts.items()
    }


def _ordered(family: str, counts: Counter[str]) -> list[tuple[str, int]]:
    """Count buckets in bucket order (by their lower bound: `0`, `1-9`, …, `200+`); other families by
    count (highest first), then value."""
    if family == "count_buckets":
        return sorted(counts.items(), key=lambda item: int(item[0].split("-")[0].rstrip("+")))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _view(total: int, counts: dict[str, Counter[str]], idf: dict[str, dict[str, float]] | None) -> query_pb2.FacetView:
    view = query_pb2.FacetView(total_sessions=total)
    for family in FAMILIES:
        if family not in counts:
            continue
        item = view.families.add(family=family)
        for value, n in _ordered(family, counts[family]):
            facet = item.values.add(value=value, count=n)
            if idf is not None:
                facet.idf = idf[family].get(value, round(math.log(1 + total), 6))
    return view
