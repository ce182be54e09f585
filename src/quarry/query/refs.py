"""Public ref resolution on the query node (QueryService.ResolveRef), routed like assertion calls.

Every ref but an assertion's names its session, so it goes to a replica of the one partition holding
that session (`partition_for`), which reads the object (quarry.index.lexical.refs). An assertion id is
global: every partition is asked, and the one holding it answers. A malformed ref, or a ref to
nothing, comes back unresolved with caveats: never an error, never a search."""

from __future__ import annotations

from quarry.core.errors import QuarryError
from quarry.core.public_refs import parse_ref
from quarry.core.routing import partition_for
from quarry.query import limits
from quarry.query.assertions import AssertionRouter
from quarry.query.cluster_client import ClusterClient
from quarry.query.scatter import Deadline
from quarry.v1 import index_pb2, refs_pb2

DEADLINE_MS = 5000.0


class RefResolver:
    def __init__(self, cluster: ClusterClient, assertions: AssertionRouter) -> None:
        self.cluster = cluster
        self.assertions = assertions

    def resolve(self, request: refs_pb2.ResolveRefRequest) -> refs_pb2.ResolvedRef:
        limits.check_max_chars(request.max_chars)
        try:
            ref = parse_ref(request.ref)
        except QuarryError as error:
            return refs_pb2.ResolvedRef(ref=request.ref, caveats=[error.message])
        if ref.kind == "assertion":
            return self._assertion(request.ref, ref.id)
        partition = partition_for(ref.session_id, self.cluster.partitions)
        call = index_pb2.PartitionResolveRefRequest(partition=partition, request=request)
        return self.cluster.resolve_ref(partition, call, Deadline(DEADLINE_MS))

    def _assertion(self, ref: str, assertion_id: str) -> refs_pb2.ResolvedRef:
        found = self.assertions.find(assertion_id)
        if found is None:
            missing = f"no assertion {assertion_id!r} in the archive"
            return refs_pb2.ResolvedRef(ref=ref, kind="assertion", caveats=[missing])
        _, assertion = found
        return refs_pb2.ResolvedRef(
            ref=ref, kind="assertion", resolved=True, session_id=assertion.session_id, assertion=assertion
        )
