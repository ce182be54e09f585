"""Session payloads too large to be a record of the log, held in JetStream's object store.

A session version whose payload is over records.HOLD_ABOVE bytes is stored as an object of bucket
`quarry_payloads` (file storage, the log's replicas) before its record is published; the record names
the object and carries the payload's size and SHA-256. Why an object store rather than chunked records
in the log's stream:
- The log stays one record per session subject, so `max_msgs_per_subject: 1` keeps compacting it, and
  replicas, the vector node, `applied` watermarks and the partitions' apply batches keep counting
  records as versions. Chunks in the stream would need a subject each (a subject keeps one message),
  which the stream never compacts: superseded and half-written chunks would need purging by hand, and
  every follower would need to reassemble, and drop, partial versions interleaved with other sessions.
- The object store is that mechanism already, built on a stream of its own: chunks on one subject per
  write, a meta message per object, rollups and purges on replace and delete, replicated like the log.
- What it costs is small beside the rest (bench/large_sessions.py, bench/RESULTS.md "Large sessions"):
  a 30 MB log is a 40 MB payload, stored in about 1 s and read back verified in about 0.5 s, of about
  9 s from ingest to searchable (3 log servers, R=3, `sync_interval: always`); chunked records could
  save a part of that second at most, as their bytes go through the same servers and fsyncs.

Every version is its own object (`<session key>.<payload SHA-256>`), written before its record, so:
- an ingest node dying between the two leaves an object no record names: no replica ever reads it, and
  `sweep` removes it once it is ORPHAN_GRACE_S old (an object younger than that may be a write whose
  record is still being published), as it removes the chunks of a write that never finished;
- a new version never overwrites the object the log's current record names (only the same bytes are
  written to the same name: a re-ingest, whose new chunks are complete before the old are purged), and
  the object a superseded record named is removed once the new record, or a tombstone, is in the log
  (`remove_unreferenced`, which the ingest node calls once the stream acknowledged it);
- a reader that finds a record's object gone, or holding other bytes, checks the log: when a newer
  record of the session is there the record is superseded (skipped: the newer one follows in log
  order), else it is an error (PayloadMissing / PayloadMismatch) and the reader retries.
An object is removed only if the log's latest record of its session does not name it, and by a
compare-and-set on its meta message's sequence (`Nats-Expected-Last-Subject-Sequence`), so a write of
the same object meanwhile is never undone.

Chunks are read by direct gets (any replica of the bucket answers; a lagging one answers "not found",
which is retried), one request per chunk, never a consumer that could wait forever for purged chunks.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from nats.js import api
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, NotFoundError
from nats.js.object_store import ObjectStore

from quarry.cluster.log_records import PAYLOAD, Held, Outgoing, PayloadError, Record
from quarry.cluster.setup import PAYLOAD_BUCKET, PAYLOAD_STREAM, STREAM

CHUNK_BYTES = 512 * 1024  # under a stock server's 1 MiB max_payload; 1 MiB chunks read no faster here
ORPHAN_GRACE_S = 600.0  # beyond any store-then-publish (publish.PUBLISH_TIMEOUT_S is 120 s)
SWEEP_S = 300.0
CHUNKS = f"$O.{PAYLOAD_BUCKET}.C."
METAS = f"$O.{PAYLOAD_BUCKET}.M."
_WRONG_LAST_SEQUENCE = 10071  # JetStream's error code for a failed Nats-Expected-Last-Subject-Sequence

_log = logging.getLogger(__name__)


class PayloadMissing(PayloadError):
    """The object store holds no (whole) object by the name a record gives."""


@dataclass(frozen=True)
class _Meta:
    """An object's meta message: its stream sequence, when it was stored, and what it says."""

    subject: str
    seq: int
    stored: datetime | None
    info: api.ObjectInfo


async def store(js: JetStreamContext, record: Outgoing) -> None:
    """Store the record's held payload as its object (described by the record's subject, for `sweep`)."""
    held = record.held
    assert held is not None
    bucket = ObjectStore(PAYLOAD_BUCKET, PAYLOAD_STREAM, js)
    options = api.ObjectMetaOptions(max_chunk_size=CHUNK_BYTES)
    meta = api.ObjectMeta(name=held.name, description=record.subject, options=options)
    await bucket.put(held.name, record.held_bytes, meta=meta)


async def resolve(js: JetStreamContext, record: Record) -> Record:
    """The record with its held payload read and verified (itself when it holds none), or marked superseded
    when the payload is gone or changed because a newer record of the session is in the log."""
    if record.held is None:
        return record
    try:
        stored = await fetch(js, record.held)
        # Hashing and decompressing tens of MB: off the event loop, which carries the node's heartbeats.
        return await asyncio.get_running_loop().run_in_executor(None, record.with_payload, stored)
    except PayloadError:
        if await _superseded(js, record):
            return record.as_superseded()
        raise


