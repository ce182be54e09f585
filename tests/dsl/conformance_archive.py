"""The fixture archive of the seed-000 conformance table (tests/dsl/test_conformance.py).

Built so every seed example has a non-trivial answer: at least one match and, where the example
filters, a near miss that must not match. Ten sessions, named by letter in the table:

  A codex-session:abc123               polylogue, active, 2026-06-01  (the session the seed names)
  B claude-code-session:poly-edit      polylogue, active, 2026-06-17  edit -> failed pytest -> edit
  C claude-code-session:sinex          sinex,     active, 2026-06-19 12:00  pytest -> edit (wrong order)
  D codex-session:stale                polylogue, stale,  2026-05-31  lint, a Write with "needle"
  E gemini-cli-session:gem             polylogue, -,      2026-06-18  edit(needle) -> pytest ok -> edit
  F chatgpt-export:ext-child           -,                 2026-01-01  lineage root
  G chatgpt-export:ext-child/branch-1  -,                 2026-01-02  its child
  H chatgpt-export:ext-children        -,                 2026-01-03  a name-prefix near miss
  I claude-code-session:poly-edit/agent-1  polylogue,     2026-06-17 11:00  B's subagent
  J claude-code-session:bulk           polylogue, active, 2026-06-19 08:00  22 assistant turns, 44 edits

Session counts are set explicitly (the table's count examples straddle their bounds), the clock of
the table is NOW (2026-06-20), and assertions are written through the query node (routed to the
partition of their target, as a user's would be).
"""

from __future__ import annotations

from concurrent import futures
from datetime import UTC, datetime
from pathlib import Path

import grpc

from quarry.core import refs
from quarry.core.routing import partition_for
from quarry.query.root import Coordinator
from quarry.query.server import QueryServicer
from quarry.v1 import assertions_pb2, query_pb2, query_pb2_grpc, units_pb2
from tests.index.sessions import Msg, Tool, session
from tests.partition_servers import one_partition_each, topology

MINUTE = 60_000


def at(month: int, day: int, hour: int = 10, year: int = 2026) -> int:
    """Epoch ms of a UTC time."""
    return int(datetime(year, month, day, hour, tzinfo=UTC).timestamp() * 1000)


NOW = at(6, 20, 0)  # the table's clock: `since:7d` is 2026-06-13, `yesterday` is 2026-06-19

A = "codex-session:abc123"
B = "claude-code-session:poly-edit"
C = "claude-code-session:sinex"
D = "codex-session:stale"
E = "gemini-cli-session:gem"
F = "chatgpt-export:ext-child"
G = "chatgpt-export:ext-child/branch-1"
H = "chatgpt-export:ext-children"
I = "claude-code-session:poly-edit/agent-1"  # noqa: E741 - the table names sessions by letter
J = "claude-code-session:bulk"
SESSIONS = (A, B, C, D, E, F, G, H, I, J)

PLAN_PY = "polylogue/archive/query/plan.py"
J_TURNS = 22  # J: one user message, then 22 assistant turns of two edits each

_EDIT = Tool("Edit", "file_edit", path=PLAN_PY, output="edited")
_EDIT_NEEDLE = Tool("Edit", "file_edit", path=PLAN_PY, input_json='{"new_string": "needle"}', output="edited")
_PYTEST_FAIL = Tool("Bash", "shell", command="pytest tests/archive", output="2 failed, 5 passed", failed=True)
_PYTEST_OK = Tool("Bash", "shell", command="pytest -q", output="all passed")
_LINT = Tool("Bash", "shell", command="make lint", output="ok")
_WRITE_NEEDLE = Tool(
    "Write", "file_write", path="docs/notes.md", input_json='{"content": "the needle is here"}', output="written"
)
_EDIT_SINEX = Tool("Edit", "file_edit", path="sinex/archive/query/run.py", output="edited")
_READ = Tool("Read", "file_read", path=PLAN_PY, output="def plan(): ...")


def message(session_id: str, seq: int) -> str:
    return f"message:{refs.message_id(session_id, seq)}"


def block(session_id: str, seq: int, index: int) -> str:
    return f"block:{refs.block_id(refs.message_id(session_id, seq), index)}"


