"""`quarry usage`: sessions, assistant replies, tokens and cost per day, model, origin or repo, through the
query node's Usage (docs/usage.md).

    quarry usage                                   # per model, all time
    quarry usage --by day --since 30d              # per day of the last 30 days
    quarry usage --by repo --since 2026-06-01 --until 2026-06-30 --scope team-a
    quarry --format csv usage --by origin

Plain output is a table, one line per row and the total last (counts rounded: 45.3k), with the recorded
cost and the estimated cost in columns of their own, then how estimates were made and the unit queries the
figures came from. json / yaml: the whole UsageReport; ndjson: one object per row then the total (`row`:
group | total, `key`, the figures); csv: the same lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from rich.console import Console

    from quarry.v1 import query_pb2 as query_types

render = lazy_module("quarry.cli.render")

# Plain table columns: (heading, UsageFigures field); the unpriced replies are summed up below the table
_COLUMNS = (
    ("sessions", "sessions"),
    ("replies", "messages"),
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache\nread", "cache_read_tokens"),
    ("cache\nwrite", "cache_write_tokens"),
    ("recorded\nUSD", "recorded_cost_usd"),
    ("estimated\nUSD", "estimated_cost_usd"),
)


def usage(
    by: Annotated[str, typer.Option("--by", help="Rows per day | model | origin | repo.")] = "model",
    since: Annotated[
        str, typer.Option("--since", help="Window start: 2026-01-02, 2026-01-02T10:30Z, today, yesterday, 7d, 24h, 2w.")
    ] = "",
    until: Annotated[str, typer.Option("--until", help="Window end, same forms (a day: its end).")] = "",
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="Only this of the token's scopes (repeatable).")
    ] = None,
) -> None:
    """Sessions, replies, tokens and cost (recorded and estimated) per day, model, origin or repo."""
    with open_client() as client:
        report = client.usage(by=by, since=since, until=until, scopes=scope or ())
    fmt = settings.format
    if fmt in render.DOCUMENT_FORMATS:
        render.emit_document(render.to_dict(report), fmt)
    elif fmt == "ndjson":
        render.emit_ndjson(_lines(report))
    elif fmt == "csv":
        lines = _lines(report)
        render.emit_csv(list(lines[0]), ([line[c] for c in lines[0]] for line in lines))
    else:
        print_usage(report, stdout())


def _lines(report: query_types.UsageReport) -> list[dict[str, Any]]:
    """Each row, then the total: `row` (group | total), `key`, and every figure by its field name."""

    def line(row: str, key: str, figures: query_types.UsageFigures) -> dict[str, Any]:
        return {"row": row, "key": key, **{f.name: getattr(figures, f.name) for f in figures.DESCRIPTOR.fields}}

    return [*(line("group", row.key, row.figures) for row in report.rows), line("total", "", report.total)]


def print_usage(report: query_types.UsageReport, console: Console) -> None:
    """The table, the total last, then how the cost was reckoned and where the figures came from."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    window = " ".join(f"{name} {value}" for name, value in (("since", report.since), ("until", report.until)) if value)
    scopes = f" · scopes {', '.join(report.scopes)}" if report.scopes else ""
    console.print(f"[bold]usage by {report.by}[/bold] · {escape(window or 'all time')}{escape(scopes)}", soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column(report.by, overflow="fold")
    for heading, _ in _COLUMNS:
        table.add_column(heading, justify="right", no_wrap=True)
    for row in report.rows:
        table.add_row(escape(row.key) if row.key else "[dim](none)[/dim]", *_cells(row.figures))
    table.add_section()
    table.add_row("[bold]total[/bold]", *_cells(report.total))
    if console.is_terminal:
        console.print(table)  # a narrow terminal folds the first column, never a figure
    else:  # to a file or a pipe: the table at its own width
        natural = console.measure(table, options=console.options.update_width(1_000)).maximum
        Console(file=console.file, width=max(console.width, natural), emoji=False, color_system=None).print(table)
    total = report.total
    console.print(
        f"recorded: {total.recorded_messages} replies as their source recorded them · estimated: "
        f"{total.estimated_messages} replies at {escape(report.price_table)} prices of "
        f"{render.minute_time(report.priced_at_ms)} UTC · unpriced: {total.unpriced_messages} replies, "
        f"{total.unpriced_tokens:,} tokens",
        soft_wrap=True,
    )
    if report.unpriced_models:
        models = ", ".join(m or "(no model recorded)" for m in report.unpriced_models)
        console.print(f"[yellow]no price for:[/yellow] {escape(models)}", soft_wrap=True)
    for caveat in report.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}", soft_wrap=True)
    for entry in report.missing:
        console.print(f"[red]partial:[/red] partition {entry.partition} did not answer ({escape(entry.reason)})")
    console.print("[dim]from the unit queries:[/dim]")
    for query in report.unit_queries:
        console.print(f"[dim]  {escape(query)}[/dim]", soft_wrap=True)


def _cells(figures: query_types.UsageFigures) -> list[str]:
    return [_amount(getattr(figures, field)) if field.endswith("_usd") else _count(getattr(figures, field))
            for _, field in _COLUMNS]  # fmt: skip


def _count(n: int) -> str:
    """A count for people: 812, 45.3k, 1.27M (exact in every machine format)."""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.3g}{suffix}"
    return str(n)


def _amount(usd: float) -> str:
    """Dollars for people: cents from a dollar up, four decimals below."""
    return f"{usd:,.2f}" if usd >= 1 else f"{usd:.4f}"
