"""On the conformance archive, for clauses X and Y: `X AND NOT Y` and `X AND Y` are disjoint and
together are exactly `X` (sessions, and the rows of one unit source), across three partitions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quarry.v1 import query_pb2
from tests.dsl.conformance_archive import ConformanceCluster

# Session clauses Y may be negated with (docs/query-language.md#negation: fields safe to negate), and ones only X uses.
SESSION_NEGATABLE = [
    "repo:polylogue",
    "repo:sinex",
    "origin:codex-session",
    "origin:(codex-session|claude-code-session)",
    "tag:active",
    "tag:stale",
    "tool:bash",
    "tool:edit",
    "action:file_edit",
    "action:shell",
    "messages >= 10",
    "words <= 500",
    "duration_ms >= 60000",
    "date >= 2026-06-01",
    "since:7d",
    "exists action(tool:bash AND text:pytest)",
    "seq(action:file_edit -> action:shell)",
    "exists block(type:code)",
    '~"sqlite"',
    '~"timeout"',
]
SESSION_X_ONLY = ['title:"query DSL"', "path:polylogue/archive", "session:codex-session:abc123"]
ACTION_NEGATABLE = [
    "tool:bash",
    "tool:edit",
    "action:file_edit",
    "action:shell",
    "text:pytest",
    "text:needle",
    "session.repo:polylogue",
    "session.origin:claude-code-session",
    "date >= 2026-06-18",
]
ACTION_X_ONLY = ["path:polylogue/archive", "command:pytest", "output:failed"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConformanceCluster]:
    built = ConformanceCluster(Path(tmp_path_factory.mktemp("disjoint")), 3)
    yield built
    built.close()


def _action_refs(cluster: ConformanceCluster, predicate: str) -> set[str]:
    request = query_pb2.QueryUnitsRequest(query=f"actions where {predicate}", limit=1000)
    return {row.ref for row in cluster.stub.QueryUnits(request).rows}


@settings(max_examples=50, deadline=None)
@given(x=st.sampled_from(SESSION_NEGATABLE + SESSION_X_ONLY), y=st.sampled_from(SESSION_NEGATABLE))
def test_sessions_split_by_a_clause(cluster: ConformanceCluster, x: str, y: str) -> None:
    whole = cluster.sessions(f"sessions where {x}")
    inside = cluster.sessions(f"sessions where ({x}) AND ({y})")
    outside = cluster.sessions(f"sessions where ({x}) AND NOT ({y})")
    assert not inside & outside
    assert inside | outside == whole


@settings(max_examples=50, deadline=None)
@given(x=st.sampled_from(ACTION_NEGATABLE + ACTION_X_ONLY), y=st.sampled_from(ACTION_NEGATABLE))
def test_action_rows_split_by_a_clause(cluster: ConformanceCluster, x: str, y: str) -> None:
    whole = _action_refs(cluster, x)
    inside = _action_refs(cluster, f"({x}) AND ({y})")
    outside = _action_refs(cluster, f"({x}) AND NOT ({y})")
    assert not inside & outside
    assert inside | outside == whole


def test_text_leaves_split_sessions(cluster: ConformanceCluster) -> None:
    """Separate text leaves hold each in some message: A has `timeout` in one message and `sqlite` in
    another, so it is inside `~"sqlite" AND ~"timeout"` (and not outside)."""
    whole = cluster.sessions('sessions where ~"sqlite"')
    inside = cluster.sessions('sessions where ~"sqlite" AND ~"timeout"')
    outside = cluster.sessions('sessions where ~"sqlite" AND NOT ~"timeout"')
    assert inside and outside and not inside & outside
    assert inside | outside == whole
    ranked = {h.session.id for h in cluster.stub.Search(query_pb2.SearchRequest(query='~"sqlite" AND ~"timeout"')).hits}
    assert ranked == inside  # the ranked lane selects what the predicate selects


def test_the_pools_split_the_archive(cluster: ConformanceCluster) -> None:
    """The clauses are not vacuous on this archive: each selects some sessions and misses others."""
    everything = cluster.sessions("sessions where NOT tag:no-such-tag")
    for clause in SESSION_NEGATABLE + SESSION_X_ONLY:
        selected = cluster.sessions(f"sessions where {clause}")
        assert selected and selected != everything, clause
