"""The CLI as a person uses it: up --detach, ingest, search, status, down, on a real cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from quarry.cli.local import process_alive
from tests.cluster.corpus import session_id, write_corpus

pytestmark = pytest.mark.cluster


def quarry(home, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"quarry {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def test_up_ingest_search_status_down(tmp_path):
    home = tmp_path / "home"
    archive = write_corpus(tmp_path / "archive")
    quarry(home, "up", "--detach", "--partitions", "2", "--embedder", "none", "--ingest-root", str(tmp_path))
    try:
        ingested = orjson.loads(quarry(home, "--format", "json", "ingest", str(tmp_path / "archive")).stdout)
        assert ingested["sessionsWritten"] == len(archive)

        envelope = orjson.loads(quarry(home, "--format", "json", "sqlite locking").stdout)
        assert envelope["retrievalLane"] == "dialogue"
        assert envelope["hits"][0]["session"]["id"] == session_id("sqlite")
        assert envelope["hits"][0]["match"]["scoreKind"] == "bm25"

        rows = quarry(home, "--format", "ndjson", "messages where role:assistant AND text:timeout").stdout
        assert {orjson.loads(line)["sessionId"] for line in rows.splitlines()} == {
            session_id("sqlite"),
            session_id("retry"),
        }

        plain = quarry(home, "search", "flexbox").stdout
        assert session_id("css") in plain

        prose = quarry(home, "--format", "json", "--plain", "--coverage", "0", "runs of (SQLite) locking: why?")
        envelope = orjson.loads(prose.stdout)
        assert (envelope["query"], envelope["reading"]) == ("runs of (SQLite) locking: why?", "prose")
        assert envelope["hits"][0]["session"]["id"] == session_id("sqlite")

        status = orjson.loads(quarry(home, "--format", "json", "status").stdout)
        roles = sorted(n["role"] for n in status["nodes"])
        assert roles == ["ingest", "query", "vector"]  # the query node holds the two partitions itself
        assert all(n["up"] for n in status["nodes"])
        query = next(n for n in status["nodes"] if n["role"] == "query")
        assert (query["partitions"], int(query["sessions"])) == ([0, 1], len(archive))

        semantic = quarry(home, "--format", "json", "search", "--lane", "semantic", "sqlite", check=False)
        assert semantic.returncode == 2
        assert orjson.loads(semantic.stdout)["error"]["code"] == "SEMANTIC_UNAVAILABLE"

        invalid = quarry(home, "sessions where repo:x AND (", check=False)
        assert invalid.returncode == 2 and "INVALID_QUERY" in invalid.stderr
        side_by_side = quarry(home, "messages where role:user text:timeout", check=False)
        lines = side_by_side.stderr.splitlines()
        assert lines[0].startswith("error INVALID_QUERY: 'text:' follows a predicate with neither AND nor OR")
        assert lines[1:3] == ["  messages where role:user text:timeout", "  " + " " * 25 + "^"]
        assert lines[3] == "  did you mean: messages where role:user AND text:timeout"
        as_json = quarry(home, "--format", "json", "messages where repo:ledger", check=False)
        error = orjson.loads(as_json.stdout)["error"]
        assert (error["code"], error["correction"]) == ("UNKNOWN_FIELD", "messages where session.repo:ledger")
        assert "did you mean" not in quarry(home, "messages where role:user timeout", check=False).stderr
    finally:
        quarry(home, "down")
    assert not (home / "cluster.json").exists()
    assert "no cluster is running" in quarry(home, "status", check=False).stderr


def test_up_with_index_processes_runs_a_node_per_partition_and_finds_the_same(tmp_path):
    home = tmp_path / "home"
    archive = write_corpus(tmp_path / "archive")
    quarry(home, "up", "--detach", "--embedder", "none", "--index-processes", "--ingest-root", str(tmp_path))
    try:
        quarry(home, "ingest", str(tmp_path / "archive"))
        status = orjson.loads(quarry(home, "--format", "json", "status").stdout)
        held = {n["name"]: n.get("partitions", []) for n in status["nodes"] if n["role"] == "index"}
        assert held == {"index-0": [0], "index-1": [1]}
        assert sum(int(n.get("sessions", 0)) for n in status["nodes"] if n["role"] == "index") == len(archive)
        envelope = orjson.loads(quarry(home, "--format", "json", "sqlite locking").stdout)
        assert envelope["hits"][0]["session"]["id"] == session_id("sqlite")
    finally:
        quarry(home, "down", check=False)


def test_ctrl_c_stops_every_node_of_a_foreground_cluster(tmp_path):
    home = tmp_path / "home"
    up = subprocess.Popen(
        [sys.executable, "-m", "quarry.cli", "--home", str(home), "up", "--embedder", "none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "cluster.json").exists():
            assert up.poll() is None, up.stdout.read()
            assert time.monotonic() < deadline, "the cluster did not come up"
            time.sleep(0.1)
        pids = orjson.loads((home / "cluster.json").read_bytes())["pids"]
        assert sorted(pids) == ["ingest", "query", "vector"]
        os.killpg(up.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        assert up.wait(timeout=60) == 0, up.stdout.read()
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
    assert not [name for name, pid in pids.items() if process_alive(pid)]
    assert not (home / "cluster.json").exists()


def test_demo_on_a_machine_without_agent_logs_ingests_a_sample_and_prints_ranked_results(tmp_path):
    """What `make run` does after `quarry up --detach`."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(tmp_path / "user")}
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "QUARRY_HOME"):
        env.pop(variable, None)
    command = [sys.executable, "-m", "quarry.cli", "--home", str(home)]
    subprocess.run([*command, "up", "--detach", "--embedder", "none"], env=env, check=True, timeout=300)
    try:
        demo = subprocess.run([*command, "demo"], env=env, capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0, demo.stderr
        assert "no agent logs in the standard locations" in demo.stdout
        assert "  1. claude-code-session:" in demo.stdout, demo.stdout
        assert "bm25" in demo.stdout
        assert "read as prose" in demo.stdout  # the first example is a description
    finally:
        subprocess.run([*command, "down"], env=env, check=True, timeout=120)
