"""Public ref resolution on the query node (QueryService.ResolveRef), routed like assertion calls.

Every ref but an assertion's names its session, so it goes to the one shard holding that session
(`shard_for`), which reads the object (quarry.index.lexical.refs). An assertion id is global: every
shard's AssertionService is asked, and the one holding it answers. A malformed ref, or a ref to
nothing, comes back unresolved with caveats: never an error, never a search."""

from __future__ import annotations

from collections.abc import Sequence

from quarry.core.errors import QuarryError
from quarry.core.public_refs import parse_ref
from quarry.core.shards import shard_for
from quarry.query.assertions import AssertionRouter
from quarry.query.scatter import Deadline, call, gather
from quarry.v1 import errors_pb2, index_pb2_grpc, refs_pb2

DEADLINE_MS = 5000.0


class RefResolver:
    def __init__(
        self,
        shards: Sequence[index_pb2_grpc.IndexServiceStub],
        assertions: AssertionRouter,
    ) -> None:
        self.shards = list(shards)
        self.assertions = assertions
        self.names = [f"index-{i}" for i in range(len(self.shards))]

    def resolve(self, request: refs_pb2.ResolveRefRequest) -> refs_pb2.ResolvedRef:
        if request.max_chars < 0:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "max_chars must not be negative", parameter="max_chars")
        try:
            ref = parse_ref(request.ref)
        except QuarryError as error:
            return refs_pb2.ResolvedRef(ref=request.ref, caveats=[error.message])
        if ref.kind == "assertion":
            return self._assertion(request.ref, ref.id)
        shard = shard_for(ref.session_id, len(self.shards))
        resolved: refs_pb2.ResolvedRef = gather(
            [self.names[shard]], [call(self.shards[shard].ResolveRef, request)], Deadline(DEADLINE_MS)
        )[0]
        return resolved

    def _assertion(self, ref: str, assertion_id: str) -> refs_pb2.ResolvedRef:
        found = self.assertions.find(assertion_id)
        if found is None:
            missing = f"no assertion {assertion_id!r} in the archive"
            return refs_pb2.ResolvedRef(ref=ref, kind="assertion", caveats=[missing])
        _, assertion = found
        return refs_pb2.ResolvedRef(
            ref=ref, kind="assertion", resolved=True, session_id=assertion.session_id, assertion=assertion
        )
