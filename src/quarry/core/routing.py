"""Routing of whole sessions to partitions: a stable hash of the session's lineage root.

A cluster has a fixed number of partitions, chosen when it is created (`quarry up --partitions N` gives
N, one per index node; a cluster on the log defaults to 16, placed on the index nodes by the cluster
map). A child session's id is its root session's id followed by `/<child part>` (Claude Code
subagents: `claude-code-session:<id>/agent-<agentId>`), so a session family lands in one partition:
lineage, delegations and their child excerpts are resolved partition-locally.
"""

from __future__ import annotations

import hashlib


def lineage_root(session_id: str) -> str:
    """The id of the session family's root (the id itself for a root session)."""
    return session_id.split("/", 1)[0]


def partition_for(session_id: str, partitions: int) -> int:
    """The partition that owns a session (and its whole family). Stable across processes and Python versions."""
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    digest = hashlib.blake2b(lineage_root(session_id).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions
