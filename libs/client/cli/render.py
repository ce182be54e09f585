"""Rendering of envelopes for the terminal: plain (tables), json (the envelope), ndjson (one row
per line). JSON keeps the proto field names; unset optional fields are null; int64 stay numbers."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

import orjson
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape

from quarry.v1 import ingest_pb2, query_pb2

FORMATS = ("plain", "json", "ndjson")


def to_dict(message: Message) -> dict[str, Any]:
    """Every field of the message, defaults included, in proto field names."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _value(value_field, v) for k, v in sorted(value.items())}
        elif field.is_repeated:
            out[field.name] = [_value(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _value(field, value)
    return out


def _value(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_dict(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name
    return value


def emit_json(data: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")


def emit_ndjson(rows: list[Any]) -> None:
    for row in rows:
        sys.stdout.buffer.write(orjson.dumps(row) + b"\n")


def search_envelope(envelope: query_pb2.SearchEnvelope, fmt: str, console: Console) -> None:
    if fmt == "json":
        emit_json(to_dict(envelope))
        return
    if fmt == "ndjson":
        emit_ndjson([to_dict(hit) for hit in envelope.hits])
        return
    console.print(
        f"[bold]{len(envelope.hits)} sessions[/bold] · lane {envelope.retrieval_lane} · {escape(envelope.query)!r}"
    )
    for hit in envelope.hits:
        match, session = hit.match, hit.session
        score = f"{match.score:.4g} {match.score_kind}" if match.HasField("score") else "unranked"
        where = " · ".join(x for x in (session.repo, session.origin) if x)
        console.print(
            f"{match.rank:>3}. [cyan]{escape(session.id)}[/cyan]  [dim]{score} · {escape(where)}[/dim]", soft_wrap=True
        )
        console.print(f"     [bold]{escape(session.title or '(untitled)')}[/bold]", soft_wrap=True)
        if match.snippet:
            console.print(f"     {escape(' '.join(match.snippet.split()))}", soft_wrap=True)
    for caveat in envelope.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}")


def unit_envelope(envelope: query_pb2.QueryUnitEnvelope, fmt: str, console: Console) -> None:
    if fmt == "json":
        emit_json(to_dict(envelope))
        return
    if fmt == "ndjson":
        emit_ndjson([to_dict(row) for row in envelope.rows])
        return
    console.print(f"[bold]{len(envelope.rows)} {envelope.unit}[/bold] · {escape(envelope.query)!r}")
    for row in envelope.rows:
        kind = row.WhichOneof("row")
        item = getattr(row, kind)
        if kind == "message":
            what = f"{item.role} · {_time(item.time_ms)}"
            text = " ".join(b.text for b in item.blocks if b.text and b.type in ("text", "code"))
        elif kind == "action":
            what = f"{item.category} {item.tool}{' (failed)' if item.failed else ''} · {_time(item.time_ms)}"
            text = item.command or item.path
        else:
            what = item.type
            text = item.text
        console.print(f"[cyan]{escape(row.ref)}[/cyan]  [dim]{escape(what)}[/dim]", soft_wrap=True)
        if text:
            console.print(f"     {escape(' '.join(text.split())[:300])}", soft_wrap=True)


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M") if ms else "-"


def status(response: query_pb2.ClusterStatusResponse, fmt: str, console: Console) -> None:
    if fmt in ("json", "ndjson"):
        rows = [to_dict(n) for n in response.nodes]
        emit_json({"nodes": rows}) if fmt == "json" else emit_ndjson(rows)
        return
    for node in response.nodes:
        up = "[green]up[/green]  " if node.up else "[red]down[/red]"
        if node.role == "index":
            counts = f"shard {node.shard} · {node.sessions} sessions · {node.documents} documents"
        elif node.role == "vector":
            counts = f"{node.vectors} vectors · {node.vectors_pending} pending"
        else:
            counts = ""
        line = f"{up} {node.name:<9} {node.address:<21} {counts}"
        console.print(line + (f"\n      [dim]{escape(node.detail)}[/dim]" if node.detail else ""), soft_wrap=True)


def ingest_report(report: ingest_pb2.IngestReport, fmt: str, console: Console) -> None:
    if fmt in ("json", "ndjson"):
        emit_json(to_dict(report))
        return
    kinds = [
        f"{count} {what}"
        for count, what in (
            (report.files_unchanged, "unchanged"),
            (report.files_appended, "appended"),
            (report.files_rewritten, "rewritten"),
        )
        if count
    ]
    files = f"{report.files} files" + (f" ({', '.join(kinds)})" if kinds else "")
    console.print(
        f"ingested {files}: "
        f"{report.sessions_written} sessions written, {report.sessions_unchanged} unchanged, "
        f"{report.messages_written} messages ({report.elapsed_ms / 1000:.1f} s)"
    )
    _ingest_notes(report, console)


def ingest_event(event: ingest_pb2.IngestProgress, fmt: str, console: Console) -> None:
    """One event of a followed ingest as it happens: a file that changed, or a round's issues.
    json and ndjson print one object per line (`{"file": …}` or `{"report": …}`): a stream has no end."""
    if fmt in ("json", "ndjson"):
        kind = event.WhichOneof("event")
        emit_ndjson([{kind: to_dict(getattr(event, kind))}])
        return
    if event.HasField("report"):
        _ingest_notes(event.report, console)
    elif event.file.change not in ("unchanged", "pending", ""):
        file = event.file
        sessions = f"{file.sessions} session{'' if file.sessions == 1 else 's'}"
        console.print(f"{file.change:<9} {escape(file.path)}: {sessions}", soft_wrap=True)


def _ingest_notes(report: ingest_pb2.IngestReport, console: Console) -> None:
    for issue in report.issues:
        where = f"{issue.path}:{issue.line}" if issue.line else issue.path
        console.print(f"[yellow]{issue.code}[/yellow] {escape(where)}: {escape(issue.reason)}")
    if report.skipped_record_types:
        skipped = ", ".join(f"{k} ×{v}" for k, v in sorted(report.skipped_record_types.items()))
        console.print(f"[dim]record types not modelled: {escape(skipped)}[/dim]")
    for caveat in report.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}")
