"""The surface fold on made-up logs the real ones lack: a replacement chain longer than one (two
compactions), a ChatGPT node regenerated twice, a branch below current_node, records of the fixtures."""

from __future__ import annotations

import orjson

from quarry.core.event_trace import check_log, trace
from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES

SID = "sess-9"


def _cc(kind: str, uuid: str, parent: str | None, content: object, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": f"2026-03-01T10:00:{len(uuid):02d}.000Z",
        "message": {"role": kind, "content": content},
        **extra,
    }
    return record


def _lines(records: list[dict[str, object]]) -> bytes:
    return b"\n".join(orjson.dumps(r) for r in records) + b"\n"


def test_two_compactions_chain_the_first_replaced_events_through_both_summaries() -> None:
    records = [
        _cc("user", "u1", None, "first question"),
        _cc("assistant", "a1", "u1", [{"type": "text", "text": "first answer"}]),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "sessionId": SID,
            "logicalParentUuid": "a1",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto"},
        },
        _cc("user", "s1", "b1", "summary one", isCompactSummary=True),
        _cc("user", "u2", "s1", "second question"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b2",
            "parentUuid": None,
            "sessionId": SID,
            "logicalParentUuid": "u2",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual"},
        },
        _cc("user", "s2", "b2", "summary two", isCompactSummary=True),
        _cc("assistant", "a3", "s2", [{"type": "text", "text": "after both"}]),
    ]
    (session,) = parse_bytes(_lines(records), "two.jsonl").sessions
    events = session.log_events
    check_log(session.id, events)
    surfaces = ["shadowed", "shadowed", "log-only", "shadowed", "shadowed", "log-only", "current", "current"]
    assert [e.surface for e in events] == surfaces
    first = trace(session.id, events, 0)
    assert (first.replaced_by, list(first.replacement_chain)) == (3, [3, 6])  # through both summaries
    second = trace(session.id, events, 6)
    assert list(second.replaced_event_seqs) == [3, 4] and list(second.source_event_seqs) == [3, 4]
    assert list(trace(session.id, events, 5).source_event_seqs) == [4]  # the boundary cites its logical parent
    assert [m.surface for m in session.messages] == surfaces  # one message per record here


def _node(node_id: str, parent: str | None, children: list[str], role: str, text: str, at: float) -> dict:
    message = {
        "id": node_id,
        "author": {"role": role},
        "create_time": at,
        "content": {"content_type": "text", "parts": [text]},
    }
    return {"id": node_id, "parent": parent, "children": children, "message": message}


def test_a_reply_regenerated_twice_shadows_both_earlier_replies_and_a_tail_is_log_only() -> None:
    mapping = {
        "root": {"id": "root", "parent": None, "children": ["q"], "message": None},
        "q": _node("q", "root", ["r1", "r2", "r3"], "user", "question", 1.0),
        "r1": _node("r1", "q", ["f1"], "assistant", "reply one", 2.0),
        "f1": _node("f1", "r1", [], "user", "follow-up on one", 2.5),
        "r2": _node("r2", "q", [], "assistant", "reply two", 3.0),
        "r3": _node("r3", "q", ["t"], "assistant", "reply three", 4.0),
        "t": _node("t", "r3", [], "user", "typed after current_node", 5.0),
    }
    export = [{"title": "Twice", "conversation_id": "c-2", "current_node": "r3", "mapping": mapping}]
    (session,) = parse_bytes(orjson.dumps(export), "conversations.json").sessions
    events = session.log_events
    check_log(session.id, events)
    texts = [orjson.loads(e.raw_json)["message"]["content"]["parts"][0] for e in events]
    assert texts == [
        "question",
        "reply one",
        "follow-up on one",
        "reply two",
        "reply three",
        "typed after current_node",
    ]
    assert [e.surface for e in events] == ["current", "shadowed", "shadowed", "shadowed", "current", "log-only"]
    assert {events[s].replaced_by for s in (1, 2, 3)} == {4}
    assert list(trace(session.id, events, 4).replaced_event_seqs) == [1, 2, 3]
    assert session.title_snapshot.kind == "export" and not session.title_snapshot.HasField("seq")


def test_every_line_of_the_fixtures_is_an_event_and_bad_lines_are_log_only() -> None:
    for name in ("session.jsonl", "compacted.jsonl", "sidechains.jsonl", "malformed_line.jsonl", "cut_mid_line.jsonl"):
        path = FIXTURES / "claude_code" / name
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        result = parse_file(path)
        events = [e for s in result.sessions for e in s.log_events]
        assert len(events) >= len(lines), name  # a line of two values is two events
        assert sorted({e.line for e in events}) == sorted(
            {n for n, line in enumerate(path.read_bytes().splitlines(), 1) if line.strip()}
        ), name
        for session in result.sessions:
            check_log(session.id, session.log_events)
        bad = [e for e in events if e.type == "claude-code:(malformed)"]
        assert all(e.surface == "log-only" and isinstance(orjson.loads(e.raw_json), str) for e in bad)
        assert len(bad) == len(result.issues), name


def test_old_layout_sidechain_records_are_events_of_their_own_session() -> None:
    result = parse_file(FIXTURES / "claude_code" / "sidechains.jsonl")
    main, *children = result.sessions
    assert children and all(s.parent_session_id == main.id for s in children)
    for child in children:
        assert all(orjson.loads(e.raw_json).get("isSidechain") is True for e in child.log_events)
    assert not any(orjson.loads(e.raw_json).get("isSidechain") is True for e in main.log_events)
