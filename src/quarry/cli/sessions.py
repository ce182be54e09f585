"""`quarry sessions …`: the session API (SessionQueryService, docs/sessions.md#cli) from the terminal.

    quarry sessions list --cwd ~/src/app --root --created-since 7d     # newest first, paged (--cursor)
    quarry sessions read ID                          # every raw event of the session (--raw: the records)
    quarry sessions surface ID                       # what the model currently sees
    quarry sessions events ID --seq 10..40 --surface shadowed --text "database is locked"
    quarry sessions event ID 31 --before 3 --after 3
    quarry sessions trace-event ID 31
    quarry sessions lineage ID
    quarry sessions titles ID ID …
    quarry sessions search "RangeError" --surface current            # sessions by their best event
    quarry sessions search --in ID "RangeError"                       # events of one session

json / yaml: the response message in proto3 JSON, as the HTTP API and the MCP tools answer it; ndjson:
one line per record of a list (sessions, events, hits, titles, the sessions of a lineage), an event's
trace on one line. An error carries the session API's name of its code where it has one
(`session_query_code`, docs/sessions.md#errors) beside Quarry's.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from rich.console import Console

orjson = lazy_module("orjson")
render = lazy_module("quarry.cli.render")
sessions_pb2 = lazy_module("quarry.v1.sessions_pb2")
units_pb2 = lazy_module("quarry.v1.units_pb2")


sessions_app = typer.Typer(
    help="The session API (docs/sessions.md): events, surfaces, windows, traces, lineage, titles, search."
)

TEXT_PREVIEW = 100
Session = Annotated[str, typer.Argument(help="A session id (<origin>:<native id>).")]
Limit = Annotated[int, typer.Option("--limit", help="Page size (0: the server's default).")]
Cursor = Annotated[str, typer.Option("--cursor", help="A page's next_cursor, to read the page after it.")]
Surfaces = Annotated[list[str] | None, typer.Option("--surface", help="current | shadowed | log-only (repeatable).")]
Types = Annotated[list[str] | None, typer.Option("--type", help="An event type, e.g. claude-code:user (repeatable).")]


def _run(operation: str, call: Any) -> Any:
    """Run a client call; a failure keeps Quarry's code and gains the session API's name of it."""
    from quarry.client.sessions import session_query_code
    from quarry.core.errors import QuarryError

    try:
        return call()
    except QuarryError as error:
        name = session_query_code(error, operation)
        if name:
            error.message = f"{error.message} [{name}]"
        raise


def _sessions() -> Any:
    return open_client().sessions


def _emitted(response: Message, records: str = "") -> bool:
    """Printed in a machine format (`records`: the repeated field ndjson prints one item per line)."""
    return render.emit_message(response, settings.format, "a session API response", records)


@sessions_app.command("list")
def list_sessions(
    cwd: Annotated[list[str] | None, typer.Option("--cwd", help="Working directory (repeatable; '' for none).")] = None,
    parent: Annotated[list[str] | None, typer.Option("--parent", help="Parent session id (repeatable).")] = None,
    root: Annotated[bool, typer.Option("--root", help="Only sessions without a parent.")] = False,
    created_since: Annotated[str, typer.Option("--created-since", help="7d, 24h, 2026-01-02, …")] = "",
    availability: Annotated[list[str] | None, typer.Option("--availability", help="persisted | live")] = None,
    limit: Limit = 0,
    cursor: Cursor = "",
) -> None:
    """Sessions newest first, filtered (clauses ANDed, a clause's values ORed)."""
    from quarry.client.sessions import session_filters
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if root and parent:
        raise QuarryError(errors_pb2.INVALID_REQUEST, "--root and --parent contradict", parameter="--root")
    created_min = _since(created_since) if created_since else None
    filters = session_filters(
        cwds=cwd or (),
        parents=[""] if root else (parent or ()),
        availability=availability or (),
        created_min=created_min,
    )
    page = _run("list", lambda: _sessions().list(filters, limit=limit, cursor=cursor))
    if _emitted(page, "items"):
        return
    console = stdout()
    for item in page.items:
        _print_header(console, item.header)
    if page.next_cursor:
        console.print(f"[dim]next page: --cursor {page.next_cursor}[/dim]")


@sessions_app.command("read")
def read_session(
    session_id: Session,
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Print the raw records whole, as JSON Lines: a JSON Lines log byte for byte."),
    ] = False,
) -> None:
    """The complete event log of one session, raw records whole (held-apart payloads put back)."""
    header, events = _run("read", lambda: _sessions().read(session_id))
    if raw:
        for event in events:
            sys.stdout.buffer.write(event.raw_json + b"\n")
        return
    records = [render.to_dict(e) for e in events]
    document = {"session": render.to_dict(header), "events": records}
    if render.emit_response(document, settings.format, "a session API response", records):
        return
    console = stdout()
    _print_header(console, header)
    _print_events(console, events)


