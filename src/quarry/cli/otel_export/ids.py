"""The projection's stable ids (docs/cluster.md#opentelemetry): a session family's trace id and an
archive object's span id are hashes of the lineage root's session id and of the object's public ref,
so exporting the same sessions twice gives the same ids; and OTLP's nanosecond times."""

from __future__ import annotations

import hashlib

_NS_PER_MS = 1_000_000


def trace_id(root_session_id: str) -> bytes:
    """The trace of a session family: 16 bytes of SHA-256 of its lineage root's session id."""
    return _digest(b"quarry-otel/trace\0", root_session_id, 16)


def span_id(ref: str) -> bytes:
    """The span of an archive object: 8 bytes of SHA-256 of its public ref (`run:<id>`, `action:<id>`)."""
    return _digest(b"quarry-otel/span\0", ref, 8)


def _digest(domain: bytes, text: str, size: int) -> bytes:
    raw = hashlib.sha256(domain + text.encode()).digest()[:size]
    return raw if any(raw) else raw[:-1] + b"\x01"  # an all-zero id is invalid in OTLP


def nanos(ms: int) -> int:
    """OTLP time (Unix nanoseconds) of an archive time in milliseconds; before 1970 is 0."""
    return max(ms, 0) * _NS_PER_MS
