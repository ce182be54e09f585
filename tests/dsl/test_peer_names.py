"""The peer tool's names for unit fields (fields.PEER_NAMES, docs/query-language.md#field-reference):
each is accepted wherever its field is, means exactly it (the same plan, so the same rows on a real
cluster), groups as it does, and is refused as it is."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.dsl.fields import FIELDS_BY_UNIT, GROUP_FIELDS, PEER_NAMES
from tests.dsl.conformance_archive import ConformanceCluster

# (unit, peer name, its field, a value of the field the conformance archive holds)
PEERS = [
    ("runs", "provider_origin", "provider", "anthropic"),
    ("runs", "git_branch", "branch", "main"),
    ("context-snapshots", "inheritance_mode", "inheritance", "summary"),
    ("delegations", "result_status", "result_state", "failed"),
    ("observed-events", "status", "delivery_state", "failed"),
    ("observed-events", "handler", "object_ref", "bash"),
]


def test_the_table_lists_every_peer_name_once() -> None:
    assert sorted((u, p, f) for u, p, f, _ in PEERS) == sorted(
        (unit, peer, field) for unit, names in PEER_NAMES.items() for peer, field in names.items()
    )


@pytest.mark.parametrize(("unit", "peer", "field", "value"), PEERS)
def test_a_peer_name_compiles_to_its_fields_plan(unit: str, peer: str, field: str, value: str) -> None:
    spec = FIELDS_BY_UNIT[unit][peer]
    assert spec.alias_of == field and f"(as {field})" in spec.doc
    other = spec.allowed[0] if spec.allowed else "other"
    for form in ("{name}:{value}", "NOT {name}:{value}", "{name}:({value}|{other})"):
        if form.startswith("NOT") and not spec.negatable:
            continue
        by_peer = compile_query(f"{unit} where {form.format(name=peer, value=value, other=other)}").plan
        by_field = compile_query(f"{unit} where {form.format(name=field, value=value, other=other)}").plan
        assert by_peer == by_field, form


@pytest.mark.parametrize(("unit", "peer", "field", "value"), PEERS)
def test_a_peer_name_groups_as_its_field(unit: str, peer: str, field: str, value: str) -> None:
    if field not in GROUP_FIELDS[unit]:
        assert peer not in GROUP_FIELDS[unit]
        return
    assert GROUP_FIELDS[unit].index(peer) == GROUP_FIELDS[unit].index(field) + 1
    tail = "| sort by key desc"
    by_peer = compile_query(f"{unit} where session.repo:x | group by {peer} | count {tail}").plan
    assert by_peer == compile_query(f"{unit} where session.repo:x | group by {field} | count {tail}").plan


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("context-snapshots where inheritance_mode:borrowed", "BAD_VALUE"),
        ("delegations where result_status:pending", "BAD_VALUE"),
        ("messages where git_branch:main", "UNKNOWN_FIELD"),  # a peer name of runs, not of messages
        ("sessions where provider_origin:anthropic", "UNKNOWN_FIELD"),
    ],
)
def test_a_peer_name_is_refused_where_its_field_would_be(query: str, code: str) -> None:
    with pytest.raises(QuarryError) as refused:
        compile_query(query)
    assert refused.value.code_name == code


@pytest.mark.parametrize(("unit", "peer", "field", "value"), PEERS)
def test_a_peer_name_finds_the_rows_its_field_finds(
    cluster: ConformanceCluster, unit: str, peer: str, field: str, value: str
) -> None:
    rows = [row.ref for row in cluster.units(f"{unit} where {field}:{value}").rows]
    assert rows == [row.ref for row in cluster.units(f"{unit} where {peer}:{value}").rows]
    if unit != "observed-events":  # the archive's events hold no failure and no bash handler
        assert rows, f"{unit} where {field}:{value} finds nothing in the archive"
