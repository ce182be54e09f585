"""The walk over the client that gathers what the projection is made from: every session the query
selects (Search, following its cursor), then their runs, actions, messages, observed events, context
snapshots and delegations (QueryUnits, `<unit> where session.id:(…)`, paged by offset), every
partition required to answer (PARTITION_UNAVAILABLE rather than a silently partial export); and each
child session's trace root and the parent's subagent run that started it (the session API's lineage)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from quarry.cli.otel_export.links import SessionRows
from quarry.cli.otel_export.projection import OtelProjection, project
from quarry.cli.otel_export.redaction import ExportOptions
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2, units_pb2

SEARCH_PAGE = 100
UNIT_PAGE = 1000  # the query node's largest page
_BARE_VALUE = re.compile(r'[^\s()"|]+')
_MAX_EXPRESSION_CHARS = 6000
_UNITS = (
    ("runs", "run", "runs"),
    ("actions", "action", "actions"),
    ("messages", "message", "messages"),
    ("observed-events", "observed_event", "events"),
    ("context-snapshots", "context_snapshot", "snapshots"),
    ("delegations", "delegation", "delegations"),
)


def _quoted(value: str) -> str:
    if _BARE_VALUE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def session_scope(unit: str, session_ids: Sequence[str]) -> str:
    """`<unit> where session.id:(a|b|…)`: the unit rows of these sessions."""
    return f"{unit} where session.id:({'|'.join(_quoted(i) for i in session_ids)})"


def _batches(session_ids: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for sid in session_ids:
        cost = len(_quoted(sid)) + 1
        if batch and size + cost > _MAX_EXPRESSION_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(sid)
        size += cost
    if batch:
        yield batch


def unit_rows(client: Any, expression: str, page: int = UNIT_PAGE) -> Iterator[query_pb2.QueryUnitRow]:
    """Every row of a unit query, page by page (limit / offset, in the rows' (time, id) order)."""
    offset = 0
    while True:
        envelope = client.query_units(expression, limit=page, offset=offset, require_complete=True)
        yield from envelope.rows
        if len(envelope.rows) < page:
            return
        offset += len(envelope.rows)


def selected_sessions(client: Any, query: str, page: int = SEARCH_PAGE) -> Iterator[units_pb2.Session]:
    """Every session the query selects, in the search's order, following its cursor to the end."""
    cursor = ""
    seen: set[str] = set()
    while True:
        envelope = client.search(query, limit=page, cursor=cursor, require_complete=True)
        for hit in envelope.hits:
            if hit.session.id not in seen:
                seen.add(hit.session.id)
                yield hit.session
        cursor = envelope.next_cursor
        if not cursor or not envelope.hits:
            return


def check_session_query(query: str) -> None:
    """A session query, or a typed error: a malformed one fails as the query node would (with its
    position), a unit query is UNSUPPORTED_FORM."""
    from quarry.dsl import compile_query

    if compile_query(query).kind != "sessions":
        raise QuarryError(
            errors_pb2.UNSUPPORTED_FORM,
            "export otel takes a session query (`sessions where …` or compact: `repo:ledger`), not a unit query",
            parameter="query",
        )


def collect(client: Any, query: str) -> list[SessionRows]:
    """The rows of every session `query` selects, with each one's trace root and parent run."""
    check_session_query(query)
    sessions = list(selected_sessions(client, query))
    bundles = [SessionRows(session=s) for s in sessions]
    by_id = {b.session.id: b for b in bundles}
    for batch in _batches(list(by_id)):
        for unit, oneof, attribute in _UNITS:
            for row in unit_rows(client, session_scope(unit, batch)):
                bundle = by_id.get(row.session_id)
                if bundle is not None and row.WhichOneof("row") == oneof:
                    getattr(bundle, attribute).append(getattr(row, oneof))
    _link_families(client, bundles, by_id)
    return bundles


def _link_families(client: Any, bundles: list[SessionRows], by_id: dict[str, SessionRows]) -> None:
    """Trace roots (from the lineage of every child session) and the parent's subagent run of each."""
    roots: dict[str, str] = {}
    parent_runs: dict[str, list[units_pb2.Run]] = {b.session.id: b.runs for b in bundles}
    for bundle in bundles:
        s = bundle.session
        if not s.parent_session_id:
            continue
        if s.id not in roots:
            lineage = client.sessions.lineage(s.id)
            root = lineage.root.header.id if lineage.HasField("root") else lineage.unresolved_parent_id
            roots[s.id] = root or s.id
            for ancestor in lineage.ancestors:
                roots.setdefault(ancestor.header.id, roots[s.id])
        bundle.trace_root = roots[s.id] if roots[s.id] != s.id else ""
        parent = s.parent_session_id
        if parent not in parent_runs:
            parent_runs[parent] = [
                row.run for row in unit_rows(client, session_scope("runs", [parent])) if row.WhichOneof("row") == "run"
            ]
        run = next((r for r in parent_runs[parent] if r.role == "subagent" and r.child_session_id == s.id), None)
        bundle.parent_run_ref = f"run:{run.id}" if run is not None else ""


def export_otel(client: Any, query: str, options: ExportOptions | None = None) -> OtelProjection:
    """The projection of every session `query` selects."""
    return project(collect(client, query), options)
