# ruff: noqa: E501 - the table of invalid forms keeps one form per line
"""Invalid forms: each with its typed error, where it points, and the corrected query when one evident
fix exists. A correction is only offered when it compiles; predicates after `where` are strict (AND or
OR joins them), while the compact form keeps its implicit AND."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query, explain
from quarry.v1 import errors_pb2

# (query, code, the text the error points at, the correction or "" for none)
INVALID_FORMS = [
    # side by side after `where`: an error at the second predicate, AND inserted
    ("sessions where repo:x origin:codex-session", "INVALID_QUERY", "origin:", "sessions where repo:x AND origin:codex-session"),
    ("messages where role:user text:timeout", "INVALID_QUERY", "text:", "messages where role:user AND text:timeout"),
    ("sessions where repo:x -tag:stale", "INVALID_QUERY", "-tag", "sessions where repo:x AND -tag:stale"),
    ("sessions where repo:x NOT tag:stale", "INVALID_QUERY", "NOT", "sessions where repo:x AND NOT tag:stale"),
    ("sessions where repo:x (origin:codex-session OR origin:claude-code-session)", "INVALID_QUERY", "(origin",
     "sessions where repo:x AND (origin:codex-session OR origin:claude-code-session)"),
    ("sessions where words >= 5 words <= 90", "INVALID_QUERY", "words <= 90", "sessions where words >= 5 AND words <= 90"),
    ("sessions where repo:x ~\"pool\"", "INVALID_QUERY", "~\"pool\"", "sessions where repo:x AND ~\"pool\""),
    ("sessions where repo:x exists message(role:user)", "INVALID_QUERY", "exists", "sessions where repo:x AND exists message(role:user)"),
    ("sessions where exists message(role:user text:timeout)", "INVALID_QUERY", "text:", "sessions where exists message(role:user AND text:timeout)"),
    ("sessions where seq(tool:Edit tool:Bash -> tool:Edit)", "INVALID_QUERY", "tool:Bash", "sessions where seq(tool:Edit AND tool:Bash -> tool:Edit)"),
    ("sessions where repo:x origin:codex-session tag:stale", "INVALID_QUERY", "origin:", "sessions where repo:x AND origin:codex-session AND tag:stale"),
    ("messages where role:user timeout", "INVALID_QUERY", "timeout", ""),  # a value or text? no one fix
    # `=` for `:`
    ("sessions where repo=ledger", "INVALID_QUERY", "repo=ledger", "sessions where repo:ledger"),
    ("sessions where repo=ledger AND origin=codex-session", "INVALID_QUERY", "repo=ledger", "sessions where repo:ledger AND origin:codex-session"),
    ("messages where role=user", "INVALID_QUERY", "role=user", "messages where role:user"),
    ("sessions where nonsense=1", "INVALID_QUERY", "nonsense=1", ""),  # no such field: nothing that compiles
    # bare text after `where`
    ("messages where timeout", "INVALID_QUERY", "timeout", "messages where ~\"timeout\""),
    ("sessions where repo >= 3", "INVALID_QUERY", "repo", ""),
    # exists names the unit in the singular
    ("sessions where exists messages(role:user)", "UNSUPPORTED_FORM", "exists", "sessions where exists message(role:user)"),
    ("sessions where exists actions(tool:Bash)", "UNSUPPORTED_FORM", "exists", "sessions where exists action(tool:Bash)"),
    ("sessions where exists widgets(x:y)", "UNSUPPORTED_FORM", "exists", ""),
    # a session field on a unit: its session. form
    ("messages where repo:ledger", "UNKNOWN_FIELD", "repo:", "messages where session.repo:ledger"),
    ("actions where tool:Bash AND origin:codex-session", "UNKNOWN_FIELD", "origin:", "actions where tool:Bash AND session.origin:codex-session"),
    ("files where session:codex-session:abc", "UNKNOWN_FIELD", "session:", "files where session.id:codex-session:abc"),
    ("messages where colour:red", "UNKNOWN_FIELD", "colour:", ""),
    # a pipeline on sessions: the terminal unit form
    ("sessions where repo:ledger | group by role | count", "UNSUPPORTED_FORM", "group by",
     "messages where session.repo:ledger | group by role | count"),
    ("sessions where repo:ledger AND origin:codex-session | group by tool | count", "UNSUPPORTED_FORM", "group by",
     "actions where session.repo:ledger AND session.origin:codex-session | group by tool | count"),
    ("sessions where ~\"pool\" | group by role | count", "UNSUPPORTED_FORM", "group by", ""),  # no session.text
    ("sessions where repo:ledger | limit 5", "UNSUPPORTED_FORM", "5", ""),  # which unit? none evident
]  # fmt: skip


@pytest.mark.parametrize(("query", "code", "at", "correction"), INVALID_FORMS)
def test_each_invalid_form_is_typed_positioned_and_corrected_when_one_fix_is_evident(
    query: str, code: str, at: str, correction: str
) -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    error = caught.value
    assert errors_pb2.ErrorCode.Name(error.code) == code, error
    assert error.offset is not None and query[error.offset :].startswith(at), (error.offset, error)
    assert error.correction == correction
    if correction:
        compile_query(correction)
    assert errors_pb2.ErrorDetail.FromString(error.to_detail().SerializeToString()).correction == correction
    assert QuarryError.from_detail(error.to_detail()).correction == correction


def test_explain_offers_the_same_correction() -> None:
    with pytest.raises(QuarryError) as caught:
        explain("sessions where repo:x origin:codex-session")
    assert caught.value.correction == "sessions where repo:x AND origin:codex-session"


@pytest.mark.parametrize(
    "query",
    ["repo:x origin:codex-session", "sqlite locking repo:x", "-tag:stale pool", "repo:x (origin:codex-session)"],
)
def test_the_compact_form_keeps_its_implicit_and(query: str) -> None:
    assert compile_query(query).kind == "sessions"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('sessionwher mgactu:=()|~"-AND OR xyz12')), max_size=60))
def test_a_correction_offered_always_compiles(text: str) -> None:
    try:
        compile_query(text)
    except QuarryError as error:
        if error.correction:
            compile_query(error.correction)
