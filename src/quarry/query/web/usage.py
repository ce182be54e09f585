"""`/usage`: the usage report (QueryService.Usage, docs/usage.md) for people. Sessions, replies, tokens and
cost per day, model, agent (origin) or repo over a time window, in a table whose recorded and estimated
cost are columns of their own (never added together), a bar chart of one figure per row (charts.py), and
the unit queries the figures come from, each a link that opens it in the units console.

The page takes `by`, `since`, `until` (the query language's date forms), `scope` (one of the token's
scopes; none: all of them) and `chart` (the figure drawn). The report is the RPC's, run as the visitor:
a scope the token may not read is refused in the same words whether or not it exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from quarry.core.errors import QuarryError
from quarry.query.usage import GROUPINGS, usage_report
from quarry.query.web.charts import bar_chart
from quarry.query.web.pages import Web
from quarry.query.web.query_box import href, shown_error, text_param
from quarry.query.web.signin import Visitor
from quarry.query.web.units import PATH as UNITS_PATH
from quarry.v1 import errors_pb2, query_pb2

PATH = "/usage"
BY_TITLES = {by: "agent (origin)" if by == "origin" else by for by in GROUPINGS}  # the rows a report may have
# the figures the chart may draw: UsageFigures field -> how the chart's choice names it
CHARTED = {
    "messages": "replies",
    "sessions": "sessions",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cache_read_tokens": "cache-read tokens",
    "recorded_cost_usd": "recorded cost (USD)",
    "estimated_cost_usd": "estimated cost (USD)",
}
COST = "${:,.4f}"  # dollars to the hundredth of a cent
# the table's columns after the key: (UsageFigures field, header, which cost it is: "recorded", "estimated", "")
COLUMNS = (
    ("sessions", "sessions", ""),
    ("messages", "replies", ""),
    ("input_tokens", "input tokens", ""),
    ("output_tokens", "output tokens", ""),
    ("cache_read_tokens", "cache read", ""),
    ("cache_write_tokens", "cache write", ""),
    ("recorded_cost_usd", "recorded cost", "recorded"),
    ("recorded_messages", "replies recorded", "recorded"),
    ("estimated_cost_usd", "estimated cost", "estimated"),
    ("estimated_messages", "replies estimated", "estimated"),
    ("unpriced_messages", "replies unpriced", ""),
)


@dataclass(frozen=True)
class Line:
    """One row of the table (or the total): its key and its figures as written, in COLUMNS order."""

    key: str
    cells: list[tuple[str, str]]  # (UsageFigures field, the figure as written)


def routes(web: Web) -> list[BaseRoute]:
    return [Route(PATH, web.page(usage_page), methods=["GET"])]


async def usage_page(web: Web, request: Request, visitor: Visitor) -> Response:
    """The usage report the form asks for."""
    by = text_param(request, "by") or "model"
    since, until, scope = text_param(request, "since"), text_param(request, "until"), text_param(request, "scope")
    chart = text_param(request, "chart") or "messages"
    context: dict[str, object] = {
        "by": by,
        "since": since,
        "until": until,
        "scope": scope,
        "chart_field": chart,
        "by_titles": BY_TITLES,
        "charted": CHARTED,
        "scopes": sorted(visitor.scopes or ()),
        "report": None,
    }
    report_request = query_pb2.UsageRequest(by=by, since=since, until=until, scopes=[scope] if scope else [])
    try:
        if chart not in CHARTED:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"chart {chart[:40]!r} is not one of {', '.join(CHARTED)}",
                parameter="chart",
            )
        report = await web.call(visitor, usage_report, web.coordinator, report_request)
    except QuarryError as error:
        shown = shown_error(error, "", PATH)
        return web.html(request, visitor, "usage.html", status=shown.status, error=shown, **context)
    bars = [(row.key, float(getattr(row.figures, chart))) for row in report.rows]
    title = f"{CHARTED[chart]} by {BY_TITLES.get(report.by, report.by)}"
    return web.html(
        request,
        visitor,
        "usage.html",
        error=None,
        **{**context, "report": report},
        lines=[line(row.key, row.figures) for row in report.rows],
        total=line("total", report.total),
        chart=bar_chart(title, bars, COST if chart.endswith("_usd") else ""),
        columns=COLUMNS,
        queries=[(query, href(UNITS_PATH, q=query)) for query in report.unit_queries],
    )


def line(key: str, figures: query_pb2.UsageFigures) -> Line:
    """Counts in full, costs in dollars to the hundredth of a cent."""
    return Line(key, [(name, written(name, getattr(figures, name))) for name, _, _ in COLUMNS])


def written(name: str, value: float) -> str:
    return COST.format(value) if name.endswith("_usd") else f"{int(value):,}"
