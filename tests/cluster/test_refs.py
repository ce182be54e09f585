"""Public refs through the query node on two partitions: each ref read from the partition holding its
session (a delegation with its child excerpt, since a child lives with its parent), assertion refs
from whichever partition holds them, the same through `quarry read`, and refs to nothing or not refs
answered unresolved with caveats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from quarry.client.client import QuarryClient
from quarry.core.routing import partition_for
from quarry.ingest.normalize import seal_content_hash
from quarry.v1 import units_pb2
from tests.index.test_units_store import ANSWER, CONTEXT, FOLLOW_UP, INSTRUCTION, RESULT, child_session, parent_session

pytestmark = pytest.mark.cluster


def native_on(partition: int) -> str:
    """A native id whose session family the two-partition cluster routes to `partition`."""
    return next(n for i in range(100) if partition_for(f"claude-code-session:{(n := f'family-{i}')}", 2) == partition)


@pytest.fixture(scope="module")
def families(light_home: Path) -> dict[int, tuple[units_pb2.Session, units_pb2.Session]]:
    """A parent with a delegation and its child on each partition; the child arrives first on partition 1."""
    out = {
        partition: (parent := parent_session(native_on(partition)), child_session(parent.id)) for partition in (0, 1)
    }
    with QuarryClient.for_home(light_home) as quarry:
        report = quarry.ingest_sessions([out[0][0], out[0][1], out[1][1]])
        assert report.sessions_written == 3, report
        assert quarry.ingest_sessions([out[1][0]]).sessions_written == 1
    return out


@pytest.mark.parametrize("partition", [0, 1])
def test_every_kind_resolves_from_the_partition_holding_its_session(
    light_client: QuarryClient, families: dict[int, tuple[units_pb2.Session, units_pb2.Session]], partition: int
) -> None:
    parent, child = families[partition]
    sid = parent.id
    summary = units_pb2.Session()
    summary.CopyFrom(parent)
    for name in ("messages", "actions", "files", "runs", "events", "snapshots", "delegations"):
        summary.ClearField(name)
    summary.scope = "default"  # the ingest node's: the scope of a cluster without authentication
    sealed = units_pb2.Session()
    sealed.CopyFrom(parent)
    seal_content_hash(sealed)  # the ingest node hashes what it was sent, whatever the sender says
    summary.content_hash = sealed.content_hash
    cases = {
        f"session:{sid}": ("session", summary),
        f"message:{sid}:m1": ("message", parent.messages[1]),
        f"block:{sid}:m1:1": ("block", parent.messages[1].blocks[1]),
        f"run:{sid}:run:1": ("run", parent.runs[1]),
        f"run:{child.id}:run:main": ("run", child.runs[0]),
        f"observed-event:{sid}:event:1": ("observed_event", parent.events[1]),
        f"context-snapshot:{sid}:snapshot:0": ("context_snapshot", parent.snapshots[0]),
    }
    for ref, (field, expected) in cases.items():
        resolved = light_client.resolve_ref(ref)
        assert (resolved.resolved, resolved.WhichOneof("object"), list(resolved.caveats)) == (True, field, []), ref
        assert getattr(resolved, field) == expected, ref

    card = light_client.resolve_ref(f"delegation:{parent.delegations[0].id}").delegation
    assert (card.delegation.mapping_state, card.delegation.instruction) == ("resolved", INSTRUCTION)
    assert (card.dispatch_result, card.child_excerpt, card.parent_context, card.parent_follow_up) == (
        RESULT,
        ANSWER,
        CONTEXT,
        FOLLOW_UP,
    )
    bounded = light_client.resolve_ref(f"delegation:{parent.delegations[0].id}", max_chars=20).delegation
    assert (bounded.child_excerpt, bounded.child_excerpt_truncated) == (ANSWER[:20], True)


def test_an_assertion_ref_resolves_from_the_partition_holding_it(
    light_client: QuarryClient, families: dict[int, tuple[units_pb2.Session, units_pb2.Session]]
) -> None:
    parent = families[1][0]
    stored = light_client.write_assertion(
        units_pb2.Assertion(kind="decision", target_ref=f"session:{parent.id}", body="retry twice", author="user")
    )
    resolved = light_client.resolve_ref(f"assertion:{stored.id}")
    assert (resolved.kind, resolved.resolved, resolved.session_id) == ("assertion", True, parent.id)
    assert resolved.assertion == stored


def test_missing_and_malformed_refs_come_back_unresolved_with_caveats(
    light_client: QuarryClient, families: dict[int, tuple[units_pb2.Session, units_pb2.Session]]
) -> None:
    sid = families[0][0].id
    missing = light_client.resolve_ref(f"message:{sid}:m42")
    assert (missing.kind, missing.resolved, list(missing.caveats)) == (
        "message",
        False,
        [f"no message '{sid}:m42' in session '{sid}'"],
    )
    no_assertion = light_client.resolve_ref("assertion:0000")
    assert (no_assertion.kind, no_assertion.resolved, list(no_assertion.caveats)) == (
        "assertion",
        False,
        ["no assertion '0000' in the archive"],
    )
    malformed = light_client.resolve_ref("delegation:nothing-here")
    assert (malformed.kind, malformed.resolved) == ("", False)
    assert malformed.caveats[0].startswith("'delegation:nothing-here': a delegation id is")


def test_quarry_read_on_the_command_line(
    light_home: Path, families: dict[int, tuple[units_pb2.Session, units_pb2.Session]]
) -> None:
    parent = families[0][0]

    def quarry(*args: str) -> str:
        command = [sys.executable, "-m", "quarry.cli", "--home", str(light_home), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout

    card = orjson.loads(quarry("--format", "json", "read", f"delegation:{parent.delegations[0].id}"))
    assert (card["kind"], card["resolved"], "session" in card) == ("delegation", True, False)
    assert card["delegation"]["delegation"]["instruction"] == INSTRUCTION
    assert card["delegation"]["childExcerpt"] == ANSWER

    plain = quarry("read", f"delegation:{parent.delegations[0].id}", "--max-chars", "20")
    assert INSTRUCTION.splitlines()[0] in plain
    assert f"{RESULT[:20]}…(truncated)" in plain

    missing = orjson.loads(quarry("--format", "json", "read", f"run:{parent.id}:run:7"))
    assert (missing.get("resolved", False), missing["caveats"]) == (
        False,
        [f"no run '{parent.id}:run:7' in session '{parent.id}'"],
    )