@sessions_app.command("surface")
def surface(session_id: Session) -> None:
    """What the model currently sees: the current surface in model-history order."""
    snapshot = _run("surface", lambda: _sessions().surface(session_id))
    if _emitted(snapshot, "events"):
        return
    console = stdout()
    _print_header(console, snapshot.session)
    through = snapshot.captured_through_seq if snapshot.HasField("captured_through_seq") else "none"
    console.print(f"[dim]captured through seq {through}[/dim]")
    _print_events(console, snapshot.events)


@sessions_app.command("events")
def events(
    session_id: Session,
    seq: Annotated[str, typer.Option("--seq", help="A seq range: 10..40, 10.., ..40 or 7.")] = "",
    types: Types = None,
    surfaces: Surfaces = None,
    text: Annotated[str, typer.Option("--text", help="Literal text, any case, any whitespace.")] = "",
    with_text: Annotated[bool, typer.Option("--with-text", help="Each event's semantic text too.")] = False,
) -> None:
    """Event records of one session matching filters, in seq order."""
    from quarry.client.sessions import event_filters

    filters = event_filters(seq=_seq_range(seq) if seq else None, types=types or (), surfaces=surfaces or (), text=text)
    page = _run("events", lambda: _sessions().events(session_id, filters, with_text=with_text or bool(text)))
    if _emitted(page, "events"):
        return
    console = stdout()
    for document in page.events:
        record = document.record
        line = f"{record.seq:>5}  {record.surface:<8}  {escape(record.type)}  {_when(record.time_ms)}"
        console.print(line + (f"  {escape(_preview(document.text))}" if document.text else ""), highlight=False)


@sessions_app.command("event")
def event(
    session_id: Session,
    seq: Annotated[int, typer.Argument(help="The event's seq.")],
    before: Annotated[int, typer.Option("--before", help="Preceding events to include.")] = 0,
    after: Annotated[int, typer.Option("--after", help="Following events to include.")] = 0,
) -> None:
    """One full event and its neighbours."""
    window = _run("event", lambda: _sessions().event(session_id, seq, before=before, after=after))
    if _emitted(window, "events"):
        return
    console = stdout()
    _print_events(console, window.events, target=window.target.seq)
    console.print(escape(orjson.dumps(orjson.loads(window.target.raw_json), option=orjson.OPT_INDENT_2).decode()))


@sessions_app.command("trace-event")
def trace_event(session_id: Session, seq: Annotated[int, typer.Argument(help="The event's seq.")]) -> None:
    """An event's replacement chain and its direct replacement and source links."""
    trace = _run("trace_event", lambda: _sessions().trace_event(session_id, seq))
    if _emitted(trace):
        return
    console = stdout()
    target = trace.target
    console.print(f"{target.seq}  {target.surface}  {escape(target.type)}", highlight=False)
    rows = (
        ("replaced by", [trace.replaced_by] if trace.HasField("replaced_by") else []),
        ("replacement chain", trace.replacement_chain),
        ("replaced", trace.replaced_event_seqs),
        ("sources", trace.source_event_seqs),
        ("derived", trace.derived_event_seqs),
    )
    for label, seqs in rows:
        console.print(f"  {label:<18} {_seqs(seqs)}", highlight=False)


@sessions_app.command("lineage")
def lineage(session_id: Session) -> None:
    """Known ancestors and the descendant tree of a session."""
    trace = _run("lineage", lambda: _sessions().lineage(session_id))
    if render.emit_response(render.to_dict(trace), settings.format, "a lineage", _lineage_records(trace)):
        return
    console = stdout()
    for ancestor in reversed(trace.ancestors):
        console.print(f"[dim]ancestor[/dim] {escape(ancestor.header.id)}", highlight=False)
    if trace.WhichOneof("completeness") == "unresolved_parent_id":
        console.print(f"[yellow]incomplete[/yellow]: parent {escape(trace.unresolved_parent_id)} is not in the archive")
    console.print(f"[bold]{escape(trace.target.header.id)}[/bold]", highlight=False)

    def tree(nodes: Any, depth: int) -> None:
        for node in nodes:
            console.print(f"{'  ' * depth}└ {escape(node.session.header.id)}", highlight=False)
            tree(node.descendants, depth + 1)

    tree(trace.descendants, 1)


@sessions_app.command("titles")
def titles(session_ids: Annotated[list[str], typer.Argument(help="Session ids.")]) -> None:
    """The latest title of each session; a session that cannot be read says why, alone."""
    from quarry.v1 import errors_pb2

    response = _run("titles", lambda: _sessions().titles(session_ids))
    if _emitted(response, "results"):
        return
    console = stdout()
    for result in response.results:
        if result.WhichOneof("outcome") == "reason":
            name = errors_pb2.ErrorCode.Name(result.reason.code)
            console.print(f"{escape(result.session_id)}  [red]{name}[/red] {escape(result.reason.message)}")
        elif result.value.HasField("title"):
            title = result.value.title
            console.print(f"{escape(result.session_id)}  {escape(title.title)}  [dim]({title.kind})[/dim]")
        else:
            console.print(f"{escape(result.session_id)}  [dim](no title)[/dim]")


