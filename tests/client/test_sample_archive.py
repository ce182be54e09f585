"""The sample archive `quarry demo` ingests: written in the agents' real formats (the real parsers read it
with no issue), deterministic, a week of sessions with a compaction and subagents, and the example queries
of the README and of the demo find what they describe in it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from quarry.cli import demo
from quarry.cli.sample_archive import write_sample_archive
from quarry.core.routing import partition_for
from quarry.ingest.parse import ParseResult, iter_parse
from quarry.ingest.validate import session_problems
from quarry.query.root import Coordinator
from quarry.v1 import query_pb2, units_pb2
from tests.partition_servers import one_partition_each, topology

TODAY = datetime.now(UTC).date()
# The README's text with its tables' escaped pipes (`\|`) read as the pipes of the queries they hold.
README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8").replace("\\|", "|")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample")
    write_sample_archive(folder, TODAY)
    return folder


@pytest.fixture(scope="module")
def parsed(archive: Path) -> list[ParseResult]:
    return list(iter_parse([archive]))


@pytest.fixture(scope="module")
def sessions(parsed: list[ParseResult]) -> list[units_pb2.Session]:
    return [s for result in parsed for s in result.sessions]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_archive_is_quick_to_write_and_the_same_day_gives_the_same_bytes(tmp_path, archive):
    started = time.perf_counter()
    write_sample_archive(tmp_path / "again", TODAY)
    assert time.perf_counter() - started < 3.0
    assert _files(tmp_path / "again") == _files(archive)
    write_sample_archive(tmp_path / "later", TODAY + timedelta(days=1))
    later = _files(tmp_path / "later")
    assert len(later) == len(_files(archive)) and later != _files(archive)  # the same week, a day later


def test_the_real_parsers_read_every_file_with_no_issue(parsed, sessions):
    assert {result.format for result in parsed} == {"claude-code", "codex"}
    assert [issue for result in parsed for issue in result.issues] == []
    skipped = Counter[str]()
    for result in parsed:
        skipped.update(result.skipped_record_types)
    copies = {"codex:event_msg/user_message", "codex:event_msg/agent_message", "codex:event_msg/agent_reasoning"}
    assert set(skipped) <= copies  # Codex writes its dialogue twice; the parser reads one copy
    assert all(session_problems(s) == [] for s in sessions)
    assert 20 <= len(sessions) <= 30 and sum(len(s.messages) for s in sessions) > 250


def test_sessions_are_spread_over_the_six_days_before_today_in_working_hours(sessions):
    starts = [datetime.fromtimestamp(s.created_ms / 1000, tz=UTC) for s in sessions]
    per_day = Counter(start.date() for start in starts)
    assert sorted(per_day) == [TODAY - timedelta(days=n) for n in range(6, 0, -1)]
    assert max(per_day.values()) <= 8
    assert all(8 <= start.hour < 22 for start in starts)
    assert all(s.updated_ms < datetime.combine(TODAY, datetime.min.time(), UTC).timestamp() * 1000 for s in sessions)


def test_agents_models_and_token_usage_are_recorded(sessions):
    models = {m.model for s in sessions for m in s.messages if m.role == "assistant"}
    assert models >= {"claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "gpt-5-codex", "gpt-5.1-codex"}
    assert {s.repo for s in sessions} == {"ledger", "billing", "storefront", "tilekit"}
    for s in sessions:  # Claude Code records usage per response, Codex per turn (on the turn's last reply)
        replies = [m for m in s.messages if m.role == "assistant" and m.model]
        assert replies and sum(m.output_tokens for m in replies) > 0, s.id
        assert sum(m.input_tokens + m.cache_read_tokens + m.cache_write_tokens for m in replies) > 5_000, s.id


def test_a_session_is_compacted_with_its_summary_and_what_came_before_is_shadowed(sessions):
    (compacted,) = [s for s in sessions if any(snap.boundary == "compaction" for snap in s.snapshots)]
    (snapshot,) = [snap for snap in compacted.snapshots if snap.boundary == "compaction"]
    assert snapshot.trigger == "manual" and snapshot.tokens_before > 20_000 and snapshot.inheritance == "summary"
    summary = next(m for m in compacted.messages if m.id == snapshot.message_ref.removeprefix("message:"))
    assert "multi-currency" in summary.blocks[0].text and not summary.authored
    surfaces = Counter(event.surface for event in compacted.log_events)
    assert surfaces["shadowed"] > 20 and surfaces["current"] > 20


def test_subagent_runs_are_child_sessions_linked_to_the_call_that_started_them(sessions):
    by_id = {s.id: s for s in sessions}
    children = [s for s in sessions if s.parent_session_id]
    assert len(children) == 3
    for child in children:
        parent = by_id[child.parent_session_id]
        (delegation,) = parent.delegations
        assert delegation.child_session_id == child.id and delegation.mapping_state == "resolved"
        assert delegation.agent == "Explore" and delegation.result_state == "completed"
        assert child.messages[0].blocks[0].text == delegation.instruction
        assert {m.model for m in child.messages if m.role == "assistant"} == {"claude-haiku-4-5"}


def test_failures_are_followed_by_their_fixes(sessions):
    """A failing command is answered by the agent and later passes: pytest, go test and vitest alike."""
    actions = [a for s in sessions for a in s.actions]
    failed = [a for a in actions if a.failed]
    assert len(failed) >= 10 and {a.exit_code for a in failed if a.HasField("exit_code")} >= {1, 2}
    for tool in ("pytest", "go test", "vitest"):
        runs = [a for a in actions if tool in a.command]
        assert any(a.failed for a in runs) and any(not a.failed for a in runs), tool


@pytest.fixture(scope="module")
def coordinator(sessions, tmp_path_factory) -> Iterator[Coordinator]:
    """The archive in two real partitions behind in-process index nodes, searched as the query node does."""
    nodes = one_partition_each(tmp_path_factory.mktemp("index"), 2)
    for i, node in enumerate(nodes):
        node.lexical(i).upsert([s for s in sessions if partition_for(s.id, 2) == i])
    yield Coordinator(topology(nodes), None, None)
    for node in nodes:
        node.stop()


# README example -> a title the top hits must include ("" when any hit will do).
SEARCHES = {
    "how do I install casks generated by goreleaser": "Installing goreleaser's Homebrew casks",
    "the server would not start: RangeError": "Dev server would not start: RangeError",
    "sqlite locking": "Outbox relays fail with database is locked",
    "retry backoff jitter pool": "Retry provider calls with backoff and jitter",
    "sessions where exists action(tool:bash AND text:pytest)": "Flaky concurrent postings test",
    'contains:"busy_timeout = 5000"': "Outbox relays fail with database is locked",
    "sessions where exists file(action:file_edit AND path:src/ledger)": "Flaky concurrent postings test",
    "sqlite": "",
}
UNIT_QUERIES = (
    "messages where role:assistant AND text:timeout",
    "files where action:file_edit | group by path | count",
    "actions where tool:Bash | agg count, avg:is_error",
    "delegations where agent:Explore | count",
    "runs where branch:fix/login",
    "runs where model:claude-opus-4-5 AND tool_uses >= 3",
    "actions where is_error:true | group by tool | count",
    "runs where role:main | group by provider | count",
)


def _search(coordinator: Coordinator, query: str) -> query_pb2.SearchEnvelope:
    return coordinator.search(query_pb2.SearchRequest(query=query, limit=5))


@pytest.mark.parametrize("query", list(SEARCHES))
def test_the_readmes_searches_find_the_sessions_they_describe(coordinator, query):
    assert query in README
    titles = [hit.session.title for hit in _search(coordinator, query).hits]
    assert titles, query
    assert not SEARCHES[query] or SEARCHES[query] in titles[:3], titles


def test_the_readmes_filtered_search_leaves_out_the_flaky_session(coordinator):
    query = 'repo:ledger "connection pool" -flaky since:7d'
    assert query in README
    titles = [hit.session.title for hit in _search(coordinator, query).hits]
    assert titles == ["Requests time out waiting for a pooled connection"]
    flaky = [hit.session.title for hit in _search(coordinator, 'repo:ledger "connection pool" flaky').hits]
    assert flaky == ["Flaky concurrent postings test"]


def test_the_readmes_origin_alternatives_find_one_session_of_each_agent(coordinator):
    query = 'repo:billing origin:(codex-session|claude-code-session) title:"database is locked"'
    assert query in README
    assert sorted(hit.session.origin for hit in _search(coordinator, query).hits) == [
        "claude-code-session",
        "codex-session",
    ]


@pytest.mark.parametrize("query", UNIT_QUERIES)
def test_the_readmes_unit_queries_return_rows(coordinator, query):
    assert query in README
    envelope = coordinator.query_units(query_pb2.QueryUnitsRequest(query=query, limit=20))
    assert envelope.rows or [g for g in envelope.groups if g.count > 0], query


def test_the_demos_examples_find_hits_and_the_first_is_a_claude_code_session(coordinator):
    prose = _search(coordinator, demo.PROSE_EXAMPLE)
    assert prose.reading == "prose" and prose.hits[0].session.title.startswith("Requests time out")
    for query in demo.LANGUAGE_EXAMPLES:
        assert _search(coordinator, query).hits, query
    first = _search(coordinator, demo.LANGUAGE_EXAMPLES[0]).hits[0]
    assert first.session.id.startswith("claude-code-session:")
    units = coordinator.query_units(query_pb2.QueryUnitsRequest(query=demo.UNIT_EXAMPLE, limit=5))
    assert units.rows