def action(session_id: str, seq: int) -> str:
    return f"action:{refs.action_id(session_id, seq)}"


def file(session_id: str, path: str) -> str:
    return f"file:{refs.file_id(session_id, path)}"


def run(session_id: str, dispatch: int | None = None) -> str:
    return f"run:{refs.run_id(session_id, dispatch)}"


def event(session_id: str, seq: int) -> str:
    return f"observed-event:{refs.event_id(session_id, seq)}"


def snapshot(session_id: str, seq: int) -> str:
    return f"context-snapshot:{refs.snapshot_id(session_id, seq)}"


def delegation(session_id: str, dispatch: int) -> str:
    return f"delegation:{refs.delegation_id(session_id, dispatch)}"


def j_assistant(turn: int) -> int:
    """The seq of J's assistant message of a turn (each turn: the message, then two tool messages)."""
    return 1 + 3 * turn


def _counts(s: units_pb2.Session, **counts: int) -> None:
    s.counts.Clear()
    for name, value in counts.items():
        setattr(s.counts, name, value)


def _files(s: units_pb2.Session, path: str, categories: dict[str, int]) -> None:
    times = [a.time_ms for a in s.actions if a.path == path]
    s.files.add(
        id=refs.file_id(s.id, path),
        session_id=s.id,
        path=path,
        actions=len(times),
        categories=categories,
        first_time_ms=min(times),
        last_time_ms=max(times),
    )


def _tokens(s: units_pb2.Session, seq: int, input_tokens: int, duration_ms: int) -> None:
    s.messages[seq].input_tokens = input_tokens
    s.messages[seq].duration_ms = duration_ms


def _session_a() -> units_pb2.Session:
    s = session(
        "abc123",
        [
            Msg("user", "the query envelope fails with a timeout failure"),
            Msg("assistant", "Looking at the envelope code.", code="db = sqlite.open(path)"),
            Msg("assistant", "Done."),
        ],
        origin="codex-session",
        title="query DSL envelope",
        repo="polylogue",
        tags=("active",),
        start_ms=at(6, 1),
    )
    _counts(
        s,
        messages=10,
        words=2000,
        user_messages=2,
        assistant_words=500,
        authored_user_messages=2,
        authored_user_words=100,
    )
    s.duration_ms = 60_000
    _tokens(s, 1, 1001, 1999)
    s.runs.add(id=refs.run_id(s.id), session_id=s.id, role="main", status="completed", started_ms=at(6, 1))
    s.events.add(
        id=refs.event_id(s.id, 0),
        session_id=s.id,
        seq=0,
        kind="command",
        text="review requested",
        object_ref="github-review:pr-12",
        delivery_state="acted_on",
        time_ms=at(6, 1) + MINUTE,
    )
    s.snapshots.add(
        id=refs.snapshot_id(s.id, 0),
        session_id=s.id,
        seq=0,
        boundary="session_start",
        time_ms=at(6, 1),
        preview="the query envelope fails",
    )
    return s


