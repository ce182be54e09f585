"""A team cluster as it is meant to be used: a TLS + token cluster on NATS (3 log servers, 3 index nodes,
every partition on 2 of them), two laptops pushing their own agent logs with `quarry push --follow` into
their own scopes (one of them holding a 30 MB session, and both holding a copy of one shared log), a
third process searching all along, and the whole cluster killed (kill -9, every process, the log too)
and started again mid-push. Afterwards every session of both laptops is in the archive exactly once, in
its own scope, whole; and each laptop's state file says what the archive holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.cli.push_state import PushState
from quarry.client.client import QuarryClient
from quarry.core.session_ids import scoped_id
from quarry.core.tokens import TokenStore
from quarry.ingest.parse import iter_parse
from quarry.v1 import units_pb2
from tests.cluster.corpus import session_id, write_session
from tests.cluster.test_tls import write_certificates
from tests.cluster_log.load import read_lines

pytestmark = pytest.mark.cluster

LARGE_SESSION_BYTES = 30 * 1024 * 1024
SETTLE_TIMEOUT_S = 300.0


@dataclass
class Laptop:
    name: str
    scope: str
    logs: Path  # what it pushes (as ~/.claude/projects)
    state: Path  # its XDG_STATE_HOME
    token: str

    def sessions(self) -> dict[str, units_pb2.Session]:
        """Its sessions as its own parsers read them now: native id -> session."""
        return {s.id: s for result in iter_parse([self.logs]) for s in result.sessions}


def write_large_session(folder: Path, key: str) -> Path:
    """A Claude Code log of over 30 MB: a long run of tool calls, each with a large output, then a reply
    holding a word nothing else holds."""
    lines = []
    session = f"large-{key}"
    uuid = 0

    def record(kind: str, message: dict[str, object]) -> None:
        nonlocal uuid
        uuid += 1
        lines.append(
            orjson.dumps(
                {
                    "type": kind,
                    "sessionId": session,
                    "uuid": f"{session}-{uuid}",
                    "parentUuid": f"{session}-{uuid - 1}" if uuid > 1 else None,
                    "cwd": "/home/dev/bigrepo",
                    "timestamp": f"2026-03-01T10:{uuid // 60 % 60:02d}:{uuid % 60:02d}.000Z",
                    "message": message,
                }
            )
        )

    record("user", {"role": "user", "content": "dump every table of the warehouse"})
    output = "row " * 16_000  # 64 KB per tool output
    calls = LARGE_SESSION_BYTES // len(output) + 8
    for n in range(calls):
        call = f"toolu_{n}"
        record(
            "assistant",
            {
                "role": "assistant",
                "id": f"msg_{n}",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"dump {n}"}}],
            },
        )
        record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": output}]})
    record(
        "assistant",
        {
            "role": "assistant",
            "id": "msg_end",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "done: zephyrine tables"}],
        },
    )
    path = folder / f"{session}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert path.stat().st_size > LARGE_SESSION_BYTES
    return path


def write_laptop_logs(logs: Path, team: str, count: int) -> None:
    project = logs / f"-home-dev-{team}"
    project.mkdir(parents=True)
    for n in range(count):
        turns = [("user", f"{team} question {n} about tern{n}"), ("assistant", f"{team} answer {n}")]
        write_session(project, f"{team}/{n}", team, turns)
    write_session(project, "shared/runbook", "ops", [("user", "the shared runbook about failover")])


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, list[Laptop], Path]]:
    base = tmp_path_factory.mktemp("team-push")
    tls = write_certificates(base / "tls")
    store = TokenStore.in_home(base / "cluster")
    laptops = []
    for name, scope in (("laptop-a", "team-a"), ("laptop-b", "team-b")):
        token, _ = store.create(name, {scope: ["read", "write"]})
        laptops.append(Laptop(name, scope, base / name / "logs", base / name / "state", token))
    write_laptop_logs(laptops[0].logs, "team-a", 12)
    write_laptop_logs(laptops[1].logs, "team-b", 12)
    write_large_session(laptops[0].logs / "-home-dev-team-a", "a")
    cluster = LocalCluster(
        base / "cluster",
        embedder="none",
        log="nats",
        nats_servers=3,
        index_nodes=3,
        replicas=2,
        partitions=8,
        auth=True,
        tls=tls,
        ingest_roots=[],
    )
    cluster.start()
    try:
        yield cluster, laptops, tls.ca
    finally:
        cluster.stop()


def follower(cluster: LocalCluster, laptop: Laptop, ca: Path) -> subprocess.Popen[bytes]:
    info = cluster.info()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")},
        "QUARRY_TOKEN": laptop.token,
        "XDG_STATE_HOME": str(laptop.state),
        "XDG_CONFIG_HOME": str(laptop.state / "config"),
    }
    url = f"grpcs://{info.query}?ingest={info.ingest}"
    command = [sys.executable, "-m", "quarry.cli", "--cluster", url, "--ca", str(ca), "--format", "ndjson"]
    log = (laptop.state.parent / "push.log").open("ab")
    return subprocess.Popen([*command, "push", "--follow", str(laptop.logs)], env=env, stdout=log, stderr=log)


def kill_everything_and_start_again(cluster: LocalCluster) -> None:
    """kill -9 of every process of the cluster, the log servers too; then each started again on its ports."""
    names = list(cluster.procs)
    for name in names:
        cluster.kill(name, signal.SIGKILL)
    time.sleep(1.0)
    order = sorted(names, key=lambda n: (not n.startswith("nats-"), not n.startswith("index-"), n))
    for name in order:
        cluster.restart(name)


def archive_ids(cluster: LocalCluster, laptop: Laptop, ca: Path) -> list[str]:
    """Every session id the laptop's token reads, page after page (duplicates kept, to be seen)."""
    info = cluster.info()
    with QuarryClient(info.query, info.ingest, token=laptop.token, tls_ca=ca) as client:
        return client.sessions.all_ids()


