"""gRPC face of a shard's assertions (AssertionService), served by the index node beside IndexService."""

from __future__ import annotations

import grpc

from quarry.core.errors import QuarryError
from quarry.core.node import typed_errors
from quarry.core.public_refs import bare_assertion_id
from quarry.index.lexical.assertions import AssertionStore
from quarry.v1 import assertions_pb2, assertions_pb2_grpc, errors_pb2, units_pb2


class AssertionServicer(assertions_pb2_grpc.AssertionServiceServicer):
    def __init__(self, store: AssertionStore) -> None:
        self.store = store

    @typed_errors
    def WriteAssertion(
        self, request: assertions_pb2.WriteAssertionRequest, context: grpc.ServicerContext
    ) -> units_pb2.Assertion:
        return self.store.write(request.assertion)

    @typed_errors
    def GetAssertion(
        self, request: assertions_pb2.GetAssertionRequest, context: grpc.ServicerContext
    ) -> units_pb2.Assertion:
        assertion = self.store.get(request.id)
        if assertion is None:
            raise QuarryError(errors_pb2.NOT_FOUND, f"no assertion {bare_assertion_id(request.id)!r}", parameter="id")
        return assertion

    @typed_errors
    def ListCandidates(
        self, request: assertions_pb2.ListCandidatesRequest, context: grpc.ServicerContext
    ) -> assertions_pb2.CandidateList:
        entries = self.store.list_candidates(request.target_ref, request.review, request.limit)
        return assertions_pb2.CandidateList(entries=entries)

    @typed_errors
    def JudgeCandidate(
        self, request: assertions_pb2.JudgeCandidateRequest, context: grpc.ServicerContext
    ) -> assertions_pb2.JudgeCandidateResponse:
        return self.store.judge(request.id, request.judgment, request.reason, request.kind, request.body)
