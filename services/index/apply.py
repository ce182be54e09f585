"""Applying records of the log to a partition replica (cluster mode): a pure step, on a worker thread.

A batch of records is applied in log order. Consecutive session records (upserts and tombstones) are
applied together: the last record of each session wins (a version, or its deletion), deletions first,
then the versions in one upsert, which stores the sequence of the run's last record as the replica's
checkpoint in the same SQLite transaction as the rows (store.py). Replaying records at or before the
checkpoint is harmless: a version already held is skipped by its content hash, a deletion of a
session not held deletes nothing. Records of other kinds are not this build's to apply: they stop the
batch with an error naming them, rather than being skipped (a replica never silently diverges).
"""

from __future__ import annotations

from collections.abc import Sequence

from quarry.cluster.records import DELETE, UPSERT, Record
from quarry.index.partitions import PartitionReplica
from quarry.v1 import units_pb2


def apply_records(replica: PartitionReplica, records: Sequence[Record]) -> int:
    """Apply the records (in stream order) to the replica; returns the number of sessions written or
    deleted. The replica's checkpoint is the last record's sequence afterwards."""
    changed = 0
    run: list[Record] = []
    for record in records:
        if record.op not in (UPSERT, DELETE):
            raise ValueError(
                f"log record {record.seq} of partition {record.partition} is a {record.op!r}: "
                "this index node cannot apply it (a newer build wrote it?)"
            )
        run.append(record)
    if run:
        changed += _apply_sessions(replica, run)
    return changed


def _apply_sessions(replica: PartitionReplica, run: Sequence[Record]) -> int:
    last: dict[str, Record] = {}
    for record in run:
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
