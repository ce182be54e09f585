"""The partition's change feed for the vector node: what changed after a cursor, with the texts to embed."""

from __future__ import annotations

from pathlib import Path

import pytest

from quarry.cli.synthetic import generate_sessions
from quarry.core.dialogue import MAX_EMBED_CHARS, dialogue_items
from quarry.core.errors import QuarryError
from quarry.index.lexical import session_rows
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.store_schema import SESSION_COLUMNS
from quarry.v1 import errors_pb2, index_pb2, units_pb2
from tests.index.conftest import corpus, sid
from tests.index.sessions import Msg, session


def edge_cases() -> units_pb2.Session:
    """Messages the embedding rule keeps and drops: roles, log-only, blank, thinking, code, long text."""
    s = session(
        "edges",
        [
            Msg("user", "plain question"),
            Msg("assistant", "", thinking="only thinking, nothing said"),
            Msg("assistant", "answer with code", code="print('x')", thinking="hidden"),
            Msg("system", "a system prompt is not dialogue"),
            Msg("user", "   \n  "),
            Msg("user", "shown only in the log"),
            Msg("assistant", "long " * 1500),
        ],
    )
    s.messages[5].surface = "log-only"
    return s


def feed_all(partition: LexicalPartition, after: int = 0, page: int = 3) -> list[index_pb2.FeedSession]:
    """Every session after `after`, paged through with the cursor as a follower would."""
    out: list[index_pb2.FeedSession] = []
    while True:
        response = partition.embed_feed(after, page)
        assert len(response.sessions) <= page
        if not response.sessions:
            return out
        out.extend(response.sessions)
        after = response.sessions[-1].change_seq


def test_embed_count_is_the_number_of_dialogue_items() -> None:
    for s in [*corpus(), edge_cases(), *generate_sessions(400, seed=5)]:
        built = session_rows.decompose(s, 1, range(1, 1 + len(s.messages)), "sha256:x", change_seq=9)
        assert built.session_row is not None
        row = dict(zip(SESSION_COLUMNS, built.session_row, strict=True))
        assert row["embed_count"] == len(dialogue_items(s)), s.id
        assert row["change_seq"] == 9


def test_dialogue_items_follow_the_rule() -> None:
    items = dialogue_items(edge_cases())
    assert [i.message_id.rsplit(":", 1)[1] for i in items] == ["m0", "m2", "m6"]
    assert items[1].text == "answer with code\nprint('x')"
    assert len(items[2].text) == MAX_EMBED_CHARS


def test_feed_from_zero_returns_every_session_in_order_with_its_dialogue_items(fresh: LexicalPartition) -> None:
    sessions = [*corpus(), edge_cases(), *generate_sessions(300, seed=11)]
    fresh.upsert(sessions)
    fed = feed_all(fresh)
    assert [f.session_id for f in fed] == [s.id for s in sessions]  # written in this order
    assert [f.change_seq for f in fed] == list(range(1, len(sessions) + 1))
    for f, s in zip(fed, sessions, strict=True):
        assert list(f.items) == dialogue_items(s), s.id
    head = fresh.embed_feed(0, 0)
    assert head.head_seq == len(sessions)
    assert head.backlog_texts == sum(len(dialogue_items(s)) for s in sessions)
    assert not head.sessions  # max_sessions 0: only the head and the backlog


def test_backlog_counts_the_texts_after_the_cursor(fresh: LexicalPartition) -> None:
    sessions = corpus()
    fresh.upsert(sessions)
    texts = [len(dialogue_items(s)) for s in sessions]
    for cursor in range(len(sessions) + 1):
        response = fresh.embed_feed(cursor, 2)
        assert response.backlog_texts == sum(texts[cursor:])
        assert [f.change_seq for f in response.sessions] == list(range(cursor + 1, min(cursor + 2, len(sessions)) + 1))


def test_unchanged_reingest_adds_nothing_and_a_changed_session_comes_back_later(fresh: LexicalPartition) -> None:
    fresh.upsert(corpus())
    head = fresh.embed_feed(0, 0).head_seq
    fresh.upsert(corpus())
    assert fresh.embed_feed(0, 0).head_seq == head
    assert feed_all(fresh, head) == []

    changed = session("lock-same", [Msg("user", "sqlite locking keeps failing under load")], title="SQLite locking")
    fresh.upsert([corpus()[0], changed, corpus()[2]])  # only lock-same differs from what is stored
    later = feed_all(fresh, head)
    assert [(f.session_id, f.change_seq) for f in later] == [(sid("lock-same"), head + 1)]
    assert list(later[0].items) == dialogue_items(changed)  # the assistant message is gone
    everything = feed_all(fresh)
    assert [f.session_id for f in everything][-1] == sid("lock-same")  # no longer at its old place
    assert len(everything) == len(corpus())
    assert fresh.embed_feed(head, 0).backlog_texts == 1


def test_a_changed_session_without_dialogue_is_fed_with_no_items(fresh: LexicalPartition) -> None:
    fresh.upsert(corpus())
    head = fresh.embed_feed(0, 0).head_seq
    fresh.upsert([session("polish", [Msg("system", "nothing to embed")])])
    (fed,) = feed_all(fresh, head)
    assert (fed.session_id, list(fed.items)) == (sid("polish"), [])  # the follower drops its vectors


def test_the_store_uuid_is_kept_across_reopen_and_new_for_a_new_store(tmp_path: Path) -> None:
    partition = LexicalPartition(tmp_path / "a", 0)
    partition.upsert(corpus())
    first = partition.embed_feed(0, 0)
    partition.close()
    reopened = LexicalPartition(tmp_path / "a", 0)
    again = reopened.embed_feed(0, 0)
    assert (again.store_uuid, again.head_seq) == (first.store_uuid, first.head_seq)
    reopened.upsert([session("new", [Msg("user", "after the reopen")])])
    assert reopened.embed_feed(first.head_seq, 5).sessions[0].change_seq == first.head_seq + 1
    reopened.close()
    other = LexicalPartition(tmp_path / "b", 0)
    fresh_feed = other.embed_feed(0, 0)
    assert fresh_feed.store_uuid and fresh_feed.store_uuid != first.store_uuid
    assert (fresh_feed.head_seq, fresh_feed.backlog_texts) == (0, 0)
    other.close()


@pytest.mark.parametrize(("after", "limit", "parameter"), [(-1, 5, "after_seq"), (0, -1, "max_sessions")])
def test_negative_arguments_are_invalid(fresh: LexicalPartition, after: int, limit: int, parameter: str) -> None:
    with pytest.raises(QuarryError) as caught:
        fresh.embed_feed(after, limit)
    assert caught.value.code == errors_pb2.INVALID_REQUEST
    assert caught.value.parameter == parameter
