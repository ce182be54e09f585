"""Text-led unit rows page through Tantivy in time order: the result must equal a full sort."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.index.lexical import rows as rows_module
from quarry.index.lexical.partition import LexicalPartition
from tests.index import plans as p
from tests.index.sessions import BASE_MS, Msg, session


@pytest.fixture(scope="module")
def needles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    partition = LexicalPartition(tmp_path_factory.mktemp("needles"), 0)
    sessions = []
    for n in range(12):
        messages = [Msg("user" if i % 2 else "assistant", f"needle number {n}-{i}") for i in range(5)]
        # six sessions share each start time: their messages tie on time, must order by id, and a tie
        # group is larger than the first page
        sessions.append(
            session(f"s{n:02d}", messages, repo="rare" if n == 7 else "common", start_ms=BASE_MS + (n // 6) * 30_000)
        )
    # inserted newest id first, so Tantivy's order among equal times is not the id order
    for batch in (sessions[6:][::-1], sessions[:6][::-1]):
        partition.upsert(batch)
    yield partition
    partition.close()


def expected(partition: LexicalPartition, role: str, desc: bool, repo: str | None = None) -> list[str]:
    everything = [r.message for r in partition.query_units(p.units("messages", limit=1000)).rows]
    repos = {s.id: s.repo for s in partition.get_sessions(sorted({m.session_id for m in everything}))}
    chosen = [m for m in everything if m.role == role and (repo is None or repos[m.session_id] == repo)]
    key = (lambda m: (-m.time_ms, m.id)) if desc else (lambda m: (m.time_ms, m.id))
    return [m.id for m in sorted(chosen, key=key)]


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 7, 40])
def test_paged_rows_equal_a_full_sort(
    needles: LexicalPartition, monkeypatch: pytest.MonkeyPatch, desc: bool, limit: int
) -> None:
    monkeypatch.setattr(rows_module, "_FIRST_PAGE", 2)
    request = p.units("messages", p.all_(p.text("needle"), p.field("role", "assistant")), descending=desc, limit=limit)
    got = [r.sort_id for r in needles.query_units(request).rows]
    assert got == expected(needles, "assistant", desc)[:limit]


def test_selective_filter_falls_back_to_sql(needles: LexicalPartition, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows_module, "_FIRST_PAGE", 2)
    monkeypatch.setattr(rows_module, "_MAX_PAGED_HITS", 8)
    request = p.units("messages", p.all_(p.text("needle"), p.field("role", "user")), scope=p.field("repo", "rare"))
    got = [r.sort_id for r in needles.query_units(request).rows]
    assert got == expected(needles, "user", False, repo="rare")
    assert len(got) == 2
