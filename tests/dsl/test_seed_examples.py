"""Every example query of seed 000, as the shell hands it over (quotes removed, words joined).

IN_SCOPE compile to the plan shown. NOT_YET are forms of seed 000 this issue does not support:
each must fail with a typed QuarryError (never a crash, never a text search). The next issue
moves rows from NOT_YET to IN_SCOPE one by one.
"""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query, parse, render
from quarry.v1 import errors_pb2, plan_pb2
from tests.dsl.plans import (
    all_,
    any_,
    fall,
    field,
    fneg,
    fts,
    limit,
    neg,
    offset,
    phrase,
    plan,
    prefix,
    semantic,
    sort_time,
    term,
)

BOTH_ORIGINS = ("codex-session", "claude-code-session")

IN_SCOPE: list[tuple[str, plan_pb2.QueryPlan]] = [
    (
        'repo:polylogue tag:active -"stale plan" "query envelope"',
        plan(
            "sessions",
            all_(
                field("repo", "polylogue"),
                field("tag", "active"),
                fts(fall(fneg(phrase("stale plan")), phrase("query envelope"))),
            ),
            ranking=fall(fneg(phrase("stale plan")), phrase("query envelope")),
            semantic_text="query envelope",
        ),
    ),
    (
        "session:codex-session:abc123",
        plan("sessions", all_(field("session", "codex-session:abc123"))),
    ),
    (
        "sessions where (repo:polylogue OR repo:sinex) AND NOT tag:stale",
        plan(
            "sessions",
            all_(any_(field("repo", "polylogue"), field("repo", "sinex")), neg(field("tag", "stale"))),
        ),
    ),
    (
        "sessions where session:codex-session:abc123",
        plan("sessions", field("session", "codex-session:abc123")),
    ),
    (
        "messages where role:assistant AND text:timeout",
        plan(
            "messages",
            all_(field("role", "assistant"), fts(term("timeout"))),
            ranking=term("timeout"),
            semantic_text="timeout",
        ),
    ),
    (
        "actions where session.repo:polylogue AND action:file_edit AND path:polylogue/archive",
        plan(
            "actions",
            all_(
                field("repo", "polylogue", scoped=True),
                field("action", "file_edit"),
                field("path", "polylogue/archive"),
            ),
        ),
    ),
    (
        "blocks where type:code AND text:sqlite",
        plan(
            "blocks",
            all_(field("type", "code"), fts(term("sqlite"))),
            ranking=term("sqlite"),
            semantic_text="sqlite",
        ),
    ),
    (
        "messages where role:assistant | sort by time desc | limit 10",
        plan("messages", field("role", "assistant"), stages=(sort_time(descending=True), limit(10))),
    ),
    (
        "actions where action:file_edit | limit 20 | offset 40",
        plan("actions", field("action", "file_edit"), stages=(limit(20), offset(40))),
    ),
    (
        "sessions where repo:polylogue AND origin:claude-code-session | messages where role:assistant",
        plan(
            "messages",
            field("role", "assistant"),
            scope=all_(field("repo", "polylogue"), field("origin", "claude-code-session")),
        ),
    ),
    (
        "sessions where origin:(codex-session|claude-code-session) | actions where action:file_edit",
        plan("actions", field("action", "file_edit"), scope=field("origin", *BOTH_ORIGINS)),
    ),
    (
        'sessions where ~"timeout failure" | messages where role:user',
        plan("messages", field("role", "user"), scope=fts(fall(term("timeout"), term("failure")))),
    ),
    (
        "sessions where repo:polylogue | messages where role:assistant | limit 10 | offset 20",
        plan(
            "messages",
            field("role", "assistant"),
            scope=field("repo", "polylogue"),
            stages=(limit(10), offset(20)),
        ),
    ),
    (
        "sessions where repo:polylogue | messages where role:assistant | sort by time desc | limit 10",
        plan(
            "messages",
            field("role", "assistant"),
            scope=field("repo", "polylogue"),
            stages=(sort_time(descending=True), limit(10)),
        ),
    ),
    (
        'origin:(codex-session|claude-code-session) title:"query DSL"',
        plan("sessions", all_(field("origin", *BOTH_ORIGINS), field("title", "query DSL"))),
    ),
    (
        "tool:bash AND NOT tag:stale",
        plan("sessions", all_(field("tool", "bash"), neg(field("tag", "stale")))),
    ),
    (
        'sessions where ~"null pointer" AND repo:polylogue',
        plan(
            "sessions",
            all_(fts(fall(term("null"), term("pointer"))), field("repo", "polylogue")),
            ranking=fall(term("null"), term("pointer")),
            semantic_text="null pointer",
        ),
    ),
    (
        'sessions where semantic:"query compiler failure"',
        plan("sessions", semantic("query compiler failure"), semantic_text="query compiler failure"),
    ),
    (
        "sessions where near:text:timeout",
        plan("sessions", semantic("timeout"), semantic_text="timeout"),
    ),
    (
        "messages where session.origin:claude-code-session AND role:assistant",
        plan(
            "messages",
            all_(field("origin", "claude-code-session", scoped=True), field("role", "assistant")),
        ),
    ),
    (
        "actions where session.repo:polylogue AND action:file_edit",
        plan("actions", all_(field("repo", "polylogue", scoped=True), field("action", "file_edit"))),
    ),
    (
        'actions where tool:write AND text:"needle"',
        plan(
            "actions",
            all_(field("tool", "write"), fts(phrase("needle"))),
            ranking=phrase("needle"),
            semantic_text="needle",
        ),
    ),
    (
        "refactor*",
        plan("sessions", all_(fts(prefix("refactor"))), ranking=prefix("refactor"), semantic_text="refactor"),
    ),
    (
        '"null pointer exception"',
        plan(
            "sessions",
            all_(fts(phrase("null pointer exception"))),
            ranking=phrase("null pointer exception"),
            semantic_text="null pointer exception",
        ),
    ),
    (
        "refactor AND schema NOT test",
        plan(
            "sessions",
            all_(fts(fall(term("refactor"), term("schema"), fneg(term("test"))))),
            ranking=fall(term("refactor"), term("schema"), fneg(term("test"))),
            semantic_text="refactor schema",
        ),
    ),
    (
        "sqlite locking",
        plan(
            "sessions",
            all_(fts(fall(term("sqlite"), term("locking")))),
            ranking=fall(term("sqlite"), term("locking")),
            semantic_text="sqlite locking",
        ),
    ),
]

