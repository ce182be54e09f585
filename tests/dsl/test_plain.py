"""Prose becomes a query of its words: whatever the text, it compiles to a session search whose text
is exactly those words, never an operator, a field, a comparison or a unit query."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quarry.dsl import compile_query, plain_text_query


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Starter smells like acetone?", "Starter smells like acetone"),
        ("tides: moon's gravity", "tides moon s gravity"),
        ('IL-6 (interleukin) "AND" NOT ~x*', "IL 6 interleukin and not x"),
        ("Cats OR dogs", "Cats or dogs"),
        ("runs of heavy rain", "Runs of heavy rain"),
        ("sessions where bees fly", "Sessions where bees fly"),
        ("words between 3 and 5", "words Between 3 and 5"),
        ("repo:ledger since:7d | limit 3", "repo ledger since 7d limit 3"),
        ("Zrobiłem to w Łodzi", "Zrobiłem to w Łodzi"),
    ],
)
def test_prose_keeps_its_words_and_loses_query_syntax(text: str, expected: str) -> None:
    converted = plain_text_query(text)
    assert converted == expected
    compiled = compile_query(converted)
    assert compiled.kind == "sessions" and compiled.has_text
    assert compiled.semantic_text == expected


@given(st.text(max_size=200))
def test_any_text_compiles_to_a_search_of_its_words(text: str) -> None:
    converted = plain_text_query(text)
    if not converted:
        return
    compiled = compile_query(converted)
    assert compiled.kind == "sessions"
    assert compiled.semantic_text.lower() == converted.lower()
