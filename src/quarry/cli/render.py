"""Rendering of envelopes for the terminal, one function per envelope, every `--format`:

- plain: a readable listing;
- json: the whole envelope in proto3 JSON, the one JSON form of Quarry's messages that the HTTP API
  and the MCP tools answer too (`quarry.core.proto_json`, docs/search-api.md#responses): lowerCamelCase
  names, 64-bit integers as strings, enum values by name, fields at their default left out;
  yaml: the same document as YAML;
- ndjson: one JSON object per record of a list-shaped answer (hit, row, aggregate group, node, …), and
  an answer that is no list on one line;
- csv: a header, then one line per hit / row / group, with a fixed column set per unit
  (row_fields.SUMMARY_FIELDS: `ref` and `session_id` first, then the unit's scalar fields in proto
  names and json values; lists space-joined, maps as `key=value` pairs; booleans true/false; times
  in epoch ms as in json). A hit's projected rows are in json, yaml, ndjson and plain only.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from quarry.cli.lazy import escape, lazy_module
from quarry.core.lanes import DEFAULT_WEIGHT, RRF, RRF_K

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from rich.console import Console

    from quarry.cli.lines import Lines
    from quarry.core.errors import QuarryError

orjson = lazy_module("orjson")
yaml = lazy_module("yaml")
text_format = lazy_module("google.protobuf.text_format")
json_format = lazy_module("google.protobuf.json_format")
ingest_pb2 = lazy_module("quarry.v1.ingest_pb2")
query_pb2 = lazy_module("quarry.v1.query_pb2")
row_fields = lazy_module("quarry.core.row_fields")


FORMATS = ("plain", "json", "ndjson", "yaml", "csv")
DOCUMENT_FORMATS = ("json", "yaml")  # the whole envelope as one document


def to_dict(message: Message) -> dict[str, Any]:
    """The message in proto3 JSON, exactly as the HTTP API and the MCP tools write it."""
    from quarry.core.proto_json import to_json

    return to_json(message)


def emit_json(data: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")


def emit_ndjson(rows: Iterable[Any]) -> None:
    for row in rows:
        sys.stdout.buffer.write(orjson.dumps(row) + b"\n")


def emit_yaml(data: Any, start: bool = False) -> None:
    """One YAML document (with `---` first when `start`, for a stream of documents)."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, explicit_start=start)
    sys.stdout.buffer.write(text.encode())


def emit_document(data: Any, fmt: str) -> None:
    """The whole of a response as one document: YAML for yaml, JSON otherwise."""
    emit_yaml(data) if fmt == "yaml" else emit_json(data)


def emit_response(data: Any, fmt: str, what: str, records: Iterable[Any] | None = None) -> bool:
    """A whole response (a dict) in a machine format: a document; for ndjson, one line per item of
    `records` (the list a list-shaped response holds), or the response on one line. csv is refused (a
    response is not a table). False for plain: the caller prints it its own way."""
    if fmt == "csv":
        raise not_tabular(what)
    if fmt in DOCUMENT_FORMATS:
        emit_document(data, fmt)
    elif fmt == "ndjson":
        emit_ndjson([data] if records is None else records)
    else:
        return False
    return True


def emit_message(message: Message, fmt: str, what: str, records: str = "") -> bool:
    """A response message as `emit_response` prints it; `records`: the name of its repeated field that
    ndjson prints one item per line ("": the message on one line)."""
    items = [to_dict(item) for item in getattr(message, records)] if records else None
    return emit_response(to_dict(message), fmt, what, items)


def emit_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    import csv

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(columns)
    out.writerows([_cell(value) for value in row] for row in rows)
    sys.stdout.flush()


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if value is None:
        return ""
    return value


# ----- sessions ---------------------------------------------------------------------------------

SESSION_COLUMNS: dict[str, Callable[[query_pb2.SearchHit], Any]] = {
    "rank": lambda h: h.match.rank,
    "session_id": lambda h: h.session.id,
    "score": lambda h: h.match.score if h.match.HasField("score") else None,
    "score_kind": lambda h: h.match.score_kind,
    "match_surface": lambda h: h.match.match_surface,
    "target_ref": lambda h: h.match.target_ref,
    "origin": lambda h: h.session.origin,
    "repo": lambda h: h.session.repo,
    "title": lambda h: h.session.title,
    "created_ms": lambda h: h.session.created_ms,
    "updated_ms": lambda h: h.session.updated_ms,
    "messages": lambda h: h.session.counts.messages,
    "snippet": lambda h: h.match.snippet,
}


