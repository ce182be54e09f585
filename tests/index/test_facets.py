"""Facet counts of one real partition: every family, global and scoped views, and the budget."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.index.lexical.facets import FAMILIES
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, index_pb2, units_pb2
from tests.index.sessions import BASE_MS, Msg, Tool, session


def _archive() -> list[units_pb2.Session]:
    edit = Tool("Edit", "file_edit", path="src/pool.py", output="edited")
    shell = Tool("Bash", "shell", command="pytest -x", output="1 failed")
    sessions = [
        session("a", [Msg("user", "sqlite locking again"), Msg("assistant", "WAL mode", tools=[shell])], tags=("db",)),
        session("b", [Msg("user", "sqlite pool sizing")], repo="maps", tags=("db", "perf"), start_ms=BASE_MS + 1),
        session(
            "c",
            [Msg("user", "refactor the parser")] * 12,
            origin="codex-session",
            repo="",
            start_ms=BASE_MS + 2,
        ),
        session("d", [Msg("assistant", "edit the pool", tools=[edit, shell])], origin="codex-session", tags=("perf",)),
        session("e", [Msg("user", f"line {i}") for i in range(60)], origin="chatgpt-export", repo="maps"),
    ]
    # Where each was read and which token wrote it: two laptops, one session read by the ingest node itself.
    hosts = ("ana-laptop", "ana-laptop", "bo-laptop", "bo-laptop", "")
    for s, host in zip(sessions, hosts, strict=True):
        s.host, s.pusher = host, "ana"
    return sessions


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    lexical = LexicalPartition(Path(tmp_path_factory.mktemp("facets")), 0)
    lexical.upsert(_archive())
    yield lexical
    lexical.close()


def _counts(partition: LexicalPartition, query: str = "", scoped: bool = False, **fields: object) -> dict:
    request = index_pb2.PartitionFacetsRequest(scoped=scoped, **fields)
    if query:
        request.where.CopyFrom(compile_query(query).plan.where)
    response = partition.facets(request)
    view = "scoped_counts" if scoped else "global_counts"
    return {f.family: {c.value: c.count for c in getattr(f, view)} for f in response.families}


def _expected(sessions: list[units_pb2.Session]) -> dict[str, Counter]:
    def bucket(n: int) -> str:
        return "0" if n == 0 else "1-9" if n < 10 else "10-49" if n < 50 else "50-199" if n < 200 else "200+"

    return {
        "origins": Counter(s.origin for s in sessions),
        "repos": Counter(s.repo for s in sessions if s.repo),
        "hosts": Counter(s.host for s in sessions if s.host),
        "pushers": Counter(s.pusher for s in sessions if s.pusher),
        "tags": Counter(t for s in sessions for t in set(s.tags)),
        "action_types": Counter(c for s in sessions for c in {a.category for a in s.actions}),
        "count_buckets": Counter(bucket(len(s.messages)) for s in sessions),
    }


def test_global_counts_are_sessions_per_value_in_every_family(partition: LexicalPartition) -> None:
    counts = _counts(partition)
    assert set(counts) == set(FAMILIES)
    for family, expected in _expected(_archive()).items():
        assert counts[family] == dict(expected), family
    assert counts["action_types"] == {"shell": 2, "file_edit": 1}  # a session counts once per category
    assert counts["count_buckets"] == {"1-9": 3, "10-49": 1, "50-199": 1}
    assert (counts["hosts"], counts["pushers"]) == ({"ana-laptop": 2, "bo-laptop": 2}, {"ana": 5})
    assert _counts(partition, "host:bo-laptop", scoped=True)["origins"] == {"codex-session": 2}


def test_scoped_counts_cover_only_the_sessions_the_predicate_selects(partition: LexicalPartition) -> None:
    response = partition.facets(
        index_pb2.PartitionFacetsRequest(scoped=True, where=compile_query("sqlite").plan.where, families=["tags"])
    )
    assert (response.global_sessions, response.scoped_sessions) == (5, 2)
    scoped = {c.value: c.count for c in response.families[0].scoped_counts}
    assert scoped == {"db": 2, "perf": 1}
    selected = [s for s in _archive() if s.origin == "codex-session"]
    assert _counts(partition, "origin:codex-session", scoped=True) == {
        family: dict(expected) for family, expected in _expected(selected).items()
    }


def test_a_scope_that_selects_nothing_gives_empty_families(partition: LexicalPartition) -> None:
    counts = _counts(partition, "nonexistentword", scoped=True)
    assert set(counts) == set(FAMILIES)
    assert all(values == {} for values in counts.values())


def test_only_the_families_asked_for_are_counted_in_family_order(partition: LexicalPartition) -> None:
    response = partition.facets(index_pb2.PartitionFacetsRequest(families=["count_buckets", "origins"]))
    assert [f.family for f in response.families] == ["origins", "count_buckets"]
    assert not response.unfinished


def test_an_unknown_family_is_a_typed_error(partition: LexicalPartition) -> None:
    with pytest.raises(QuarryError) as error:
        partition.facets(index_pb2.PartitionFacetsRequest(families=["origin"]))
    assert error.value.code == errors_pb2.INVALID_REQUEST
    assert error.value.parameter == "families"


def test_a_spent_budget_leaves_families_unfinished_instead_of_half_counted(partition: LexicalPartition) -> None:
    response = partition.facets(index_pb2.PartitionFacetsRequest(budget_ms=1e-6))
    assert list(response.unfinished) == list(FAMILIES)
    assert not response.families
    generous = partition.facets(index_pb2.PartitionFacetsRequest(budget_ms=60_000))
    assert not generous.unfinished and len(generous.families) == len(FAMILIES)
