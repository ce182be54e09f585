"""An empty search says which empty-result diagnostics apply (docs/search-api.md#empty-results)."""

from __future__ import annotations

from quarry.dsl import compile_query
from quarry.query.diagnostics import Found, empty_result_caveats, named_origins, what_would_find
from quarry.v1 import index_pb2, vector_pb2

STORED = [
    index_pb2.PartitionStats(partition=0, sessions=3, documents=9),
    index_pb2.PartitionStats(partition=1, sessions=2),
]
READY = vector_pb2.VectorStats(vectors=40, pending=0, embedder="minilm")


def caveats(query: str, lane: str = "dialogue", partitions=STORED, vectors=READY) -> list[str]:  # type: ignore[no-untyped-def]
    return empty_result_caveats(compile_query(query, now_ms=1_780_000_000_000).plan, lane, partitions, vectors)


def test_an_empty_archive_is_the_only_diagnosis() -> None:
    empty = [index_pb2.PartitionStats(partition=0), index_pb2.PartitionStats(partition=1)]
    assert caveats("sqlite since:7d", partitions=empty) == [
        "the archive is empty: no session is stored yet (ingest logs with `quarry ingest`)"
    ]


def test_a_time_bound_gets_its_hint() -> None:
    assert any("bounded in time" in c for c in caveats("sqlite since:7d"))
    assert caveats("repo:quarry") == []  # nothing to suggest for a plain filter


def test_an_empty_answer_names_each_search_that_would_find_something_and_how() -> None:
    assert what_would_find(Found()) == []
    every = what_would_find(
        Found(as_prose=True, without_filters=True, filters=("repo:ledgr",), on_actions=True, on_meaning=True)
    )
    assert every == [
        "read as prose (its words, any of them: `--plain`, `reading: prose`), the text finds sessions",
        "the words alone find sessions: repo:ledgr left them all out (check the values, or drop it)",
        "the words are in tool calls and their output: `--lane actions` finds those sessions",
        "`--lane semantic` finds sessions by meaning, whatever words they use",
    ]
    nothing_else = Found(as_prose=False, without_filters=False, filters=("repo:x",), on_actions=False, on_meaning=False)
    assert what_would_find(nothing_else) == []


def test_vector_lanes_say_when_embeddings_are_missing_or_behind() -> None:
    missing = caveats("sqlite", lane="semantic", vectors=vector_pb2.VectorStats())
    assert missing[0] == "the semantic lane needs embeddings, and no embedder is configured"
    behind = caveats("sqlite", lane="hybrid", vectors=vector_pb2.VectorStats(vectors=3, pending=8, embedder="minilm"))
    assert "embeddings are not ready: 3 stored, 8 waiting (`quarry status` shows the backlog)" in behind
    assert not any("embeddings" in c for c in caveats("sqlite", lane="dialogue", vectors=vector_pb2.VectorStats()))


def test_an_origin_the_archive_does_not_hold_is_named_with_the_origins_it_does() -> None:
    plan = compile_query("origin:gemini-cli-session sqlite").plan
    stored = {"claude-code-session", "codex-session"}
    found = empty_result_caveats(plan, "dialogue", STORED, READY, stored)
    assert found[0] == (
        "the archive holds no session of origin gemini-cli-session: check the spelling and the sources "
        "ingested (origins stored: claude-code-session, codex-session)"
    )
    held = empty_result_caveats(compile_query("origin:codex-session sqlite").plan, "dialogue", STORED, READY, stored)
    assert not any("origin" in c for c in held)
    negated = compile_query("sqlite AND NOT origin:gemini-cli-session").plan
    assert named_origins(negated) == []
