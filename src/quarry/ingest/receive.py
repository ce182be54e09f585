"""What the ingest node makes of every session it accepts, whoever parsed it: its own parsers reading
server paths (IngestPaths) or a client that parsed its own logs (IngestSessions, `quarry push`).

- The session is placed in its scope: its id and every id and ref derived from it (messages, blocks,
  actions, units, its parent's and children's ids) take the scope's mark (quarry.core.session_ids), so
  it can never meet another scope's copy of the same log.
- It records where it came from: `host`, the machine its log was read on (the sender's word for a
  pushed session, this node's name for a server path), and `pusher`, the name of the token that wrote
  it, taken from the caller's token and nothing else.
- Its content hash is computed here, never taken from the sender: the partitions skip a session whose
  hash they hold, so a hash a client made up must not decide what is stored.
"""

from __future__ import annotations

from quarry.core.public_refs import REF_KINDS
from quarry.core.session_ids import SCOPE_MARK, scoped_id
from quarry.core.tokens import DEFAULT_SCOPE
from quarry.ingest.normalize import seal_content_hash
from quarry.v1 import units_pb2


def receive(session: units_pb2.Session, scope: str, pusher: str, host: str, *, trusted_hash: bool) -> None:
    """Place the session in `scope` and stamp its provenance, in place. `host` is kept when the sender
    named one. `trusted_hash`: the hash was computed by this node's own parser (and no id moved)."""
    session.scope = scope
    session.pusher = pusher
    if not session.host:
        session.host = host
    moved = place_in_scope(session, scope)
    if moved or not trusted_hash:
        seal_content_hash(session)


def carries_scope(session_id: str) -> bool:
    """Whether a sent id already carries a scope's mark (only the ingest node places sessions in scopes)."""
    return SCOPE_MARK in session_id.partition(":")[0]


def place_in_scope(session: units_pb2.Session, scope: str) -> bool:
    """Qualify, in place, every id and ref of the session family it names (those starting with the
    session's own origin) with `scope`; returns whether anything changed (nothing in `default`)."""
    if scope == DEFAULT_SCOPE or not session.id or carries_scope(session.id):
        return False
    origin = session.id.partition(":")[0] + ":"

    def ids(item: object, *names: str) -> None:
        for name in names:
            value = getattr(item, name)
            if value.startswith(origin):
                setattr(item, name, scoped_id(scope, value))

    def refs(item: object, *names: str) -> None:
        for name in names:
            kind, colon, rest = getattr(item, name).partition(":")
            if colon and kind in REF_KINDS and rest.startswith(origin):
                setattr(item, name, f"{kind}:{scoped_id(scope, rest)}")

    ids(session, "id", "parent_session_id")
    for message in session.messages:
        ids(message, "id", "session_id")
        for block in message.blocks:
            ids(block, "id")
    for action in session.actions:
        ids(action, "id", "session_id", "message_id", "block_id")
    for touch in session.files:
        ids(touch, "id", "session_id")
        refs(touch, "first_ref", "last_ref")
    for run in session.runs:
        ids(run, "id", "session_id", "child_session_id", "delegation_id")
    for event in session.events:
        ids(event, "id", "session_id")
        refs(event, "source_ref", "object_ref")
    for snapshot in session.snapshots:
        ids(snapshot, "id", "session_id")
        refs(snapshot, "message_ref")
    for delegation in session.delegations:
        ids(delegation, "id", "session_id", "child_session_id")
        refs(delegation, "tool_use_ref")
    for log_event in session.log_events:
        ids(log_event, "message_id")
    return True
