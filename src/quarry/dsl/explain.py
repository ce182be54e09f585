"""explain(text): what a query means, for `quarry --explain` and QueryService.Explain.

The response carries the typed AST as JSON and the plan the query compiles to. In the JSON every
AST node is an object whose `type` is its class name in quarry.dsl.ast, followed by its fields in
declaration order (spans are left out, so equal trees give equal JSON); tuples are lists.

The plan's stages are the pipeline in order; a session-scoped pipeline
(`sessions where P | <unit> where Q | …`) opens with a `session_scope` stage carrying P, so a
consumer reads the pipeline from the stage list instead of inferring it from other fields.
"""

from __future__ import annotations

import dataclasses
import json

from quarry.dsl.compile import parse_and_lower
from quarry.v1 import plan_pb2, query_pb2

_POSITIONS = frozenset({"span", "unit_span", "field_spans"})


def explain(text: str, now_ms: int | None = None) -> query_pb2.ExplainResponse:
    """Parse and compile `text`; raises the same QuarryError compile_query would."""
    query, compiled = parse_and_lower(text, now_ms)
    plan = plan_pb2.QueryPlan()
    plan.CopyFrom(compiled.plan)
    if plan.HasField("session_scope"):
        scope = plan_pb2.PipelineStage(session_scope=plan_pb2.SessionScopeStage(where=plan.session_scope))
        stages = [scope, *plan.stages]
        del plan.stages[:]
        plan.stages.extend(stages)
    return query_pb2.ExplainResponse(
        query=text,
        kind=compiled.kind,
        unit_source=compiled.unit,
        ast_json=ast_json(query),
        plan=plan,
    )


def ast_json(node: object) -> str:
    """The AST as deterministic JSON (see the module docstring)."""
    return json.dumps(_jsonable(node), ensure_ascii=False)


def _jsonable(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, object] = {"type": type(value).__name__}
        for spec in dataclasses.fields(value):
            if spec.name not in _POSITIONS:
                out[spec.name] = _jsonable(getattr(value, spec.name))
        return out
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    return value
