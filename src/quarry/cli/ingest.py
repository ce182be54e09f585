"""`quarry ingest`, `quarry push` and `quarry delete`: sessions into the archive (read by the ingest
node from its own machine, or parsed here and sent: docs/cluster.md#pushing-from-laptops) and out
of it (docs/cluster.md#ingesting-and-deleting)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from quarry.cli.lazy import lazy_module, stderr, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from quarry.cli.push import Pusher
    from quarry.v1.ingest_pb2 import IngestProgress, IngestReport

render = lazy_module("quarry.cli.render")

_T = TypeVar("_T")

Scope = Annotated[str, typer.Option(help="The scope the sessions go into (default: the token's one writable scope).")]
Ack = Annotated[
    str,
    typer.Option(help="applied (searchable when it returns) | log (in the replicated log; a cluster on the log)"),
]


def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders; none: every tool's standard locations and this folder's session files."),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", help="Keep watching: ingest files as they appear or grow (searchable within 2 s) until Ctrl-C."
        ),
    ] = False,
    ack: Ack = "applied",
    scope: Scope = "",
    list_sources: Annotated[
        bool,
        typer.Option(
            "--list-sources",
            help="Ingest nothing: show each place every tool's logs are looked for on this machine and the files "
            "there (README.md#formats).",
        ),
    ] = False,
) -> None:
    """Ingest the session logs of Claude Code, Codex, Gemini CLI, Cursor, Copilot Chat, Cline, Roo Code,
    OpenCode, Crush, Aider and Goose, and ChatGPT and Claude.ai exports (format found from content), read
    by the ingest node from its own machine: for the cluster `quarry up` runs here, or an operator's (its
    --ingest-root folders; an admin token). To send this machine's logs to a remote cluster, `quarry push`.
    A file unchanged since its last ingest is skipped; one that grew is ingested again. Exits 1 when a
    file failed."""
    from quarry.client.ingest_outcome import failures

    if list_sources:
        _list_sources(paths)
        return
    standard = not paths
    if standard:
        from quarry.ingest.discover import project_locations  # only here: it loads every parser

        paths = project_locations(Path.cwd())
    with open_client() as client:
        events = client.ingest_paths(paths, standard_locations=standard, follow=follow, ack=ack, scope=scope)
        try:
            if not follow:
                report = _ingest_once(events)
                if report is not None and failures(report):
                    raise typer.Exit(1)  # the report named each file that failed
            elif settings.format == "plain":
                _ingest_once(events)
                stderr().print("following; Ctrl-C stops")
                for event in events:
                    render.ingest_event(event, settings.format, stdout())
            else:
                for event in events:
                    render.ingest_event(event, settings.format, stdout())
        except KeyboardInterrupt:
            if not follow:
                raise
            stderr().print("stopped following")
        finally:
            events.close()  # cancels the call


def push(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders of this machine; none: every tool's standard locations and this folder's."
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", help="Keep watching: send files as they appear or grow, until Ctrl-C or SIGTERM."),
    ] = False,
    scope: Scope = "",
    ack: Ack = "applied",
    retry_for: Annotated[
        float,
        typer.Option(
            "--retry-for", min=0, help="Seconds a batch the cluster could not take is sent again (--follow: for ever)."
        ),
    ] = 600.0,
) -> None:
    """Send this machine's agent logs to the cluster: parsed here (the formats `quarry ingest` reads),
    sent with your token. What the cluster acknowledged is remembered, so a push stopped anywhere resumes
    where it stopped and an unchanged file costs one stat. Exits 1 when a file failed."""
    import signal

    from rich.markup import escape

    from quarry.cli.push import Pusher
    from quarry.client.ingest_outcome import failures
    from quarry.core.stop_signal import StopSignal

    if not paths:
        from quarry.ingest.discover import project_locations, standard_locations

        paths = [*standard_locations(), *project_locations(Path.cwd())]
    roots = [path.expanduser().absolute() for path in paths]

    def warn(text: str) -> None:
        stderr().print(f"[yellow]push[/yellow] {escape(text)}", soft_wrap=True)

    retry = None if follow else retry_for
    with open_client() as client, Pusher(client, scope, ack, retry_for=retry, warn=warn) as pusher:
        if not follow:
            report = _pushed_with_progress(pusher, roots)
            render.ingest_report(report, settings.format, stdout())
            if failures(report):
                raise typer.Exit(1)
            return
        stop = StopSignal(signal.SIGTERM)
        if settings.format == "plain":
            stderr().print(f"pushing {len(roots)} location(s) into scope {pusher.scope}; Ctrl-C stops")
        try:
            pusher.follow(roots, lambda report: _push_round(report), stop)
        except KeyboardInterrupt:
            stderr().print("stopped following")


def delete(
    refs: Annotated[list[str], typer.Argument(help="Sessions: session:<id> refs or session ids.")],
    ack: Annotated[str, typer.Option(help="applied (gone from searches when it returns) | log")] = "applied",
) -> None:
    """Remove sessions from the archive: from every replica of their partition, their vectors, and (in a
    cluster on the log) from the log, where a tombstone takes their place."""
    with open_client() as client:
        render.delete_report(client.delete(refs, ack=ack), settings.format, stdout())


SOURCE_COLUMNS = ("tool", "place", "via", "in_project", "files", "skipped", "paths")


def _list_sources(paths: list[Path] | None) -> None:
    """Every place `quarry ingest` with no path looks in on this machine (and in this folder), per tool,
    with the session files there and the files passed over; a place moved by an environment variable
    says which."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if paths:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "--list-sources shows the standard places every tool writes to: it takes no path",
            parameter="paths",
        )
    rows = _source_rows()
    fmt = settings.format
    if fmt in render.DOCUMENT_FORMATS:
        render.emit_document({"places": rows}, fmt)
    elif fmt == "ndjson":
        render.emit_ndjson(rows)
    elif fmt == "csv":
        render.emit_csv(SOURCE_COLUMNS, ([row[column] for column in SOURCE_COLUMNS] for row in rows))
    else:
        _plain_sources(rows)


