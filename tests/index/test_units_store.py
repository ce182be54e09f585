"""Derived units (files, runs, observed events, context snapshots, delegations) on a lexical partition:
stored and replaced with their session, kept out of the summary, linked to their child sessions in
either arrival order, and read back through public refs (ResolveRef), bounded and with caveats."""

from __future__ import annotations

import hashlib

import pytest

from quarry.core import refs
from quarry.core.errors import QuarryError
from quarry.core.public_refs import parse_ref
from quarry.index.lexical import session_rows
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.store_schema import UNIT_TABLES
from quarry.v1 import errors_pb2, refs_pb2, units_pb2
from tests.index import plans
from tests.index.sessions import BASE_MS, Msg, Tool, session

INSTRUCTION = "List every caller of acquire() in db/ and say which ones retry.\n" + "Be exhaustive. " * 30
RESULT = "acquire() is called from db/pool.py and db/retry.py; only retry.py retries."
CONTEXT = "I'll ask an explorer to map the callers."
FOLLOW_UP = "Both callers are mapped; fixing pool.py next."
ANSWER_PROSE = "acquire() is called from these modules, " + "checked one by one, " * 15
ANSWER_CODE = "db/pool.py\ndb/retry.py"
ANSWER = f"{ANSWER_PROSE}\n{ANSWER_CODE}"  # the child's final answer: its last current reply's text and code


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parent_session(native_id: str = "parent-1", *, follow_up: str = FOLLOW_UP) -> units_pb2.Session:
    """A session that dispatches one subagent (Task) and reads a file, with every derived unit filled."""
    s = session(
        native_id,
        [
            Msg("user", "Find the callers of acquire()"),
            Msg("assistant", CONTEXT, tools=[Tool("Task", "subagent", summary="Map callers", output=RESULT)]),
            Msg("assistant", follow_up, tools=[Tool("Read", "file_read", path="db/pool.py", output="def acquire")]),
        ],
    )
    sid = s.id
    child = f"{sid}/agent-x"
    dispatch, read = s.actions
    s.files.add(
        id=refs.file_id(sid, "db/pool.py"),
        session_id=sid,
        path="db/pool.py",
        actions=1,
        categories={"file_read": 1},
        first_ref=f"block:{read.block_id}",
        last_ref=f"block:{read.block_id}",
        first_time_ms=read.time_ms,
        last_time_ms=read.time_ms,
    )
    s.runs.add(id=refs.run_id(sid), session_id=sid, role="main", status="completed", started_ms=BASE_MS, tool_uses=2)
    s.runs.add(
        id=refs.run_id(sid, 1),
        session_id=sid,
        role="subagent",
        status="completed",
        agent="Explore",
        child_session_id=child,
        delegation_id=refs.delegation_id(sid, 1),
        started_ms=dispatch.time_ms,
    )
    s.events.add(
        id=refs.event_id(sid, 0),
        session_id=sid,
        seq=0,
        kind="session_started",
        time_ms=BASE_MS,
        delivery_state="recorded",
    )
    s.events.add(
        id=refs.event_id(sid, 1),
        session_id=sid,
        seq=1,
        kind="subagent_finished",
        time_ms=dispatch.time_ms,
        text="Explore finished",
        source_ref=f"block:{sid}:m2:0",
        object_ref=f"session:{child}",
        delivery_state="acted_on",
    )
    s.snapshots.add(
        id=refs.snapshot_id(sid, 0),
        session_id=sid,
        seq=0,
        boundary="session_start",
        time_ms=BASE_MS,
        message_ref=f"message:{sid}:m0",
        preview="Find the callers of acquire()",
        cwd="/src/quarry",
    )
    s.delegations.add(
        id=refs.delegation_id(sid, 1),
        session_id=sid,
        child_session_id=child,
        mapping_state="unresolved",  # the partition resolves it once the child is stored
        tool="Task",
        agent="Explore",
        description="Map callers",
        instruction=INSTRUCTION,
        tool_use_ref=f"block:{dispatch.block_id}",
        result_state="completed",
        result_preview=RESULT[:280],
        result_sha256=sha(RESULT),
        time_ms=dispatch.time_ms,
    )
    return s


