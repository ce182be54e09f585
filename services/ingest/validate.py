"""The ingest boundary: a session with a value outside a closed vocabulary is rejected, typed."""

from __future__ import annotations

from quarry.core import vocab
from quarry.v1 import units_pb2


def session_problems(session: units_pb2.Session) -> list[str]:
    """What is wrong with a session, as readable reasons naming the field; empty when valid."""
    problems: list[str] = []
    if not session.id:
        problems.append("session.id is empty")
    elif session.origin and not session.id.startswith(f"{session.origin}:"):
        problems.append(f"session.id {session.id!r} does not start with its origin {session.origin!r}")
    if session.origin not in vocab.ORIGINS:
        problems.append(f"session.origin {session.origin!r} is not one of {', '.join(vocab.ORIGINS)}")
    for message in session.messages:
        where = f"message {message.id or message.seq}"
        if message.role not in vocab.ROLES:
            problems.append(f"{where}: role {message.role!r} is not one of {', '.join(vocab.ROLES)}")
        if message.surface and message.surface not in vocab.SURFACES:
            problems.append(f"{where}: surface {message.surface!r} is not one of {', '.join(vocab.SURFACES)}")
        for block in message.blocks:
            if block.type not in vocab.BLOCK_TYPES:
                problems.append(
                    f"{where} block {block.index}: type {block.type!r} is not one of {', '.join(vocab.BLOCK_TYPES)}"
                )
    for action in session.actions:
        if action.category not in vocab.ACTION_CATEGORIES:
            problems.append(
                f"action {action.id}: category {action.category!r} is not one of {', '.join(vocab.ACTION_CATEGORIES)}"
            )
    return problems