def search_envelope(envelope: query_pb2.SearchEnvelope, fmt: str, out: Lines) -> None:
    if fmt in DOCUMENT_FORMATS:
        emit_document(to_dict(envelope), fmt)
        return
    if fmt == "ndjson":
        emit_ndjson(to_dict(hit) for hit in envelope.hits)
        return
    if fmt == "csv":
        emit_csv(list(SESSION_COLUMNS), ([get(hit) for get in SESSION_COLUMNS.values()] for hit in envelope.hits))
        return
    read = " · read as prose" if envelope.reading == "prose" else ""
    out.line(
        (f"{len(envelope.hits)} sessions", "bold"), f" · lane {envelope.retrieval_lane}{read} · {envelope.query!r}"
    )
    for hit in envelope.hits:
        match, session = hit.match, hit.session
        score = f"{match.score:.4g} {match.score_kind}" if match.HasField("score") else _unscored(match)
        where = " · ".join(x for x in (session.repo, session.origin) if x)
        out.line(f"{match.rank:>3}. ", (session.id, "cyan"), "  ", (f"{score} · {where}", "dim"))
        if match.HasField("scores"):
            out.line("     ", (hit_scores(match.scores), "dim"))
        out.line("     ", (session.title or "(untitled)", "bold"))
        if match.snippet:
            out.line(f"     {' '.join(match.snippet.split())}")
        for projected in hit.projections:
            _plain_projection(projected, out)
    _notes(envelope.caveats, envelope.missing, out)
    if envelope.next_cursor:
        from quarry.client.controls_json import controls_to_json

        command = (
            f"quarry search {shlex.quote(envelope.query)} --lane {envelope.requested_lane or 'auto'} "
            f"--limit {envelope.limit} --cursor {envelope.next_cursor}"
        )
        chosen = controls_to_json(envelope.controls)
        if _chosen(chosen):
            command += f" --controls {shlex.quote(orjson.dumps(chosen).decode())}"
        out.line(f"next: {command}")


PROJECTED_VALUE_CHARS = 160  # a projected value in plain output: one line, cut past this


def _plain_projection(projected: query_pb2.ProjectedRows, out: Lines) -> None:
    """`     actions · 5 of 44 rows` and one line per row: `field=value · …`, each value on one line."""
    total = f"{projected.total} row{'' if projected.total == 1 else 's'}"
    shown = f"{len(projected.rows)} of {total}" if projected.cut else total
    out.line("     ", (projected.unit, "bold"), (f" · {shown}", "dim"))
    for row in projected.rows:
        plain = json_format.MessageToDict(row)
        out.line("       " + " · ".join(f"{name}={_one_line(plain.get(name, ''))}" for name in projected.fields))


def _one_line(value: object) -> str:
    if value is None:  # not recorded (an action's exit_code where the source has none)
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, str):
        text = value
    else:
        text = orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= PROJECTED_VALUE_CHARS else text[: PROJECTED_VALUE_CHARS - 1] + "…"


def hit_scores(scores: query_pb2.HitScores) -> str:
    """`retrieval 0.73 · text tantivy_bm25 2.77 ↑ · vector l2_distance 0.81 ↓` (↑: higher is better)."""
    parts = [f"retrieval {scores.retrieval:.4g}"]
    for channel, raw in sorted(scores.channels.items()):
        parts.append(f"{channel} {raw.metric} {raw.raw:.4g} {'↑' if raw.higher_is_better else '↓'}")
    return " · ".join(parts)


def _chosen(controls: dict[str, Any]) -> bool:
    """Whether echoed controls differ from the defaults (so the next page must repeat them)."""
    fusion = controls.get("fusion", {})
    params = fusion.get("params", {})
    return bool(
        controls.get("admission")
        or "min_score" in controls
        or controls.get("include_scores")
        or fusion.get("method", RRF) != RRF
        or params.get("rank_constant", RRF_K) != RRF_K
        or any(w != DEFAULT_WEIGHT for w in params.get("weights", {}).values())
    )


# ----- unit rows and aggregates -----------------------------------------------------------------

AGGREGATE_COLUMNS = ("key", "count")


def unit_csv_columns(unit: str) -> tuple[str, ...]:
    """The csv columns of a unit's rows: `ref` and `session_id`, then its summary fields."""
    return (*row_fields.ROW_ONLY, *row_fields.SUMMARY_FIELDS[unit])


def _row_cells(unit: str, row: query_pb2.QueryUnitRow, columns: Sequence[str]) -> list[Any]:
    return [row_fields.value(unit, row, column) for column in columns]


