"""Assertion calls on the query node, routed to the shard that holds the target's session.

An assertion lives on the shard of the session its target belongs to. Assertion ids are global
digests, so a call that names only an assertion (judging it, or asserting about it) first asks every
shard which one holds it: exactly one does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from quarry.core.errors import QuarryError
from quarry.core.public_refs import bare_assertion_id, parse_ref
from quarry.core.shards import shard_for
from quarry.query.scatter import Deadline, call, gather, gather_settled
from quarry.v1 import assertions_pb2, assertions_pb2_grpc, errors_pb2, units_pb2

R = TypeVar("R")
DEADLINE_MS = 5000.0
DEFAULT_LIMIT = 50


class AssertionRouter:
    def __init__(self, shards: Sequence[assertions_pb2_grpc.AssertionServiceStub]) -> None:
        self.shards = list(shards)
        self.names = [f"index-{i}" for i in range(len(self.shards))]

    def write(self, request: assertions_pb2.WriteAssertionRequest) -> units_pb2.Assertion:
        target = parse_ref(request.assertion.target_ref, "assertion.target_ref")
        if target.session_id:
            shard = shard_for(target.session_id, len(self.shards))
        else:
            shard = self._holder(target.id, "assertion.target_ref")
        return self._one(shard, self.shards[shard].WriteAssertion, request)

    def list_candidates(self, request: assertions_pb2.ListCandidatesRequest) -> assertions_pb2.CandidateList:
        """One shard for a target in a session; every shard otherwise, merged pending first, then oldest."""
        if request.target_ref:
            target = parse_ref(request.target_ref, "target_ref")
            if target.session_id:
                shard = shard_for(target.session_id, len(self.shards))
                return self._one(shard, self.shards[shard].ListCandidates, request)
        responses = gather(self.names, [call(s.ListCandidates, request) for s in self.shards], Deadline(DEADLINE_MS))
        entries = sorted(
            (e for r in responses for e in r.entries),
            key=lambda e: (e.assertion.status != "candidate", e.assertion.created_ms, e.assertion.id),
        )
        return assertions_pb2.CandidateList(entries=entries[: request.limit or DEFAULT_LIMIT])

    def judge(self, request: assertions_pb2.JudgeCandidateRequest) -> assertions_pb2.JudgeCandidateResponse:
        shard = self._holder(bare_assertion_id(request.id), "id")
        return self._one(shard, self.shards[shard].JudgeCandidate, request)

    def find(self, assertion_id: str) -> tuple[int, units_pb2.Assertion] | None:
        """The shard holding the assertion and the assertion, asking every shard; None when none has it."""
        request = assertions_pb2.GetAssertionRequest(id=assertion_id)
        outcomes = gather_settled(
            self.names, [call(s.GetAssertion, request) for s in self.shards], Deadline(DEADLINE_MS)
        )
        for shard, outcome in enumerate(outcomes):
            if not isinstance(outcome, QuarryError):
                return shard, outcome
            if outcome.code != errors_pb2.NOT_FOUND:
                raise outcome
        return None

    def _holder(self, assertion_id: str, parameter: str) -> int:
        """The shard holding the assertion; NOT_FOUND when none does."""
        found = self.find(assertion_id)
        if found is None:
            raise QuarryError(errors_pb2.NOT_FOUND, f"no assertion {assertion_id!r}", parameter=parameter)
        return found[0]

    def _one(self, shard: int, method: Callable[..., R], request: object) -> R:
        result: R = gather([self.names[shard]], [call(method, request)], Deadline(DEADLINE_MS))[0]
        return result
