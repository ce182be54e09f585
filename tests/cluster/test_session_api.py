"""Seed 002's session API over a real 2-partition cluster holding the real logs of the four formats.

Expected values: shared/notes/session_api.md §8 (recounted by tests/ingest/test_session_events.py on
the parsed files); here they come back through the query node, read from the partition holding each
session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.client.sessions import SOURCE_CONFLICT_ISSUE, event_filters, session_filters, session_query_code
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.v1 import errors_pb2, units_pb2
from tests.cluster.test_cli import quarry
from tests.index.sessions import Msg, session
from tests.shared_paths import INGEST_ROOTS, REAL_LOGS, needs_shared

pytestmark = [pytest.mark.cluster, needs_shared, pytest.mark.shared]

MAIN = "claude-code-session:d4fd5afb-e837-4595-a12a-6c44c0f09739"
AGENTS = [f"{MAIN}/agent-ada37e8b5cf03a018", f"{MAIN}/agent-adae2f20e326a65be"]
A6 = "claude-code-session:198393f2-22db-477b-ac77-1825bea883ae"
C9 = "claude-code-session:1b3e6441-62e3-4b41-8a0c-9d252f531f7a"
TITLED = "claude-code-session:814710e0-c005-483c-bcb2-727b2e09f73c"
CODEX = "codex-session:019d6d67-1952-7e83-93ef-94497e3c15b6"
GEMINI = "gemini-cli-session:f7633853-6663-4dbb-bbf4-6159afa29df8"
FORMATS = ("claude_code", "codex", "chatgpt", "gemini")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-sessions"),
        partitions=2,
        embedder="none",
        ingest_roots=INGEST_ROOTS,
        colocate=False,  # the session API over index nodes of their own: the last test stops one
    )
    local.start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[QuarryClient]:
    info = cluster.info()
    with QuarryClient(info.query, info.ingest) as quarry:
        report = list(quarry.ingest_paths([REAL_LOGS / f for f in FORMATS]))[-1].report
        assert report.sessions_written == 33, report
        yield quarry


def _seed_error(call, operation: str = "") -> tuple[str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(QuarryError) as caught:
        call()
    return session_query_code(caught.value, operation), caught.value.parameter


def test_list_sessions_filters_and_pages(client: QuarryClient) -> None:
    sessions = client.sessions
    everything = sessions.list(limit=1000)
    assert len(everything.items) == 33 and not everything.next_cursor
    updated = [(-r.header.updated_ms, r.header.id) for r in everything.items]
    assert updated == sorted(updated)  # newest first, ties by id
    assert all(r.persisted and not r.live for r in everything.items)
    walked, cursor = [], ""
    while True:
        page = sessions.list(limit=7, cursor=cursor)
        walked.extend(r.header.id for r in page.items)
        cursor = page.next_cursor
        if not cursor:
            break
    assert walked == [r.header.id for r in everything.items]
    roots = sessions.list(session_filters(parents=[""]), limit=1000)
    assert len(roots.items) == 31
    children = sessions.list(session_filters(parents=[MAIN]))
    assert sorted(r.header.id for r in children.items) == AGENTS
    volcano = sessions.list(session_filters(cwds=["/Users/xuwentao/Projects/github/volcano"]))
    assert sorted(r.header.id for r in volcano.items) == [TITLED, CODEX]  # across origins
    assert len(sessions.list(session_filters(cwds=[""]), limit=1000).items) == 22  # 21 ChatGPT + Gemini
    family = sessions.list(session_filters(cwds=["/Users/xuwentao"], availability=["persisted"]))
    assert sorted(r.header.id for r in family.items) == sorted([MAIN, *AGENTS])
    assert not sessions.list(session_filters(availability=["live"])).items
    first = everything.items[-1].header.created_ms
    early = sessions.list(session_filters(created_max=first), limit=1000)
    assert all(r.header.created_ms <= first for r in early.items) and early.items


def test_read_session_surface_and_windows(client: QuarryClient) -> None:
    header, events = client.sessions.read(A6)
    assert header.id == A6 and len(events) == 54
    assert [e.seq for e in events] == list(range(54))
    assert orjson.loads(events[30].raw_json)["subtype"] == "compact_boundary"  # the raw record, as written
    surface = client.sessions.surface(A6)
    assert surface.captured_through_seq == 53
    assert [e.seq for e in surface.events] == list(range(31, 54))
    window = client.sessions.event(A6, 31, before=1, after=1)
    assert (window.start_seq, window.end_seq, window.target.seq) == (30, 32, 31)
    assert [e.type for e in window.events] == [
        "claude-code:system/compact_boundary",
        "claude-code:user",
        "claude-code:assistant",
    ]
    assert window.target.raw_json and window.target.text.startswith("This session is being continued")
    clipped = client.sessions.event(C9, 0, before=5, after=100)
    assert (clipped.start_seq, clipped.end_seq) == (0, 8)
    assert _seed_error(lambda: client.sessions.event(A6, 54)) == ("SESSION_QUERY_EVENT_NOT_FOUND", "seq")
    assert _seed_error(lambda: client.sessions.event(A6, 3, before=-1)) == ("SESSION_QUERY_INVALID_WINDOW", "before")
    missing = "claude-code-session:nope"
    assert _seed_error(lambda: client.sessions.surface(missing)) == ("SESSION_QUERY_SESSION_NOT_FOUND", "session_id")


def test_a_window_brings_the_messages_its_events_became(client: QuarryClient) -> None:
    bare = client.sessions.event(A6, 20, before=20, after=20)
    assert not bare.messages  # only when asked
    window = client.sessions.event(A6, 20, before=20, after=20, with_messages=True)
    named = list(dict.fromkeys(e.message_id for e in window.events if e.message_id))
    assert named and [m.id for m in window.messages] == named  # each once, in the order the events name them
    for message in window.messages:
        assert message == client.resolve_ref(f"message:{message.id}").message  # the message the ref resolves


def test_list_events_filters(client: QuarryClient) -> None:
    queued = client.sessions.events(MAIN, event_filters(text="EXTRA-usage"), with_text=True)
    assert [(e.record.seq, e.record.type, e.record.surface) for e in queued.events] == [
        (18, "claude-code:queue-operation", "log-only")
    ]
    assert "/extra-usage" in queued.events[0].text
    notices = client.sessions.events(GEMINI, event_filters(surfaces=["log-only"]))
    assert [(e.record.seq, e.record.type) for e in notices.events] == [(5, "gemini:message/info")]
    window = client.sessions.events(A6, event_filters(seq=(10, 40), surfaces=["shadowed"]))
    assert [e.record.seq for e in window.events] == [*range(10, 23), 25, 26, 27, 28, 29]
    assert not window.events[0].text  # records without text unless asked
    assert _seed_error(lambda: client.sessions.events(A6, event_filters(surfaces=["hidden"]))) == (
        "SESSION_QUERY_INVALID_FILTER",
        "filters[0].surfaces",
    )


def test_trace_event(client: QuarryClient) -> None:
    shadowed = client.sessions.trace_event(A6, 11)
    assert (shadowed.target.surface, shadowed.replaced_by, list(shadowed.replacement_chain)) == ("shadowed", 31, [31])
    assert (list(shadowed.source_event_seqs), list(shadowed.derived_event_seqs)) == ([10], [31])
    summary = client.sessions.trace_event(A6, 31)
    assert len(summary.replaced_event_seqs) == 25 and summary.session.id == A6
    call = client.sessions.trace_event(CODEX, 21)
    assert list(call.derived_event_seqs) == [27, 33]
    assert _seed_error(lambda: client.sessions.trace_event(A6, -1)) == ("SESSION_QUERY_EVENT_NOT_FOUND", "seq")


def test_lineage(client: QuarryClient) -> None:
    main = client.sessions.lineage(MAIN)
    assert main.WhichOneof("completeness") == "root" and main.root.header.id == MAIN
    assert not main.ancestors
    assert [n.session.header.id for n in main.descendants] == AGENTS  # creation order, no grandchildren
    assert all(not n.descendants for n in main.descendants)
    agent = client.sessions.lineage(AGENTS[1])
    assert [a.header.id for a in agent.ancestors] == [MAIN] and agent.root.header.id == MAIN
    alone = client.sessions.lineage(CODEX)
    assert alone.root.header.id == CODEX and not alone.descendants


def _linked(native_id: str, parent: str) -> units_pb2.Session:
    made = session(native_id, [Msg("user", f"lineage probe {native_id}")], origin="codex-session")
    made.parent_session_id = parent
    return made


def test_lineage_across_partitions_and_a_cycle(client: QuarryClient) -> None:
    """A parent on another partition than its child (different lineage roots), an absent parent, and an
    ancestry that cycles."""
    count = 2
    parent = _linked("lineage-parent", "")
    child = next(
        _linked(f"lineage-child-{n}", parent.id)
        for n in range(50)
        if partition_for(f"codex-session:lineage-child-{n}", count) != partition_for(parent.id, count)
    )
    orphan = _linked("lineage-orphan", "codex-session:never-ingested")
    first, second = _linked("cycle-a", "codex-session:cycle-b"), _linked("cycle-b", "codex-session:cycle-a")
    report = client.ingest_sessions([parent, child, orphan, first, second])
    assert report.sessions_written == 5, report
    down = client.sessions.lineage(child.id)
    assert [a.header.id for a in down.ancestors] == [parent.id] and down.root.header.id == parent.id
    up = client.sessions.lineage(parent.id)
    assert [n.session.header.id for n in up.descendants] == [child.id]
    lost = client.sessions.lineage(orphan.id)
    assert lost.WhichOneof("completeness") == "unresolved_parent_id"
    assert lost.unresolved_parent_id == "codex-session:never-ingested"
    assert _seed_error(lambda: client.sessions.lineage(first.id)) == ("SESSION_QUERY_INVALID_LINEAGE", "session_id")


def test_titles_batch(client: QuarryClient) -> None:
    nope = "claude-code-session:nope"
    results = client.sessions.titles([TITLED, MAIN, TITLED, nope]).results
    assert [r.session_id for r in results] == [TITLED, MAIN, nope]
    titled, untitled, missing = results
    assert (titled.value.title.title, titled.value.title.kind, titled.value.title.seq) == (
        "Explain function logic",
        "ai-title",
        9,
    )
    assert untitled.WhichOneof("outcome") == "value" and not untitled.value.HasField("title")
    assert missing.WhichOneof("outcome") == "reason" and missing.reason.code == errors_pb2.NOT_FOUND


def test_search_events_within_a_session(client: QuarryClient) -> None:
    page = client.sessions.search_events(A6, "RangeError")
    assert [(h.record.seq, h.record.surface) for h in page.items] == [(31, "current")]
    assert "RangeError" in page.items[0].snippet and page.session.id == A6
    none = client.sessions.search_events(A6, "RangeError", event_filters(surfaces=["shadowed"]))
    assert not none.items and none.session.id == A6  # the header comes back without hits
    first = client.sessions.search_events(CODEX, "exec", limit=2)
    assert len(first.items) == 2 and first.next_cursor
    second = client.sessions.search_events(CODEX, "exec", limit=2, cursor=first.next_cursor)
    assert {h.record.seq for h in second.items}.isdisjoint(h.record.seq for h in first.items)
    stale = lambda: client.sessions.search_events(CODEX, "shell", limit=2, cursor=first.next_cursor)  # noqa: E731
    assert _seed_error(stale)[0] == "SESSION_QUERY_STALE_CURSOR"
    flipped = first.next_cursor[:-3] + ("A" if first.next_cursor[-3] != "A" else "B") + first.next_cursor[-2:]
    invalid = lambda: client.sessions.search_events(CODEX, "exec", limit=2, cursor=flipped)  # noqa: E731
    assert _seed_error(invalid)[0] == "SESSION_QUERY_INVALID_CURSOR"
    assert _seed_error(lambda: client.sessions.search_events(A6, "::"))[0] == "SESSION_QUERY_INVALID_QUERY"
    assert _seed_error(lambda: client.sessions.search_events(A6, "x", limit=101)) == (
        "SESSION_QUERY_INVALID_LIMIT",
        "limit",
    )


def test_search_sessions(client: QuarryClient) -> None:
    page = client.sessions.search_sessions("RangeError")
    assert [(h.record.header.id, h.best_match.record.seq) for h in page.items] == [(A6, 31)]
    assert not client.sessions.search_sessions("RangeError", event_filters=event_filters(surfaces=["shadowed"])).items
    scoped = client.sessions.search_sessions("subagent", session_filters=session_filters(parents=[MAIN]))
    assert {h.record.header.parent_session_id for h in scoped.items} <= {MAIN}
    every, cursor, walked = client.sessions.search_sessions("file", limit=100), "", []
    while True:
        page = client.sessions.search_sessions("file", limit=3, cursor=cursor)
        walked.extend(h.record.header.id for h in page.items)
        cursor = page.next_cursor
        if not cursor:
            break
    assert walked == [h.record.header.id for h in every.items] and len(walked) > 3
    scores = [h.best_match.score for h in every.items]
    assert scores == sorted(scores, reverse=True)
    text_clause = lambda: client.sessions.search_sessions("x", event_filters=event_filters(text="x"))  # noqa: E731
    assert _seed_error(text_clause) == ("SESSION_QUERY_INVALID_FILTER", "event_filters[0].text")


def test_cli_session_commands(cluster: LocalCluster, client: QuarryClient) -> None:
    home = cluster.home
    listed = orjson.loads(quarry(home, "--format", "json", "sessions", "list", "--parent", MAIN).stdout)
    assert sorted(item["header"]["id"] for item in listed["items"]) == AGENTS
    surface = quarry(home, "sessions", "surface", A6).stdout
    assert "captured through seq 53" in surface and "claude-code:user" in surface
    window = orjson.loads(quarry(home, "--format", "json", "sessions", "event", A6, "31", "--before", "1").stdout)
    assert (window["startSeq"], window["endSeq"]) == (30, 31)
    events = quarry(home, "sessions", "events", MAIN, "--text", "extra-usage").stdout
    assert "claude-code:queue-operation" in events and "log-only" in events
    trace = quarry(home, "sessions", "trace-event", A6, "11").stdout
    assert "replacement chain  31" in trace
    assert "agent-adae2f20e326a65be" in quarry(home, "sessions", "lineage", MAIN).stdout
    titles = quarry(home, "sessions", "titles", TITLED, "claude-code-session:nope").stdout
    assert "Explain function logic" in titles and "NOT_FOUND" in titles
    found = quarry(home, "sessions", "search", "RangeError").stdout
    assert A6 in found and "RangeError" in found
    within = quarry(home, "sessions", "search", "--in", A6, "RangeError", "--surface", "shadowed").stdout
    assert A6 in within and "RangeError" not in within  # the header, no hit
    raw = quarry(home, "sessions", "read", C9, "--raw").stdout.splitlines()
    assert raw == (REAL_LOGS / "claude_code/entireio__cli__c9_883595c929_0_full.jsonl").read_text().splitlines()
    failed = quarry(home, "sessions", "event", A6, "54", check=False)
    assert failed.returncode == 2 and "SESSION_QUERY_EVENT_NOT_FOUND" in failed.stderr


def test_a_contradicting_copy_is_a_source_conflict(client: QuarryClient, tmp_path: Path) -> None:
    original = (REAL_LOGS / "claude_code/entireio__cli__c9_883595c929_0_full.jsonl").read_bytes()
    moved = tmp_path / "moved" / "c9.jsonl"
    moved.parent.mkdir()
    moved.write_bytes(original)
    assert not list(client.ingest_paths([moved]))[-1].report.issues  # the same log from another file
    lines = original.splitlines(keepends=True)
    edited = tmp_path / "edited" / "c9.jsonl"
    edited.parent.mkdir()
    edited.write_bytes(b"".join([*lines[:3], lines[3].replace(b'"thinking":"', b'"thinking":"EDITED '), *lines[4:]]))
    report = list(client.ingest_paths([edited]))[-1].report
    (issue,) = report.issues
    assert issue.code == SOURCE_CONFLICT_ISSUE and issue.path == str(edited) and str(moved) in issue.reason
    assert client.sessions.surface(C9).session.source_path == str(moved)  # the stored copy is kept


def test_titles_with_one_partition_stopped(cluster: LocalCluster, client: QuarryClient) -> None:
    """Last in the module: it stops a partition. Only the ids of the stopped partition's partition are rejected."""
    ids = [TITLED, MAIN, CODEX, GEMINI, A6, C9]
    count = 2
    stopped = partition_for(MAIN, count)
    cluster.kill(f"index-{stopped}")
    results = client.sessions.titles(ids).results
    for result in results:
        if partition_for(result.session_id, count) == stopped:
            assert result.WhichOneof("outcome") == "reason"
            assert result.reason.code == errors_pb2.PARTITION_UNAVAILABLE
        else:
            assert result.WhichOneof("outcome") == "value", result
    assert {partition_for(i, count) for i in ids} == {0, 1}  # both kinds of outcome are exercised
    with pytest.raises(QuarryError) as caught:
        client.sessions.surface(MAIN)
    assert session_query_code(caught.value, "surface") == "SESSION_QUERY_PERSISTENCE_FAILED"