def unit_envelope(envelope: query_pb2.QueryUnitEnvelope, fmt: str, out: Lines) -> None:
    if fmt in DOCUMENT_FORMATS:
        emit_document(to_dict(envelope), fmt)
    elif fmt == "ndjson":
        emit_ndjson(to_dict(item) for item in (envelope.groups if envelope.aggregate else envelope.rows))
    elif fmt == "csv":
        if envelope.aggregate:
            names = [v.name for v in envelope.groups[0].values] if envelope.groups else []
            rows = ([g.key, g.count, *("" if v.empty else v.value for v in g.values)] for g in envelope.groups)
            emit_csv([*AGGREGATE_COLUMNS, *names], rows)
        else:
            columns = unit_csv_columns(envelope.unit)
            emit_csv(columns, (_row_cells(envelope.unit, row, columns) for row in envelope.rows))
    elif envelope.aggregate:
        _plain_groups(envelope, out)
    else:
        _plain_rows(envelope, out)
    if fmt == "plain":
        _notes(envelope.caveats, envelope.missing, out)
        _unit_next(envelope, out)


def _unit_next(envelope: query_pb2.QueryUnitEnvelope, out: Lines) -> None:
    """What a listing cut by its limit left out, and the command for the next page."""
    if not envelope.has_more:
        return
    query = shlex.quote(envelope.query)
    if envelope.aggregate:
        shown = envelope.offset + len(envelope.groups)
        out.line(
            f"more: {envelope.groups_total} groups, {envelope.offset + 1}-{shown} shown; next: "
            f"quarry search {query} --limit {envelope.limit} --offset {shown}"
        )
    else:
        out.line(f"next: quarry search {query} --limit {envelope.limit} --cursor {envelope.next_cursor}")


def _notes(caveats: Iterable[str], missing: Iterable[query_pb2.MissingPartition], out: Lines) -> None:
    """An envelope's caveats, and the partitions a partial result left out, with why."""
    for caveat in caveats:
        out.line(("caveat:", "yellow"), f" {caveat}", wrap=True)
    for entry in missing:
        out.line(("partial:", "red"), f" partition {entry.partition} did not answer ({entry.reason})", wrap=True)


def _plain_groups(envelope: query_pb2.QueryUnitEnvelope, out: Lines) -> None:
    if not envelope.group_by:  # `| count` or `| agg …` over every row
        total = sum(group.count for group in envelope.groups)
        out.line((f"{total} {envelope.unit}", "bold"), f" · {envelope.query!r}", wrap=True)
        for group in envelope.groups:
            if group.values:
                out.line("  ", (_aggregate_values(group), "dim"))
        return
    out.line(
        (f"{len(envelope.groups)} groups", "bold"),
        f" of {envelope.unit} by {envelope.group_by} · {envelope.query!r}",
        wrap=True,
    )
    width = max((len(str(g.count)) for g in envelope.groups), default=1)
    for group in envelope.groups:
        values = ("  " + _aggregate_values(group), "dim") if group.values else ""
        out.line(f"{group.count:>{width}}  ", group.key if group.key else ("(none)", "dim"), values)


def _aggregate_values(group: query_pb2.AggregateCount) -> str:
    """`avg:output_tokens 812.5 · p90:input_tokens 4100` (– for a field no row of the group has)."""
    return " · ".join(f"{v.name} {'–' if v.empty else f'{v.value:.6g}'}" for v in group.values)


def _plain_rows(envelope: query_pb2.QueryUnitEnvelope, out: Lines) -> None:
    out.line((f"{len(envelope.rows)} {envelope.unit}", "bold"), f" · {envelope.query!r}", wrap=True)
    for row in envelope.rows:
        what, text = _plain_row(row)
        out.line((row.ref, "cyan"), "  ", (what, "dim"))
        if text:
            out.line(f"     {' '.join(text.split())[:300]}")