async def fetch(js: JetStreamContext, held: Held) -> bytes:
    """The bytes of the object named; PayloadMissing when the store has no whole object by that name."""
    found = await _meta(js, held.name)
    if found is None or found.info.deleted:
        raise PayloadMissing(f"object {held.name} is not in bucket {PAYLOAD_BUCKET}")
    info = found.info
    subject = CHUNKS + info.nuid
    parts: list[bytes] = []
    seq = 0
    for _ in range(info.chunks or 0):
        try:
            chunk = await js.get_msg(PAYLOAD_STREAM, seq=seq + 1, subject=subject, direct=True, next=True)
        except NotFoundError:
            raise PayloadMissing(f"object {held.name}: chunk {len(parts) + 1} of {info.chunks} is gone") from None
        parts.append(chunk.data or b"")
        seq = chunk.seq or seq + 1
    return b"".join(parts)


async def remove_unreferenced(js: JetStreamContext, names: Iterable[str]) -> list[str]:
    """Remove each object the log's latest record of its session does not name; returns those removed."""
    removed = []
    for name in dict.fromkeys(names):
        found = await _meta(js, name)
        if found is None or found.info.deleted:
            continue
        if not await _referenced(js, found.info) and await _delete(js, found):
            removed.append(name)
    return removed


async def sweep(js: JetStreamContext, older_than_s: float = ORPHAN_GRACE_S) -> int:
    """Remove what no record of the log names and no write is still making: objects stored over
    `older_than_s` ago that their session's latest record does not name, and the chunks of writes that
    never stored their object (as old). Returns how many objects and unfinished writes it removed."""
    info = await js.stream_info(PAYLOAD_STREAM, subjects_filter=f"$O.{PAYLOAD_BUCKET}.>")
    subjects = sorted((info.state.subjects or {}).keys())
    now = datetime.now(UTC)
    removed = 0
    written: set[str] = set()
    for meta_subject in (s for s in subjects if s.startswith(METAS)):
        name = base64.urlsafe_b64decode(meta_subject.removeprefix(METAS)).decode()
        found = await _meta(js, name)
        if found is None:
            continue
        if found.info.deleted:  # a removal that stopped between its steps: its chunks are swept below
            await js.purge_stream(PAYLOAD_STREAM, seq=found.seq + 1, subject=meta_subject)
            continue
        written.add(found.info.nuid)
        if _age_s(found.stored, now) > older_than_s and not await _referenced(js, found.info):
            removed += await _delete(js, found)
    for chunk_subject in (s for s in subjects if s.startswith(CHUNKS)):
        if chunk_subject.removeprefix(CHUNKS) in written:
            continue
        with contextlib.suppress(NotFoundError):
            first = await js.get_msg(PAYLOAD_STREAM, seq=1, subject=chunk_subject, direct=True, next=True)
            if _age_s(first.time, now) > older_than_s:
                await js.purge_stream(PAYLOAD_STREAM, subject=chunk_subject)
                removed += 1
    if removed:
        _log.info("payload sweep: removed %d object(s) or unfinished write(s) no record of the log names", removed)
    return removed


async def _meta(js: JetStreamContext, name: str) -> _Meta | None:
    """The object's meta message (None: no such object)."""
    subject = METAS + base64.urlsafe_b64encode(name.encode()).decode()
    try:
        message = await js.get_last_msg(PAYLOAD_STREAM, subject, direct=True)
    except NotFoundError:
        return None
    info = api.ObjectInfo.from_response(json.loads(message.data or b"{}"))
    return _Meta(subject, int(message.seq or 0), message.time, info)


async def _referenced(js: JetStreamContext, info: api.ObjectInfo) -> bool:
    """Whether the log's latest record on the object's session subject names it. An object without a
    subject was not written by this module: it counts as referenced (left alone). Asked of the stream's
    leader, not by a direct get: a replica that has not yet applied the record just acknowledged (the new
    version, the tombstone) would answer with the one before it, and the object would stay."""
    if not info.description:
        return True
    try:
        latest = await js.get_last_msg(STREAM, info.description)
    except NotFoundError:
        return False
    return bool((latest.headers or {}).get(PAYLOAD) == info.name)


async def _superseded(js: JetStreamContext, record: Record) -> bool:
    """Whether the log holds a newer record on the record's subject (or none any more)."""
    try:
        latest = await js.get_last_msg(STREAM, record.subject, direct=True)
    except NotFoundError:
        return True
    return int(latest.seq or 0) > record.seq


async def _delete(js: JetStreamContext, meta: _Meta) -> bool:
    """Remove the object if `meta` is still its meta message: a deleted meta by compare-and-set on its
    sequence, then its chunks, then its meta messages up to the deleted one (a later write's stays).
    False when the object was written again meanwhile."""
    gone = replace(meta.info, deleted=True, size=0, chunks=0, digest="", mtime="")
    headers = {
        api.Header.ROLLUP.value: "sub",
        api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(meta.seq),
    }
    try:
        ack = await js.publish(
            meta.subject, json.dumps(gone.as_dict()).encode(), stream=PAYLOAD_STREAM, headers=headers
        )
    except APIError as error:
        if error.err_code == _WRONG_LAST_SEQUENCE:
            return False
        raise
    await js.purge_stream(PAYLOAD_STREAM, subject=CHUNKS + meta.info.nuid)
    await js.purge_stream(PAYLOAD_STREAM, seq=ack.seq + 1, subject=meta.subject)
    return True


def _age_s(stamp: datetime | None, now: datetime) -> float:
    return (now - stamp).total_seconds() if stamp is not None else 0.0