def _session_b() -> units_pb2.Session:
    s = session(
        "poly-edit",
        [
            Msg("user", "fix the query envelope from the stale plan"),
            Msg(
                "assistant",
                "Raising the timeout now.",
                code="TIMEOUT = 30  # timeout seconds",
                tools=[_EDIT, _PYTEST_FAIL, _EDIT],
            ),
            Msg("assistant", "The timeout is fixed."),
        ],
        title="Edit the query DSL",
        repo="polylogue",
        tags=("active",),
        start_ms=at(6, 17, 9),
    )
    _counts(
        s,
        messages=12,
        words=2001,
        user_messages=2,
        assistant_words=2001,
        authored_user_messages=1,
        authored_user_words=300,
        tool_messages=3,
        tool_use_messages=1,
    )
    s.duration_ms = 59_999
    s.actions[1].exit_code = 1  # the failing pytest; its next turn says the timeout is fixed
    s.actions[1].followup = "acknowledged"
    s.actions[2].exit_code = 0
    _tokens(s, 1, 1000, 2000)
    _tokens(s, 5, 999, 2500)
    _files(s, PLAN_PY, {"file_edit": 2})
    s.runs.add(
        id=refs.run_id(s.id),
        session_id=s.id,
        role="main",
        status="completed",
        started_ms=at(6, 17, 9),
        provider="anthropic",
        branch="main",
    )
    s.runs.add(
        id=refs.run_id(s.id, 1),
        session_id=s.id,
        role="subagent",
        status="completed",
        agent="Explore",
        child_session_id=I,
        delegation_id=refs.delegation_id(s.id, 1),
        started_ms=at(6, 17, 11),
    )
    s.delegations.add(
        id=refs.delegation_id(s.id, 1),
        session_id=s.id,
        child_session_id=I,
        mapping_state="resolved",
        tool="Task",
        agent="Explore",
        instruction="Review the query planner for regressions",
        result_state="completed",
        child_model="claude-haiku-4",
        time_ms=at(6, 17, 11),
    )
    s.events.add(
        id=refs.event_id(s.id, 0),
        session_id=s.id,
        seq=0,
        kind="tool_finished",
        text="Bash finished: pytest #2100",
        object_ref="bash",
        delivery_state="acted_on",
        time_ms=at(6, 17, 9) + 3 * MINUTE,
    )
    s.events.add(
        id=refs.event_id(s.id, 1),
        session_id=s.id,
        seq=1,
        kind="command",
        text="review requested",
        object_ref="github-review:pr-13",
        delivery_state="recorded",
        time_ms=at(6, 17, 9) + 5 * MINUTE,
    )
    s.snapshots.add(
        id=refs.snapshot_id(s.id, 0),
        session_id=s.id,
        seq=0,
        boundary="session_start",
        time_ms=at(6, 17, 9),
        preview="fix the query envelope",
    )
    return s


def _session_c() -> units_pb2.Session:
    s = session(
        "sinex",
        [
            Msg("user", "the query envelope in sinex has a null pointer"),
            Msg("assistant", "Running tests.", code="print('x')", tools=[_PYTEST_OK, _EDIT_SINEX]),
            Msg("assistant", "Done refactoring."),
        ],
        title="sinex query DSL",
        repo="sinex",
        tags=("active",),
        start_ms=at(6, 19, 12),
    )
    _counts(
        s,
        messages=9,
        words=600,
        user_messages=1,
        assistant_words=1000,
        authored_user_messages=2,
        authored_user_words=99,
        tool_messages=2,
        tool_use_messages=1,
        paste_messages=1,
    )
    s.duration_ms = 120_000
    _tokens(s, 1, 5000, 3000)
    _tokens(s, 4, 1000, 3001)
    _files(s, "sinex/archive/query/run.py", {"file_edit": 1})
    s.runs.add(id=refs.run_id(s.id), session_id=s.id, role="main", status="completed", started_ms=at(6, 19, 12))
    s.runs.add(
        id=refs.run_id(s.id, 1),
        session_id=s.id,
        role="subagent",
        status="failed",
        agent="Explore",
        started_ms=at(6, 19, 12) + MINUTE,
    )
    s.delegations.add(
        id=refs.delegation_id(s.id, 1),
        session_id=s.id,
        mapping_state="unresolved",
        tool="Task",
        agent="Explore",
        instruction="review the sinex tests",
        result_state="failed",
        is_error=True,
        time_ms=at(6, 19, 12) + MINUTE,
    )
    s.events.add(
        id=refs.event_id(s.id, 0),
        session_id=s.id,
        seq=0,
        kind="tool_finished",
        text="pytest #2100",
        object_ref="bash",
        delivery_state="recorded",
        time_ms=at(6, 19, 12) + 2 * MINUTE,
    )
    s.snapshots.add(
        id=refs.snapshot_id(s.id, 0),
        session_id=s.id,
        seq=0,
        boundary="session_start",
        time_ms=at(6, 19, 12),
        preview="the query envelope in sinex",
    )
    return s


