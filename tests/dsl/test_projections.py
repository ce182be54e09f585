"""Projections (`… with messages(id, role, text)[role:user, last:10], files(path)`, issue 14): the
syntax, its errors, and the rows each session hit carries on a real cluster of 1 and 3 partitions (the
`cluster` fixture of tests/dsl/conftest.py), read off the archive of tests/dsl/conformance_archive.py."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from hypothesis import given, settings
from hypothesis import strategies as st

from quarry.core import refs
from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.dsl.parser import parse
from quarry.dsl.render import render
from quarry.v1 import errors_pb2, query_pb2
from tests.dsl.conformance_archive import (
    J_TURNS,
    PLAN_PY,
    A,
    B,
    C,
    ConformanceCluster,
    D,
    E,
    F,
    G,
    H,
    I,
    J,
    action,
    j_assistant,
    message,
)

PEER_FORM = (
    "sessions where repo:polylogue with messages(message_id,role,text)[role:user, last:10], "
    "actions(tool_name,semantic_type,is_error), files(path)"
)


# ------------------------------------------------------------------ syntax


@pytest.mark.parametrize(
    "query",
    [
        PEER_FORM,
        "repo:polylogue with actions[tool:Bash, first:5]",
        "sessions where repo:polylogue with files",
        "with files(path)",
        'fix with messages(role)[text:"a, b", words >= 5, NOT role:user, -tool:x, ~"plan envelope"]',
        "sessions where tag:active with runs(agent, status)[role:subagent], delegations, context-snapshots[first:1]",
    ],
)
def test_a_projection_parses_renders_and_compiles(query: str) -> None:
    tree = parse(query)
    assert parse(render(tree)) == tree
    assert compile_query(query).plan.projections


def test_with_before_a_bare_unit_in_the_compact_form_is_text() -> None:
    compiled = compile_query("deal with files")
    assert not compiled.plan.projections
    assert compiled.matched_terms == ("deal", "with", "files")


def test_peer_aliases_name_the_row_fields_and_stay_the_keys() -> None:
    projections = compile_query(PEER_FORM).plan.projections
    assert [(p.unit, list(p.fields), list(p.labels)) for p in projections] == [
        ("messages", ["id", "role", "text"], ["message_id", "role", "text"]),
        ("actions", ["tool", "category", "failed"], ["tool_name", "semantic_type", "is_error"]),
        ("files", ["path"], ["path"]),
    ]
    assert (projections[0].rows, projections[0].last) == (10, True)
    assert (projections[1].rows, projections[1].last) == (20, False)  # the default cut


@pytest.mark.parametrize(
    ("query", "code", "token"),
    [
        ("x with actions(tool_name, nope)", errors_pb2.UNKNOWN_FIELD, "nope"),
        ("x with actions[bogus:1]", errors_pb2.UNKNOWN_FIELD, "bogus"),
        ("x with actions[first:0]", errors_pb2.BAD_VALUE, "0"),
        ("x with actions[last:1001]", errors_pb2.BAD_VALUE, "1001"),
        ("x with actions[first:5, last:3]", errors_pb2.UNSUPPORTED_FORM, "last"),
        ("x with actions[role:user]", errors_pb2.UNKNOWN_FIELD, "role"),
    ],
)
def test_a_bad_projection_is_a_typed_error_at_its_place(query: str, code: int, token: str) -> None:
    with pytest.raises(QuarryError) as raised:
        compile_query(query)
    assert raised.value.code == code
    assert raised.value.token == token
    assert query[raised.value.column - 1 :].startswith(token)


# ------------------------------------------------------------------ on the archive


def projected(cluster: ConformanceCluster, query: str) -> dict[str, list[dict[str, Any]]]:
    """Each hit's projections as plain data: session id -> [{unit, fields, rows, total, cut}]."""
    envelope = cluster.search(query)
    return {hit.session.id: [_plain(p) for p in hit.projections] for hit in envelope.hits}


