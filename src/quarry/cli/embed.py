"""`quarry embed …`: embedding status, preflight and backfill (docs/cluster.md#embedding-operations),
through the query node's EmbeddingService.

    quarry embed status                          # embedder, coverage, backlog, last run, next action
    quarry --format json embed status            # the EmbeddingStatus document, for automation
    quarry embed preflight --max-sessions 10     # the window a backfill would take; embeds nothing
    quarry embed backfill --max-sessions 10      # embed that window now, and say what is left

json / yaml: the whole response (proto field names, every field); ndjson: it on one line; csv is
refused (a status is not a table).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from rich.console import Console

grpc = lazy_module("grpc")
render = lazy_module("quarry.cli.render")
embedding_pb2 = lazy_module("quarry.v1.embedding_pb2")
vector_pb2 = lazy_module("quarry.v1.vector_pb2")


embed_app = typer.Typer(help="Embedding status, and bounded catch-up of the semantic lane (preflight, backfill).")

STATUS_TIMEOUT_S = 60.0
PREFLIGHT_TIMEOUT_S = 600.0
BACKFILL_TIMEOUT_S = 24 * 3600.0

MaxSessions = Annotated[int, typer.Option("--max-sessions", help="Sessions in the window (1..100000).")]


def _ask(method: str, request: Message, timeout: float) -> Any:
    from quarry.core.errors import from_rpc_error

    with open_client() as client:
        try:
            return getattr(client.embedding, method)(request, timeout=timeout)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None


@embed_app.command("status")
def status() -> None:
    """Embedder, model, dimension, mode, coverage, backlog, the latest catch-up run and the next action."""
    response = _ask("Status", embedding_pb2.EmbeddingStatusRequest(), STATUS_TIMEOUT_S)
    if not _emitted(response, "an embedding status"):
        print_status(response, stdout())


@embed_app.command("preflight")
def preflight(max_sessions: MaxSessions) -> None:
    """The window `backfill --max-sessions N` would embed now (sessions, texts, estimated time); embeds nothing."""
    request = embedding_pb2.EmbeddingWindowRequest(max_sessions=max_sessions)
    response = _ask("Preflight", request, PREFLIGHT_TIMEOUT_S)
    if not _emitted(response, "a preflight"):
        print_preflight(response, stdout())


@embed_app.command("backfill")
def backfill(max_sessions: MaxSessions) -> None:
    """Embed the next N sessions' queued texts now, and wait for it (in either embed mode)."""
    request = embedding_pb2.EmbeddingWindowRequest(max_sessions=max_sessions)
    response = _ask("Backfill", request, BACKFILL_TIMEOUT_S)
    if not _emitted(response, "a backfill"):
        print_backfill(response, stdout())


def _emitted(response: Message, what: str) -> bool:
    """Write the response in a machine format; False for plain (the caller prints it)."""
    return render.emit_response(render.to_dict(response), settings.format, what)


# ---- plain ---------------------------------------------------------------------------------------


def print_status(response: embedding_pb2.EmbeddingStatus, console: Console) -> None:
    vector = response.vector
    if not response.vector_address:
        console.print("[bold]no vector node[/bold] in this cluster")
    elif not response.vector_reachable:
        console.print(f"[red]vector node {escape(response.vector_address)} does not answer[/red]")
    elif not vector.embedder:
        console.print(f"vector node {escape(response.vector_address)}: [bold]no embedder configured[/bold]")
    else:
        state = "[green]ready[/green]" if vector.ready else "[yellow]not ready[/yellow]"
        console.print(
            f"embedder [bold]{escape(vector.embedder)}[/bold] · {escape(vector.model)} ({vector.dimension}d)"
            f" · mode {vector.mode} · {state}",
            soft_wrap=True,
        )
    console.print(
        f"coverage {vector.embedded_sessions} of {response.archive_sessions} sessions ({response.coverage:.1%})"
        f" · {vector.vectors} vectors · archive {response.archive_messages} messages",
        soft_wrap=True,
    )
    if response.vector_reachable:
        console.print(
            f"backlog {response.backlog_texts} texts: {vector.queued_texts} queued ({vector.queued_sessions} sessions)"
            f", {vector.feed_backlog_texts} still in the partitions' feeds",
            soft_wrap=True,
        )
        if vector.vectors:
            console.print(_covered(vector), soft_wrap=True)
        if vector.HasField("last_run"):
            console.print(f"last run {_run(vector.last_run)}", soft_wrap=True)
        if vector.last_error:
            console.print(f"[red]last error[/red] {escape(vector.last_error)}", soft_wrap=True)
    _print_next(response.next_action, console)
    for caveat in response.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}", soft_wrap=True)