UNSUPPORTED = errors_pb2.UNSUPPORTED_FORM

# (query, the code it fails with today). Flip a row into IN_SCOPE when its form lands.
NOT_YET: list[tuple[str, int]] = [
    ("origin:(codex-session|claude-code-session) messages:>=10 words:<=2000", UNSUPPORTED),
    ("near:id:codex-session:abc123", UNSUPPORTED),
    ("sessions where exists message(role:assistant AND text:timeout)", UNSUPPORTED),
    ("sessions where seq(action:file_edit -> action:shell)", UNSUPPORTED),
    ("sessions where seq(action:file_edit -> action:shell AND output:failed -> action:file_edit)", UNSUPPORTED),
    ("sessions where seq(tool:edit AND path:polylogue/archive -> tool:bash AND command:pytest)", UNSUPPORTED),
    ("files where action:file_edit AND path:polylogue/archive/query", UNSUPPORTED),
    ("assertions where kind:decision AND status:active AND text:review", UNSUPPORTED),
    ("runs where role:subagent AND status:completed AND agent:Explore", UNSUPPORTED),
    ("observed-events where delivery_state:acted_on AND text:#2100", UNSUPPORTED),
    ("context-snapshots where boundary:session_start AND session.repo:polylogue", UNSUPPORTED),
    ("delegations where mapping_state:resolved AND instruction:review", UNSUPPORTED),
    ("sessions where repo:polylogue | files where action:file_edit | group by path | count", UNSUPPORTED),
    ("sessions where exists block(type:code) | messages where role:user", UNSUPPORTED),
    ("sessions where seq(action:file_edit -> action:shell) | messages where role:user", UNSUPPORTED),
    ("sessions where lineage:id:chatgpt-export:ext-child | messages where role:user", UNSUPPORTED),
    ("messages >= 5 AND messages <= 20", UNSUPPORTED),
    ("words between 100 and 500", UNSUPPORTED),
    ("sessions where duration_ms >= 60000", UNSUPPORTED),
    ("messages where input_tokens >= 1000 AND duration_ms between 2000 and 3000", UNSUPPORTED),
    ("date between 2026-06-01 and 2026-06-17", UNSUPPORTED),
    ("sessions where user_messages >= 2 AND assistant_words between 500 and 2000", UNSUPPORTED),
    ("sessions where authored_user_messages >= 2 AND authored_user_words >= 100", UNSUPPORTED),
    ("sessions where system_messages = 0 AND tool_messages = 0", UNSUPPORTED),
    ("sessions where tool_use_messages >= 1 AND paste_messages = 0", UNSUPPORTED),
    ("messages:>=5 words:<=500", UNSUPPORTED),
    ("sessions where exists action(session.repo:polylogue AND tool:bash AND text:pytest)", UNSUPPORTED),
    ("sessions where exists file(session.repo:polylogue AND action:file_edit AND path:archive/query)", UNSUPPORTED),
    ("sessions where exists block(type:code AND text:timeout)", UNSUPPORTED),
    ("messages where text:timeout | group by role | count", UNSUPPORTED),
    ("blocks where session.since:7d AND session.words:<=500 AND type:code", UNSUPPORTED),
    ("files where session.repo:polylogue AND action:file_edit AND path:archive/query", UNSUPPORTED),
    ("assertions where session.repo:polylogue AND kind:caveat", UNSUPPORTED),
    ("runs where session.repo:polylogue AND role:subagent AND status:completed", UNSUPPORTED),
    ("observed-events where session.origin:codex-session AND object_ref:github-review", UNSUPPORTED),
    (
        "context-snapshots where session.messages:>=2 AND session.date:>=2026-01-02 AND boundary:subagent_start",
        UNSUPPORTED,
    ),
    ("assertions where status:candidate AND target:session:codex-session:abc123", UNSUPPORTED),
    ('sessions where exists action(tool:edit AND text:"needle")', UNSUPPORTED),
    ("runs where session.id:codex-session:abc123", UNSUPPORTED),
    ("observed-events where session.id:codex-session:abc123", UNSUPPORTED),
    ("context-snapshots where session.id:codex-session:abc123", UNSUPPORTED),
    # FTS5 column filters are not part of this language at all.
    ("text:css {session_id claude-code}: refactor", errors_pb2.INVALID_QUERY),
]


@pytest.mark.parametrize(("query", "expected"), IN_SCOPE, ids=[q for q, _ in IN_SCOPE])
def test_seed_example_compiles_to_plan(query: str, expected: plan_pb2.QueryPlan) -> None:
    compiled = compile_query(query)
    assert compiled.plan == expected
    assert compiled.unit == expected.unit
    assert compiled.kind == ("sessions" if expected.unit == "sessions" else "units")


@pytest.mark.parametrize(("query", "code"), NOT_YET, ids=[q for q, _ in NOT_YET])
def test_seed_example_outside_scope_fails_typed(query: str, code: int) -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    error = caught.value
    assert errors_pb2.ErrorCode.Name(error.code) == errors_pb2.ErrorCode.Name(code), error.message
    assert error.offset is not None and error.line is not None and error.column is not None
    assert 0 <= error.offset <= len(query)


@pytest.mark.parametrize("query", [q for q, _ in IN_SCOPE])
def test_seed_example_renders_back_to_itself(query: str) -> None:
    tree = parse(query)
    assert parse(render(tree)) == tree