def _session_d() -> units_pb2.Session:
    s = session(
        "stale",
        [
            Msg("user", "query envelope again"),
            Msg("assistant", "Linting before the refactor of the schema.", code="x = 1", tools=[_LINT, _WRITE_NEEDLE]),
        ],
        origin="codex-session",
        title="stale plan",
        repo="polylogue",
        tags=("stale",),
        start_ms=at(5, 31),
    )
    _counts(s, messages=10, words=400, user_messages=3, assistant_words=499, tool_messages=2, tool_use_messages=1)
    _files(s, "docs/notes.md", {"file_write": 1})
    s.runs.add(
        id=refs.run_id(s.id),
        session_id=s.id,
        role="main",
        status="completed",
        started_ms=at(5, 31),
        provider="openai",
        branch="refactor/schema",
    )
    s.runs.add(
        id=refs.run_id(s.id, 1),
        session_id=s.id,
        role="subagent",
        status="completed",
        agent="general-purpose",
        started_ms=at(5, 31) + MINUTE,
    )
    s.delegations.add(
        id=refs.delegation_id(s.id, 1),
        session_id=s.id,
        mapping_state="resolved",
        tool="Task",
        agent="general-purpose",
        instruction="lint the docs",
        result_state="completed",
        time_ms=at(5, 31) + MINUTE,
    )
    s.events.add(
        id=refs.event_id(s.id, 0),
        session_id=s.id,
        seq=0,
        kind="command",
        text="issue opened",
        object_ref="github-issue:7",
        delivery_state="recorded",
        time_ms=at(5, 31) + MINUTE,
    )
    return s


def _session_e() -> units_pb2.Session:
    s = session(
        "gem",
        [
            Msg("user", "null pointer exception in the planner"),
            Msg(
                "assistant",
                "Check the sqlite locking first.",
                code="assert plan is not None",
                tools=[_EDIT_NEEDLE, _PYTEST_OK, _EDIT],
            ),
        ],
        origin="gemini-cli-session",
        title="query DSL notes",
        repo="polylogue",
        start_ms=at(6, 18),
    )
    _counts(s, messages=12, words=500, user_messages=2, assistant_words=2000, tool_messages=3, tool_use_messages=1)
    _files(s, PLAN_PY, {"file_edit": 2})
    return s


def _family() -> list[units_pb2.Session]:
    """F, its child G and the near miss H (a name that F's id is a prefix of, but no child of F)."""
    f = session(
        "ext-child",
        [Msg("user", "branch question"), Msg("assistant", "answer")],
        origin="chatgpt-export",
        repo="",
        start_ms=at(1, 1),
    )
    _counts(f, messages=2, words=99)
    g = session(
        "ext-child/branch-1",
        [Msg("user", "follow-up question"), Msg("assistant", "answer two")],
        origin="chatgpt-export",
        repo="",
        start_ms=at(1, 2),
    )
    g.parent_session_id = F
    _counts(g, messages=2, words=100)
    h = session(
        "ext-children", [Msg("user", "unrelated question")], origin="chatgpt-export", repo="", start_ms=at(1, 3)
    )
    _counts(h, messages=1, words=50, system_messages=1)
    for s, when in ((f, at(1, 1)), (g, at(1, 2)), (h, at(1, 3))):
        s.snapshots.add(id=refs.snapshot_id(s.id, 0), session_id=s.id, seq=0, boundary="subagent_start", time_ms=when)
    g.snapshots[0].inheritance = "inherited"  # a branch of F's conversation
    return [f, g, h]


def _session_i() -> units_pb2.Session:
    s = session(
        "poly-edit/agent-1",
        [Msg("user", "Review the query planner"), Msg("assistant", "Reading.", tools=[_READ])],
        repo="polylogue",
        start_ms=at(6, 17, 11),
    )
    s.parent_session_id = B
    s.agent = "Explore"
    _counts(s, messages=4, words=120, tool_messages=1, tool_use_messages=1)
    _files(s, PLAN_PY, {"file_read": 1})
    s.snapshots.add(
        id=refs.snapshot_id(s.id, 0),
        session_id=s.id,
        seq=0,
        boundary="subagent_start",
        time_ms=at(6, 17, 11),
        inheritance="prompt",
    )
    s.snapshots.add(
        id=refs.snapshot_id(s.id, 1),
        session_id=s.id,
        seq=1,
        boundary="compaction",
        trigger="auto",
        time_ms=at(6, 17, 11) + MINUTE,
        inheritance="summary",
    )
    return s