def _plain(projection: query_pb2.ProjectedRows) -> dict[str, Any]:
    return MessageToDict(projection, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def test_each_hit_carries_the_listed_fields_of_its_rows(cluster: ConformanceCluster) -> None:
    got = projected(cluster, f"session:{B} with actions(action_id, tool_name, semantic_type, is_error)")
    assert got == {
        B: [
            {
                "unit": "actions",
                "fields": ["action_id", "tool_name", "semantic_type", "is_error"],
                "rows": [
                    _action(0, "Edit", "file_edit", False),
                    _action(1, "Bash", "shell", True),
                    _action(2, "Edit", "file_edit", False),
                ],
                "total": "3",
                "cut": False,
            }
        ]
    }


def _action(seq: int, tool: str, category: str, failed: bool) -> dict[str, Any]:
    return {"action_id": refs.action_id(B, seq), "tool_name": tool, "semantic_type": category, "is_error": failed}


def test_first_and_last_cut_each_sessions_rows_in_time_order(cluster: ConformanceCluster) -> None:
    first = projected(cluster, f"session:{J} with actions(ref)[first:5]")[J][0]
    assert [r["ref"] for r in first["rows"]] == [action(J, n) for n in range(5)]
    assert (first["total"], first["cut"]) == (str(2 * J_TURNS), True)
    last = projected(cluster, f"session:{J} with messages(ref)[role:assistant, last:3]")[J][0]
    assert [r["ref"] for r in last["rows"]] == [message(J, j_assistant(t)) for t in range(J_TURNS - 3, J_TURNS)]
    assert (last["total"], last["cut"]) == (str(J_TURNS), True)
    # two actions share each turn's time: the last three are the last turn's two and the one before them
    ties = projected(cluster, f"session:{J} with actions(ref)[last:3]")[J][0]
    assert [r["ref"] for r in ties["rows"]] == [action(J, n) for n in range(2 * J_TURNS - 3, 2 * J_TURNS)]


def test_filters_keep_the_matching_rows_and_the_text_field_joins_the_prose(cluster: ConformanceCluster) -> None:
    got = projected(cluster, f"session:{B} with messages(message_id, role, text)[role:user]")
    assert got[B][0]["rows"] == [
        {"message_id": refs.message_id(B, 0), "role": "user", "text": "fix the query envelope from the stale plan"}
    ]
    assert (got[B][0]["total"], got[B][0]["cut"]) == ("1", False)


def test_several_items_and_sessions_each_get_their_own_rows(cluster: ConformanceCluster) -> None:
    query = f"sessions where session:({B}|{J}) with files(path, action_count), actions(tool_name)[first:1]"
    got = projected(cluster, query)
    assert set(got) == {B, J}
    assert got[B][0]["rows"] == [{"path": PLAN_PY, "action_count": 2}]
    assert got[J][0]["rows"] == [
        {"path": "src/names.py", "action_count": J_TURNS},
        {"path": "src/rename.py", "action_count": J_TURNS},
    ]  # the same first time: in id order
    assert [p["rows"] for p in (got[B][1], got[J][1])] == [[{"tool_name": "Edit"}], [{"tool_name": "Edit"}]]


def test_a_session_without_matching_rows_has_an_empty_projection(cluster: ConformanceCluster) -> None:
    got = projected(cluster, f"session:{B} with delegations(agent)[agent:nobody]")
    assert got[B] == [{"unit": "delegations", "fields": ["agent"], "rows": [], "total": "0", "cut": False}]


# ------------------------------------------------------------------ the same rows as the unit query

# Filters each unit takes (joined with AND), and the sessions of the archive.
_FILTERS = {
    "messages": ["role:user", "role:assistant", "type:code", "text:timeout", "words >= 3", "tool:edit"],
    "actions": ["tool:bash", "tool:edit", "is_error:true", "action:file_edit", "exit_code >= 0"],
    "blocks": ["type:text", "type:tool_use", "tool:bash"],
    "files": ["path:src", "action:file_edit"],
    "assertions": ["kind:decision", "status:active"],
    "runs": ["role:subagent", "role:main", "status:completed"],
    "observed-events": ["kind:command", "status:recorded"],
    "context-snapshots": ["boundary:compaction", "boundary:session_start"],
    "delegations": ["mapping_state:resolved", "tool:task"],
}
_SESSIONS = [A, B, C, D, E, F, G, H, I, J]


@settings(max_examples=40, deadline=None)
@given(
    unit=st.sampled_from(sorted(_FILTERS)),
    data=st.data(),
    session=st.sampled_from(_SESSIONS),
    rows=st.integers(1, 6),
    last=st.booleans(),
)
def test_a_projection_holds_exactly_what_the_session_scoped_unit_query_returns(
    cluster: ConformanceCluster, unit: str, data: st.DataObject, session: str, rows: int, last: bool
) -> None:
    filters = data.draw(st.lists(st.sampled_from(_FILTERS[unit]), max_size=2, unique=True))
    cut = f"{'last' if last else 'first'}:{rows}"
    hit = projected(cluster, f"session:{session} with {unit}(ref)[{', '.join([*filters, cut])}]")[session][0]
    where = " AND ".join([f"session.id:{session}", *filters])
    request = query_pb2.QueryUnitsRequest(query=f"{unit} where {where} | sort by time", limit=1000)
    listing = [row.ref for row in cluster.stub.QueryUnits(request).rows]
    assert [r["ref"] for r in hit["rows"]] == (listing[-rows:] if last else listing[:rows])
    counted = cluster.units(f"{unit} where {where} | count").groups
    assert int(hit["total"]) == (counted[0].count if counted else 0)
    assert hit["cut"] == (int(hit["total"]) > len(hit["rows"]))
