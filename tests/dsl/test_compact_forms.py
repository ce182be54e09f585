"""Compact forms: `near:"free text"` (sessions semantically near a text, as
`near:text:`), `has:FEATURE` in both forms, and their canonical text."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query, parse, render
from quarry.v1 import errors_pb2


@pytest.mark.parametrize(
    ("written", "same_as"),
    [
        ('near:"flaky network tests"', 'near:text:"flaky network tests"'),
        ('repo:ledger near:"retry with backoff"', 'repo:ledger near:text:"retry with backoff"'),
        ('sessions where repo:ledger AND near:"retry"', 'sessions where repo:ledger AND near:text:"retry"'),
    ],
)
def test_near_free_text_is_the_semantic_leaf_of_near_text(written: str, same_as: str) -> None:
    ours, theirs = compile_query(written), compile_query(same_as)
    assert (ours.plan, ours.semantic_text) == (theirs.plan, theirs.semantic_text)
    assert parse(render(parse(written))) == parse(written)


@pytest.mark.parametrize("query", ["near:foo", "near:codex-session:abc", 'near:("a"|"b")'])
def test_near_without_quotes_or_with_alternatives_names_its_forms(query: str) -> None:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    assert caught.value.code == errors_pb2.BAD_VALUE and 'near:"free text"' in caught.value.message


@pytest.mark.parametrize(
    "query",
    ["has:tools", "-has:thinking pool", "has:(images|errors)", "sessions where has:subagents OR has:compaction"],
)
def test_has_renders_and_parses_back(query: str) -> None:
    tree = parse(query)
    assert parse(render(tree)) == tree
    compile_query(query)