def print_preflight(response: embedding_pb2.EmbeddingPreflight, console: Console) -> None:
    _print_window(response.window, console)
    console.print(f"run it: [bold]{escape(' '.join(response.backfill_args))}[/bold]", soft_wrap=True)


def print_backfill(response: embedding_pb2.EmbeddingBackfill, console: Console) -> None:
    result = response.result
    rate = f" ({result.run.texts_per_second:.1f} texts/s)" if result.run.texts else ""
    stopped = " [yellow](cancelled: stopped after the batch in flight)[/yellow]" if result.cancelled else ""
    console.print(
        f"[bold]embedded {result.sessions} sessions, {result.texts} texts[/bold] in {result.seconds:.1f} s{rate}"
        f"{stopped}",
        soft_wrap=True,
    )
    console.print(f"left: {result.sessions_left} sessions queued, {result.texts_left} texts", soft_wrap=True)
    _print_next(response.next_action, console)


def _print_window(window: vector_pb2.EmbedWindow, console: Console) -> None:
    estimate = f"about {window.estimated_seconds:.1f} s" if window.HasField("estimated_seconds") else "no time estimate"
    console.print(
        f"[bold]window: {window.sessions} sessions[/bold] (at most {window.max_sessions}) · {window.texts} texts"
        f" · {window.characters} characters · {estimate}",
        soft_wrap=True,
    )
    console.print(f"  [dim]{escape(window.estimate_basis)}[/dim]", soft_wrap=True)
    shown = list(window.session_ids)
    for session_id in shown:
        console.print(f"  {escape(session_id)}", soft_wrap=True)
    if window.sessions > len(shown):
        console.print(f"  [dim]… and {window.sessions - len(shown)} more[/dim]")
    console.print(f"left after it: {window.sessions_left} sessions queued, {window.texts_left} texts", soft_wrap=True)


def _print_next(action: embedding_pb2.NextAction, console: Console) -> None:
    console.print(f"next [bold]{action.code}[/bold]: {escape(action.reason)}", soft_wrap=True)
    if action.command:
        console.print(f"  $ {escape(action.command)}", soft_wrap=True)


def _covered(vector: vector_pb2.EmbedStatusResponse) -> str:
    """Which sessions the vectors cover, by their latest activity (the worker embeds the newest first)."""
    span = f"{render.minute_time(vector.embedded_oldest_ms)} … {render.minute_time(vector.embedded_newest_ms)}"
    unread = (
        f"; {vector.feed_backlog_texts} texts not read from the partitions yet" if vector.feed_backlog_texts else ""
    )
    if not vector.queued_texts:
        return f"covered: every session read (active {span} UTC){unread}"
    return (
        f"covered: every session active after {render.minute_time(vector.covered_after_ms)} UTC"
        f" (embedded sessions span {span}); older ones wait, newest first{unread}"
    )


def _run(run: vector_pb2.CatchUpRun) -> str:
    started = datetime.fromtimestamp(run.started_ms / 1000, UTC).isoformat(timespec="seconds")
    state = "running since" if run.running else "started"
    return (
        f"{run.trigger}, {state} {started}: {run.sessions} sessions, {run.texts} texts in {run.seconds:.1f} s"
        f" ({run.texts_per_second:.1f} texts/s)"
    )
