"""A bad line never costs its neighbours; nothing raises on content; formats come from content."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.ingest.parse import iter_parse, parse_bytes, parse_file
from quarry.ingest.validate import session_problems
from tests.ingest.support import FIXTURES, roles

CLAUDE = FIXTURES / "claude_code"


def test_malformed_line_is_reported_and_every_good_session_survives() -> None:
    result = parse_file(CLAUDE / "malformed_line.jsonl")
    assert [(i.path, i.line, i.code) for i in result.issues] == [
        (str(CLAUDE / "malformed_line.jsonl"), 4, "malformed_json")
    ]
    main, sidechain = result.sessions
    assert main.id == "claude-code-session:sess-2"
    assert roles(main) == {"user": 2, "assistant": 2}
    assert main.messages[-1].blocks[0].text == "The flaky test is test_pool."
    # The old-layout sidechain interleaved in the file is its own session, linked to the main one.
    assert sidechain.id == "claude-code-session:sess-2/sidechain-s1"
    assert sidechain.parent_session_id == main.id
    assert [m.blocks[0].text for m in sidechain.messages] == [
        "Search the suite for flaky tests",
        "test_pool is flaky: it sleeps on a real clock.",
    ]


def test_two_objects_on_one_line_are_both_read() -> None:
    result = parse_file(CLAUDE / "two_objects_one_line.jsonl")
    assert result.issues == []
    texts = [m.blocks[0].text for m in result.sessions[0].messages]
    assert texts == ["Say hello", "Hello", "And goodbye?", "Goodbye"]


def test_last_line_cut_mid_json_is_a_truncated_line() -> None:
    result = parse_file(CLAUDE / "cut_mid_line.jsonl")
    assert [(i.line, i.code) for i in result.issues] == [(3, "truncated_line")]
    assert [m.blocks[0].text for m in result.sessions[0].messages] == ["Plan the migration", "Planning."]


def test_a_cut_line_that_is_not_the_last_is_malformed() -> None:
    lines = (CLAUDE / "cut_mid_line.jsonl").read_bytes().split(b"\n")
    data = b"\n".join([lines[0], lines[2], lines[1]])
    result = parse_bytes(data, "reordered.jsonl")
    assert [(i.line, i.code) for i in result.issues] == [(2, "malformed_json")]
    assert len(result.sessions[0].messages) == 2


def test_unknown_and_unmodelled_record_types_are_counted() -> None:
    result = parse_file(CLAUDE / "session.jsonl")
    assert result.issues == []
    assert result.skipped_record_types == {
        "claude-code:mystery-record": 1,
        "claude-code:queue-operation": 1,
        "claude-code:file-history-snapshot": 1,
    }


def test_unknown_record_types_are_counted_per_type_in_every_source() -> None:
    codex = [
        {"timestamp": "2025-09-01T10:00:00Z", "type": "session_meta", "payload": {"id": "u-1", "cwd": "/w"}},
        {
            "timestamp": "2025-09-01T10:00:01Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        },
        {"timestamp": "2025-09-01T10:00:02Z", "type": "hologram", "payload": {"x": 1}},
        {"timestamp": "2025-09-01T10:00:03Z", "type": "response_item", "payload": {"type": "teleport_call"}},
        {"timestamp": "2025-09-01T10:00:04Z", "type": "event_msg", "payload": {"type": "item_completed"}},
        {"timestamp": "2025-09-01T10:00:05Z", "type": "event_msg", "payload": {"type": "item_completed"}},
    ]
    result = parse_bytes(b"\n".join(orjson.dumps(line) for line in codex), "rollout.jsonl")
    assert (result.format, result.issues) == ("codex", [])
    assert dict(result.skipped_record_types) == {
        "codex:hologram": 1,
        "codex:response_item/teleport_call": 1,
        "codex:event_msg/item_completed": 2,
    }
    gemini = {
        "sessionId": "g-1",
        "messages": [
            {
                "type": "user",
                "content": [{"text": "hi"}, {"videoMetadata": {}}, {"inlineData": {"mimeType": "application/pdf"}}],
            },
            {"type": "gemini", "content": "hello"},
            {"type": "hologram", "content": "?"},
        ],
    }
    result = parse_bytes(orjson.dumps(gemini), "session.json")
    assert result.format == "gemini"
    assert dict(result.skipped_record_types) == {
        "gemini:part/videoMetadata": 1,
        "gemini:part/inlineData": 1,
        "gemini:message/hologram": 1,
    }
    node = {
        "parent": "r",
        "children": [],
        "message": {
            "author": {"role": "user"},
            "content": {"content_type": "multimodal_text", "parts": ["see", {"content_type": "hologram_pointer"}]},
        },
    }
    silent = {
        "parent": "r",
        "children": [],
        "message": {"author": {"role": "assistant"}, "content": {"content_type": "reasoning_recap"}},
    }
    chatgpt = [
        {
            "conversation_id": "c-1",
            "title": "t",
            "current_node": "a",
            "mapping": {"r": {"parent": None, "children": ["a", "b"], "message": None}, "a": node, "b": silent},
        }
    ]
    result = parse_bytes(orjson.dumps(chatgpt), "conversations.json")
    assert result.format == "chatgpt"
    assert dict(result.skipped_record_types) == {
        "chatgpt:part/hologram_pointer": 1,
        "chatgpt:content/reasoning_recap": 1,
        "chatgpt:empty-message": 1,
    }


def test_format_is_recognized_from_content_not_name(tmp_path: Path) -> None:
    for name in ("transcript.txt", "transcript_without_extension"):
        result = parse_file(CLAUDE / name)
        assert result.format == "claude-code" and result.issues == []
        assert result.sessions[0].actions[0].category == "search"
    # A Codex rollout and a Gemini session under misleading names.
    shutil.copy(FIXTURES / "codex" / "rollout.jsonl", tmp_path / "conversations.json")
    shutil.copy(FIXTURES / "gemini" / "chat.json", tmp_path / "notes.jsonl")
    shutil.copy(FIXTURES / "chatgpt" / "conversations.json", tmp_path / "export")
    formats = {Path(r.path).name: r.format for r in iter_parse([tmp_path])}
    assert formats == {"conversations.json": "codex", "notes.jsonl": "gemini", "export": "chatgpt"}


def test_unrecognized_file_is_one_unknown_format_issue() -> None:
    result = parse_file(FIXTURES / "unknown" / "settings.json")
    assert (result.format, result.sessions) == ("unknown", [])
    assert [(i.code, i.line) for i in result.issues] == [("unknown_format", 0)]
    assert "theme" in result.issues[0].reason
    garbage = parse_bytes(b"hello\nworld\n", "notes.txt")
    assert [i.code for i in garbage.issues] == ["unknown_format"]


def test_missing_file_is_unreadable(tmp_path: Path) -> None:
    result = parse_file(tmp_path / "gone.jsonl")
    assert result.format == "unknown"
    assert [i.code for i in result.issues] == ["unreadable"]


def test_non_object_lines_and_wrong_types_are_invalid_records_not_crashes() -> None:
    good = orjson.dumps({"type": "user", "uuid": "a", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    lines = [
        good,
        b"[1, 2, 3]",
        b'{"type": "assistant", "uuid": "b", "sessionId": "s", "message": "not a dict"}',
        b'{"type": "assistant", "uuid": "c", "sessionId": "s", "message": {"id": 5, "content": [7, {"type": 3}]}}',
    ]
    result = parse_bytes(b"\n".join(lines), "odd.jsonl")
    assert [(i.line, i.code) for i in result.issues] == [(2, "invalid_record"), (3, "invalid_record")]
    assert roles(result.sessions[0]) == {"user": 1, "assistant": 1}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# Records that look enough like each format to reach the parsers, with arbitrary values inside.
RECORD_KEYS = st.sampled_from(
    [
        "type",
        "uuid",
        "sessionId",
        "message",
        "content",
        "payload",
        "isSidechain",
        "agentId",
        "parentUuid",
        "timestamp",
        "role",
        "id",
        "model",
        "usage",
        "name",
        "input",
        "call_id",
        "output",
        "summary",
        "subtype",
        "toolUseResult",
        "compactMetadata",
        "isCompactSummary",
        "isApiErrorMessage",
        "durationMs",
    ]
)
TYPES = st.sampled_from(
    [
        "user",
        "assistant",
        "system",
        "summary",
        "ai-title",
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "message",
        "function_call",
        "function_call_output",
        "tool_use",
        "text",
    ]
)
RECORDS = st.fixed_dictionaries({"type": TYPES}, optional={"sessionId": st.text(max_size=6)}).flatmap(
    lambda base: st.dictionaries(RECORD_KEYS, JSON_VALUES, max_size=6).map(lambda extra: {**extra, **base})
)


def _serialize(values: list) -> bytes:
    return b"\n".join(orjson.dumps(value) for value in values)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    result = parse_bytes(data, "fuzz.bin")
    assert result.format in ("claude-code", "codex", "chatgpt", "gemini", "unknown")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RECORDS | JSON_VALUES, min_size=1, max_size=8), st.integers(0, 400))
def test_arbitrary_json_lines_never_raise(values: list, cut: int) -> None:
    data = _serialize(values)
    for chunk in (data, data[:cut]):
        result = parse_bytes(chunk, "fuzz.jsonl")
        for session in result.sessions:
            session.SerializeToString()
            assert session_problems(session) == []


NODE = st.fixed_dictionaries(
    {},
    optional={
        "message": JSON_VALUES
        | st.fixed_dictionaries(
            {},
            optional={"author": JSON_VALUES, "content": JSON_VALUES, "recipient": JSON_VALUES, "metadata": JSON_VALUES},
        ),
        "parent": st.sampled_from(["a", "b", "c", None]) | JSON_VALUES,
        "children": st.lists(st.sampled_from(["a", "b", "c", "zz"]) | JSON_VALUES, max_size=3),
    },
)
DOCUMENTS = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"mapping": st.dictionaries(st.sampled_from(["a", "b", "c"]), NODE, max_size=3)},
            optional={
                "current_node": st.sampled_from(["a", "b", "c", "x"]) | JSON_VALUES,
                "conversation_id": JSON_VALUES,
                "title": JSON_VALUES,
                "create_time": JSON_VALUES,
            },
        ),
        max_size=3,
    ),
    st.fixed_dictionaries(
        {
            "sessionId": JSON_VALUES,
            "messages": st.lists(
                st.dictionaries(
                    RECORD_KEYS | st.sampled_from(["thoughts", "toolCalls", "tokens", "args", "result", "status"]),
                    JSON_VALUES,
                    max_size=6,
                ),
                max_size=4,
            ),
        },
        optional={"startTime": JSON_VALUES},
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_arbitrary_export_documents_never_raise(document: object) -> None:
    result = parse_bytes(orjson.dumps(document), "fuzz.json")
    for session in result.sessions:
        session.SerializeToString()
        assert session_problems(session) == []
