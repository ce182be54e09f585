"""`/units`: the units console. Any unit query (docs/query-language.md#unit-queries), run as the visitor
(QueryService.QueryUnits), its rows as a table whose columns are the rows' fields, the next page by the
envelope's cursor; an aggregate (`| group by F | count`, `| agg …`) as a table of its groups and a bar
chart per figure (charts.py). A refused query is shown under the box as on the search page.

The page takes `q` (the query), `limit` and `cursor`, the same as `quarry 'messages where …'` and
`GET /api/query-units?expression=…`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from quarry.core.errors import QuarryError
from quarry.query.web.charts import Chart, bar_chart, number
from quarry.query.web.pages import Web
from quarry.query.web.query_box import TIME_FIELDS, href, limit_param, shown_error, text_param, when
from quarry.query.web.refs import reader_href, ref_href
from quarry.query.web.signin import Visitor
from quarry.v1 import query_pb2

PATH = "/units"
MAX_CELL_CHARS = 400  # a long text or structure is cut in the table (the ref opens the whole row's object)
WIDE_CHARS = 40
EXAMPLES = (
    "messages where role:assistant | group by session.origin | count",
    "actions where is_error:true | group by tool | count",
    "messages where role:assistant | group by session.repo | agg count, sum:output_tokens",
    "files where action:file_edit | group by path | count",
    "runs where role:subagent",
)


@dataclass(frozen=True)
class Cell:
    text: str
    href: str = ""
    numeric: bool = False

    @property
    def wide(self) -> bool:
        """Long text, given room to wrap by words rather than by letters."""
        return len(self.text) > WIDE_CHARS


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[Cell]]

    @property
    def numeric(self) -> list[bool]:
        """Per column: every cell that holds something is a number (the header then aligns with them)."""
        return [all(r[i].numeric for r in self.rows if r[i].text) for i in range(len(self.columns))]


def routes(web: Web) -> list[BaseRoute]:
    return [Route(PATH, web.page(units_page), methods=["GET"])]


async def units_page(web: Web, request: Request, visitor: Visitor) -> Response:
    """A unit query's rows or groups."""
    query, cursor, limit = text_param(request, "q"), text_param(request, "cursor"), limit_param(request)
    context: dict[str, object] = {"q": query, "limit": limit, "examples": EXAMPLES, "error": None, "envelope": None}
    if not query.strip():
        return web.html(request, visitor, "units.html", **context)
    units_request = query_pb2.QueryUnitsRequest(query=query, limit=limit, cursor=cursor)
    try:
        envelope = await web.call(visitor, web.coordinator.query_units, units_request)
    except QuarryError as error:
        shown = shown_error(error, query, PATH, limit=limit)
        return web.html(request, visitor, "units.html", status=shown.status, **{**context, "error": shown})
    if envelope.aggregate:
        context.update(table=groups_table(envelope), charts=group_charts(envelope))
    else:
        context.update(table=rows_table(envelope), charts=[])
    next_href = href(PATH, q=query, limit=limit, cursor=envelope.next_cursor) if envelope.next_cursor else ""
    return web.html(request, visitor, "units.html", **{**context, "envelope": envelope, "next_href": next_href})


def rows_table(envelope: query_pb2.QueryUnitEnvelope) -> Table:
    """The rows: their ref (opening the row's object: an action's, its tool call in the reader) and their
    session (the reader), then every field any row sets, in order of first appearance (times as UTC)."""
    payloads = [getattr(row, row.WhichOneof("row") or "message") for row in envelope.rows]
    values = [row_values(payload) for payload in payloads]
    columns = list(dict.fromkeys(name for row in values for name in row if name not in ("id", "session_id")))
    rows = []
    for row, payload, known in zip(envelope.rows, payloads, values, strict=True):
        opens = f"block:{row.action.block_id}" if row.WhichOneof("row") == "action" else row.ref
        cells = [Cell(row.ref, ref_href(opens)), Cell(row.session_id, reader_href(row.session_id))]
        for name in columns:
            value = known[name] if name in known else _unset(payload, name)
            cells.append(Cell(when(value)) if name in TIME_FIELDS and isinstance(value, int) else cell(value))
        rows.append(cells)
    return Table(["ref", "session", *columns], rows)


def row_values(payload: ProtoMessage) -> dict[str, object]:
    """The payload's set fields by proto name, in field order: scalars as they are, structures (blocks,
    maps, lists) in proto3 JSON."""
    as_json = json_format.MessageToDict(payload, preserving_proto_field_name=True)
    return {
        fd.name: as_json[fd.name] if fd.message_type or fd.is_repeated or fd.type == fd.TYPE_BYTES else value
        for fd, value in payload.ListFields()
    }


def _unset(payload: ProtoMessage, name: str) -> object:
    """What a row that does not set the field holds: a scalar's zero value (seq 0 is a seq), else nothing."""
    field = payload.DESCRIPTOR.fields_by_name[name]
    return None if field.message_type or field.is_repeated else getattr(payload, name)


def cell(value: object) -> Cell:
    """A value as a table cell: numbers right-aligned, structures as JSON, long text cut."""
    if value is None:
        return Cell("")
    if isinstance(value, bool):
        return Cell(str(value).lower())
    if isinstance(value, int | float):
        return Cell(number(value), numeric=True)
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
    return Cell(text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…")


def groups_table(envelope: query_pb2.QueryUnitEnvelope) -> Table:
    """The groups: the key, then the rows counted (`| count`) or each `agg` function's value ("" when it
    has none)."""
    key = envelope.group_by or "group"
    if not envelope.groups or not envelope.groups[0].values:
        return Table([key, "count"], [[Cell(g.key), cell(g.count)] for g in envelope.groups])
    names = [value.name for value in envelope.groups[0].values]
    rows = [[Cell(g.key), *(Cell("") if v.empty else cell(v.value) for v in g.values)] for g in envelope.groups]
    return Table([key, *names], rows)


def group_charts(envelope: query_pb2.QueryUnitEnvelope) -> list[Chart]:
    """A chart of the counts (`| count`), or one per `agg` function."""
    groups = envelope.groups
    if not groups or not groups[0].values:
        return [bar_chart(f"count by {envelope.group_by or 'group'}", [(g.key, float(g.count)) for g in groups])]
    charts = []
    for i, value in enumerate(groups[0].values):
        bars = [(g.key, None if g.values[i].empty else g.values[i].value) for g in groups]
        charts.append(bar_chart(f"{value.name} by {envelope.group_by or 'group'}", bars))
    return charts
