"""Lowering of a unit query's pipeline stages (docs/query-language.md#pipelines): their order checked,
each a plan stage.
"""

from __future__ import annotations

from quarry.dsl import ast
from quarry.dsl.errors import BAD_VALUE, UNKNOWN_FIELD, UNSUPPORTED_FORM, query_error
from quarry.dsl.fields import GROUP_FIELDS, SESSION_FIELDS, aggregable_fields, planned_name, unit_fields
from quarry.v1 import plan_pb2

_INT32_MAX = 2**31 - 1


def lower_stages(unit: str, stages: tuple[ast.Stage, ...]) -> list[plan_pb2.PipelineStage]:
    """Validate the stage sequence and lower it, in order.

    Rows: `sort by time` (`sort by seq` for messages: their place in the session), `limit`, `offset`.
    Aggregates (docs/query-language.md#counting-and-grouping): `group by FIELD | count` or `| agg …` (or
    `count` / `agg` alone: the rows as one group) first, then `sort by count|key`, `limit`, `offset`.
    Several limits narrow (the smallest wins) and several offsets add up: the query node combines them
    with the caller's.
    """
    out: list[plan_pb2.PipelineStage] = []
    grouped = False
    for index, stage in enumerate(stages):
        match stage:
            case ast.Sort(key="time", descending=descending):
                if grouped:
                    raise query_error(
                        UNSUPPORTED_FORM,
                        "sort by time orders rows; aggregate rows sort by count or key",
                        stage.span,
                        "time",
                        ("sort by count", "sort by key"),
                    )
                out.append(plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key="time", descending=descending)))
            case ast.Sort(key="seq", descending=descending):
                _check_seq_sort(unit, grouped, stage)
                out.append(plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key="seq", descending=descending)))
            case ast.Sort(key=key, descending=descending):
                if not grouped:
                    raise query_error(
                        UNSUPPORTED_FORM,
                        f"sort by {key} orders aggregate rows: it follows `group by FIELD | count`",
                        stage.span,
                        key,
                        ("sort by time",),
                    )
                out.append(plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key=key, descending=descending)))
            case ast.GroupBy(name):
                if grouped or out:
                    raise query_error(
                        UNSUPPORTED_FORM,
                        "`group by FIELD | count` comes first in a pipeline, once",
                        stage.span,
                        "group",
                    )
                if index + 1 >= len(stages) or not isinstance(stages[index + 1], ast.Count | ast.Aggregate):
                    raise query_error(
                        UNSUPPORTED_FORM,
                        f"group by {name} is followed by `| count` or `| agg …`",
                        stage.span,
                        "group",
                        ("count", "agg"),
                    )
                _check_group_field(unit, stage)
                out.append(plan_pb2.PipelineStage(group_by=planned_name(unit, name)))
            case ast.Count() | ast.Aggregate():
                word = "count" if isinstance(stage, ast.Count) else "agg"
                after_group = index > 0 and isinstance(stages[index - 1], ast.GroupBy)
                if not after_group and (grouped or out):
                    raise query_error(
                        UNSUPPORTED_FORM,
                        f"{word} comes first (over every row) or right after `group by FIELD`",
                        stage.span,
                        word,
                        ("group by",),
                    )
                grouped = True
                if isinstance(stage, ast.Count):
                    out.append(plan_pb2.PipelineStage(count=True))
                else:
                    out.append(plan_pb2.PipelineStage(agg=_aggregate_stage(unit, stage)))
            case ast.Limit(n):
                if not 1 <= n <= _INT32_MAX:
                    raise query_error(BAD_VALUE, f"limit must be between 1 and {_INT32_MAX}", stage.span, str(n))
                out.append(plan_pb2.PipelineStage(limit=n))
            case ast.Offset(n):
                if n > _INT32_MAX:
                    raise query_error(BAD_VALUE, f"offset must be at most {_INT32_MAX}", stage.span, str(n))
                out.append(plan_pb2.PipelineStage(offset=n))
    return out


def _check_seq_sort(unit: str, grouped: bool, stage: ast.Sort) -> None:
    """`sort by seq` orders message rows by their place in their session."""
    if grouped:
        raise query_error(
            UNSUPPORTED_FORM,
            "sort by seq orders message rows; aggregate rows sort by count or key",
            stage.span,
            "seq",
            ("sort by count", "sort by key"),
        )
    if unit != "messages":
        raise query_error(
            UNSUPPORTED_FORM,
            f"sort by seq orders messages (their place in the session); {unit} sort by time",
            stage.span,
            "seq",
            ("sort by time",),
        )


def _aggregate_stage(unit: str, stage: ast.Aggregate) -> plan_pb2.AggregateStage:
    """The functions of an `agg` stage, each of a field the unit aggregates (aggregable_fields), once."""
    allowed = aggregable_fields(unit)
    seen: set[tuple[str, str]] = set()
    for function, name in stage.functions:
        written = f"{function}:{name}" if name else function
        if name and name not in allowed:
            raise query_error(
                UNKNOWN_FIELD,
                f"{written}: {unit} aggregate numbers and flags: {', '.join(allowed) or 'none'} (not {name})",
                stage.span,
                written,
                allowed,
            )
        if (function, name) in seen:
            raise query_error(UNSUPPORTED_FORM, f"{written} is asked for twice", stage.span, written)
        seen.add((function, name))
    return plan_pb2.AggregateStage(
        functions=[plan_pb2.AggregateFunction(function=f, field=n) for f, n in stage.functions]
    )


def _check_group_field(unit: str, stage: ast.GroupBy) -> None:
    allowed = GROUP_FIELDS[unit]
    if stage.field in allowed:
        return
    name = stage.field.removeprefix("session.")
    known = name in (SESSION_FIELDS if stage.field.startswith("session.") else unit_fields(unit))
    raise query_error(
        UNSUPPORTED_FORM if known else UNKNOWN_FIELD,
        f"{unit} group by a closed field: {', '.join(allowed)} (not {stage.field})",
        stage.span,
        stage.field,
        allowed,
    )
