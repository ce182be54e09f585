"""Routing of whole sessions to shards: a stable hash of the session id."""

from __future__ import annotations

import hashlib


def shard_for(session_id: str, shard_count: int) -> int:
    """The shard that owns a session. Stable across processes and Python versions."""
    if shard_count < 1:
        raise ValueError("shard_count must be at least 1")
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shard_count