def _plain_row(row: query_pb2.QueryUnitRow) -> tuple[str, str]:
    """(a one-line summary, the row's text) of one unit row."""
    kind = row.WhichOneof("row")
    item = getattr(row, kind)
    if kind == "message":
        return f"{item.role} · {minute_time(item.time_ms)}", row_fields.message_text(item)
    if kind == "action":
        failed = " (failed)" if item.failed else ""
        return f"{item.category} {item.tool}{failed} · {minute_time(item.time_ms)}", item.command or item.path
    if kind == "block":
        return item.type, item.text
    if kind == "file":
        categories = ", ".join(f"{k} ×{v}" for k, v in sorted(item.categories.items()))
        failed = f" · {item.failed} failed" if item.failed else ""
        return f"{item.actions} actions ({categories}){failed} · {minute_time(item.last_time_ms)}", item.path
    if kind == "assertion":
        return f"{item.kind} · {item.status} · {item.author} · on {item.target_ref}", item.body
    if kind == "run":
        agent = f" {item.agent}" if item.agent else ""
        return f"{item.role}{agent} · {item.status} · {minute_time(item.started_ms)}", item.child_session_id
    if kind == "observed_event":
        return f"{item.kind} · {item.delivery_state} · {minute_time(item.time_ms)}", item.text
    if kind == "context_snapshot":
        return f"{item.boundary} · {minute_time(item.time_ms)}", item.preview
    child = item.child_session_id or "no child session"
    return (
        f"{item.agent or item.tool} · {item.mapping_state} → {child} · {item.result_state}"
        f" · {minute_time(item.time_ms)}",
        item.description or item.instruction,
    )


# ----- explain ----------------------------------------------------------------------------------


def explain(response: query_pb2.ExplainResponse, fmt: str, console: Console) -> None:
    """The ExplainResponse as a document (json, yaml; ndjson: one line), or plain: the AST and plan."""
    if emit_message(response, fmt, "an explanation"):
        return
    console.print(f"[bold]{escape(response.query)!r}[/bold]")
    console.print(f"kind {response.kind} · unit source {response.unit_source}")
    if response.reading == "prose":
        console.print(f"read as prose: the words {escape(response.query_read)!r}, any of them (docs/searching.md)")
    elif response.reading:
        console.print("read as the query language (docs/searching.md)")
    console.print("[bold]ast[/bold]")
    ast = orjson.loads(response.ast_json) if response.ast_json else None
    console.print(escape(orjson.dumps(ast, option=orjson.OPT_INDENT_2).decode()), highlight=False, soft_wrap=True)
    console.print("[bold]plan[/bold]")
    console.print(escape(text_format.MessageToString(response.plan).rstrip()), highlight=False, soft_wrap=True)


