"""Records of the log: what the ingest node (and the query node, for assertion writes) publishes, and
what a replica reads back.

A session record is the serialized `Session` on the session's subject (setup.session_subject); the
stream keeps only the latest record per subject, so a session growing line by line stays one record.
A deletion is a tombstone on the same subject: empty, `Quarry-Op: delete`; it replaces the session's
last version in the log, so a replica rebuilt from the log never sees the session. An assertion write
(`assert`) or judgment (`judge`) is the serialized request on a subject of its own, with the time the
query node took for it (`Quarry-Now-Ms`), so that every replica applying it computes the same result.

Every publish carries a `Nats-Msg-Id` unique to that write and reused by its retries: a retry after a
lost acknowledgement (a log server failing over) is recognized by the stream and stored once.
Payloads over COMPRESS_ABOVE bytes are zstd-compressed (`Quarry-Encoding: zstd`; a session with its
raw events is about 2.4× its source log, 0.40× compressed so, against 0.50× with zlib at level 1, which
records written before are in and which a replica still reads).

A session version whose payload (compressed) is over HOLD_ABOVE bytes is held in the object store
instead (quarry.cluster.payloads says why and how): the record is then empty and names the payload's
object (`Quarry-Payload`: the session key and the payload's SHA-256, so every version has its own
object), its size and digest (`Quarry-Payload-Size`, `Quarry-Payload-Digest`), which a reader checks
before it uses the bytes. HOLD_ABOVE keeps every record under NATS's default `max_payload` (1 MiB), so
the log works on a stock server too.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import zstandard

from quarry.cluster.setup import assertion_subject, partition_of_subject, session_key, session_subject
from quarry.v1 import units_pb2

UPSERT = "upsert"
DELETE = "delete"
ASSERT = "assert"
JUDGE = "judge"
OPS = (UPSERT, DELETE, ASSERT, JUDGE)

OP = "Quarry-Op"
SESSION = "Quarry-Session"
SCOPE = "Quarry-Scope"  # a session version's scope, read by a delete without decoding the version
HASH = "Quarry-Hash"
ENCODING = "Quarry-Encoding"
NOW_MS = "Quarry-Now-Ms"
OP_ID = "Quarry-Op-Id"
FORMAT = "Quarry-Format"
MSG_ID = "Nats-Msg-Id"
PAYLOAD = "Quarry-Payload"
PAYLOAD_SIZE = "Quarry-Payload-Size"
PAYLOAD_DIGEST = "Quarry-Payload-Digest"
# A session version's source file, as the SHA-256 of its path (quarry.ingest.publisher.source_digest): the
# ingest node reads the logged copy back only when another file's copy arrives.
SOURCE_DIGEST = "Quarry-Source-Digest"
FORMAT_VERSION = "1"
COMPRESS_ABOVE = 256 * 1024
COMPRESSION_LEVEL = 3
HOLD_ABOVE = 1024 * 1024 - 64 * 1024  # room for the headers under a 1 MiB max_payload
ENCODINGS = ("zstd", "zlib")


class PayloadError(Exception):
    """A record's held payload cannot be used: absent from the object store, or not the bytes it names."""


class PayloadMismatch(PayloadError):
    """The bytes read are not the payload the record names (their size or digest differs)."""


@dataclass(frozen=True)
class Held:
    """A payload held in the object store: its object's name, and the size and SHA-256 (hex) of its bytes."""

    name: str
    size: int
    digest: str


@dataclass(frozen=True)
class Outgoing:
    """A record to publish: subject, payload and headers (with its message id), and the bytes to store
    in the object store before it is published when the record only names its payload."""

    subject: str
    payload: bytes
    headers: dict[str, str]
    held_bytes: bytes = b""

    @property
    def msg_id(self) -> str:
        return self.headers[MSG_ID]

    @property
    def held(self) -> Held | None:
        return _held(self.headers)

    @property
    def size(self) -> int:
        return len(self.payload) + len(self.held_bytes)


@dataclass(frozen=True)
class Record:
    """A record read back from the log, at its stream sequence.

    A record whose payload is held names it (`held`) with an empty `payload` until `with_payload` gives
    it the bytes read from the object store; `superseded` marks one whose held payload is gone because a
    newer version of the session replaced it (that record follows in the log); `refused` says why one
    is a record no writer may put where it is (changing nothing but the checkpoint, never halting the
    partition behind it)."""

    seq: int
    partition: int
    op: str
    session_id: str
    payload: bytes
    op_id: str = ""
    now_ms: int = 0
    held: Held | None = None
    encoding: str = ""
    superseded: bool = False
    refused: str = ""

    @property
    def subject(self) -> str:
        return session_subject(self.partition, self.session_id)

    def session(self) -> units_pb2.Session:
        if self.held is not None or self.superseded:
            raise ValueError(f"log record {self.seq} of {self.session_id}: its held payload was not read")
        return units_pb2.Session.FromString(self.payload)

    def with_payload(self, stored: bytes) -> Record:
        """This record with its held payload, from `stored` as read from the object store; PayloadMismatch
        unless those are the bytes the record names."""
        assert self.held is not None
        digest = hashlib.sha256(stored).hexdigest()
        if len(stored) != self.held.size or digest != self.held.digest:
            raise PayloadMismatch(
                f"log record {self.seq} of {self.session_id}: object {self.held.name} holds {len(stored)} bytes "
                f"of SHA-256 {digest}, not the {self.held.size} bytes of {self.held.digest} the record names"
            )
        payload = _decoded(stored, self.encoding, f"log record {self.seq} on {self.subject}")
        return replace(self, payload=payload, held=None, encoding="")

    def as_superseded(self) -> Record:
        return replace(self, held=None, encoding="", superseded=True)


