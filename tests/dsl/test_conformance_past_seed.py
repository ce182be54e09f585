"""The conformance table past seed 000 (issue 14): forms of the peer's newer language and Quarry's own,
each with its expected answer on the fixture archive of tests/dsl/conformance_archive.py, through a
real cluster of 1 and 3 shards (the `cluster` fixture of tests/dsl/conftest.py). Expected answers are read off
the archive's definition by hand, as the seed table's are."""

from __future__ import annotations

import pytest

from quarry.v1 import errors_pb2
from tests.dsl.conformance_archive import A, B, C, ConformanceCluster, D, E, F, G, H, I, J, action
from tests.dsl.test_conformance import Expected, answer, error, groups, rows, sessions

UNSUPPORTED = errors_pb2.UNSUPPORTED_FORM

TABLE: list[tuple[str, Expected]] = [
    # ------------------------------------------------------------------ aggregates on every unit
    ("runs where role:subagent | group by status | count", groups(("completed", 2), ("failed", 1))),
    ("runs where role:subagent | group by agent | count | sort by key", groups(("explore", 2), ("general-purpose", 1))),
    ("runs where role:main | count", groups(("", 4))),
    ("observed-events where kind:command | group by kind | count", groups(("command", 3))),
    ("delegations where mapping_state:resolved | count", groups(("", 2))),
    ("delegations where agent:nobody | count", groups(("", 0))),
    (
        "delegations where mapping_state:resolved OR mapping_state:unresolved | group by mapping_state | count",
        groups(("resolved", 2), ("unresolved", 1)),
    ),
    ("context-snapshots where boundary:compaction | count", groups(("", 1))),
    (f"actions where session.id:{B} | group by is_error | count", groups(("false", 2), ("true", 1))),
    ("actions where is_error:true | group by tool | count", groups(("bash", 1))),
    # ------------------------------------------------------------------ fields
    ("actions where is_error:true", rows(action(B, 1))),
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
    # ------------------------------------------------------------------ origins Quarry does not read
    ("origin:cursor-session", sessions()),
    ("session:cline-task:abc123", sessions()),
    ("messages where session.origin:goose-session", rows()),
    ("origin:Cursor_Session", error(errors_pb2.BAD_VALUE)),
    # ------------------------------------------------------------------ strictness and its forms
    ("sessions where repo:polylogue origin:codex-session", error(errors_pb2.INVALID_QUERY)),
    ("actions where tool:Bash | sort by time | count", error(UNSUPPORTED)),
    ("messages where lane:hybrid", error(UNSUPPORTED)),
]


@pytest.mark.parametrize(("query", "expected"), TABLE, ids=[q for q, _ in TABLE])
def test_past_the_seed_on_the_archive(cluster: ConformanceCluster, query: str, expected: Expected) -> None:
    assert answer(cluster, query) == expected
