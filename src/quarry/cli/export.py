"""`quarry export …`: archive evidence in other systems' shapes, and a session's transcript as a file.

    quarry export otel 'sessions where repo:ledger'                 # OTLP/JSON on stdout
    quarry export otel repo:ledger --out ledger-otel.json
    quarry export otel 'repo:ledger since:7d' --endpoint http://localhost:4318
    quarry export otel repo:ledger --include-text --include-outputs --include-paths
    quarry export html SESSION --out session.html                   # one self-contained file, redacted
    quarry export markdown SESSION --no-redact                       # Markdown on stdout, as archived

The projection and its redaction rule are described in `quarry.cli.otel_export`. A transcript is the web
reader's (quarry.query.web.transcript), read over the session API of whichever cluster the CLI talks to,
and redacted unless --no-redact (quarry.query.web.redaction; docs/transcripts.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stderr, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from quarry.cli.otel_export import OtelProjection
    from quarry.client.client import QuarryClient
    from quarry.v1 import sessions_pb2

render = lazy_module("quarry.cli.render")


export_app = typer.Typer(
    help="Export archive evidence in other systems' shapes (OpenTelemetry), and a session's transcript "
    "(HTML, Markdown).",
    no_args_is_help=True,
)

SessionArgument = Annotated[str, typer.Argument(help="The session's id (`quarry sessions list`).", metavar="SESSION")]
TranscriptOut = Annotated[
    Path | None,
    typer.Option("--out", help="Write the transcript to FILE (default: stdout).", metavar="FILE"),
]
NoRedact = Annotated[
    bool,
    typer.Option(
        "--no-redact",
        help="Keep what redaction removes by default: secrets detect-secrets finds, email addresses and home "
        "directories (docs/transcripts.md).",
    ),
]


@export_app.command("html")
def html(session: SessionArgument, out: TranscriptOut = None, no_redact: NoRedact = False) -> None:
    """Write a session's transcript as one self-contained HTML file (styles inlined, no script, nothing
    fetched): the messages the web reader shows, redacted unless --no-redact."""
    _transcript(session, "html", out, redact=not no_redact)


@export_app.command("markdown")
def markdown(session: SessionArgument, out: TranscriptOut = None, no_redact: NoRedact = False) -> None:
    """Write a session's transcript as Markdown: the messages the web reader shows, redacted unless
    --no-redact."""
    _transcript(session, "md", out, redact=not no_redact)


def _transcript(session_id: str, form: str, out: Path | None, redact: bool) -> None:
    from quarry.query.web.transcript.files import exporting, transcript_html, transcript_markdown

    with open_client() as client:
        page = exporting(_Remote(client), redact).whole(session_id)
    text = transcript_html(page) if form == "html" else transcript_markdown(page)
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    out.write_text(text, encoding="utf-8")
    data = {"session": session_id, "out": str(out), "format": form, "redacted": redact}
    if not render.emit_response(data, settings.format, "an export summary"):
        what = "redacted transcript" if redact else "transcript (not redacted)"
        stdout().print(f"wrote the {what} of {escape(session_id)} to {escape(str(out))}")


class _Remote:
    """The transcript's Source over the SDK's gRPC stubs: the session API."""

    def __init__(self, client: QuarryClient) -> None:
        from quarry.client.calls import typed_call  # gRPC loads with the command, not with `quarry`

        self.call = typed_call
        self.sessions = client.sessions.stub

    def read_event(self, request: sessions_pb2.ReadEventRequest) -> sessions_pb2.EventWindow:
        return self.call(self.sessions.ReadEvent, request)

    def list_events(self, request: sessions_pb2.ListEventsRequest) -> sessions_pb2.EventPage:
        return self.call(self.sessions.ListEvents, request)

    def trace_session(self, request: sessions_pb2.SessionIdRequest) -> sessions_pb2.LineageTrace:
        return self.call(self.sessions.TraceSession, request)


@export_app.command("otel")
def otel(
    query: Annotated[
        list[str], typer.Argument(help="A session query: `sessions where repo:ledger`, or compact `repo:ledger`.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help='Write one JSON document {"resourceSpans": [...], "resourceLogs": [...]} (OTLP/JSON traces and '
            "logs) to FILE. Without --out or --endpoint the document goes to stdout.",
            metavar="FILE",
        ),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            help="Push to an OTLP/HTTP collector instead: POST OTLP/JSON to URL/v1/traces and URL/v1/logs "
            "(e.g. http://localhost:4318).",
            metavar="URL",
        ),
    ] = None,
    include_outputs: Annotated[
        bool, typer.Option("--include-outputs", help="Include tool outputs (default: only their length).")
    ] = False,
    include_paths: Annotated[
        bool,
        typer.Option(
            "--include-paths",
            help="Include absolute local paths (default: relative to the session's cwd, or left out).",
        ),
    ] = False,
    include_text: Annotated[
        bool,
        typer.Option(
            "--include-text",
            help="Include message text, tool arguments, commands, event texts and snapshot previews "
            "(default: only their length and ref).",
        ),
    ] = False,
) -> None:
    """Project the sessions QUERY selects as OpenTelemetry traces and logs: runs and tool calls become
    spans, messages, observed events and context snapshots log records, with stable ids and Quarry refs.
    Tool outputs, archive text and absolute paths are left out unless asked for. The document is
    OTLP/JSON whatever --format says; --format shapes the summary of --out and --endpoint."""
    from quarry.cli.otel_export import ExportOptions, endpoint_urls, export_otel
    from quarry.core.errors import QuarryError
    from quarry.dsl.shell import join_words
    from quarry.v1 import errors_pb2

    text = settings.query = join_words(query)
    if out is not None and endpoint is not None:
        raise QuarryError(errors_pb2.INVALID_REQUEST, "--out and --endpoint exclude each other", parameter="--endpoint")
    if endpoint is not None:
        endpoint_urls(endpoint)  # a malformed URL fails before the archive is read
    options = ExportOptions(include_outputs=include_outputs, include_paths=include_paths, include_text=include_text)
    with open_client() as client:
        projection = export_otel(client, text, options)
    if endpoint is not None:
        _push(projection, endpoint)
    elif out is not None:
        out.write_text(_encoded(projection) + "\n", encoding="utf-8")
        _summary(projection, "wrote", {"out": str(out)}, str(out))
    else:
        sys.stdout.write(_encoded(projection) + "\n")
        sys.stdout.flush()


def _encoded(projection: OtelProjection) -> str:
    return json.dumps(projection.document(), ensure_ascii=False, separators=(",", ":"))


def _push(projection: OtelProjection, endpoint: str) -> None:
    from quarry.cli.otel_export import OtlpPushError, push

    try:
        report = push(projection, endpoint)
    except OtlpPushError as error:
        if settings.format in ("json", "ndjson", "yaml"):
            render.emit_document({"error": error.as_dict()}, settings.format)
        else:
            stderr().print(f"[red]error[/red] {escape(str(error))}")
        raise typer.Exit(2) from None
    extra: dict[str, Any] = {"endpoint": endpoint, "requests": report.requests}
    if report.rejected_spans or report.rejected_log_records or report.messages:
        extra |= {
            "rejected_spans": report.rejected_spans,
            "rejected_log_records": report.rejected_log_records,
            "messages": report.messages,
        }
        for message in report.messages:
            stderr().print(f"[yellow]collector[/yellow] {escape(message)}")
    _summary(projection, "pushed", extra, endpoint)


def _summary(projection: OtelProjection, verb: str, extra: dict[str, Any], where: str) -> None:
    data = {
        "sessions": projection.sessions,
        "spans": projection.span_count,
        "log_records": projection.log_record_count,
        **extra,
    }
    if not render.emit_response(data, settings.format, "an export summary"):
        stdout().print(
            f"{verb} {data['spans']} spans and {data['log_records']} log records of {data['sessions']} "
            f"sessions to {escape(where)}"
        )
        rejected = extra.get("rejected_spans", 0) + extra.get("rejected_log_records", 0)
        if rejected:
            stderr().print(
                f"[yellow]the collector rejected {extra['rejected_spans']} spans and "
                f"{extra['rejected_log_records']} log records[/yellow]"
            )
