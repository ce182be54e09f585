"""Seed 000's conformance table: every example query of the seed, run through a real cluster (1 and 3
partitions) on the fixture archive of tests/dsl/conformance_archive.py, with its expected result there.

Session queries compare the selected session ids as a set (no seed example orders sessions); unit
queries compare row refs in order; aggregates the (key, count) list in order; failing forms the typed
error code. The coordinator's clock is the archive's NOW, so `since:7d` / `yesterday` are deterministic."""

from __future__ import annotations

import re
import shlex

import grpc
import pytest

from quarry.core.errors import from_rpc_error
from quarry.dsl import compile_query
from quarry.dsl.shell import join_words
from quarry.v1 import errors_pb2
from tests.dsl import conformance_archive as ca
from tests.dsl.conformance_archive import (
    J_TURNS,
    NOW,
    PLAN_PY,
    A,
    B,
    C,
    ConformanceCluster,
    D,
    E,
    F,
    G,
    I,
    J,
    action,
    block,
    delegation,
    event,
    file,
    j_assistant,
    message,
    run,
    snapshot,
)
from tests.dsl.test_seed_examples import SEED_ERRORS
from tests.shared_paths import SHARED, needs_shared

Expected = tuple[str, object]


def sessions(*ids: str) -> Expected:
    return ("sessions", frozenset(ids))


def rows(*refs: str) -> Expected:
    return ("rows", list(refs))


def groups(*pairs: tuple[str, int]) -> Expected:
    return ("groups", list(pairs))


def error(code: int) -> Expected:
    return ("error", errors_pb2.ErrorCode.Name(code))


def j_messages(turns: range) -> list[str]:
    return [message(J, j_assistant(t)) for t in turns]


J_EDITS = [action(J, n) for n in range(2 * J_TURNS)]
B_EDITS = [action(B, 0), action(B, 2)]
E_EDITS = [action(E, 0), action(E, 2)]