@sessions_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Text to search for (data, never query syntax).")],
    within: Annotated[str, typer.Option("--in", help="Search the events of this one session.")] = "",
    surfaces: Surfaces = None,
    types: Types = None,
    cwd: Annotated[list[str] | None, typer.Option("--cwd", help="Sessions in this working directory.")] = None,
    limit: Limit = 0,
    cursor: Cursor = "",
) -> None:
    """Sessions ranked by their strongest matching event, or (--in) the events of one session."""
    from quarry.client.sessions import event_filters, session_filters

    filters = event_filters(surfaces=surfaces or (), types=types or ())
    console = stdout()
    if within:
        page = _run(
            "search_events",
            lambda: _sessions().search_events(within, query, filters, limit=limit, cursor=cursor),
        )
        if _emitted(page, "items"):
            return
        _print_header(console, page.session)
        for hit in page.items:
            _print_hit(console, hit)
    else:
        page = _run(
            "search_sessions",
            lambda: _sessions().search_sessions(
                query, session_filters(cwds=cwd or ()), filters, limit=limit, cursor=cursor
            ),
        )
        if _emitted(page, "items"):
            return
        for item in page.items:
            _print_header(console, item.record.header)
            _print_hit(console, item.best_match)
        if page.missing_partitions:
            console.print(f"[yellow]partial[/yellow]: partitions {list(page.missing_partitions)} did not answer")
    if page.next_cursor:
        console.print(f"[dim]next page: --cursor {page.next_cursor}[/dim]")


def _lineage_records(trace: sessions_pb2.LineageTrace) -> list[dict[str, Any]]:
    """The sessions of a lineage as ndjson records, top down: `relation` (ancestor, target, descendant,
    or unresolved-parent: a parent that is not in the archive), `depth` (0 the target, -1 its parent, 1
    its children) and the `session` record (an unresolved parent: its `sessionId`)."""
    records: list[dict[str, Any]] = []
    depth = -len(trace.ancestors)
    if trace.WhichOneof("completeness") == "unresolved_parent_id":
        records.append({"relation": "unresolved-parent", "depth": depth - 1, "sessionId": trace.unresolved_parent_id})
    for ancestor in reversed(trace.ancestors):
        records.append({"relation": "ancestor", "depth": depth, "session": render.to_dict(ancestor)})
        depth += 1
    records.append({"relation": "target", "depth": 0, "session": render.to_dict(trace.target)})

    def below(nodes: Any, level: int) -> None:
        for node in nodes:
            records.append({"relation": "descendant", "depth": level, "session": render.to_dict(node.session)})
            below(node.descendants, level + 1)

    below(trace.descendants, 1)
    return records


# ---- plain output --------------------------------------------------------------------------------


def _print_header(console: Console, header: units_pb2.Session) -> None:
    title = header.title_snapshot.title if header.HasField("title_snapshot") else header.title
    console.print(f"[bold]{escape(header.id)}[/bold]  {escape(title)}", highlight=False)
    details = [
        _when(header.updated_ms),
        header.cwd,
        f"parent {header.parent_session_id}" if header.parent_session_id else "",
    ]
    console.print("  [dim]" + escape("  ".join(d for d in details if d)) + "[/dim]", highlight=False)


def _print_events(console: Console, events: Any, target: int | None = None) -> None:
    for event in events:
        mark = ">" if event.seq == target else " "
        inferred = "~" if event.time_inferred else " "
        text = f"  {escape(_preview(event.text))}" if event.text else ""
        line = f"{mark}{event.seq:>5}  {event.surface:<8}  {_when(event.time_ms)}{inferred} {escape(event.type)}{text}"
        console.print(line, highlight=False)


def _print_hit(console: Console, hit: sessions_pb2.EventSearchHit) -> None:
    record = hit.record
    console.print(
        f"  {record.seq:>5}  {record.surface:<8}  {escape(record.type)}  [dim]{hit.score:.3f}[/dim]", highlight=False
    )
    console.print(f"         {escape(hit.snippet)}", highlight=False)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_PREVIEW else flat[: TEXT_PREVIEW - 1] + "…"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S") if ms else "-" * 19


def _seqs(seqs: Any) -> str:
    return ", ".join(str(s) for s in seqs) or "-"


def _since(text: str) -> int:
    from quarry.core.errors import QuarryError
    from quarry.dsl.comparisons import BadComparisonValue, date_interval
    from quarry.v1 import errors_pb2

    try:
        return date_interval(text, int(time.time() * 1000))[0]
    except BadComparisonValue as error:
        raise QuarryError(errors_pb2.INVALID_REQUEST, str(error), parameter="--created-since") from None


def _seq_range(text: str) -> tuple[int | None, int | None]:
    """`10..40`, `10..`, `..40` or `7` as inclusive bounds."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    low, dots, high = text.partition("..")
    try:
        if not dots:
            return int(text), int(text)
        return (int(low) if low else None), (int(high) if high else None)
    except ValueError:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"--seq {text!r} is not a range such as 10..40", parameter="--seq"
        ) from None
