"""Messages of logs that record no times (Aider replies, Cursor exports) list in their order, and `| sort by
seq` orders messages by their place in the session (issue 28): they listed as m0, m1, m10, m11, …, m2, and
`sort by seq` was refused. Through the coordinator over real partitions, one and three of them, and
page by page with cursors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.dsl.compile import compile_query
from quarry.query.root import Coordinator
from quarry.v1 import errors_pb2, query_pb2, units_pb2
from tests.index.sessions import BASE_MS, Msg, session
from tests.partition_servers import PartitionServer, one_partition_each, topology

MESSAGES = 12  # m0 .. m11: past m9, where the ids' string order and their order part


def _timeless(name: str, origin: str) -> units_pb2.Session:
    """A log without times: every message and block at time 0."""
    roles = ["user" if i % 2 == 0 else "assistant" for i in range(MESSAGES)]
    s = session(name, [Msg(role, f"step {i} of {name}") for i, role in enumerate(roles)], origin=origin)
    for message in s.messages:
        message.time_ms = 0
    return s


def corpus() -> list[units_pb2.Session]:
    timed = session("timed", [Msg("user", f"step {i} of timed") for i in range(MESSAGES)], start_ms=BASE_MS)
    return [_timeless("aider", "aider-session"), _timeless("cursor", "cursor-session"), timed]


class Archive:
    """corpus() in `count` real partitions, one per in-process index node, and a coordinator over them."""

    def __init__(self, root: Path, count: int) -> None:
        self.nodes: list[PartitionServer] = one_partition_each(root, count)
        for i, node in enumerate(self.nodes):
            node.lexical(i).upsert([s for s in corpus() if partition_for(s.id, count) == i])
        self.coordinator = Coordinator(topology(self.nodes), None, None)

    def refs(self, query: str, limit: int = 100) -> list[str]:
        request = query_pb2.QueryUnitsRequest(query=query, limit=limit)
        return [row.ref for row in self.coordinator.query_units(request).rows]

    def walk(self, query: str, limit: int) -> list[str]:
        """Every row of the query, page by page through the envelopes' cursors."""
        refs: list[str] = []
        cursor = ""
        while True:
            request = query_pb2.QueryUnitsRequest(query=query, limit=limit, cursor=cursor)
            envelope = self.coordinator.query_units(request)
            refs += [row.ref for row in envelope.rows]
            if not envelope.has_more:
                return refs
            cursor = envelope.next_cursor

    def close(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="module", params=[1, 3], ids=["one-partition", "three-partitions"])
def archive(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archive]:
    built = Archive(tmp_path_factory.mktemp(f"order-{request.param}"), request.param)
    yield built
    built.close()


def ids(name: str, origin: str, seqs: range | list[int]) -> list[str]:
    return [f"message:{origin}:{name}:m{seq}" for seq in seqs]


def test_messages_without_times_list_in_their_order(archive: Archive) -> None:
    aider = ids("aider", "aider-session", range(MESSAGES))
    assert archive.refs("messages where session.origin:aider-session") == aider
    assert archive.refs("messages where role:assistant AND session.origin:aider-session") == aider[1::2]
    # text-led (the text matched first, then the other clauses): the same order
    assert archive.refs('messages where ~"aider" AND role:user') == aider[0::2]
    newest_first = archive.refs("messages where session.origin:aider-session | sort by time desc")
    assert newest_first == aider  # one time (none): ties keep their order in both directions


def test_sort_by_seq_orders_messages_by_their_place_in_the_session(archive: Archive) -> None:
    user = ids("aider", "aider-session", range(0, MESSAGES, 2))
    user += ids("timed", "claude-code-session", range(MESSAGES)) + ids(
        "cursor", "cursor-session", range(0, MESSAGES, 2)
    )
    # by seq; on one seq by session (the ids ascending): every session's m0 first
    by_seq = sorted(user, key=lambda ref: (int(ref.rsplit(":m", 1)[1]), ref))
    assert archive.refs("messages where role:user | sort by seq") == by_seq
    assert archive.refs("messages where role:user | sort by seq desc")[:4] == [
        "message:claude-code-session:timed:m11",
        "message:aider-session:aider:m10",
        "message:claude-code-session:timed:m10",
        "message:cursor-session:cursor:m10",
    ]
    found = archive.refs('messages where ~"step" AND session.origin:cursor-session | sort by seq | limit 3')
    assert found == ids("cursor", "cursor-session", range(3))


@pytest.mark.parametrize(
    "query",
    [
        "messages where session.origin:cursor-session",
        "messages where role:user | sort by seq",
        "messages where role:user | sort by seq desc",
        'messages where ~"step" | sort by seq',
        "messages where role:assistant | sort by time desc",
    ],
)
def test_cursors_walk_the_same_order_page_by_page(archive: Archive, query: str) -> None:
    everything = archive.refs(query)
    assert len(everything) >= MESSAGES
    assert archive.walk(query, limit=5) == everything


def test_sort_by_seq_is_for_messages() -> None:
    with pytest.raises(QuarryError) as raised:
        compile_query("actions where tool:Bash | sort by seq")
    assert raised.value.code == errors_pb2.UNSUPPORTED_FORM
    assert "sort by seq orders messages" in raised.value.message and raised.value.expected == ["sort by time"]