def child_session(parent_id: str, *, answer_prose: str = ANSWER_PROSE) -> units_pb2.Session:
    """The subagent's session: its final current reply is `answer_prose` + a code block; a later
    log-only reply is not its answer."""
    s = session(
        f"{parent_id.split(':', 1)[1]}/agent-x",
        [
            Msg("user", INSTRUCTION),
            Msg("assistant", "Searching.", tools=[Tool("Grep", "search", command="rg acquire db/", output="2 hits")]),
            Msg("assistant", answer_prose, code=ANSWER_CODE),
            Msg("assistant", "an abandoned branch"),
        ],
    )
    s.messages[-1].surface = "log-only"
    s.parent_session_id = parent_id
    s.agent = "Explore"
    s.runs.add(id=refs.run_id(s.id), session_id=s.id, role="main", status="completed", agent="Explore")
    return s


def resolve(partition: LexicalPartition, ref: str, max_chars: int = 0) -> refs_pb2.ResolvedRef:
    return partition.resolve_ref(refs_pb2.ResolveRefRequest(ref=ref, max_chars=max_chars))


def stored_delegation(partition: LexicalPartition, delegation_id: str) -> units_pb2.Delegation:
    resolved = resolve(partition, f"delegation:{delegation_id}")
    assert resolved.resolved, resolved.caveats
    return resolved.delegation.delegation


def unit_rows(partition: LexicalPartition) -> dict[str, list[tuple[str, int]]]:
    """(id, row ordinal) of every derived-unit row, by table."""
    conn = partition._store.reader()
    return {table: conn.execute(f"SELECT id, ord FROM {table} ORDER BY ord").fetchall() for table in UNIT_TABLES}


def unit_ids(s: units_pb2.Session) -> dict[str, list[str]]:
    fields = {"files": s.files, "runs": s.runs, "observed_events": s.events}
    fields |= {"context_snapshots": s.snapshots, "delegations": s.delegations}
    return {table: [u.id for u in fields[table]] for table in UNIT_TABLES}


# ---- storage -----------------------------------------------------------------------------------


def test_units_are_stored_with_their_session_and_replaced_with_it(fresh: LexicalPartition) -> None:
    parent, other = parent_session(), parent_session("other-1")
    fresh.upsert([parent, other])
    rows = unit_rows(fresh)
    assert {t: [i for i, _ in r] for t, r in rows.items()} == {
        t: unit_ids(parent)[t] + unit_ids(other)[t] for t in UNIT_TABLES
    }

    # The same sessions again: nothing is written, every row keeps its place.
    assert fresh.upsert([parent, other]).sessions_unchanged == 2
    assert unit_rows(fresh) == rows

    # A changed parent: its old units are gone, the new ones are there, the other session is untouched.
    changed = parent_session(follow_up="A different follow-up.")
    del changed.events[1]
    del changed.files[:]
    changed.runs[0].status = "interrupted"
    assert fresh.upsert([changed, other]).sessions_written == 1
    after = unit_rows(fresh)
    other_ids = unit_ids(other)
    assert {t: [row for row in r if row[0] in other_ids[t]] for t, r in after.items()} == {
        t: [row for row in r if row[0] in other_ids[t]] for t, r in rows.items()
    }
    assert {t: sorted(i for i, _ in r if i not in other_ids[t]) for t, r in after.items()} == {
        t: sorted(ids) for t, ids in unit_ids(changed).items()
    }
    assert resolve(fresh, f"run:{parent.id}:run:main").run.status == "interrupted"
    gone = resolve(fresh, f"observed-event:{parent.id}:event:1")
    assert not gone.resolved and gone.caveats == [f"no observed-event '{parent.id}:event:1' in session '{parent.id}'"]


def test_the_summary_carries_no_messages_actions_or_units(fresh: LexicalPartition) -> None:
    parent = parent_session()
    expected = units_pb2.Session()
    expected.CopyFrom(parent)
    for name in ("messages", "actions", "files", "runs", "events", "snapshots", "delegations"):
        expected.ClearField(name)
    assert units_pb2.Session.FromString(session_rows.summary_blob(parent)) == expected

    fresh.upsert([parent])
    assert fresh.get_sessions([parent.id]) == [expected]
    hit = fresh.search(plans.search(plans.text("explorer"))).hits[0]
    assert hit.session == expected
    assert resolve(fresh, f"session:{parent.id}").session == expected