def _session_j() -> units_pb2.Session:
    turns = [
        Msg(
            "assistant",
            f"rename step {n}",
            tools=[Tool("Edit", "file_edit", path=p, output="edited") for p in ("src/rename.py", "src/names.py")],
        )
        for n in range(J_TURNS)
    ]
    s = session(
        "bulk",
        [Msg("user", "apply the renames, refactor the schema test"), *turns],
        title="bulk edits",
        repo="polylogue",
        tags=("active",),
        start_ms=at(6, 19, 8),
    )
    _counts(
        s,
        messages=67,
        words=300,
        authored_user_messages=2,
        authored_user_words=150,
        tool_messages=44,
        tool_use_messages=22,
    )
    _files(s, "src/rename.py", {"file_edit": J_TURNS})
    _files(s, "src/names.py", {"file_edit": J_TURNS})
    return s


def archive() -> list[units_pb2.Session]:
    return [
        _session_a(),
        _session_b(),
        _session_c(),
        _session_d(),
        _session_e(),
        *_family(),
        _session_i(),
        _session_j(),
    ]


def assertions() -> list[units_pb2.Assertion]:
    """Written in this order, each with its own creation time (rows sort by it)."""
    specs = [
        ("decision-review", "decision", "user", B, "Ship it after review of the planner"),
        ("decision-candidate", "decision", "agent", B, "needs review"),  # lands as a candidate
        ("decision-plain", "decision", "user", A, "Keep the envelope as is"),
        ("caveat-b", "caveat", "user", B, "the caveats of the planner"),
        ("caveat-abc", "caveat", "agent", A, "pytest is flaky here"),  # a candidate about abc123
        ("caveat-sinex", "caveat", "user", C, "sinex caveat"),
    ]
    return [
        units_pb2.Assertion(
            id=assertion_id,
            kind=kind,
            author=author,
            target_ref=f"session:{target}",
            body=body,
            created_ms=at(6, 19, 0) + n * MINUTE,
        )
        for n, (assertion_id, kind, author, target, body) in enumerate(specs)
    ]


class ConformanceCluster:
    """The archive on `partitions` real partitions, one per in-process index node (each with its
    AssertionService) behind gRPC, a coordinator over them and a QueryService server; assertions
    written through the query node."""

    def __init__(self, root: Path, partitions: int) -> None:
        self.nodes = one_partition_each(root, partitions)
        self.partitions = [node.lexical(i) for i, node in enumerate(self.nodes)]
        sessions = archive()
        for i, partition in enumerate(self.partitions):
            partition.upsert([s for s in sessions if partition_for(s.id, partitions) == i])
        self.servers: list[grpc.Server] = []
        query = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        coordinator = Coordinator(topology(self.nodes), None, None, clock=lambda: NOW)
        query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(coordinator), query)
        address = f"127.0.0.1:{query.add_insecure_port('127.0.0.1:0')}"
        query.start()
        self.servers.append(query)
        self.channel = grpc.insecure_channel(address)
        self.stub = query_pb2_grpc.QueryServiceStub(self.channel)
        for assertion in assertions():
            self.stub.WriteAssertion(assertions_pb2.WriteAssertionRequest(assertion=assertion))

    def sessions(self, query: str) -> frozenset[str]:
        """The ids of every session the query selects (QueryService.Search, default lane), read as the
        query language: bare words are the language's terms, every one needed (prose would rank sessions
        holding any of them)."""
        envelope = self.search(query)
        return frozenset(hit.session.id for hit in envelope.hits)

    def search(self, query: str) -> query_pb2.SearchEnvelope:
        """QueryService.Search of every session the query selects, the whole envelope (the query language's
        reading)."""
        return self.stub.Search(query_pb2.SearchRequest(query=query, limit=1000, reading="query"))

    def units(self, query: str) -> query_pb2.QueryUnitEnvelope:
        """QueryService.QueryUnits with the caller's default limit and offset."""
        return self.stub.QueryUnits(query_pb2.QueryUnitsRequest(query=query))

    def close(self) -> None:
        self.channel.close()
        for server in self.servers:
            server.stop(None)
        for node in self.nodes:
            node.stop()
