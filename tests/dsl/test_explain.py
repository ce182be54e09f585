"""explain(): the typed AST as JSON, the unit source, and the plan with its stages in order."""

from __future__ import annotations

import json

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query, explain
from tests.dsl.plans import field, limit, sort_time

NOW = 1_767_312_000_000


def test_session_scoped_pipeline_opens_with_a_session_scope_stage() -> None:
    query = "sessions where repo:polylogue | messages where role:assistant | sort by time desc | limit 10"
    response = explain(query, now_ms=NOW)
    assert (response.query, response.kind, response.unit_source) == (query, "units", "messages")
    stages = list(response.plan.stages)
    assert [stage.WhichOneof("stage") for stage in stages] == ["session_scope", "sort", "limit"]
    assert stages[0].session_scope.where == field("repo", "polylogue")
    assert stages[1:] == [sort_time(descending=True), limit(10)]
    # the compiled plan itself keeps the scope in its own field, not as a stage
    assert [s.WhichOneof("stage") for s in compile_query(query).plan.stages] == ["sort", "limit"]


def test_ast_json_names_node_types_and_fields_without_positions() -> None:
    tree = json.loads(explain("sessions where exists message(role:user) AND messages >= 2").ast_json)
    assert tree == {
        "type": "SessionsQuery",
        "predicate": {
            "type": "And",
            "items": [
                {
                    "type": "Exists",
                    "unit": "message",
                    "predicate": {
                        "type": "Field",
                        "name": "role",
                        "values": [{"type": "Value", "text": "user", "quoted": False}],
                        "session_scoped": False,
                    },
                },
                {"type": "Comparison", "field": "messages", "op": ">=", "values": ["2"], "session_scoped": False},
            ],
        },
        "projections": [],
    }


def test_ast_json_is_deterministic_and_ignores_spacing() -> None:
    first = explain("messages where role:user   AND text:x | group by role | count").ast_json
    assert first == explain("messages where role:user AND text:x | group by role | count").ast_json


def test_aggregate_pipeline_lists_group_and_count_stages() -> None:
    response = explain("messages where text:timeout | group by role | count | sort by key | limit 3")
    assert [s.WhichOneof("stage") for s in response.plan.stages] == ["group_by", "count", "sort", "limit"]
    assert response.plan.stages[2].sort.key == "key"


def test_session_query_is_its_own_unit_source() -> None:
    response = explain("repo:polylogue timeout")
    assert (response.kind, response.unit_source) == ("sessions", "sessions")
    assert json.loads(response.ast_json)["type"] == "CompactQuery"


def test_explain_fails_with_the_compile_error() -> None:
    with pytest.raises(QuarryError) as caught:
        explain("runs where role:main | group by colour | count")
    assert caught.value.column == len("runs where role:main | ") + 1
