# ruff: noqa: E501 - one query and its answer per line
"""The conformance table past seed 000 (issue 14): forms of the peer's newer language and Quarry's own,
each with its expected answer on the fixture archive of tests/dsl/conformance_archive.py, through a
real cluster of 1 and 3 partitions (the `cluster` fixture of tests/dsl/conftest.py). Expected answers are read off
the archive's definition by hand, as the seed table's are."""

from __future__ import annotations

import pytest

from quarry.v1 import errors_pb2
from tests.dsl.conformance_archive import (
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
    delegation,
    event,
    message,
    run,
    snapshot,
)
from tests.dsl.test_conformance import Expected, answer, error, groups, rows, sessions

UNSUPPORTED = errors_pb2.UNSUPPORTED_FORM

TABLE: list[tuple[str, Expected]] = [
    # ------------------------------------------------------------------ aggregates on every unit
    ("runs where role:subagent | group by status | count", groups(("completed", 2), ("failed", 1))),
    ("runs where role:subagent | group by agent | count | sort by key", groups(("explore", 2), ("general-purpose", 1))),
    ("runs where role:main | count", groups(("", 4))),
    ("observed-events where kind:command | group by kind | count", groups(("command", 3))),
    ("observed-events where handler:bash AND status:acted_on", rows(event(B, 0))),
    ("observed-events where kind:command | group by status | count", groups(("recorded", 2), ("acted_on", 1))),
    ("delegations where mapping_state:resolved | count", groups(("", 2))),
    ("delegations where agent:nobody | count", groups(("", 0))),
    (
        "delegations where mapping_state:resolved OR mapping_state:unresolved | group by mapping_state | count",
        groups(("resolved", 2), ("unresolved", 1)),
    ),
    ("context-snapshots where boundary:compaction | count", groups(("", 1))),
    ("context-snapshots where inheritance:summary", rows(snapshot(I, 1))),
    ("context-snapshots where inheritance:(prompt|inherited)", rows(snapshot(G, 0), snapshot(I, 0))),
    (
        "context-snapshots where boundary:subagent_start | group by inheritance | count",
        groups(("", 2), ("inherited", 1), ("prompt", 1)),
    ),
    ("runs where provider:anthropic", rows(run(B))),
    ("runs where role:main AND branch:refactor/schema", rows(run(D))),
    ("runs where role:main | group by provider | count", groups(("", 2), ("anthropic", 1), ("openai", 1))),
    ("delegations where is_error:true", rows(delegation(C, 1))),
    ("delegations where child_model:claude-haiku-4", rows(delegation(B, 1))),
    ("delegations where tool:task | group by is_error | count", groups(("false", 2), ("true", 1))),
    ("delegations where tool:task | agg sum:is_error", groups(("", 3))),
    (f"actions where session.id:{B} | group by is_error | count", groups(("false", 2), ("true", 1))),
    ("actions where is_error:true | group by tool | count", groups(("bash", 1))),
    # ------------------------------------------------------------------ fields
    ("actions where is_error:true", rows(action(B, 1))),
    ("actions where exit_code >= 1", rows(action(B, 1))),
    ("actions where exit_code:0", rows(action(B, 2))),
    ("actions where followup_class:acknowledged", rows(action(B, 1))),
    ("actions where is_error:true AND -followup_class:acknowledged", rows()),
    (f"actions where session.id:{B} | group by exit_code | count", groups(("", 1), ("0", 1), ("1", 1))),
    ("actions where is_error:true | group by followup_class | count", groups(("acknowledged", 1))),
    ("actions where followup_class:shrugged", error(errors_pb2.BAD_VALUE)),
    (f"messages where session.id:{B} AND words >= 8", rows(message(B, 0), message(B, 1))),
    (f"messages where session.id:{B} AND word_count between 1 and 5", rows(message(B, 5))),
    (f"messages where session.id:{B} AND type:code", rows(message(B, 1))),
    # a message holding several kinds of block counts in each kind's group
    (
        f"messages where session.id:{B} | group by type | count",
        groups(("text", 3), ("tool_result", 3), ("code", 1), ("tool_use", 1)),
    ),
    # ------------------------------------------------------------------ feature filters
    ("has:tools", sessions(B, C, D, E, I, J)),
    ("has:paste", sessions(C)),
    ("has:thinking", sessions()),
    ("has:subagents", sessions(B, C, D)),
    ("has:compaction", sessions(I)),
    ("has:errors", sessions(B)),
    ("has:(paste|compaction)", sessions(C, I)),
    ("-has:tools", sessions(A, F, G, H)),
    ("sessions where has:subagents AND NOT has:errors", sessions(C, D)),
    # ------------------------------------------------------------------ session fields
    (f"root:{B}", sessions(B, I)),
    (f"root:{I}", sessions(I)),
    ("project:polylogue", sessions(A, B, D, E, I, J)),  # as repo:polylogue
    (f"messages where session.root:{B} AND role:user", rows(message(B, 0), message(I, 0))),
    # ------------------------------------------------------------------ literal text (seed 002's text clause)
    ('contains:"QUERY   envelope"', sessions(A, B, C, D)),
    ("contains:envel", sessions(A, B, C, D)),  # part of a word
    ('contains:"timeout = 30"', sessions(B)),  # a code block
    ('timeout contains:"timeout = 30"', sessions(B)),  # beside ranked text
    ('sessions where contains:"fix the query envelope from the stale" AND repo:polylogue', sessions(B)),
    ('contains:"the envelope query"', sessions()),  # the words, not in that order
    ("-contains:envel", sessions(E, F, G, H, I, J)),
    ('messages where session.contains:"rename step 1" AND role:user', rows(message(J, 0))),
    ('contains:" "', error(errors_pb2.BAD_VALUE)),
    # ------------------------------------------------------------------ origins Quarry does not read
    ("origin:windsurf-session", sessions()),
    ("session:continue-session:abc123", sessions()),
    ("messages where session.origin:amp-session", rows()),
    ("origin:Cursor_Session", error(errors_pb2.BAD_VALUE)),
    # ------------------------------------------------------------------ strictness and its forms
    ("sessions where repo:polylogue origin:codex-session", error(errors_pb2.INVALID_QUERY)),
    ("actions where tool:Bash | sort by time | count", error(UNSUPPORTED)),
    ("messages where lane:hybrid", error(UNSUPPORTED)),
]


