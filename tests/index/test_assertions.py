"""Assertions and the candidate judgment workflow: the store's rules, its durability, the gRPC face,
and the `quarry mark` commands over it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from quarry.core.errors import QuarryError, from_rpc_error
from quarry.index.lexical.assertions import AssertionStore
from quarry.v1 import assertions_pb2, assertions_pb2_grpc, errors_pb2, units_pb2
from tests.partition_servers import PartitionServer

REPO = Path(__file__).resolve().parents[2]
SID = "codex-session:abc123"
TARGET = f"session:{SID}"


def claim(body: str, author: str = "agent", kind: str = "decision", target: str = TARGET, **fields: object):
    return units_pb2.Assertion(kind=kind, author=author, body=body, target_ref=target, **fields)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AssertionStore]:
    opened = AssertionStore(tmp_path / "assertions.sqlite3")
    yield opened
    opened.close()


def fails(call, code: int, parameter: str) -> QuarryError:  # type: ignore[no-untyped-def]
    with pytest.raises(QuarryError) as caught:
        call()
    assert (caught.value.code_name, caught.value.parameter) == (errors_pb2.ErrorCode.Name(code), parameter)
    return caught.value


# ---- writing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("author", ["agent", "transform", "detector"])
def test_every_automated_writer_lands_as_a_private_candidate(store: AssertionStore, author: str) -> None:
    written = store.write(claim("retry twice then fail", author=author, status="active", context_inject=True))

    assert written.status == "candidate"
    assert (written.promotion_required, written.context_inject) == (True, False)
    assert store.get(written.id) == written
    assert [e.assertion.id for e in store.list_candidates()] == [written.id]


def test_tags_opt_out_of_judgment(store: AssertionStore) -> None:
    tag = store.write(claim("flaky-tests", kind="tag"))

    assert (tag.status, tag.promotion_required, tag.context_inject) == ("active", False, True)
    assert store.list_candidates(review=True) == []


def test_user_writes_land_active_with_the_status_they_ask_for(store: AssertionStore) -> None:
    decision = store.write(claim("use WAL mode", author="user"))
    note = store.write(claim("old idea", author="user", kind="note", status="inactive"))

    assert (decision.status, decision.promotion_required, decision.context_inject) == ("active", False, True)
    assert (note.status, note.context_inject) == ("inactive", False)
    assert store.list_candidates(review=True) == []


@pytest.mark.parametrize(
    ("target", "session_id"),
    [
        (TARGET, SID),
        ("session:claude-code-session:parent/agent-a1", "claude-code-session:parent/agent-a1"),
        ("message:claude-code-session:2f6c:x:m12", "claude-code-session:2f6c:x"),
        ("block:codex-session:abc123:m3:0", SID),
        ("action:codex-session:abc123:action:7", SID),
        ("run:claude-code-session:p/agent-1:run:main", "claude-code-session:p/agent-1"),
        ("run:codex-session:abc123:run:2", SID),
        ("observed-event:codex-session:abc123:event:4", SID),
        ("context-snapshot:codex-session:abc123:snapshot:1", SID),
        ("delegation:claude-code-session:parent:delegation:1", "claude-code-session:parent"),
    ],
)
def test_the_session_comes_from_the_target_ref(store: AssertionStore, target: str, session_id: str) -> None:
    assert store.write(claim("x", author="user", target=target)).session_id == session_id


def test_an_assertion_about_an_assertion_belongs_to_that_assertions_session(store: AssertionStore) -> None:
    first = store.write(claim("root claim", author="user", target="message:codex-session:abc123:m2"))
    about = store.write(claim("see transcript", kind="caveat", target=f"assertion:{first.id}"))
    assert about.session_id == SID
    fails(lambda: store.write(claim("x", target="assertion:nope")), errors_pb2.NOT_FOUND, "assertion.target_ref")


def test_the_same_writer_writing_the_same_claim_updates_one_row(store: AssertionStore) -> None:
    first = store.write(claim("retry twice then fail", evidence_refs=["block:codex-session:abc123:m1:0"]))
    again = store.write(claim("retry twice then fail", evidence_refs=["block:codex-session:abc123:m4:1"]))
    other_writer = store.write(claim("retry twice then fail", author="detector"))

    assert again.id == first.id != other_writer.id
    assert again.created_ms == first.created_ms <= again.updated_ms
    assert list(store.get(first.id).evidence_refs) == ["block:codex-session:abc123:m4:1"]
    assert len(store.list_candidates()) == 2


def test_a_given_id_is_kept_with_or_without_its_ref_prefix(store: AssertionStore) -> None:
    written = store.write(claim("x", id="assertion:my-claim"))
    assert written.id == "my-claim"
    assert store.get("assertion:my-claim") == store.get("my-claim") == written


@pytest.mark.parametrize("judgment", ["accept", "reject", "defer", "supersede"])
def test_a_judged_id_is_never_resurrected_by_a_rewrite(store: AssertionStore, judgment: str) -> None:
    candidate = store.write(claim("the pool leaks"))
    store.judge(candidate.id, judgment, reason="checked", kind="caveat", body="the pool leaks under load")

    rewritten = store.write(claim("the pool leaks", author="detector", id=candidate.id))

    assert rewritten.status == store.get(candidate.id).status == candidate_status(judgment)
    assert rewritten.promotion_required is False
    assert store.list_candidates() == []


def candidate_status(judgment: str) -> str:
    return {"accept": "accepted", "reject": "rejected", "defer": "deferred", "supersede": "superseded"}[judgment]


# ---- judging -----------------------------------------------------------------------------------------


def test_accept_creates_an_active_assertion_citing_the_candidate(store: AssertionStore) -> None:
    candidate = store.write(claim("retry twice then fail", evidence_refs=["message:codex-session:abc123:m3"]))

    result = store.judge(f"assertion:{candidate.id}", "accept", reason="confirmed by transcript")

    assert result.candidate.status == "accepted"
    assert (result.candidate.promotion_required, result.candidate.context_inject) == (False, False)
    assert result.candidate.reason == "confirmed by transcript"
    created = result.created
    assert (created.kind, created.body, created.target_ref, created.session_id) == (
        "decision",
        "retry twice then fail",
        TARGET,
        SID,
    )
    assert (created.status, created.author, created.context_inject) == ("active", "user", True)
    assert list(created.evidence_refs) == ["message:codex-session:abc123:m3", f"assertion:{candidate.id}"]
    assert created.supersedes == candidate.id
    assert store.get(created.id) == created
    assert store.get(candidate.id) == result.candidate


def test_supersede_replaces_the_claim(store: AssertionStore) -> None:
    candidate = store.write(claim("tests are flaky"))

    result = store.judge(candidate.id, "supersede", reason="narrower", kind="summary", body="one test is flaky")

    assert result.candidate.status == "superseded"
    assert (result.created.kind, result.created.body, result.created.status) == (
        "summary",
        "one test is flaky",
        "active",
    )
    ref = f"assertion:{candidate.id}"
    assert (list(result.created.evidence_refs), result.created.supersedes) == ([ref], candidate.id)


@pytest.mark.parametrize(("judgment", "status"), [("reject", "rejected"), ("defer", "deferred")])
def test_reject_and_defer_keep_a_judgment_record(store: AssertionStore, judgment: str, status: str) -> None:
    candidate = store.write(claim("tests are flaky"))

    result = store.judge(candidate.id, judgment, reason="unsupported by evidence")

    assert result.candidate.status == store.get(candidate.id).status == status
    record = store.get(result.created.id)
    assert record is not None
    assert (record.kind, record.status, record.author, record.body) == (
        "note",
        "inactive",
        "user",
        "unsupported by evidence",
    )
    ref = f"assertion:{candidate.id}"
    assert (record.target_ref, list(record.evidence_refs)) == (ref, [ref])
    assert record.session_id == SID


def test_list_shows_pending_and_review_shows_judged_with_disabled_reasons(store: AssertionStore) -> None:
    # oldest first (a writer may date a claim; ties would break on id)
    ids = {body: store.write(claim(body, created_ms=1000 + n)).id for n, body in enumerate("abcde")}
    elsewhere = store.write(claim("f", target="session:codex-session:other")).id
    store.judge(ids["a"], "accept", reason="ok")
    store.judge(ids["b"], "reject", reason="no")
    store.judge(ids["c"], "defer", reason="later")
    store.judge(ids["d"], "supersede", kind="note", body="d2")

    pending = store.list_candidates(target_ref=TARGET)
    assert [(e.assertion.id, list(e.actions), e.disabled_reason) for e in pending] == [
        (ids["e"], ["accept", "reject", "defer", "supersede"], "")
    ]
    reviewed = store.list_candidates(target_ref=TARGET, review=True)
    assert [(e.assertion.id, list(e.actions), e.disabled_reason) for e in reviewed] == [
        (ids["e"], ["accept", "reject", "defer", "supersede"], ""),
        (ids["a"], [], "candidate_already_accepted"),
        (ids["b"], [], "candidate_already_rejected"),
        (ids["c"], [], "candidate_deferred"),
        (ids["d"], [], "candidate_superseded"),
    ]
    assert {e.assertion.id for e in store.list_candidates()} == {ids["e"], elsewhere}
    assert len(store.list_candidates(review=True, limit=2)) == 2


def test_judging_a_judged_candidate_fails_typed(store: AssertionStore) -> None:
    candidate = store.write(claim("x"))
    store.judge(candidate.id, "accept", reason="ok")

    error = fails(lambda: store.judge(candidate.id, "reject", reason="no"), errors_pb2.NOT_JUDGEABLE, "id")
    assert error.message.startswith("candidate_already_accepted")
    assert store.get(candidate.id).status == "accepted"
    user_claim = store.write(claim("y", author="user"))
    fails(lambda: store.judge(user_claim.id, "accept", reason="ok"), errors_pb2.NOT_JUDGEABLE, "id")
    fails(lambda: store.judge("assertion:missing", "accept"), errors_pb2.NOT_FOUND, "id")


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"kind": "opinion"}, "assertion.kind"),
        ({"status": "approved"}, "assertion.status"),
        ({"author": "robot"}, "assertion.author"),
        ({"author": ""}, "assertion.author"),
        ({"body": "  "}, "assertion.body"),
        ({"target_ref": "file:codex-session:abc123:file:x.py"}, "assertion.target_ref"),
        ({"target_ref": "codex-session:abc123"}, "assertion.target_ref"),
        ({"target_ref": "session:No_Where:abc"}, "assertion.target_ref"),
        ({"target_ref": "message:codex-session:abc123:3"}, "assertion.target_ref"),
        ({"target_ref": "session:"}, "assertion.target_ref"),
        ({"evidence_refs": ["see the log"]}, "assertion.evidence_refs"),
    ],
)
def test_bad_vocabulary_fails_typed_naming_the_field(
    store: AssertionStore, fields: dict[str, object], parameter: str
) -> None:
    values: dict[str, object] = {"kind": "decision", "author": "agent", "body": "x", "target_ref": TARGET}
    values.update(fields)
    fails(lambda: store.write(units_pb2.Assertion(**values)), errors_pb2.BAD_VALUE, parameter)
    assert store.list_candidates(review=True) == []


@pytest.mark.parametrize(
    ("judgment", "kwargs", "parameter"),
    [
        ("approve", {"reason": "r"}, "judgment"),
        ("reject", {}, "reason"),
        ("defer", {"reason": " "}, "reason"),
        ("supersede", {"kind": "opinion", "body": "b"}, "kind"),
        ("supersede", {"kind": "summary"}, "body"),
    ],
)
def test_bad_judgments_fail_typed_and_change_nothing(
    store: AssertionStore, judgment: str, kwargs: dict[str, str], parameter: str
) -> None:
    candidate = store.write(claim("x"))
    fails(lambda: store.judge(candidate.id, judgment, **kwargs), errors_pb2.BAD_VALUE, parameter)
    assert store.get(candidate.id) == candidate


# ---- durability --------------------------------------------------------------------------------------


def test_writes_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "assertions.sqlite3"
    first = AssertionStore(path)
    candidate = first.write(claim("x"))
    result = first.judge(candidate.id, "accept", reason="ok")
    first.close()

    reopened = AssertionStore(path)
    assert reopened.get(candidate.id) == result.candidate
    assert reopened.get(result.created.id) == result.created
    assert [e.disabled_reason for e in reopened.list_candidates(review=True)] == ["candidate_already_accepted"]
    reopened.close()


def test_a_returned_write_survives_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "assertions.sqlite3"
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from quarry.index.lexical.assertions import AssertionStore
        from quarry.v1 import units_pb2
        store = AssertionStore(Path({str(path)!r}))
        a = store.write(units_pb2.Assertion(kind="todo", author="user", body="ship it", target_ref={TARGET!r}))
        print(a.id, flush=True)
        os._exit(0)  # no close, no checkpoint
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)

    reopened = AssertionStore(path)
    stored = reopened.get(done.stdout.strip())
    assert stored is not None and (stored.body, stored.status) == ("ship it", "active")
    reopened.close()


# ---- over gRPC ---------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    node = PartitionServer(tmp_path / "index-0", [0], 1)
    yield node.address
    node.stop()


def test_the_servicer_serves_the_workflow_with_typed_errors(served: str) -> None:
    with grpc.insecure_channel(served) as channel:
        node = assertions_pb2_grpc.AssertionServiceStub(channel)
        write = assertions_pb2.WriteAssertionRequest(assertion=claim("retry twice then fail"))
        candidate = node.WriteAssertion(assertions_pb2.PartitionWriteAssertion(partition=0, request=write))
        assert candidate.status == "candidate"
        found = node.GetAssertion(assertions_pb2.NodeGetAssertion(partitions=[0], id=f"assertion:{candidate.id}"))
        assert [(p.partition, p.found, p.assertion) for p in found.partitions] == [(0, True, candidate)]

        wanted = assertions_pb2.ListCandidatesRequest(target_ref=TARGET)
        listed = node.ListCandidates(assertions_pb2.NodeListCandidates(partitions=[0], request=wanted))
        assert [e.assertion.id for e in listed.partitions[0].entries] == [candidate.id]
        judge = assertions_pb2.JudgeCandidateRequest(
            id=candidate.id, judgment="supersede", reason="r", kind="summary", body="b"
        )
        judged = node.JudgeCandidate(assertions_pb2.PartitionJudgeCandidate(partition=0, request=judge))
        assert (judged.candidate.status, judged.created.supersedes) == ("superseded", candidate.id)

        again_request = assertions_pb2.JudgeCandidateRequest(id=candidate.id, judgment="accept")
        with pytest.raises(grpc.RpcError) as again:
            node.JudgeCandidate(assertions_pb2.PartitionJudgeCandidate(partition=0, request=again_request))
        typed = from_rpc_error(again.value)
        assert (again.value.code(), typed.code) == (grpc.StatusCode.FAILED_PRECONDITION, errors_pb2.NOT_JUDGEABLE)
        assert typed.message.startswith("candidate_superseded")
        missing = node.GetAssertion(assertions_pb2.NodeGetAssertion(partitions=[0], id="nope"))
        assert [(p.partition, p.found) for p in missing.partitions] == [(0, False)]
        elsewhere = node.GetAssertion(assertions_pb2.NodeGetAssertion(partitions=[3], id="nope"))
        assert [(f.partition, f.error.code) for f in elsewhere.failures] == [(3, errors_pb2.NOT_HOSTED)]