# ---- child excerpts ------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["parent first", "child first", "same batch"])
def test_the_child_excerpt_is_filled_whichever_session_arrives_first(fresh: LexicalPartition, order: str) -> None:
    parent = parent_session()
    child = child_session(parent.id)
    delegation_id = parent.delegations[0].id
    if order == "parent first":
        fresh.upsert([parent])
        waiting = stored_delegation(fresh, delegation_id)
        assert (waiting.mapping_state, waiting.child_excerpt_preview, waiting.child_excerpt_sha256) == (
            "unresolved",
            "",
            "",
        )
        fresh.upsert([child])
    elif order == "child first":
        fresh.upsert([child])
        fresh.upsert([parent])
    else:
        fresh.upsert([parent, child])
    linked = stored_delegation(fresh, delegation_id)
    assert (linked.mapping_state, linked.child_excerpt_preview, linked.child_excerpt_sha256) == (
        "resolved",
        ANSWER[:280],
        sha(ANSWER),
    )
    expected = units_pb2.Delegation()
    expected.CopyFrom(parent.delegations[0])
    expected.mapping_state = "resolved"
    expected.child_excerpt_preview, expected.child_excerpt_sha256 = ANSWER[:280], sha(ANSWER)
    assert linked == expected
    conn = fresh._store.reader()
    assert conn.execute("SELECT mapping_state FROM delegations").fetchall() == [("resolved",)]


def test_a_changed_child_updates_the_excerpt_and_a_changed_parent_keeps_it(fresh: LexicalPartition) -> None:
    parent = parent_session()
    fresh.upsert([parent, child_session(parent.id)])
    fresh.upsert([child_session(parent.id, answer_prose="Only pool.py calls it.")])
    assert stored_delegation(fresh, parent.delegations[0].id).child_excerpt_sha256 == sha(
        f"Only pool.py calls it.\n{ANSWER_CODE}"
    )
    fresh.upsert([parent_session(follow_up="Changed parent.")])
    relinked = stored_delegation(fresh, parent.delegations[0].id)
    assert (relinked.mapping_state, relinked.child_excerpt_preview) == (
        "resolved",
        f"Only pool.py calls it.\n{ANSWER_CODE}",
    )


# ---- resolution ------------------------------------------------------------------------------------


def test_every_kind_resolves_to_the_stored_object(fresh: LexicalPartition) -> None:
    parent = parent_session()
    child = child_session(parent.id)
    fresh.upsert([parent, child])
    sid = parent.id
    cases = {
        f"message:{sid}:m1": ("message", parent.messages[1]),
        f"block:{sid}:m1:1": ("block", parent.messages[1].blocks[1]),
        f"run:{sid}:run:1": ("run", parent.runs[1]),
        f"run:{child.id}:run:main": ("run", child.runs[0]),
        f"observed-event:{sid}:event:1": ("observed_event", parent.events[1]),
        f"context-snapshot:{sid}:snapshot:0": ("context_snapshot", parent.snapshots[0]),
    }
    for ref, (field, expected) in cases.items():
        resolved = resolve(fresh, ref)
        owner = child.id if child.id in ref else sid
        assert (resolved.ref, resolved.kind, resolved.resolved, resolved.session_id) == (
            ref,
            ref.split(":", 1)[0],
            True,
            owner,
        )
        assert resolved.WhichOneof("object") == field
        assert getattr(resolved, field) == expected
        assert list(resolved.caveats) == []
    assert resolve(fresh, f"message:{sid}:m1").message.blocks[0].text == CONTEXT


def test_a_delegation_resolves_to_its_evidence_card(fresh: LexicalPartition) -> None:
    parent = parent_session()
    fresh.upsert([parent, child_session(parent.id)])
    resolved = resolve(fresh, f"delegation:{parent.delegations[0].id}")
    assert (resolved.kind, resolved.resolved, resolved.session_id, list(resolved.caveats)) == (
        "delegation",
        True,
        parent.id,
        [],
    )
    card = resolved.delegation
    assert card.delegation.instruction == INSTRUCTION
    assert (card.dispatch_result, card.child_excerpt, card.parent_context, card.parent_follow_up) == (
        RESULT,
        ANSWER,
        CONTEXT,
        FOLLOW_UP,
    )
    truncated = (
        card.dispatch_result_truncated,
        card.child_excerpt_truncated,
        card.parent_context_truncated,
        card.parent_follow_up_truncated,
    )
    assert truncated == (False, False, False, False)