def session_record(partition: int, session: units_pb2.Session) -> Outgoing:
    """The record of a session version; its payload held (not in the record) when over HOLD_ABOVE bytes."""
    payload = session.SerializeToString()
    headers = _headers(UPSERT, session.id)
    headers[SCOPE] = session.scope
    if session.content_hash:
        headers[HASH] = session.content_hash
    if len(payload) > COMPRESS_ABOVE:
        payload = zstandard.ZstdCompressor(level=COMPRESSION_LEVEL).compress(payload)
        headers[ENCODING] = "zstd"
    subject = session_subject(partition, session.id)
    if len(payload) <= HOLD_ABOVE:
        return Outgoing(subject, payload, headers)
    digest = hashlib.sha256(payload).hexdigest()
    headers[PAYLOAD] = payload_name(session.id, digest)
    headers[PAYLOAD_SIZE] = str(len(payload))
    headers[PAYLOAD_DIGEST] = digest
    return Outgoing(subject, b"", headers, held_bytes=payload)


def payload_name(session_id: str, digest: str) -> str:
    """The object of one version's payload: the session's key and the payload's digest. A new version is a
    new object: it never overwrites the object of the version before it, which the log may still name."""
    return f"{session_key(session_id)}.{digest}"


def record_bytes(headers: Mapping[str, str] | None, data: bytes | None) -> int:
    """What a record of the log costs to apply: its own bytes and those of the payload it holds."""
    return len(data or b"") + int((headers or {}).get(PAYLOAD_SIZE, 0) or 0)


def _held(headers: Mapping[str, str]) -> Held | None:
    name = headers.get(PAYLOAD)
    if not name:
        return None
    return Held(name, int(headers.get(PAYLOAD_SIZE, "0") or 0), headers.get(PAYLOAD_DIGEST, ""))


def tombstone(partition: int, session_id: str) -> Outgoing:
    return Outgoing(session_subject(partition, session_id), b"", _headers(DELETE, session_id))


def assertion_record(partition: int, op: str, request: bytes, now_ms: int) -> Outgoing:
    op_id = uuid.uuid4().hex
    headers = _headers(op, "")
    headers[OP_ID] = op_id
    headers[NOW_MS] = str(now_ms)
    return Outgoing(assertion_subject(partition, op_id), request, headers)


def _headers(op: str, session_id: str) -> dict[str, str]:
    headers = {MSG_ID: uuid.uuid4().hex, OP: op, FORMAT: FORMAT_VERSION}
    if session_id:
        headers[SESSION] = session_id
    return headers


def decode(subject: str, seq: int, headers: dict[str, Any] | None, data: bytes | None) -> Record:
    """A record from a message of the log; ValueError for one this build cannot read."""
    headers = headers or {}
    op = headers.get(OP, "")
    if op not in OPS:
        raise ValueError(f"log record {seq} on {subject}: unknown operation {op!r}")
    if (op in (UPSERT, DELETE)) != (subject.split(".")[2:3] == ["s"]):
        # Each kind of record has subjects of its own, and NATS lets only its writer publish there (the
        # query node's user may write assertions, never sessions): a record whose header claims another
        # kind than its subject's is forged or broken, and is refused, never applied. (An unknown
        # operation above is different: a newer build may have written it, so the partition waits.)
        why = f"log record {seq} on {subject}: a {op!r} record does not belong on this subject"
        return Record(seq, partition_of_subject(subject), op, "", b"", refused=why)
    encoding = headers.get(ENCODING, "")
    if encoding and encoding not in ENCODINGS:
        raise ValueError(f"log record {seq} on {subject}: unknown encoding {encoding!r}")
    held = _held(headers)
    where = f"log record {seq} on {subject}"
    return Record(
        seq=seq,
        partition=partition_of_subject(subject),
        op=op,
        session_id=headers.get(SESSION, ""),
        payload=b"" if held is not None else _decoded(data or b"", encoding, where),
        op_id=headers.get(OP_ID, ""),
        now_ms=int(headers.get(NOW_MS, "0") or 0),
        held=held,
        encoding=encoding if held is not None else "",
    )


def _decoded(payload: bytes, encoding: str, where: str) -> bytes:
    if encoding == "zstd":
        return zstandard.ZstdDecompressor().decompress(payload)
    if encoding == "zlib":
        return zlib.decompress(payload)
    if encoding:
        raise ValueError(f"{where}: unknown encoding {encoding!r}")
    return payload
