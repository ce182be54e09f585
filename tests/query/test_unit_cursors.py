"""Unit listings cut by their limit say so, and their cursor walks the whole listing: every row once, in
order, on one partition and on three, and rows ingested mid-walk neither repeat a row nor push one off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.v1 import errors_pb2, query_pb2
from tests.index.sessions import BASE_MS, Msg, Tool, session
from tests.query.inprocess import Cluster

MAX_PAGES = 500
QUERIES = [
    "messages where role:assistant",
    "messages where role:user | sort by time desc",
    "messages where text:tests",  # the text-led path
    "actions where tool:Bash | sort by time desc",
    "blocks where type:text",
    "files where path:src",
    "runs where role:main | sort by time desc",
]


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Cluster]]:
    made = {
        partitions: Cluster(tmp_path_factory.mktemp(f"partitions{partitions}"), partitions) for partitions in (1, 3)
    }
    yield made
    for cluster in made.values():
        cluster.close()


def page(cluster: Cluster, query: str, limit: int, cursor: str = "", offset: int = 0) -> query_pb2.QueryUnitEnvelope:
    request = query_pb2.QueryUnitsRequest(query=query, limit=limit, cursor=cursor, offset=offset)
    return cluster.coordinator.query_units(request)


def walk(cluster: Cluster, query: str, limit: int) -> list[str]:
    """Every row of the listing, page by page along the cursors."""
    refs: list[str] = []
    envelope = page(cluster, query, limit)
    for _ in range(MAX_PAGES):
        refs.extend(row.ref for row in envelope.rows)
        assert envelope.has_more == bool(envelope.next_cursor)
        if not envelope.has_more:
            return refs
        assert len(envelope.rows) == limit  # only a full page says more follow
        envelope = page(cluster, query, limit, envelope.next_cursor)
    raise AssertionError(f"the walk did not end within {MAX_PAGES} pages")


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("partitions", [1, 3])
def test_a_cursor_walk_serves_the_whole_listing_once_in_order(
    clusters: dict[int, Cluster], query: str, partitions: int
) -> None:
    everything = [row.ref for row in page(clusters[1], query, 1000).rows]
    assert len(everything) > 4  # the corpus gives every query several pages
    for limit in (1, 4):
        assert walk(clusters[partitions], query, limit) == everything


def test_a_page_that_holds_the_rest_says_nothing_more_follows(clusters: dict[int, Cluster]) -> None:
    whole = page(clusters[3], "messages where role:assistant", 1000)
    assert not whole.has_more and not whole.next_cursor
    cut = page(clusters[3], "messages where role:assistant", len(whole.rows) - 1)
    assert cut.has_more and cut.next_cursor
    exact = page(clusters[3], "messages where role:assistant", len(whole.rows))
    assert not exact.has_more


def test_an_offset_page_continues_by_cursor_from_where_it_stopped(clusters: dict[int, Cluster]) -> None:
    query = "messages where role:assistant | sort by time desc"
    everything = [row.ref for row in page(clusters[3], query, 1000).rows]
    second = page(clusters[3], query, 3, offset=3)
    third = page(clusters[3], query, 3, cursor=second.next_cursor)
    assert [r.ref for r in [*second.rows, *third.rows]] == everything[3:9]


def test_an_aggregate_says_how_many_groups_there_are_when_the_limit_cuts_them(clusters: dict[int, Cluster]) -> None:
    whole = page(clusters[3], "messages where role:user OR role:assistant | group by role | count", 50)
    assert (whole.groups_total, whole.has_more, len(whole.groups)) == (2, False, 2)
    cut = page(clusters[3], "messages where role:user OR role:assistant | group by role | count", 1)
    assert (cut.groups_total, cut.has_more, len(cut.groups)) == (2, True, 1)
    assert not cut.next_cursor  # groups are paged by offset


def test_rows_ingested_mid_walk_neither_repeat_nor_push_rows_off(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, 3)
    try:
        query = "messages where role:assistant"
        before = [row.ref for row in page(cluster, query, 1000).rows]
        first = page(cluster, query, 5)
        # new rows on both sides of the anchor: earlier than every row (they would shift an offset
        # page) and later than every row (the walk reaches them)
        for n, start_ms in ((100, BASE_MS - 60_000), (101, BASE_MS + 3_600_000)):
            messages = [Msg("user", "hi"), Msg("assistant", "late", tools=[Tool("Bash", "shell")])]
            new = session(f"s{n}", messages, start_ms=start_ms)
            cluster.partitions[partition_for(new.id, 3)].upsert([new])
        refs = [row.ref for row in first.rows]
        envelope = page(cluster, query, 5, first.next_cursor)
        while True:
            refs.extend(row.ref for row in envelope.rows)
            if not envelope.has_more:
                break
            envelope = page(cluster, query, 5, envelope.next_cursor)
        assert len(refs) == len(set(refs))  # no row twice
        assert [r for r in refs if r in before] == before  # none of the rows there before is skipped
        assert any("s101" in r for r in refs) and not any("s100" in r for r in refs)
    finally:
        cluster.close()


def test_a_cursor_is_bound_to_its_query_and_limit_and_takes_no_offset(clusters: dict[int, Cluster]) -> None:
    cursor = page(clusters[3], "messages where role:assistant", 2).next_cursor
    with pytest.raises(QuarryError) as other:
        page(clusters[3], "messages where role:user", 2, cursor)
    assert other.value.code == errors_pb2.STALE_CURSOR
    with pytest.raises(QuarryError) as limit:
        page(clusters[3], "messages where role:assistant", 3, cursor)
    assert limit.value.code == errors_pb2.STALE_CURSOR
    with pytest.raises(QuarryError) as offset:
        page(clusters[3], "messages where role:assistant", 2, cursor, offset=2)
    assert (offset.value.code, offset.value.parameter) == (errors_pb2.INVALID_REQUEST, "offset")
    with pytest.raises(QuarryError) as search:
        clusters[3].coordinator.search(query_pb2.SearchRequest(query="tests", cursor=cursor))
    assert search.value.code == errors_pb2.INVALID_CURSOR and "unit query" in search.value.message


def test_a_limit_in_the_query_sets_the_page_and_the_walk_goes_on_with_the_echoed_limit(
    clusters: dict[int, Cluster],
) -> None:
    everything = [row.ref for row in page(clusters[3], "actions where tool:Bash | sort by time desc", 1000).rows]
    query = "actions where tool:Bash | sort by time desc | limit 2"
    first = page(clusters[3], query, 50)
    assert (first.limit, len(first.rows), first.has_more) == (2, 2, True)
    second = page(clusters[3], query, first.limit, first.next_cursor)  # what the CLI's next command sends
    assert [r.ref for r in [*first.rows, *second.rows]] == everything[:4]
