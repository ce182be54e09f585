"""Assertions through the query node on two partitions: routed by the target's session, judged where
they live, listed across partitions, and the same through `quarry mark`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.v1 import errors_pb2, units_pb2

pytestmark = pytest.mark.cluster


def session_on(partition: int) -> str:
    """A session id the two-partition cluster routes to `partition`."""
    return next(sid for n in range(100) if partition_for(sid := f"codex-session:target-{n}", 2) == partition)


def claim(session_id: str, body: str, author: str = "detector") -> units_pb2.Assertion:
    return units_pb2.Assertion(kind="caveat", target_ref=f"session:{session_id}", body=body, author=author)


def test_candidates_from_both_partitions_are_listed_judged_and_closed(light_client: QuarryClient) -> None:
    first = light_client.write_assertion(claim(session_on(0), "the retry loop never backs off"))
    second = light_client.write_assertion(claim(session_on(1), "tests depend on wall-clock time"))
    assert (first.status, second.status) == ("candidate", "candidate")

    pending = light_client.list_candidates()
    assert [e.assertion.id for e in pending.entries] == [first.id, second.id]  # oldest first, across partitions

    accepted = light_client.judge_candidate(f"assertion:{second.id}", "accept", reason="seen in the transcript")
    assert accepted.candidate.status == "accepted"
    assert (accepted.created.status, accepted.created.supersedes) == ("active", second.id)
    assert list(accepted.created.evidence_refs) == [f"assertion:{second.id}"]

    scoped = light_client.list_candidates(target_ref=f"session:{session_on(1)}", review=True)
    assert [(e.assertion.id, e.disabled_reason) for e in scoped.entries] == [(second.id, "candidate_already_accepted")]
    assert [e.assertion.id for e in light_client.list_candidates().entries] == [first.id]

    with pytest.raises(QuarryError) as again:
        light_client.judge_candidate(second.id, "reject", reason="changed my mind")
    assert again.value.code == errors_pb2.NOT_JUDGEABLE


def test_an_assertion_about_an_assertion_lands_with_it_and_unknown_ids_are_typed(light_client: QuarryClient) -> None:
    base = light_client.write_assertion(claim(session_on(1), "pool size is 8", author="user"))
    about = units_pb2.Assertion(
        kind="note", target_ref=f"assertion:{base.id}", body="measured on the staging box", author="user"
    )
    stored = light_client.write_assertion(about)
    assert stored.session_id == session_on(1)

    with pytest.raises(QuarryError) as missing:
        light_client.judge_candidate("assertion:0000", "accept", reason="x")
    assert missing.value.code == errors_pb2.NOT_FOUND
    with pytest.raises(QuarryError) as bad:
        opinion = units_pb2.Assertion(kind="opinion", target_ref=f"session:{session_on(0)}", body="x")
        light_client.write_assertion(opinion)
    assert (bad.value.code, bad.value.parameter) == (errors_pb2.BAD_VALUE, "assertion.kind")


def test_mark_candidates_on_the_command_line(light_home: Path, light_client: QuarryClient) -> None:
    candidate = light_client.write_assertion(claim(session_on(0), "the cache is never invalidated"))

    def quarry(*args: str) -> str:
        command = [sys.executable, "-m", "quarry.cli", "--home", str(light_home), "--format", "json", *args]
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout

    listed = orjson.loads(quarry("mark", "candidates", "list"))
    assert candidate.id in [e["assertion"]["id"] for e in listed["entries"]]
    judged = orjson.loads(quarry("mark", "candidates", "defer", candidate.id, "--reason", "needs another source"))
    assert judged["candidate"]["status"] == "deferred"
    assert judged["created"]["body"] == "needs another source"