def test_windows_are_bounded_with_flags_and_the_instruction_is_complete(fresh: LexicalPartition) -> None:
    parent = parent_session()
    fresh.upsert([parent, child_session(parent.id)])
    card_ref = f"delegation:{parent.delegations[0].id}"
    resolved = resolve(fresh, card_ref, max_chars=40)
    card = resolved.delegation
    assert card.delegation.instruction == INSTRUCTION  # never bounded
    assert (
        (card.dispatch_result, card.child_excerpt, card.parent_context, card.parent_follow_up)
        == (
            RESULT[:40],
            ANSWER[:40],
            CONTEXT,  # 40 characters or fewer: whole
            FOLLOW_UP[:40],
        )
    )
    assert (
        card.dispatch_result_truncated,
        card.child_excerpt_truncated,
        card.parent_context_truncated,
        card.parent_follow_up_truncated,
    ) == (True, True, False, True)
    assert list(resolved.caveats) == [
        f"dispatch_result bounded to 40 of {len(RESULT)} characters",
        f"parent_follow_up bounded to 40 of {len(FOLLOW_UP)} characters",
        f"child_excerpt bounded to 40 of {len(ANSWER)} characters",
    ]
    with pytest.raises(QuarryError) as negative:
        resolve(fresh, card_ref, max_chars=-1)
    assert (negative.value.code, negative.value.parameter) == (errors_pb2.INVALID_REQUEST, "max_chars")


def test_a_delegation_without_result_child_or_reply_says_so(fresh: LexicalPartition) -> None:
    parent = parent_session(follow_up="")
    result_message = parent.messages[2]
    del result_message.blocks[:]  # the dispatch's tool result was never recorded
    parent.delegations[0].child_session_id = ""
    fresh.upsert([parent])
    resolved = resolve(fresh, f"delegation:{parent.delegations[0].id}")
    card = resolved.delegation
    assert resolved.resolved and card.parent_context == CONTEXT
    assert (card.dispatch_result, card.child_excerpt, card.parent_follow_up) == ("", "", "")
    assert list(resolved.caveats) == [
        "no tool result recorded for the dispatch",
        "no parent reply with text after the dispatch result",
        "the delegation names no child session",
    ]

    named = parent_session("named-1")
    fresh.upsert([named])
    assert resolve(fresh, f"delegation:{named.delegations[0].id}").caveats[-1] == (
        f"child session '{named.id}/agent-x' is not in the archive"
    )


def test_the_parent_context_falls_back_to_the_last_earlier_message_with_text(fresh: LexicalPartition) -> None:
    parent = parent_session()
    dispatch_message = parent.messages[1]
    del dispatch_message.blocks[0]  # the dispatch alone, no prose before it
    dispatch_message.blocks[0].index = 0
    fresh.upsert([parent])
    card = resolve(fresh, f"delegation:{parent.delegations[0].id}").delegation
    assert card.parent_context == "Find the callers of acquire()"


def test_missing_malformed_and_unsupported_refs_are_unresolved_with_caveats(fresh: LexicalPartition) -> None:
    parent = parent_session()
    fresh.upsert([parent])
    sid = parent.id
    cases = {
        "session:claude-code-session:nobody": ("session", "no session 'claude-code-session:nobody' in the archive"),
        f"message:{sid}:m99": ("message", f"no message '{sid}:m99' in session '{sid}'"),
        f"block:{sid}:m1:7": ("block", f"no block '{sid}:m1:7' in session '{sid}'"),
        f"delegation:{sid}:delegation:9": ("delegation", f"no delegation '{sid}:delegation:9' in session '{sid}'"),
        f"context-snapshot:{sid}:snapshot:3": (
            "context-snapshot",
            f"no context-snapshot '{sid}:snapshot:3' in session '{sid}'",
        ),
        f"action:{sid}:action:0": (
            "action",
            f"action refs do not resolve to a payload: read the action's tool call, block:{sid}:m1:1",
        ),
        "assertion:abc": (
            "assertion",
            "assertion refs are answered by AssertionService.GetAssertion, not by a partition's index",
        ),
        "nonsense": ("", None),
        f"run:{sid}:run:first": ("", None),
        "message:Not_An_Origin:abc:m1": ("", None),
    }
    for ref, (kind, caveat) in cases.items():
        resolved = resolve(fresh, ref)
        assert (resolved.ref, resolved.kind, resolved.resolved) == (ref, kind, False)
        assert resolved.WhichOneof("object") is None
        if caveat is None:  # malformed: the parse error, as a caveat
            with pytest.raises(QuarryError) as parse_error:
                parse_ref(ref)
            caveat = parse_error.value.message
        assert list(resolved.caveats) == [caveat]
