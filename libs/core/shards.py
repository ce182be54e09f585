"""Routing of whole sessions to shards: a stable hash of the session's lineage root.

A child session's id is its root session's id followed by `/<child part>` (Claude Code subagents:
`claude-code-session:<id>/agent-<agentId>`), so a session family lands on one shard: lineage,
delegations and their child excerpts are resolved shard-locally.
"""

from __future__ import annotations

import hashlib


def lineage_root(session_id: str) -> str:
    """The id of the session family's root (the id itself for a root session)."""
    return session_id.split("/", 1)[0]


def shard_for(session_id: str, shard_count: int) -> int:
    """The shard that owns a session (and its whole family). Stable across processes and Python versions."""
    if shard_count < 1:
        raise ValueError("shard_count must be at least 1")
    digest = hashlib.blake2b(lineage_root(session_id).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shard_count
