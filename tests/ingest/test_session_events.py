"""Raw log events on every real log: counts per surface, links, traces, titles, stability
(docs/sessions.md#events, #surfaces).

The expected values were counted by hand over the raw records: a Claude Code record is a surface node
when it is a user, assistant or attachment row (not a runtime-written API-error row); Codex sends its
response items; a ChatGPT node is current on the thread to current_node, shadowed in a branch an edit or
regeneration replaced, log-only below current_node; a Gemini info/error/warning message is log-only.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.core.event_trace import check_log, trace
from quarry.index.lexical.session_reads import put_back
from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = [needs_shared, pytest.mark.shared]

CC = "claude_code/"
MAIN = "claude-code-session:d4fd5afb-e837-4595-a12a-6c44c0f09739"
A6 = "claude_code/entireio__cli__a6_e4c2a0fbd1_0_full.jsonl"
CODEX_019 = "codex/Xu-Wentao__dotfile__rollout-2026-04-08T22-02-46-019d6d67-1952-7e83-93ef-94497e3c15b6.jsonl"
CHATGPT = "chatgpt/gypadham__PoSales_Summary_Sep1-Project-for-DA__conversations.json"
GEMINI = "gemini/entireio__cli__ab_2b9748b105_0_full.jsonl"
FORMATS = ("claude_code", "codex", "chatgpt", "gemini")

# file -> (events, current, shadowed, log-only, source links) summed over the file's sessions
EXPECTED = {
    "claude_code/entireio__cli__c9_883595c929_0_full.jsonl": (9, 6, 0, 3, 1),
    A6: (54, 23, 25, 6, 36),  # 10 tool results, the boundary's logical parent, the summary's 25
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl": (23, 13, 0, 10, 2),
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-ada37e8b5cf03a018.jsonl": (
        14,
        14,
        0,
        0,
        5,
    ),
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-adae2f20e326a65be.jsonl": (
        10,
        10,
        0,
        0,
        3,
    ),
    "claude_code/Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl": (12, 7, 0, 5, 0),
    "claude_code/Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl": (13, 8, 0, 5, 0),
    "claude_code/Xu-Wentao__dotfile__bba7ac89-419c-401d-a0c2-f9352555f545.jsonl": (10, 1, 0, 9, 0),
    CODEX_019: (196, 114, 0, 82, 61),  # 34 outputs and 27 exec_command_end cite their call
    "codex/aneesh199608__dslint__rollout-2025-12-09T14-27-29-019b0254-78dd-7ea3-9224-5ae646e225ea.jsonl": (
        12,
        4,
        0,
        8,
        0,
    ),
    "codex/chunrui-qashier__md-http-server__rollout-2025-11-24T00-07-08-019ab178-1682-7892-912f-cd70b0725a0c.jsonl": (
        158,
        67,
        0,
        91,
        21,
    ),
    CHATGPT: (432, 422, 9, 1, 44),
    GEMINI: (13, 12, 0, 1, 0),
}


def _sessions(name: str) -> list[units_pb2.Session]:
    return parse_file(REAL_LOGS / name).sessions


def _one(name: str, session_id: str | None = None) -> units_pb2.Session:
    sessions = _sessions(name)
    return sessions[0] if session_id is None else next(s for s in sessions if s.id == session_id)


def _files() -> list[Path]:
    return sorted(path for fmt in FORMATS for path in (REAL_LOGS / fmt).iterdir())


def test_every_file_of_the_four_formats_is_in_the_table() -> None:
    assert sorted(str(p.relative_to(REAL_LOGS)) for p in _files()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_events_per_surface_and_links(name: str) -> None:
    sessions = _sessions(name)
    events = [e for s in sessions for e in s.log_events]
    surfaces = Counter(e.surface for e in events)
    links = sum(len(e.source_event_seqs) for e in events)
    assert (len(events), surfaces["current"], surfaces["shadowed"], surfaces["log-only"], links) == EXPECTED[name]
    for session in sessions:
        check_log(session.id, session.log_events)  # seqs 0..n-1, every link replays
        # Every message takes the surface of the event that made it.
        made = {e.message_id: e.surface for e in reversed(session.log_events) if e.message_id}
        assert {m.id: m.surface for m in session.messages} == made


def test_claude_compaction_trace() -> None:
    events = _one(A6).log_events
    assert [e.seq for e in events if e.surface == "log-only"] == [0, 1, 5, 23, 24, 30]
    assert [e.seq for e in events if e.surface == "current"] == list(range(31, 54))
    tool_result = trace("s", events, 11)  # line 12: a tool result before the compaction
    assert (tool_result.replaced_by, list(tool_result.replacement_chain)) == (31, [31])
    assert (list(tool_result.source_event_seqs), list(tool_result.derived_event_seqs)) == ([10], [31])
    summary = trace("s", events, 31)
    replaced = [2, 3, 4, *range(6, 23), 25, 26, 27, 28, 29]
    assert list(summary.replaced_event_seqs) == replaced and list(summary.source_event_seqs) == replaced
    boundary = trace("s", events, 30)
    assert (boundary.target.type, boundary.target.surface) == ("claude-code:system/compact_boundary", "log-only")
    assert list(boundary.source_event_seqs) == [29]  # its logicalParentUuid


def test_claude_tool_result_queued_prompt_and_order() -> None:
    main = _one("claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl")
    result = trace(main.id, main.log_events, 7)  # tool_use_id and sourceToolAssistantUUID agree
    assert (list(result.source_event_seqs), list(result.derived_event_seqs)) == ([6], [])
    queued = [e for e in main.log_events if "extra-usage" in e.text]
    assert [(e.seq, e.type, e.surface) for e in queued] == [(18, "claude-code:queue-operation", "log-only")]
    later = _one("claude_code/Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl").log_events
    assert later[1].time_ms > later[2].time_ms  # seq is file order, not time order


def test_codex_call_derivations() -> None:
    events = _one(CODEX_019).log_events
    call = trace("s", events, 21)  # line 22: a function_call
    assert call.target.type == "codex:response_item/function_call"
    assert list(call.derived_event_seqs) == [27, 33]  # its output, and exec_command_end after turn_aborted
    assert events[33].type == "codex:event_msg/exec_command_end" and events[33].surface == "log-only"


def test_chatgpt_branches_are_shadowed_by_the_thread_child() -> None:
    sessions = {s.title: s for s in _sessions(CHATGPT)}
    listing = sessions["Command List Summary"].log_events
    assert len(listing) == 13
    assert [e.seq for e in listing if e.surface == "current"] == [0, 1, 10, 11, 12]
    assert {e.replaced_by for e in listing[2:10]} == {10}
    assert list(trace("s", listing, 10).replaced_event_seqs) == list(range(2, 10))
    resume = sessions["Resume Improvement Suggestions"].log_events
    assert len(resume) == 36
    regenerated = trace("s", resume, 27)
    assert (regenerated.replaced_by, list(regenerated.replacement_chain)) == (28, [28])
    assert resume[35].surface == "log-only"  # below current_node: never on the surface
    assert sum(e.surface == "current" for e in resume) == 34


def test_gemini_notice_is_log_only() -> None:
    events = _one(GEMINI).log_events
    assert [(e.seq, e.type) for e in events if e.surface == "log-only"] == [(5, "gemini:message/info")]


def test_titles_are_events_and_a_prompt_is_no_title() -> None:
    titled = _one("claude_code/Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl")
    snapshot = titled.title_snapshot
    assert (snapshot.title, snapshot.kind, snapshot.seq) == ("Explain function logic", "ai-title", 9)
    assert snapshot.time_ms == 1775542840155 and titled.log_events[9].time_inferred  # line 9's snapshot time
    untitled = _one("claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl")
    assert not untitled.HasField("title_snapshot") and untitled.title  # the prompt fallback is no title
    assert not _one(CODEX_019).HasField("title_snapshot") and not _one(GEMINI).HasField("title_snapshot")
    exported = next(s for s in _sessions(CHATGPT) if s.title == "Command List Summary").title_snapshot
    assert (exported.title, exported.kind, exported.HasField("seq")) == ("Command List Summary", "export", False)


def test_raw_records_hold_binary_payloads_apart() -> None:
    session = _one("claude_code/Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl")
    raws = [orjson.loads(e.raw_json) for e in session.log_events]  # every raw record is JSON
    assert raws[2]["type"] in ("user", "assistant", "attachment", "file-history-snapshot")
    held = [e for e in session.log_events if b'"held_apart":"media"' in e.raw_json]
    assert held and b'"media_type":"image/png"' in held[0].raw_json
    png = next(p for p in session.held_payloads if p.sha256 == held[0].held[0].sha256)
    assert session.ByteSize() - png.ByteSize() < 40_000  # the 148 KB PNG is held once, apart from its record
    lines = (REAL_LOGS / "claude_code/entireio__cli__c9_883595c929_0_full.jsonl").read_bytes().splitlines()
    signed = _one("claude_code/entireio__cli__c9_883595c929_0_full.jsonl")
    data = {p.sha256: p.data for p in signed.held_payloads}
    assert [put_back(e.raw_json, e.held, data) for e in signed.log_events] == lines


def test_malformed_lines_are_log_only_events() -> None:
    lines = (REAL_LOGS / "claude_code/entireio__cli__c9_883595c929_0_full.jsonl").read_bytes().splitlines()
    broken = b"\n".join([*lines[:4], b'{"type": "user", "broken', *lines[4:]])
    result = parse_bytes(broken, "broken.jsonl")
    (session,) = result.sessions
    assert [i.line for i in result.issues] == [5]
    assert len(session.log_events) == 10
    bad = session.log_events[4]
    assert (bad.type, bad.surface, bad.line) == ("claude-code:(malformed)", "log-only", 5)
    assert orjson.loads(bad.raw_json) == '{"type": "user", "broken'
    assert [e.type for e in session.log_events[5:]] == [
        e.type for e in _one("claude_code/entireio__cli__c9_883595c929_0_full.jsonl").log_events[4:]
    ]


@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED) if n.endswith(".jsonl") and "gemini" not in n])
def test_appending_never_renumbers(name: str) -> None:
    lines = (REAL_LOGS / name).read_bytes().splitlines(keepends=True)
    whole = {s.id: s.log_events for s in parse_bytes(b"".join(lines), name).sessions}
    for cut in (1, len(lines) // 3, len(lines) // 2, len(lines) - 1):
        for session in parse_bytes(b"".join(lines[:cut]), name).sessions:
            prefix = [(e.seq, e.type, e.line, e.raw_json) for e in session.log_events]
            full = [(e.seq, e.type, e.line, e.raw_json) for e in whole[session.id][: len(prefix)]]
            assert prefix == full, f"{name} cut after line {cut}"


def test_a6_cut_before_the_compaction_then_whole_only_changes_surfaces() -> None:
    lines = (REAL_LOGS / A6).read_bytes().splitlines(keepends=True)
    (cut,) = parse_bytes(b"".join(lines[:30]), A6).sessions
    (whole,) = parse_bytes(b"".join(lines), A6).sessions
    assert [(e.seq, e.type) for e in cut.log_events] == [(e.seq, e.type) for e in whole.log_events[:30]]
    assert {e.surface for e in cut.log_events} == {"current", "log-only"}
    assert {whole.log_events[e.seq].surface for e in cut.log_events if e.surface == "current"} == {"shadowed"}


_JSONL = [n for n in sorted(EXPECTED) if n.endswith(".jsonl") and "gemini" not in n]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(_JSONL), data=st.data())
def test_any_prefix_folds_consistently(name: str, data: st.DataObject) -> None:
    """For any prefix of any real log: every shadowed event's chain ends at a current or log-only
    replacer, current events are in model-history (seq) order, and the prefix's seqs and types are
    the whole file's."""
    lines = (REAL_LOGS / name).read_bytes().splitlines(keepends=True)
    cut = data.draw(st.integers(min_value=1, max_value=len(lines)))
    whole = {s.id: s.log_events for s in parse_bytes(b"".join(lines), name).sessions}
    for session in parse_bytes(b"".join(lines[:cut]), name).sessions:
        events = session.log_events
        check_log(session.id, events)
        for event in events:
            if event.surface == "shadowed":
                final = events[trace(session.id, events, event.seq).replacement_chain[-1]]
                assert final.surface in ("current", "log-only")
        current = [e.seq for e in events if e.surface == "current"]
        assert current == sorted(current)
        assert [(e.seq, e.type) for e in events] == [(e.seq, e.type) for e in whole[session.id][: len(events)]]
