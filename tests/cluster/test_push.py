"""`quarry push` as a user runs it: this machine's logs parsed here and sent to the cluster; what was
sent remembered, so a second push sends nothing; every file passed over named with why; a failure
exits non-zero; an unreachable ingest node waited for, not lost; `--follow` sends what grows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from tests.cluster.corpus import SESSIONS, session_id, write_corpus, write_session

pytestmark = pytest.mark.cluster


def push(home: Path, state: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    command = [sys.executable, "-m", "quarry.cli", "--home", str(home), "--format", "json", "push", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def test_a_push_sends_each_session_once_and_names_every_file_it_passed_over(light_home: Path, tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    write_corpus(laptop / "projects")
    (laptop / "projects" / "empty.jsonl").write_bytes(b"")
    (laptop / "projects" / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (laptop / "projects" / "notes.txt").write_text("remember to rotate the keys\n")
    (laptop / "projects" / ".cache").mkdir()
    write_session(laptop / "projects" / ".cache", "hidden", "x", [("user", "never sent")])
    first = push(light_home, tmp_path / "state", str(laptop))
    assert first.returncode == 0, first.stderr
    report = orjson.loads(first.stdout)
    assert (report["sessionsWritten"], report["files"]) == (len(SESSIONS), len(SESSIONS))
    skipped = {(Path(s["path"]).name, s["code"]) for s in report["skipped"]}
    assert skipped == {("empty.jsonl", "empty"), ("image.bin", "binary"), ("notes.txt", "not_a_session_log"),
                       (".cache", "hidden")}  # fmt: skip
    hidden = next(s for s in report["skipped"] if s["code"] == "hidden")
    assert "name it to include it" in hidden["reason"]

    started = time.monotonic()
    again = orjson.loads(push(light_home, tmp_path / "state", str(laptop)).stdout)
    assert time.monotonic() - started < 30
    assert (again["filesUnchanged"], again.get("sessionsWritten", 0)) == (len(SESSIONS), 0)
    assert again.get("sessionsReceived", 0) == 0, "nothing was sent the second time"
    with QuarryClient.for_home(light_home) as client:
        hits = client.search("sqlite locking").hits
        assert [h.session.id for h in hits][:1] == [session_id("sqlite")]
        assert hits[0].session.host == os.uname().nodename


def test_a_push_that_could_not_read_a_file_exits_non_zero(light_home: Path, tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    write_session(laptop, "fine", "x", [("user", "this one goes through")])
    os.mkfifo(laptop / "pipe.jsonl")
    failed = push(
        light_home, tmp_path / "state", str(laptop / "pipe.jsonl"), str(laptop / "missing.jsonl"), str(laptop)
    )
    assert failed.returncode == 1, failed.stderr
    report = orjson.loads(failed.stdout)
    assert sorted((Path(i["path"]).name, i["code"]) for i in report["issues"]) == [
        ("missing.jsonl", "unreadable"),
        ("pipe.jsonl", "not_regular"),
    ]
    assert report["sessionsWritten"] == 1


def test_a_push_waits_for_an_ingest_node_that_is_down_and_loses_nothing(tmp_path: Path) -> None:
    local = LocalCluster(tmp_path / "home", partitions=2, embedder="none", ingest_roots=[])
    local.start()
    try:
        laptop = tmp_path / "laptop"
        write_corpus(laptop)
        local.kill("ingest")
        restarted = threading.Timer(4.0, local.restart, args=("ingest",))
        restarted.start()
        pushed = push(local.home, tmp_path / "state", str(laptop))
        restarted.join()
        assert pushed.returncode == 0, pushed.stderr
        assert "sent again in" in pushed.stderr  # it said it was retrying
        assert orjson.loads(pushed.stdout)["sessionsWritten"] == len(SESSIONS)
        with QuarryClient.for_home(local.home) as client:
            listed = client.sessions.list(limit=100)
            assert sorted(r.header.id for r in listed.items) == sorted(session_id(k) for k in SESSIONS)
    finally:
        local.stop()


def test_push_follow_sends_what_grows_and_stops_on_sigterm(light_home: Path, tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    path = write_session(laptop, "followed", "x", [("user", "the first question about kestrels")])
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    command = [sys.executable, "-m", "quarry.cli", "--home", str(light_home), "--format", "ndjson"]
    follower = subprocess.Popen([*command, "push", "--follow", str(laptop)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        with QuarryClient.for_home(light_home) as client:
            wait_for(lambda: client.search("kestrels").hits, "the first push")
            turns = [("user", "the first question about kestrels"), ("assistant", "kestrels hover over meadows")]
            grown = write_session(tmp_path, "followed", "x", turns)
            path.write_bytes(grown.read_bytes())
            wait_for(lambda: client.search("meadows").hits, "the appended reply")
    finally:
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(timeout=60) == 0
    rounds = [orjson.loads(line)["report"] for line in (follower.stdout.read() if follower.stdout else "").splitlines()]
    assert sum(r.get("sessionsWritten", 0) for r in rounds) == 2


def wait_for(found: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} was not searchable within {timeout:.0f} s")
