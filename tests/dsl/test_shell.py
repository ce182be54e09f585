"""Queries typed as several shell words mean what they meant before the shell dropped the quotes."""

from __future__ import annotations

import shlex

import pytest

from quarry.dsl import compile_query
from quarry.dsl.shell import join_words

# (as typed at a shell prompt after the program name, the query it means)
CASES = [
    (
        """repo:polylogue tag:active -"stale plan" "query envelope\"""",
        'repo:polylogue tag:active -"stale plan" "query envelope"',
    ),
    ("""origin:codex-session title:"query DSL\"""", 'origin:codex-session title:"query DSL"'),
    (
        """sessions where '(repo:polylogue OR repo:sinex) AND NOT tag:stale'""",
        "sessions where (repo:polylogue OR repo:sinex) AND NOT tag:stale",
    ),
    (
        """sessions where 'exists block(type:code AND text:timeout)'""",
        "sessions where exists block(type:code AND text:timeout)",
    ),
    (
        """sessions where 'user_messages >= 2 AND assistant_words between 500 and 2000'""",
        "sessions where user_messages >= 2 AND assistant_words between 500 and 2000",
    ),
    ("""'words between 100 and 500'""", "words between 100 and 500"),
    ("""'sqlite locking'""", "sqlite locking"),
]


@pytest.mark.parametrize(("typed", "meant"), CASES)
def test_shell_words_join_back_into_the_query_as_typed(typed: str, meant: str) -> None:
    words = shlex.split(typed)
    assert join_words(words) == meant
    assert compile_query(join_words(words)).plan == compile_query(meant).plan