def _source_rows() -> list[dict[str, Any]]:
    """One row per place looked in: the tool, the place (a glob where the tool keeps one file per
    folder), the root it came from, the session files found and the files passed over there."""
    from quarry.ingest.discover import iter_source_files
    from quarry.ingest.locations import look

    def counted(found: tuple[Path, ...]) -> tuple[int, int]:
        skipped: list[Path] = []
        return sum(1 for _ in iter_source_files(found, lambda path, code, reason: skipped.append(path))), len(skipped)

    rows = []
    for place in look(project=Path.cwd()):
        files, skipped = counted(place.found)
        row = {"tool": place.tool, "place": str(place.where), "via": place.via, "in_project": place.in_project}
        rows.append(row | {"files": files, "skipped": skipped, "paths": [str(path) for path in place.found]})
    return rows


def _plain_sources(rows: list[dict[str, Any]]) -> None:
    """Per tool, one line per place: how many session files are there (or that it is not there), then
    the place and the environment variable that moved it."""
    from rich.markup import escape

    out, tool = stdout(), ""
    for row in rows:
        if row["tool"] != tool:
            tool = str(row["tool"])
            out.print(f"[bold]{escape(tool)}[/bold]", highlight=False)
        files, skipped, via = row["files"], row["skipped"], row["via"]
        found = f"{files} file{'s' * (files != 1)}" if row["paths"] else "not there"
        notes = [f"{skipped} passed over"] if skipped else []
        notes += [f"set by {via.split('/')[0]}"] if via.startswith("$") and not via.startswith("$XDG") else []
        note = f"  ({', '.join(notes)})" if notes else ""
        out.print(f"  {found:<10} {escape(str(row['place']))}{escape(note)}", highlight=False, soft_wrap=True)
    with_files = sum(1 for row in rows if row["files"])
    stderr().print(
        f"{len(rows)} places looked in, {with_files} with session files. A remote cluster's ingest node looks "
        "on its own machine; `quarry push` sends this machine's.",
        soft_wrap=True,
    )


def _with_progress(description: str, work: Callable[[Callable[[int, int], None]], _T]) -> _T:
    """`work(update)` under a transient progress bar on stderr, `update(done, total)` moving it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=stderr(), transient=True
    )
    with progress:
        task = progress.add_task(description, total=None)
        return work(lambda done, total: progress.update(task, total=total, completed=done))


def _pushed_with_progress(pusher: Pusher, roots: list[Path]) -> IngestReport:
    """One push with a progress bar over its files."""
    return _with_progress("pushing", lambda update: pusher.push(roots, update))


def _push_round(report: IngestReport) -> None:
    """A followed push's round: the report when it wrote or found something (plain), every one otherwise."""
    from quarry.v1.ingest_pb2 import IngestProgress

    if settings.format != "plain":
        render.ingest_event(IngestProgress(report=report), settings.format, stdout())
    elif report.sessions_written or report.issues or report.skipped:
        render.ingest_report(report, settings.format, stdout())


def _ingest_once(events: Iterator[IngestProgress]) -> IngestReport | None:
    """Up to the first report: a progress bar over the files, then the report (returned)."""

    def first_report(update: Callable[[int, int], None]) -> IngestReport | None:
        for event in events:
            if not event.HasField("file"):
                return event.report
            update(event.file.files_done, event.file.files_total)
        return None

    report = _with_progress("ingesting", first_report)
    if report is not None:
        render.ingest_report(report, settings.format, stdout())
    return report
