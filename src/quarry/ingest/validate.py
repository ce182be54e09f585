"""The ingest boundary: a session with a value outside a closed vocabulary (in any of its units,
derived ones included) is rejected, typed.

The ingest servicer validates every session it receives (`valid_sessions`) before its router sees it,
whichever router writes (the partitions directly, or the replicated log): the routers only route."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from quarry.core import vocab
from quarry.core.session_ids import split_scope
from quarry.core.tokens import DEFAULT_SCOPE
from quarry.ingest import payloads
from quarry.v1 import ingest_pb2, units_pb2


def valid_sessions(
    sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport
) -> Iterator[units_pb2.Session]:
    """The sessions fit to write, as they arrive. Each one counts as received in `report`; one with
    problems (`session_problems`) is an `invalid_record` issue of the report and is not passed on."""
    for session in sessions:
        report.sessions_received += 1
        problems = session_problems(session)
        if problems:
            report.issues.add(
                path=session.source_path, code="invalid_record", reason=f"{session.id}: {'; '.join(problems)}"
            )
            continue
        yield session


def session_problems(session: units_pb2.Session) -> list[str]:
    """What is wrong with a session, as readable reasons naming the field; empty when valid."""
    problems: list[str] = []
    scope, parsed_id = split_scope(session.id)
    if not session.id:
        problems.append("session.id is empty")
    elif session.origin and not parsed_id.startswith(f"{session.origin}:"):
        problems.append(f"session.id {session.id!r} does not start with its origin {session.origin!r}")
    elif scope != (session.scope or DEFAULT_SCOPE):
        problems.append(f"session.id {session.id!r} names another scope than the session's ({session.scope!r})")
    _check(problems, "session", "origin", session.origin, vocab.ORIGINS)
    for message in session.messages:
        where = f"message {message.id or message.seq}"
        _check(problems, where, "role", message.role, vocab.ROLES)
        if message.surface:
            _check(problems, where, "surface", message.surface, vocab.SURFACES)
        for block in message.blocks:
            _check(problems, f"{where} block {block.index}", "type", block.type, vocab.BLOCK_TYPES)
    for action in session.actions:
        _check(problems, f"action {action.id}", "category", action.category, vocab.ACTION_CATEGORIES)
    for run in session.runs:
        _check(problems, f"run {run.id}", "role", run.role, vocab.RUN_ROLES)
        _check(problems, f"run {run.id}", "status", run.status, vocab.RUN_STATUSES)
    for event in session.events:
        _check(problems, f"event {event.id}", "kind", event.kind, vocab.EVENT_KINDS)
        _check(problems, f"event {event.id}", "delivery_state", event.delivery_state, vocab.DELIVERY_STATES)
    for snapshot in session.snapshots:
        _check(problems, f"snapshot {snapshot.id}", "boundary", snapshot.boundary, vocab.SNAPSHOT_BOUNDARIES)
    for delegation in session.delegations:
        where = f"delegation {delegation.id}"
        _check(problems, where, "mapping_state", delegation.mapping_state, vocab.MAPPING_STATES)
        _check(problems, where, "result_state", delegation.result_state, vocab.RESULT_STATES)
    problems.extend(payloads.problems(session))
    return problems


def _check(problems: list[str], where: str, field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        problems.append(f"{where}: {field} {value!r} is not one of {', '.join(allowed)}")