@pytest.mark.parametrize(("query", "expected"), TABLE, ids=[q for q, _ in TABLE])
def test_past_the_seed_on_the_archive(cluster: ConformanceCluster, query: str, expected: Expected) -> None:
    assert answer(cluster, query) == expected


# `| agg …`: (query, [(key, count, {function: value})]) with the values read off the archive by hand: B's
# six messages (a user turn, the assistant's turn with three tool calls and their three tool messages
# between, the closing turn) carry input tokens 1000 and 999 and durations 2000 and 2500 on messages 1
# and 5, 0 on the rest.
AGGREGATES: list[tuple[str, list[tuple[str, int, dict[str, float | None]]]]] = [
    (
        f"messages where session.id:{B} | agg count, sum:input_tokens, avg:input_tokens, min:input_tokens, max:duration_ms, p50:duration_ms, p90:duration_ms",
        [
            (
                "",
                6,
                {
                    "count": 6,
                    "sum:input_tokens": 1999,
                    "avg:input_tokens": 1999 / 6,
                    "min:input_tokens": 0,
                    "max:duration_ms": 2500,
                    "p50:duration_ms": 0,
                    "p90:duration_ms": 2500,
                },
            )
        ],
    ),
    (
        f"messages where session.id:{B} | group by role | agg count, sum:duration_ms",
        [
            ("tool", 3, {"count": 3, "sum:duration_ms": 0}),
            ("assistant", 2, {"count": 2, "sum:duration_ms": 4500}),
            ("user", 1, {"count": 1, "sum:duration_ms": 0}),
        ],
    ),
    (
        f"messages where session.id:{B} | group by role | agg sum:words, max:word_count",
        [
            ("tool", 3, {"sum:words": 0, "max:word_count": 0}),
            ("assistant", 2, {"sum:words": 14, "max:word_count": 10}),
            ("user", 1, {"sum:words": 8, "max:word_count": 8}),
        ],
    ),
    (
        f"actions where session.id:{B} | agg count, sum:is_error, avg:is_error",
        [("", 3, {"count": 3, "sum:is_error": 1, "avg:is_error": 1 / 3})],
    ),
    # no run of the archive records tokens: a run's numbers are proto3 integers, 0 when not recorded
    ("runs where role:subagent | agg count, avg:total_tokens", [("", 3, {"count": 3, "avg:total_tokens": 0})]),
    ("runs where agent:nobody | agg count, max:total_tokens", [("", 0, {"count": 0, "max:total_tokens": None})]),
]


@pytest.mark.parametrize(("query", "expected"), AGGREGATES, ids=[q for q, _ in AGGREGATES])
def test_agg_functions_on_the_archive(
    cluster: ConformanceCluster, query: str, expected: list[tuple[str, int, dict[str, float | None]]]
) -> None:
    envelope = cluster.units(query)
    got = [(g.key, g.count, {v.name: None if v.empty else v.value for v in g.values}) for g in envelope.groups]
    assert [(k, n) for k, n, _ in got] == [(k, n) for k, n, _ in expected]
    for (_, _, values), (_, _, wanted) in zip(got, expected, strict=True):
        assert values == pytest.approx(wanted)
