"""The session's header as the transcript shows it: its record, its lineage (the parent it was delegated
from, the children it delegated to: TraceSession) and the command that resumes it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from quarry.query.web.transcript.parts import Clean
from quarry.query.web.transcript.resume import resume_command
from quarry.query.web.transcript.view import Link, SessionView
from quarry.v1 import sessions_pb2, units_pb2

Href = Callable[[str], str]  # a session id -> the reader's path to it ("" in an export: no links out)


def session_view(
    session: units_pb2.Session, lineage: sessions_pb2.LineageTrace | None, clean: Clean, href: Href
) -> SessionView:
    parents = [_link(record.header, clean, href) for record in lineage.ancestors[:1]] if lineage else []
    children = [_link(node.session.header, clean, href) for node in _children(lineage)]
    return SessionView(
        id=session.id,
        title=clean(title_of(session)),
        origin=session.origin,
        agent=session.agent,
        model=session.model,
        repo=clean(session.repo),
        branch=clean(session.branch),
        cwd=clean(session.cwd),
        created_ms=session.created_ms,
        updated_ms=session.updated_ms,
        messages=session.counts.messages,
        resume=resume_command(session, clean),
        parents=parents,
        children=children,
        unresolved_parent=lineage.unresolved_parent_id if lineage else "",
    )


def title_of(session: units_pb2.Session) -> str:
    return session.title_snapshot.title or session.title or session.id


def _children(lineage: sessions_pb2.LineageTrace | None) -> Iterable[sessions_pb2.LineageNode]:
    return lineage.descendants if lineage else ()


def _link(session: units_pb2.Session, clean: Clean, href: Href) -> Link:
    title = clean(title_of(session))
    label = f"{session.agent}: {title}" if session.agent else title
    return Link(session.id, label, href(session.id))