def minute_time(ms: int) -> str:
    """An epoch-ms instant to the minute, in UTC ("-" for 0)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M") if ms else "-"


def not_tabular(what: str) -> QuarryError:
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    return QuarryError(
        errors_pb2.INVALID_REQUEST,
        f"{what} is not a table: use --format plain, json, ndjson or yaml",
        parameter="format",
    )


def status(
    response: query_pb2.ClusterStatusResponse, fmt: str, console: Console, restarts: dict[str, int] | None = None
) -> None:
    """Every node; `restarts`: how often the local supervisor restarted each (from the cluster's record)."""
    restarts = restarts or {}
    if fmt == "csv":
        fields = [f.name for f in query_pb2.NodeStatus.DESCRIPTOR.fields]
        rows = ([*(getattr(n, name) for name in fields), restarts.get(n.name, 0)] for n in response.nodes)
        emit_csv([*fields, "restarts"], rows)
        return
    nodes = [{**to_dict(n), "restarts": restarts.get(n.name, 0)} for n in response.nodes]
    if emit_response({"nodes": nodes}, fmt, "a status", nodes):
        return
    for node in response.nodes:
        up = "[green]up[/green]  " if node.up else "[red]down[/red]"
        if node.role == "index" or node.partitions:  # a query node holding the partitions shows them too
            held = ",".join(str(p) for p in node.partitions)
            counts = f"partitions {held or '-'} · {node.sessions} sessions · {node.documents} documents"
        elif node.role == "vector":
            counts = f"{node.vectors} vectors · {node.vectors_pending} pending"
        else:
            counts = ""
        if restarts.get(node.name):
            counts += f" · restarted {restarts[node.name]}×"
        line = f"{up} {node.name:<9} {node.address:<21} {counts}"
        console.print(line + (f"\n      [dim]{escape(node.detail)}[/dim]" if node.detail else ""), soft_wrap=True)


def cluster_status(response: query_pb2.ClusterStatusResponse, fmt: str, console: Console) -> None:
    """The partition map (partition -> replicas with state and lag), its generation, and the log; ndjson
    and csv: one record per partition and replica."""
    cluster_map, log = response.map, response.log
    if fmt == "csv":
        columns = ["partition", "node", "state", "alive", "applied_seq", "lag"]
        emit_csv(
            columns,
            (
                [p.partition, r.node, r.state, r.alive, r.applied_seq, r.lag]
                for p in cluster_map.partition_replicas
                for r in p.replicas
            ),
        )
        return
    replicas = [{"partition": p.partition, **to_dict(r)} for p in cluster_map.partition_replicas for r in p.replicas]
    if emit_response({"map": to_dict(cluster_map), "log": to_dict(log)}, fmt, "a cluster status", replicas):
        return
    console.print(
        f"mode {cluster_map.mode} · generation {cluster_map.generation} · {cluster_map.partitions} partitions × "
        f"{cluster_map.replicas} replicas"
    )
    for entry in cluster_map.partition_replicas:
        replicas = "  ".join(
            f"{r.node} {_replica_state(r.state)}"
            + ("" if r.alive else " [red](down)[/red]")
            + (f" lag {r.lag}" if r.lag > 0 else "")
            for r in entry.replicas
        )
        console.print(f"  p{entry.partition:<3} {replicas or '[red]no replica[/red]'}", soft_wrap=True)
    if log.stream:
        console.print(
            f"log {log.stream}: {log.messages} records, {log.bytes} bytes, sequence {log.first_seq}..{log.last_seq}"
            + (f" · {escape(log.detail)}" if log.detail else "")
        )
        for server in log.servers:
            state = "leader" if server.leader else ("current" if server.current else f"behind by {server.lag}")
            if server.offline:
                state = "[red]offline[/red]"
            console.print(f"  {server.name}: {state}")


def _replica_state(state: str) -> str:
    colours = {"active": "green", "catching_up": "yellow", "draining": "dim"}
    return f"[{colours.get(state, 'white')}]{state}[/{colours.get(state, 'white')}]"


def delete_report(report: ingest_pb2.DeleteReport, fmt: str, console: Console) -> None:
    if emit_message(report, fmt, "a delete report"):
        return
    for session_id in report.deleted:
        console.print(f"deleted {escape(session_id)}")
    for session_id in report.not_found:
        console.print(f"[yellow]not found[/yellow] {escape(session_id)}")
    if report.deleted and not report.searchable:
        console.print("[yellow]in the log; replicas apply it as they catch up[/yellow]")
    for caveat in report.caveats:
        console.print(f"[dim]{escape(caveat)}[/dim]")


def ingest_report(report: ingest_pb2.IngestReport, fmt: str, console: Console) -> None:
    if emit_message(report, fmt, "an ingest report"):
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
    json and ndjson print one object per line (`{"file": …}` or `{"report": …}`): a stream has no end;
    yaml one document per event."""
    if fmt == "csv":
        raise not_tabular("an ingest event")
    if fmt != "plain":
        kind = event.WhichOneof("event")
        data = {kind: to_dict(getattr(event, kind))}
        emit_yaml(data, start=True) if fmt == "yaml" else emit_ndjson([data])
        return
    if event.HasField("report"):
        _ingest_notes(event.report, console)
    elif event.file.change not in ("unchanged", "pending", ""):
        file = event.file
        sessions = f"{file.sessions} session{'' if file.sessions == 1 else 's'}"
        console.print(f"{file.change:<9} {escape(file.path)}: {sessions}", soft_wrap=True)


SKIPPED_SHOWN = 20  # skipped files listed per reason in plain text (every one in json, ndjson and yaml)


def _ingest_notes(report: ingest_pb2.IngestReport, console: Console) -> None:
    for issue in report.issues:
        where = f"{issue.path}:{issue.line}" if issue.line else issue.path
        console.print(f"[yellow]{issue.code}[/yellow] {escape(where)}: {escape(issue.reason)}")
    by_code: dict[str, list[ingest_pb2.SkippedFile]] = {}
    for skipped in report.skipped:
        by_code.setdefault(skipped.code, []).append(skipped)
    for code, files in by_code.items():
        for skipped in files[:SKIPPED_SHOWN]:
            console.print(f"[dim]skipped {code}[/dim] {escape(skipped.path)}: {escape(skipped.reason)}", soft_wrap=True)
        if len(files) > SKIPPED_SHOWN:
            console.print(f"[dim]skipped {code}: {len(files) - SKIPPED_SHOWN} more (--format json lists them)[/dim]")
    if report.skipped_record_types:
        skipped = ", ".join(f"{k} ×{v}" for k, v in sorted(report.skipped_record_types.items()))
        console.print(f"[dim]record types not modelled: {escape(skipped)}[/dim]")
    for caveat in report.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}")


def _unscored(match: query_pb2.SessionSearchMatch) -> str:
    """A hit without a score: ranked by a lane whose score is not exposed (actions), or not ranked."""
    return "ranked, no score" if match.match_surface == "action" else "unranked"