def wait_settled(cluster: LocalCluster, laptops: list[Laptop], ca: Path) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        missing = {
            laptop.name: sorted(
                {scoped_id(laptop.scope, sid) for sid in laptop.sessions()} - set(archive_ids(cluster, laptop, ca))
            )
            for laptop in laptops
        }
        if not any(missing.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"sessions never arrived: {missing}")
        time.sleep(1.0)


def test_two_laptops_push_through_a_full_cluster_kill_and_every_session_lands_once(
    team: tuple[LocalCluster, list[Laptop], Path], tmp_path: Path
) -> None:
    cluster, laptops, ca = team
    info = cluster.info()
    searches = tmp_path / "searches.ndjson"
    search_env = {**os.environ, "QUARRY_TOKEN": laptops[0].token, "QUARRY_TLS_CA": str(ca)}
    load = [sys.executable, "-m", "tests.cluster_log.load", "query", info.query, str(searches)]
    searcher = subprocess.Popen([*load, "--rate", "5", "--query-text", "tern3"], env=search_env)
    pushers = [follower(cluster, laptop, ca) for laptop in laptops]
    try:
        with QuarryClient(info.query, token=laptops[1].token, tls_ca=ca) as b:
            deadline = time.monotonic() + 120
            while not b.search("tern1").hits:  # the pushes are under way: kill the cluster now
                assert time.monotonic() < deadline, "laptop-b's first sessions never arrived"
                time.sleep(0.2)
        kill_everything_and_start_again(cluster)
        for laptop in laptops:  # the laptops go on working while the cluster comes back
            project = next(laptop.logs.iterdir())
            turns = [("user", f"written late: osprey {laptop.scope}")]
            write_session(project, f"{laptop.scope}/late", laptop.scope, turns)
        wait_settled(cluster, laptops, ca)
    finally:
        for process in (*pushers, searcher):
            process.send_signal(signal.SIGTERM)
        assert all(p.wait(timeout=60) == 0 for p in pushers), "a pusher did not stop cleanly"
        searcher.wait(timeout=60)

    for laptop in laptops:
        local = laptop.sessions()
        held = archive_ids(cluster, laptop, ca)
        expected = {scoped_id(laptop.scope, sid) for sid in local}
        assert sorted(held) == sorted(expected), f"{laptop.name}: each session exactly once, in its own scope"
        with QuarryClient(info.query, token=laptop.token, tls_ca=ca) as client:
            for sid, session in local.items():
                header, events = client.sessions.read(scoped_id(laptop.scope, sid))
                assert (header.scope, header.counts.messages, len(events)) == (
                    laptop.scope,
                    session.counts.messages,
                    len(session.log_events),
                ), sid
            late = scoped_id(laptop.scope, session_id(f"{laptop.scope}/late"))
            assert [h.session.id for h in client.search("osprey").hits] == [late]
        (state_file,) = (laptop.state / "quarry" / "push").glob("*.sqlite3")
        with PushState(state_file) as state:
            assert state.sessions() == {sid: s.content_hash for sid, s in local.items()}, laptop.name
    with QuarryClient(info.query, token=laptops[0].token, tls_ca=ca) as a:
        large = next(h.session for h in a.search("zephyrine").hits)
        assert large.id.startswith("team-a@") and large.counts.messages > 900
        # team-b's sessions are not team-a's to read: every word, and any of them
        assert not a.search("tern1 team-b", reading="query").hits
        assert {h.session.scope for h in a.search("tern1 team-b", limit=100).hits} == {"team-a"}
    assert read_lines(searches), "the searcher ran"


def test_the_readme_examples_run_against_the_team_cluster_by_url_and_by_context(
    team: tuple[LocalCluster, list[Laptop], Path], tmp_path: Path
) -> None:
    cluster, laptops, ca = team
    info = cluster.info()
    laptop = laptops[1]
    token_file = tmp_path / "team.token"
    token_file.write_text(laptop.token + "\n")
    token_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    url = f"grpcs://{info.query}?ingest={info.ingest}"

    def quarry(*args: str, token: str | None = None) -> object:
        done = subprocess.run(
            [sys.executable, "-m", "quarry.cli", "--home", str(tmp_path / "no-cluster"), *args],
            capture_output=True,
            text=True,
            env={**env, **({"QUARRY_TOKEN": token} if token else {})},
            timeout=120,
        )
        assert done.returncode == 0, (args, done.stderr)
        return orjson.loads(done.stdout) if "json" in args else done.stdout

    quarry("context", "add", "team", "--cluster", url, "--ca", str(ca), "--token-file", str(token_file))
    ways = {
        "url": lambda *args: quarry("--cluster", url, "--ca", str(ca), *args, token=laptop.token),
        "context": lambda *args: quarry("--context", "team", *args),
    }
    for way, run in ways.items():
        hits = run("--format", "json", "search", "tern3")["hits"]
        assert [h["session"]["id"] for h in hits] == [scoped_id("team-b", session_id("team-b/3"))], way
        rows = run("--format", "json", "messages where role:user AND text:tern3")["rows"]
        assert rows and all(r["ref"].startswith("message:team-b@") for r in rows), way
        assert int(run("--format", "json", "facets")["global"]["totalSessions"]) == len(laptop.sessions()), way
        assert len(run("--format", "json", "sessions", "list", "--limit", "100")["items"]) == len(laptop.sessions())
        assert run("status").count("index-") >= 3, way
