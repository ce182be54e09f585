"""Assertion calls on the query node, routed to the partition that holds the target's session.

An assertion lives in the partition of the session its target belongs to. Assertion ids are global
digests, so a call that names only an assertion (judging it, or asserting about it) first asks every
partition which one holds it: at most one does. A lookup that could not reach every partition and did
not find the assertion says so (PARTITION_UNAVAILABLE) rather than NOT_FOUND.

Writes and judgments go to the partition's only copy in the embedded default; in a cluster on the
log they are records of the log, which every replica applies (assertion_log.py)."""

from __future__ import annotations

from quarry.cluster.log_records import ASSERT, JUDGE
from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.core.public_refs import bare_assertion_id, parse_ref
from quarry.core.routing import partition_for
from quarry.query.assertion_log import AssertionLog
from quarry.query.cluster_client import ClusterClient
from quarry.query.partial import unavailable
from quarry.query.scatter import Deadline
from quarry.v1 import assertions_pb2, errors_pb2, units_pb2

DEADLINE_MS = 5000.0
DEFAULT_LIMIT = 50


class AssertionRouter:
    def __init__(self, cluster: ClusterClient, log: AssertionLog | None = None) -> None:
        """`log`: in a cluster on the log, where writes and judgments are published."""
        self.cluster = cluster
        self.log = log

    def write(self, request: assertions_pb2.WriteAssertionRequest) -> units_pb2.Assertion:
        target = parse_ref(request.assertion.target_ref, "assertion.target_ref")
        if target.session_id:
            partition = partition_for(target.session_id, self.cluster.partitions)
            if auth.SCOPES.get() is not None and not self.cluster.holds_session(
                target.session_id, Deadline(DEADLINE_MS)
            ):
                raise QuarryError(
                    errors_pb2.NOT_FOUND,
                    f"no session {target.session_id!r} in the archive",
                    parameter="assertion.target_ref",
                )
        else:
            partition = self._holder(target.id, "assertion.target_ref")
        if self.log is not None:
            return self.log.apply(partition, ASSERT, request.SerializeToString()).assertion
        call = assertions_pb2.PartitionWriteAssertion(partition=partition, request=request)
        return self.cluster.assertions.write_assertion(partition, call, Deadline(DEADLINE_MS))

    def list_candidates(self, request: assertions_pb2.ListCandidatesRequest) -> assertions_pb2.CandidateList:
        """One partition for a target in a session; every partition otherwise, merged pending first, then
        oldest (the partitions that did not answer are left out)."""
        partitions = None
        if request.target_ref:
            target = parse_ref(request.target_ref, "target_ref")
            if target.session_id:
                partitions = [partition_for(target.session_id, self.cluster.partitions)]
        fanned = self.cluster.assertions.list_candidates(
            lambda ps: assertions_pb2.NodeListCandidates(partitions=ps, request=request),
            Deadline(DEADLINE_MS),
            partitions=partitions,
        )
        if partitions is not None and fanned.missing:
            raise unavailable(fanned.missing)
        entries = sorted(
            (e for r in fanned.results.values() for e in r.entries),
            key=lambda e: (e.assertion.status != "candidate", e.assertion.created_ms, e.assertion.id),
        )
        return assertions_pb2.CandidateList(entries=entries[: request.limit or DEFAULT_LIMIT])

    def judge(self, request: assertions_pb2.JudgeCandidateRequest) -> assertions_pb2.JudgeCandidateResponse:
        partition = self._holder(bare_assertion_id(request.id), "id")
        if self.log is not None:
            return self.log.apply(partition, JUDGE, request.SerializeToString()).judged
        call = assertions_pb2.PartitionJudgeCandidate(partition=partition, request=request)
        return self.cluster.assertions.judge_candidate(partition, call, Deadline(DEADLINE_MS))

    def find(self, assertion_id: str) -> tuple[int, units_pb2.Assertion] | None:
        """The partition holding the assertion and the assertion, asking every partition; None when
        none has it (PARTITION_UNAVAILABLE when a partition that did not answer might)."""
        fanned = self.cluster.assertions.get_assertion(
            lambda ps: assertions_pb2.NodeGetAssertion(partitions=ps, id=assertion_id),
            Deadline(DEADLINE_MS),
        )
        for partition, answer in sorted(fanned.results.items()):
            if answer.found:
                return partition, answer.assertion
        if fanned.missing:
            raise unavailable(fanned.missing)
        return None

    def _holder(self, assertion_id: str, parameter: str) -> int:
        """The partition holding the assertion; NOT_FOUND when none does."""
        found = self.find(assertion_id)
        if found is None:
            raise QuarryError(errors_pb2.NOT_FOUND, f"no assertion {assertion_id!r}", parameter=parameter)
        return found[0]
