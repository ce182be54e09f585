"""`quarry facets`: session counts per facet value, global and scoped (docs/search-api.md#facets),
through the query node's Facets.

    quarry facets                              # global view only
    quarry facets --origin chatgpt-export      # scoped to one origin, beside the global view
    quarry facets -q "vector store"            # scoped to the sessions the query selects
    quarry --format json facets --no-idf       # the FacetsResponse, without IDF
    quarry facets --include-deferred --budget-ms 2000

Plain output is one table per family (value, scoped count when scoped, global count, IDF), then the
families left deferred and why. json / yaml: the whole response in proto3 JSON (as the HTTP API and MCP
answer it); ndjson and csv: one record per view, family and value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from rich.console import Console

render = lazy_module("quarry.cli.render")
query_pb2 = lazy_module("quarry.v1.query_pb2")


CSV_COLUMNS = ("view", "family", "value", "count", "idf")


def facets(
    query: Annotated[str, typer.Option("--query", "-q", help="Scope: the sessions this query selects.")] = "",
    origin: Annotated[
        list[str] | None, typer.Option("--origin", "-o", help="Scope: only this origin (repeatable).")
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family",
            help="Only this family (repeatable): origins | tags | repos | hosts | pushers | action_types "
            "| count_buckets.",
        ),
    ] = None,
    no_idf: Annotated[bool, typer.Option("--no-idf", help="Leave out the IDF of each value.")] = False,
    include_deferred: Annotated[
        bool,
        typer.Option(
            "--include-deferred", help="Also count repos, hosts, pushers and action_types (deferred by default)."
        ),
    ] = False,
    budget_ms: Annotated[
        float, typer.Option("--budget-ms", min=0, help="Time budget (0: the server's 5000); past it, what is done.")
    ] = 0,
) -> None:
    """Session counts per origin, tag, repo, action type and message-count bucket, global and scoped."""
    settings.query = query
    with open_client() as client:
        response = client.facets(
            query,
            origins=origin or (),
            families=family or (),
            include_deferred=include_deferred,
            idf=not no_idf,
            budget_ms=budget_ms,
        )
    fmt = settings.format
    if fmt in render.DOCUMENT_FORMATS:
        render.emit_document(render.to_dict(response), fmt)
    elif fmt == "ndjson":
        render.emit_ndjson(dict(zip(CSV_COLUMNS, row, strict=True)) for row in _records(response))
    elif fmt == "csv":
        render.emit_csv(CSV_COLUMNS, _records(response))
    else:
        print_facets(response, stdout())


def _views(response: query_pb2.FacetsResponse) -> list[tuple[str, query_pb2.FacetView]]:
    views = [("global", getattr(response, "global"))]
    return [("scoped", response.scoped), *views] if response.scoped_to_query else views


def _records(response: query_pb2.FacetsResponse) -> list[list[Any]]:
    """One record per view, family and value, in CSV_COLUMNS (the IDF None when left out)."""
    return [
        [name, family.family, value.value, value.count, value.idf if value.HasField("idf") else None]
        for name, view in _views(response)
        for family in view.families
        for value in family.values
    ]


def print_facets(response: query_pb2.FacetsResponse, console: Console) -> None:
    """One table per complete family: the scoped count (when scoped), the global count and the IDF."""
    from rich.table import Table

    global_view = getattr(response, "global")
    scope = [f"query {response.query!r}"] if response.query else []
    scope += [f"origin {', '.join(response.origins)}"] if response.origins else []
    header = f"[bold]{global_view.total_sessions} sessions[/bold] in the archive"
    if not response.complete_families:
        header = "[bold]no facet family was counted[/bold]"
    elif response.scoped_to_query:
        header += f" · [bold]{response.scoped.total_sessions}[/bold] scoped to {escape(' and '.join(scope))}"
    console.print(header, soft_wrap=True)
    scoped = {f.family: {v.value: v.count for v in f.values} for f in response.scoped.families}
    for family in global_view.families:
        table = Table(title=family.family, title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("value")
        if response.scoped_to_query:
            table.add_column("scoped", justify="right")
        table.add_column("global", justify="right")
        if response.idf:
            table.add_column("idf", justify="right")
        values = list(family.values)
        if response.scoped_to_query and family.family != "count_buckets":  # the scoped counts, highest first
            counts = scoped.get(family.family, {})
            values.sort(key=lambda v: (-counts.get(v.value, 0), -v.count, v.value))
        for value in values:
            cells = [escape(value.value)]
            if response.scoped_to_query:
                cells.append(str(scoped.get(family.family, {}).get(value.value, 0)))
            cells.append(str(value.count))
            if response.idf:
                cells.append(f"{value.idf:.3f}")
            table.add_row(*cells)
        console.print(table if values else f"[bold]{family.family}[/bold] [dim](no values)[/dim]")
    for status in response.family_status:
        if status.status == "deferred":
            console.print(f"[dim]{status.family}: deferred ({status.reason})[/dim]")
    if response.budget_exceeded:
        console.print(f"[yellow]budget exceeded:[/yellow] the {response.budget_ms:g} ms budget ran out")
    for caveat in response.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}", soft_wrap=True)