TABLE: list[tuple[str, Expected]] = [
    # ------------------------------------------------------------------ compact session queries
    ('repo:polylogue tag:active -"stale plan" "query envelope"', sessions(A)),
    ("origin:(codex-session|claude-code-session) messages:>=10 words:<=2000", sessions(A, D, J)),
    ("session:codex-session:abc123", sessions(A)),
    ("near:id:codex-session:abc123", error(errors_pb2.SEMANTIC_UNAVAILABLE)),  # the cluster has no vector node
    ('origin:(codex-session|claude-code-session) title:"query DSL"', sessions(A, B, C)),
    ("tool:bash AND NOT tag:stale", sessions(B, C, E)),
    ("messages >= 5 AND messages <= 20", sessions(A, B, C, D, E)),
    ("words between 100 and 500", sessions(D, E, G, I, J)),
    ("date between 2026-06-01 and 2026-06-17", sessions(A, B, I)),
    ("messages:>=5 words:<=500", sessions(D, E, J)),
    ("sqlite", sessions(A, E)),
    ("refactor*", sessions(C, D, J)),
    ('"null pointer exception"', sessions(E)),
    ("refactor AND schema NOT test", sessions(D)),
    ("sqlite locking", sessions(E)),
    ("since:yesterday", sessions(C, J)),  # the seed's `--since yesterday` flag
    ("text:css {session_id claude-code}: refactor", error(errors_pb2.INVALID_QUERY)),
    # ------------------------------------------------------------------ boolean session queries
    ("sessions where (repo:polylogue OR repo:sinex) AND NOT tag:stale", sessions(A, B, C, E, I, J)),
    ("sessions where session:codex-session:abc123", sessions(A)),
    ("sessions where exists message(role:assistant AND text:timeout)", sessions(B)),
    ("sessions where seq(action:file_edit -> action:shell)", sessions(B, E)),
    ("sessions where seq(action:file_edit -> action:shell AND output:failed -> action:file_edit)", sessions(B)),
    ("sessions where seq(tool:edit AND path:polylogue/archive -> tool:bash AND command:pytest)", sessions(B, E)),
    ("sessions where duration_ms >= 60000", sessions(A, C)),
    ("sessions where user_messages >= 2 AND assistant_words between 500 and 2000", sessions(A, E)),
    ("sessions where authored_user_messages >= 2 AND authored_user_words >= 100", sessions(A, J)),
    ("sessions where system_messages = 0 AND tool_messages = 0", sessions(A, F, G)),
    ("sessions where tool_use_messages >= 1 AND paste_messages = 0", sessions(B, D, E, I, J)),
    ("sessions where exists action(session.repo:polylogue AND tool:bash AND text:pytest)", sessions(B, E)),
    ("sessions where exists file(session.repo:polylogue AND action:file_edit AND path:archive/query)", sessions(B, E)),
    ("sessions where exists block(type:code AND text:timeout)", sessions(B)),
    ('sessions where ~"null pointer" AND repo:polylogue', sessions(E)),
    ('sessions where semantic:"query compiler failure"', error(errors_pb2.SEMANTIC_UNAVAILABLE)),
    ("sessions where near:text:timeout", error(errors_pb2.SEMANTIC_UNAVAILABLE)),
    ('sessions where exists action(tool:edit AND text:"needle")', sessions(E)),
    # ------------------------------------------------------------------ the nine unit sources
    ("messages where role:assistant AND text:timeout", rows(message(B, 1), message(B, 5))),
    (
        "actions where session.repo:polylogue AND action:file_edit AND path:polylogue/archive",
        rows(*B_EDITS, *E_EDITS),
    ),
    ("blocks where type:code AND text:sqlite", rows(block(A, 1, 1))),
    ("files where action:file_edit AND path:polylogue/archive/query", rows(file(B, PLAN_PY), file(E, PLAN_PY))),
    ("assertions where kind:decision AND status:active AND text:review", rows("assertion:decision-review")),
    ("runs where role:subagent AND status:completed AND agent:Explore", rows(run(B, 1))),
    ("observed-events where delivery_state:acted_on AND text:#2100", rows(event(B, 0))),
    ("context-snapshots where boundary:session_start AND session.repo:polylogue", rows(snapshot(A, 0), snapshot(B, 0))),
    ("delegations where mapping_state:resolved AND instruction:review", rows(delegation(B, 1))),
    (
        "messages where session.origin:claude-code-session AND role:assistant",
        rows(message(B, 1), message(B, 5), message(I, 1), *j_messages(range(J_TURNS)), message(C, 1), message(C, 4)),
    ),
    ("actions where session.repo:polylogue AND action:file_edit", rows(*B_EDITS, *E_EDITS, *J_EDITS)),
    ("blocks where session.since:7d AND session.words:<=500 AND type:code", rows(block(E, 1, 1))),
    (
        "files where session.repo:polylogue AND action:file_edit AND path:archive/query",
        rows(file(B, PLAN_PY), file(E, PLAN_PY)),
    ),
    ("assertions where session.repo:polylogue AND kind:caveat", rows("assertion:caveat-b", "assertion:caveat-abc")),
    ("runs where session.repo:polylogue AND role:subagent AND status:completed", rows(run(D, 1), run(B, 1))),
    ("observed-events where session.origin:codex-session AND object_ref:github-review", rows(event(A, 0))),
    (
        "context-snapshots where session.messages:>=2 AND session.date:>=2026-01-02 AND boundary:subagent_start",
        rows(snapshot(G, 0), snapshot(I, 0)),
    ),
    ("assertions where status:candidate AND target:session:codex-session:abc123", rows("assertion:caveat-abc")),
    ("messages where input_tokens >= 1000 AND duration_ms between 2000 and 3000", rows(message(B, 1), message(C, 1))),
    ('actions where tool:write AND text:"needle"', rows(action(D, 1))),
    # ------------------------------------------------------------------ pipelines
    (
        "messages where role:assistant | sort by time desc | limit 10",
        rows(message(C, 4), message(C, 1), *j_messages(range(J_TURNS - 1, J_TURNS - 9, -1))),
    ),
    ("actions where action:file_edit | limit 20 | offset 40", rows(*J_EDITS[36:], action(C, 1))),
    (
        "sessions where repo:polylogue AND origin:claude-code-session | messages where role:assistant",
        rows(message(B, 1), message(B, 5), message(I, 1), *j_messages(range(J_TURNS))),
    ),
    (
        "sessions where origin:(codex-session|claude-code-session) | actions where action:file_edit",
        rows(*B_EDITS, *J_EDITS, action(C, 1)),
    ),
    (
        "sessions where repo:polylogue | files where action:file_edit | group by path | count",
        groups((PLAN_PY, 2), ("src/names.py", 1), ("src/rename.py", 1)),
    ),
    ('sessions where ~"timeout failure" | messages where role:user', rows(message(A, 0))),
    (
        "sessions where exists block(type:code) | messages where role:user",
        rows(message(D, 0), message(A, 0), message(B, 0), message(E, 0), message(C, 0)),
    ),
    (
        "sessions where seq(action:file_edit -> action:shell) | messages where role:user",
        rows(message(B, 0), message(E, 0)),
    ),
    (
        "sessions where lineage:id:chatgpt-export:ext-child | messages where role:user",
        rows(message(F, 0), message(G, 0)),
    ),
    (
        "sessions where repo:polylogue | messages where role:assistant | limit 10 | offset 20",
        rows(*j_messages(range(13, J_TURNS))),
    ),
    (
        "sessions where repo:polylogue | messages where role:assistant | sort by time desc | limit 10",
        rows(*j_messages(range(J_TURNS - 1, J_TURNS - 11, -1))),
    ),
    ("messages where text:timeout | group by role | count", groups(("assistant", 2), ("user", 1))),
]

