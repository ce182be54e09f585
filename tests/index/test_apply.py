"""Applying records of the log to a partition replica: in log order, the checkpoint stored with the rows,
replays harmless, and assertion operations applied once with their outcome recorded."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.cluster.log_records import ASSERT, JUDGE, Outgoing, assertion_record, decode, session_record, tombstone
from quarry.index.apply import apply_records
from quarry.index.partition_set import PartitionReplica, PartitionSet
from quarry.v1 import assertions_pb2, errors_pb2, units_pb2
from tests.index.sessions import Msg, session

PARTITION = 3


@pytest.fixture
def replica(tmp_path: Path) -> Iterator[PartitionReplica]:
    partitions = PartitionSet(tmp_path)
    yield partitions.open(PARTITION)
    partitions.close_all()


class Log:
    """Records as a replica reads them: decoded from what was published, numbered in order."""

    def __init__(self) -> None:
        self.seq = 0

    def read(self, *published: Outgoing) -> list:
        records = []
        for record in published:
            self.seq += 1
            records.append(decode(record.subject, self.seq, record.headers, record.payload))
        return records


def version(native: str, text: str) -> units_pb2.Session:
    return session(native, [Msg("user", text)], content_hash=f"sha256:{native}:{text}")


def held(replica: PartitionReplica) -> dict[str, str]:
    summaries = replica.lexical.get_sessions([f"claude-code-session:{n}" for n in ("a", "b", "c")])
    return {s.id.split(":")[1]: s.content_hash for s in summaries}


def test_the_last_record_of_a_session_wins_and_the_checkpoint_is_the_last_sequence(replica: PartitionReplica) -> None:
    log = Log()
    records = log.read(
        session_record(PARTITION, version("a", "one")),
        session_record(PARTITION, version("b", "two")),
        session_record(PARTITION, version("a", "three")),
        tombstone(PARTITION, "claude-code-session:b"),
        session_record(PARTITION, version("c", "four")),
    )
    apply_records(replica, records)
    assert held(replica) == {"a": "sha256:a:three", "c": "sha256:c:four"}
    assert replica.lexical.applied_seq == 5


def test_replaying_records_already_applied_changes_nothing(replica: PartitionReplica) -> None:
    log = Log()
    records = log.read(session_record(PARTITION, version("a", "one")), tombstone(PARTITION, "claude-code-session:b"))
    assert apply_records(replica, records) == 1
    digest = replica.lexical.stats(content_digest=True).content_digest
    assert apply_records(replica, records) == 0  # same hash skipped, the deletion finds nothing
    assert replica.lexical.stats(content_digest=True).content_digest == digest


def test_an_assertion_operation_is_applied_once_with_the_log_records_clock(replica: PartitionReplica) -> None:
    log = Log()
    target = version("a", "one")
    write = assertions_pb2.WriteAssertionRequest(
        assertion=units_pb2.Assertion(kind="decision", author="agent", target_ref=f"session:{target.id}", body="x")
    )
    asserted = assertion_record(PARTITION, ASSERT, write.SerializeToString(), now_ms=1_234)
    records = log.read(session_record(PARTITION, target), asserted)
    assert apply_records(replica, records) == 2
    outcome = replica.assertions.outcome(asserted.headers["Quarry-Op-Id"])
    assert outcome is not None and outcome.applied
    assert (outcome.assertion.status, outcome.assertion.created_ms) == ("candidate", 1_234)
    assert replica.lexical.applied_seq == 2  # the checkpoint passes the operation too
    assert apply_records(replica, records[1:]) == 0  # an operation with an outcome is not applied again


def test_a_failed_operation_records_its_typed_error(replica: PartitionReplica) -> None:
    judge = assertions_pb2.JudgeCandidateRequest(id="no-such-assertion", judgment="accept")
    judged = assertion_record(PARTITION, JUDGE, judge.SerializeToString(), now_ms=5)
    apply_records(replica, Log().read(judged))
    outcome = replica.assertions.outcome(judged.headers["Quarry-Op-Id"])
    assert outcome is not None and outcome.error.code == errors_pb2.NOT_FOUND


def test_a_large_session_record_is_compressed_and_an_older_zlib_record_still_reads() -> None:
    session = version("big", "word " * 200_000)
    record = session_record(PARTITION, session)
    assert record.headers["Quarry-Encoding"] == "zstd" and len(record.payload) < len(session.SerializeToString()) / 20
    assert decode(record.subject, 1, record.headers, record.payload).session() == session
    older = {**record.headers, "Quarry-Encoding": "zlib"}
    assert decode(record.subject, 2, older, zlib.compress(session.SerializeToString(), 1)).session() == session
    with pytest.raises(ValueError, match="unknown encoding"):
        decode(record.subject, 3, {**record.headers, "Quarry-Encoding": "brotli"}, record.payload)
