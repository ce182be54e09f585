"""Applying records of the log to a partition replica (cluster mode): a pure step, on a worker thread.

A batch of records is applied in log order. Consecutive session records (upserts and tombstones) are
applied together: the last record of each session wins (a version, or its deletion), deletions first,
then the versions in one upsert, which stores the sequence of the run's last record as the replica's
checkpoint in the same SQLite transaction as the rows (store.py). An assertion write or judgment is
applied on its own, between the runs around it, with the query node's clock from the record and its
outcome (or the typed error it failed with) stored under its operation id in the same transaction,
for the query node to read back. Replaying records at or before the checkpoint is harmless: a version
already held is skipped by its content hash, a deletion of a session not held deletes nothing, an
operation with an outcome is not applied again. Which of two copies of a session read from two files the
log holds was decided before it was published (quarry.ingest.publisher): a replica takes every version,
so every replica, and one rebuilt from the compacted log, holds the same one.

Records come with their held payloads read and verified (quarry.cluster.payloads.resolve). A record
marked superseded (its payload was replaced by a newer version's, whose record follows in the log), or
refused (one no writer may put on its subject: quarry.cluster.log_records.decode), changes nothing but the
checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence

from quarry.cluster.log_records import ASSERT, DELETE, JUDGE, UPSERT, Record
from quarry.core.errors import QuarryError
from quarry.index.partition_set import PartitionReplica
from quarry.v1 import assertions_pb2, units_pb2


def apply_records(replica: PartitionReplica, records: Sequence[Record]) -> int:
    """Apply the records (in stream order) to the replica; returns the number of sessions written or
    deleted and operations applied. The replica's checkpoint is the last record's sequence afterwards."""
    changed = 0
    run: list[Record] = []
    for record in records:
        if record.refused:
            continue
        if record.op in (UPSERT, DELETE):
            run.append(record)
            continue
        if run:
            changed += _apply_sessions(replica, run)
            run = []
        changed += _apply_operation(replica, record)
    if run:
        changed += _apply_sessions(replica, run)
    if records and (records[-1].refused or records[-1].op not in (UPSERT, DELETE)):
        replica.lexical.set_applied_seq(records[-1].seq)
    return changed


def _apply_operation(replica: PartitionReplica, record: Record) -> int:
    """An assertion write or judgment, once: its outcome is recorded under its operation id."""
    store = replica.assertions
    if store.outcome(record.op_id) is not None:
        return 0
    try:
        if record.op == ASSERT:
            write = assertions_pb2.WriteAssertionRequest.FromString(record.payload)
            store.write(write.assertion, now_ms=record.now_ms, op_id=record.op_id)
        elif record.op == JUDGE:
            judged = assertions_pb2.JudgeCandidateRequest.FromString(record.payload)
            store.judge(
                judged.id, judged.judgment, judged.reason, judged.kind, judged.body, record.now_ms, record.op_id
            )
        else:
            raise ValueError(
                f"log record {record.seq} of partition {record.partition} is a {record.op!r}: "
                "this index node cannot apply it (a newer build wrote it?)"
            )
    except QuarryError as error:
        store.record_failure(record.op_id, error)
    return 1


def _apply_sessions(replica: PartitionReplica, run: Sequence[Record]) -> int:
    last: dict[str, Record] = {}
    for record in run:
        if record.superseded:
            continue
        last.pop(record.session_id, None)
        last[record.session_id] = record
    deleted_ids = [sid for sid, record in last.items() if record.op == DELETE]
    versions: list[units_pb2.Session] = [record.session() for record in last.values() if record.op == UPSERT]
    checkpoint = run[-1].seq
    changed = 0
    if deleted_ids:
        deleted = replica.lexical.delete(deleted_ids, applied_seq=None if versions else checkpoint)
        replica.assertions.delete_sessions(deleted)
        changed += len(deleted)
    if versions or not deleted_ids:
        response = replica.lexical.upsert(versions, applied_seq=checkpoint)
        changed += response.sessions_written
    return changed