_OUTPUT_OPTIONS = ("--format", "-f")
_COMMENT = re.compile(r"\s+#\s.*$")  # `polylogue facets   # global only`; not `text:#2100`
_NON_QUERY_COMMANDS = ("mark", "ops", "read", "facets")  # CLI commands of the seed that take no query


def seed_example_queries(seed_text: str) -> list[str]:
    """The query of every example line (`polylogue …`) of the seed, as the shell hands it over: the
    program name, output options and the trailing verb (`read …`) dropped, `--since X` spelled
    `since:X`, the words joined as the CLI joins them (quarry.dsl.shell). Lines of commands that take
    no query (mark, ops, read, facets) are not examples."""
    out = []
    for line in seed_text.splitlines():
        if not line.startswith("polylogue "):
            continue
        words = shlex.split(_COMMENT.sub("", line.rstrip("\\")))[1:]
        if words[0] in _NON_QUERY_COMMANDS:
            continue
        query: list[str] = []
        it = iter(words)
        for word in it:
            if word in _OUTPUT_OPTIONS:
                next(it)
            elif word == "--since":
                query.append(f"since:{next(it)}")
            elif word == "read":
                break
            else:
                query.append(word)
        out.append(join_words(query))
    return out


def test_the_table_holds_every_seed_example() -> None:
    print(f"seed 000 conformance table: {len(TABLE)} example queries")
    assert len({query for query, _ in TABLE}) == len(TABLE)


@needs_shared
def test_the_table_is_every_example_line_of_the_seed() -> None:
    (seed,) = sorted((SHARED / "seeds").glob("000_*.txt"))
    examples = seed_example_queries(seed.read_text())
    print(f"seed 000: {len(examples)} example lines, {len(set(examples))} distinct queries")
    assert {query for query, _ in TABLE} == set(examples)
    assert len(TABLE) == len(set(examples))


def answer(cluster: ConformanceCluster, query: str) -> Expected:
    """The query's result on the cluster, in the table's terms."""
    try:
        kind = compile_query(query, now_ms=NOW).kind
    except Exception:
        kind = "sessions"  # the query node reports the compile error
    try:
        if kind == "sessions":
            return ("sessions", cluster.sessions(query))
        envelope = cluster.units(query)
    except grpc.RpcError as rpc_error:
        return ("error", from_rpc_error(rpc_error).code_name)
    if envelope.aggregate:
        return ("groups", [(g.key, g.count) for g in envelope.groups])
    return ("rows", [row.ref for row in envelope.rows])


@pytest.mark.parametrize(("query", "expected"), TABLE, ids=[q for q, _ in TABLE])
def test_seed_example_on_the_archive(cluster: ConformanceCluster, query: str, expected: Expected) -> None:
    assert answer(cluster, query) == expected


@pytest.mark.parametrize(("query", "code", "token"), SEED_ERRORS, ids=[q for q, _, _ in SEED_ERRORS])
def test_seed_error_fails_typed_through_the_query_node(
    cluster: ConformanceCluster, query: str, code: int, token: str
) -> None:
    """The forms the seed's prose says fail keep their typed error across gRPC (never a text search)."""
    assert answer(cluster, query) == error(code)


def test_archive_names_every_session() -> None:
    assert {s.id for s in ca.archive()} == set(ca.SESSIONS)
