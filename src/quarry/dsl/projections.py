"""`with UNIT(fields)[filters]` items of a sessions query, lowered to plan Projections.

- fields: each a row field of the unit (quarry.core.row_fields) or a peer alias of one; the plan keeps
  the canonical name and the name as written (the projected row's key). No list: the unit's default
  fields.
- filters: the unit's own predicates, as after `<unit> where`, AND-joined; `first:N` / `last:N` (once,
  1 to MAX_ROWS) say which of each session's rows are kept, in time order; neither: the first
  DEFAULT_ROWS.
"""

from __future__ import annotations

from collections.abc import Callable

from quarry.core import row_fields
from quarry.dsl import ast
from quarry.dsl.errors import BAD_VALUE, UNKNOWN_FIELD, UNSUPPORTED_FORM, query_error
from quarry.v1 import plan_pb2

DEFAULT_ROWS = 20
MAX_ROWS = 1000
CUTS = ("first", "last")
MAX_PROJECTIONS = 9

LowerFilter = Callable[[str, ast.Predicate], plan_pb2.Predicate]


def lower(projections: tuple[ast.Projection, ...], lower_filter: LowerFilter) -> list[plan_pb2.Projection]:
    """The plan's projections; `lower_filter(unit, predicate)` lowers a filter as a unit query's `where`."""
    if len(projections) > MAX_PROJECTIONS:
        extra = projections[MAX_PROJECTIONS]
        raise query_error(UNSUPPORTED_FORM, f"a query projects at most {MAX_PROJECTIONS} units", extra.span, extra.unit)
    return [_lower_one(p, lower_filter) for p in projections]


def _lower_one(projection: ast.Projection, lower_filter: LowerFilter) -> plan_pb2.Projection:
    unit = projection.unit
    out = plan_pb2.Projection(unit=unit)
    written = projection.fields or row_fields.PROJECTED_BY_DEFAULT[unit]
    spans = projection.field_spans or (projection.unit_span,) * len(written)
    for name, span in zip(written, spans, strict=False):
        field = row_fields.canonical(unit, name)
        if field is None:
            known = row_fields.known_names(unit)
            raise query_error(
                UNKNOWN_FIELD,
                f"{unit} rows have no field {name!r} (fields: {', '.join(row_fields.fields_of(unit))})",
                span,
                name,
                known,
            )
        out.fields.append(field)
        out.labels.append(name)
    cuts = [f for f in projection.filters if isinstance(f, ast.Field) and f.name in CUTS and not f.session_scoped]
    rest = [f for f in projection.filters if not any(f is cut for cut in cuts)]
    out.rows = DEFAULT_ROWS
    if cuts:
        if len(cuts) > 1:
            raise query_error(
                UNSUPPORTED_FORM, "a projection keeps its first:N or its last:N rows, once", cuts[1].span, cuts[1].name
            )
        out.rows, out.last = _cut(cuts[0]), cuts[0].name == "last"
    if rest:
        predicate = rest[0] if len(rest) == 1 else ast.And(tuple(rest), rest[0].span)
        out.where.CopyFrom(lower_filter(unit, predicate))
    return out


def _cut(node: ast.Field) -> int:
    value = node.values[0] if len(node.values) == 1 else None
    text = value.text if value is not None else ""
    if value is None or value.quoted or not text.isdigit() or not 1 <= int(text[:7]) <= MAX_ROWS:
        raise query_error(
            BAD_VALUE,
            f"{node.name}:N keeps N rows of each session: a whole number from 1 to {MAX_ROWS}",
            (value.span if value is not None else None) or node.span,
            text,
        )
    return int(text)
