"""Every real log under ../shared/real-logs parses cleanly into the sessions a reader of the file
counts by hand (counts checked independently with jq over the raw records)."""

from __future__ import annotations

import hashlib
from collections import Counter

import orjson
import pytest

from quarry.core import vocab
from quarry.ingest.parse import iter_parse, parse_file
from quarry.ingest.validate import session_problems
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = [needs_shared, pytest.mark.shared]

CC = REAL_LOGS / "claude_code"
CODEX = REAL_LOGS / "codex"
MAIN = "claude-code-session:d4fd5afb-e837-4595-a12a-6c44c0f09739"

# file -> [(session id, messages per role on every surface, actions per category, failed actions)]
EXPECTED: dict[str, list[tuple[str, dict[str, int], dict[str, int], int]]] = {
    "claude_code/Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl": [
        ("claude-code-session:0286dfe3-da60-4357-9919-adca8b3b9cd4", {"user": 2, "assistant": 1}, {}, 0)
    ],
    "claude_code/Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl": [
        ("claude-code-session:814710e0-c005-483c-bcb2-727b2e09f73c", {"user": 4, "assistant": 1}, {}, 0)
    ],
    "claude_code/Xu-Wentao__dotfile__bba7ac89-419c-401d-a0c2-f9352555f545.jsonl": [
        ("claude-code-session:bba7ac89-419c-401d-a0c2-f9352555f545", {"user": 1, "assistant": 1}, {}, 0)
    ],
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl": [
        (MAIN, {"user": 5, "assistant": 4}, {"subagent": 2}, 0)
    ],
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-ada37e8b5cf03a018.jsonl": [
        (f"{MAIN}/agent-ada37e8b5cf03a018", {"user": 6, "assistant": 4}, {"file_read": 5}, 3)
    ],
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-adae2f20e326a65be.jsonl": [
        (f"{MAIN}/agent-adae2f20e326a65be", {"user": 4, "assistant": 4}, {"file_read": 1, "file_edit": 2}, 1)
    ],
    "claude_code/entireio__cli__a6_e4c2a0fbd1_0_full.jsonl": [
        (
            "claude-code-session:198393f2-22db-477b-ac77-1825bea883ae",
            {"user": 16, "assistant": 13, "system": 1},
            {"file_read": 3, "file_edit": 3, "shell": 4},
            0,
        )
    ],
    "claude_code/entireio__cli__c9_883595c929_0_full.jsonl": [
        ("claude-code-session:1b3e6441-62e3-4b41-8a0c-9d252f531f7a", {"user": 2, "assistant": 2}, {"file_write": 1}, 0)
    ],
    "codex/Xu-Wentao__dotfile__rollout-2026-04-08T22-02-46-019d6d67-1952-7e83-93ef-94497e3c15b6.jsonl": [
        (
            "codex-session:019d6d67-1952-7e83-93ef-94497e3c15b6",
            {"system": 1, "user": 5, "assistant": 74, "tool": 34},
            {"shell": 34},
            11,
        )
    ],
    "codex/aneesh199608__dslint__rollout-2025-12-09T14-27-29-019b0254-78dd-7ea3-9224-5ae646e225ea.jsonl": [
        ("codex-session:019b0254-78dd-7ea3-9224-5ae646e225ea", {"user": 2, "assistant": 2}, {}, 0)
    ],
    "codex/chunrui-qashier__md-http-server__rollout-2025-11-24T00-07-08-019ab178-1682-7892-912f-cd70b0725a0c.jsonl": [
        (
            "codex-session:019ab178-1682-7892-912f-cd70b0725a0c",
            {"user": 2, "assistant": 44, "tool": 21},
            {"shell": 18, "other": 2, "file_edit": 1},
            4,
        )
    ],
    "gemini/entireio__cli__ab_2b9748b105_0_full.jsonl": [
        (
            "gemini-cli-session:f7633853-6663-4dbb-bbf4-6159afa29df8",
            {"user": 1, "assistant": 11, "system": 1},
            {"file_write": 1, "shell": 6, "file_read": 2},
            0,
        )
    ],
}
CHATGPT = REAL_LOGS / "chatgpt" / "gypadham__PoSales_Summary_Sep1-Project-for-DA__conversations.json"
# Record types the parsers count instead of modelling; anything else in a real file is unexplained.
EXPLAINED_SKIPS = {
    "claude-code:permission-mode",
    "claude-code:file-history-snapshot",
    "claude-code:attachment",
    "claude-code:queue-operation",
    "claude-code:last-prompt",
    "claude-code:system/stop_hook_summary",
    "codex:event_msg/user_message",
    "codex:event_msg/agent_message",
    "codex:event_msg/agent_reasoning",
    "codex:response_item/ghost_snapshot",
    "chatgpt:empty-message",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_file_sessions_roles_and_actions(name: str) -> None:
    result = parse_file(REAL_LOGS / name)
    assert result.issues == []
    assert set(result.skipped_record_types) <= EXPLAINED_SKIPS
    got = [(s.id, roles(s, surface=None), categories(s), failed_actions(s)) for s in result.sessions]
    assert got == EXPECTED[name]


# file -> per session: (files, runs by status, events by kind, snapshot boundaries, delegations by mapping).
# Counted over the raw records:
# - files: distinct paths named by tool_use inputs (jq '.message.content[]? | select(.type=="tool_use") |
#   .input.file_path // .input.path'; Codex/Gemini: the args / apply_patch headers). Codex exec_command
#   and shell calls name a workdir, not a path.
# - tool_finished: tool_result blocks (Claude: jq '.message.content | arrays | .[] |
#   select(.type=="tool_result")'; Codex: function_call_output + custom_tool_call_output; Gemini:
#   toolCalls[]); command: grep -c '<command-name>'; api_error: grep -c '"subtype":"api_error"' plus
#   the isApiErrorMessage row; compaction: grep -c compact_boundary; Codex turn events: task_started,
#   task_complete, turn_aborted (jq '.payload.type' | sort | uniq -c).
# - runs: the main run, plus one per Agent / Task tool_use; its status as the file ends.
EMPTY_DELEGATIONS: dict[str, int] = {}
DERIVED: dict[str, list[tuple[int, dict[str, int], dict[str, int], list[str], dict[str, int]]]] = {
    "claude_code/Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl": [
        (0, {"completed": 1}, {"session_started": 1}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    "claude_code/Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl": [
        (0, {"completed": 1}, {"session_started": 1, "command": 1}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    # 4 system/api_error retries, then the synthetic "Please run /login · API Error: 403" reply.
    "claude_code/Xu-Wentao__dotfile__bba7ac89-419c-401d-a0c2-f9352555f545.jsonl": [
        (0, {"failed": 1}, {"session_started": 1, "api_error": 5}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    # /statusline, then two Agent dispatches whose toolUseResult.agentId names the subagent files.
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl": [
        (
            0,
            {"completed": 3},
            {"session_started": 1, "command": 1, "tool_finished": 2, "subagent_finished": 2},
            ["session_start"],
            {"resolved": 2},
        )
    ],
    # Five Reads of five dotfiles (three of them missing).
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-ada37e8b5cf03a018.jsonl": [
        (5, {"completed": 1}, {"session_started": 1, "tool_finished": 5}, ["subagent_start"], EMPTY_DELEGATIONS)
    ],
    # Read .claude/settings.json (missing), Edit .claude/statusline-command.sh, Edit .claude/settings.json.
    "claude_code/Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__agent-adae2f20e326a65be.jsonl": [
        (2, {"completed": 1}, {"session_started": 1, "tool_finished": 3}, ["subagent_start"], EMPTY_DELEGATIONS)
    ],
    # 3 Read + 3 Edit of cmd/entire/cli/hooks_claudecode_handlers.go, 4 Bash; /exit; one auto compaction.
    "claude_code/entireio__cli__a6_e4c2a0fbd1_0_full.jsonl": [
        (
            1,
            {"completed": 1},
            {"session_started": 1, "command": 1, "tool_finished": 10, "compaction": 1},
            ["session_start", "compaction"],
            EMPTY_DELEGATIONS,
        )
    ],
    "claude_code/entireio__cli__c9_883595c929_0_full.jsonl": [
        (1, {"completed": 1}, {"session_started": 1, "tool_finished": 1}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    # 34 outputs; turns: 3 task_started, 2 task_complete, 1 turn_aborted (the second turn).
    "codex/Xu-Wentao__dotfile__rollout-2026-04-08T22-02-46-019d6d67-1952-7e83-93ef-94497e3c15b6.jsonl": [
        (
            0,
            {"completed": 1},
            {"session_started": 1, "turn_started": 3, "turn_completed": 2, "turn_aborted": 1, "tool_finished": 34},
            ["session_start"],
            EMPTY_DELEGATIONS,
        )
    ],
    "codex/aneesh199608__dslint__rollout-2025-12-09T14-27-29-019b0254-78dd-7ea3-9224-5ae646e225ea.jsonl": [
        (0, {"completed": 1}, {"session_started": 1}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    # 20 function_call_output + 1 custom_tool_call_output; the apply_patch names one spec file.
    "codex/chunrui-qashier__md-http-server__rollout-2025-11-24T00-07-08-019ab178-1682-7892-912f-cd70b0725a0c.jsonl": [
        (1, {"completed": 1}, {"session_started": 1, "tool_finished": 21}, ["session_start"], EMPTY_DELEGATIONS)
    ],
    # write_file docs/blue.md, read_file docs/color.md twice, 6 shell commands.
    "gemini/entireio__cli__ab_2b9748b105_0_full.jsonl": [
        (2, {"completed": 1}, {"session_started": 1, "tool_finished": 9}, ["session_start"], EMPTY_DELEGATIONS)
    ],
}


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_real_file_derived_units(name: str) -> None:
    result = parse_file(REAL_LOGS / name)
    got = [
        (
            len(s.files),
            dict(Counter(r.status for r in s.runs)),
            dict(Counter(e.kind for e in s.events)),
            [snapshot.boundary for snapshot in s.snapshots],
            dict(Counter(d.mapping_state for d in s.delegations)),
        )
        for s in result.sessions
    ]
    assert got == DERIVED[name]
    for session in result.sessions:
        assert session_problems(session) == []
        assert [e.seq for e in session.events] == list(range(len(session.events)))


def test_main_session_delegations_resolve_to_the_two_subagent_files() -> None:
    main = parse_file(CC / "Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl").sessions[0]
    agents = {
        s.id: s
        for path in sorted(CC.glob("*d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__*"))
        for s in parse_file(path).sessions
    }
    assert [d.child_session_id for d in main.delegations] == [
        f"{MAIN}/agent-ada37e8b5cf03a018",
        f"{MAIN}/agent-adae2f20e326a65be",
    ]
    blocks = {f"block:{b.id}": b for m in main.messages for b in m.blocks}
    results = {b.tool_use_id: b for b in blocks.values() if b.type == "tool_result"}
    for delegation in main.delegations:
        child = agents[delegation.child_session_id]
        assert child.parent_session_id == main.id
        # The complete instruction is the prompt the child started from.
        assert child.snapshots[0].boundary == "subagent_start"
        assert child.snapshots[0].preview == delegation.instruction == child.messages[0].blocks[0].text
        assert (delegation.tool, delegation.agent, delegation.result_state) == (
            "Agent",
            "statusline-setup",
            "completed",
        )
        # The parent-side result is the child's final answer plus the runtime's agentId trailer.
        result = results[blocks[delegation.tool_use_ref].tool_use_id].text
        final = "\n".join(b.text for b in child.messages[-1].blocks if b.type in ("text", "code"))
        assert result.startswith(final.split("\n")[0]) and "agentId: " in result
        assert delegation.result_sha256 == hashlib.sha256(result.encode()).hexdigest()
        assert delegation.result_preview == result[:280]
        assert delegation.child_excerpt_sha256 == ""  # the child is another file: the partition joins them
    # toolUseResult: jq -c 'select(.toolUseResult) | .toolUseResult | {status, agentType, totalDurationMs,
    # totalTokens, totalToolUseCount}'. The main run's tokens: usage summed once per message.id (jq -s
    # 'group_by(.message.id) | map(max of each usage field) | add') = 65,836.
    assert [(r.role, r.status, r.agent, r.duration_ms, r.total_tokens, r.tool_uses) for r in main.runs] == [
        ("main", "completed", "", 132_919, 65_836, 2),
        ("subagent", "completed", "statusline-setup", 20_165, 5_849, 5),
        ("subagent", "completed", "statusline-setup", 58_089, 4_825, 3),
    ]
    assert [r.child_session_id for r in main.runs[1:]] == [d.child_session_id for d in main.delegations]


# The folders of the agents Quarry reads; the others in real-logs (Continue, Kimi, Qwen Code, Copilot CLI)
# are agents it does not read yet.
READ_FOLDERS = (
    "aider",
    "chatgpt",
    "claude_ai",
    "claude_code",
    "cline",
    "codex",
    "codex_archived",
    "copilot",
    "cursor",
    "cursor_cli",
    "gemini",
    "goose",
    "opencode",
    "opencode_db",
    "opencode_go",
    "roo_code",
)


def test_every_real_file_is_recognized_by_content() -> None:
    results = list(iter_parse([REAL_LOGS / folder for folder in READ_FOLDERS]))
    formats = Counter(r.format for r in results)
    # The supported formats, each file recognized; files of the other tools there are not read as one of them.
    assert {f: n for f, n in formats.items() if f != "unknown"} == {
        "claude-code": 8,
        "codex": 6,  # 3 sessions and 3 archived sessions (~/.codex/archived_sessions), the same format
        "chatgpt": 1,
        "gemini": 1,
        "claude-ai": 1,
        "cursor": 9,  # 7 Markdown transcripts (SpecStory, Cursor's export) and 2 state.vscdb databases
        "copilot-chat": 2,
        "cline": 3,  # a task's api_conversation_history.json, ui_messages.json and task_metadata.json
        "roo-code": 2,
        "opencode": 2,
        "crush": 2,  # a Crush and an OpenCode (Go) database
        "aider": 4,
        "goose": 1,  # sessions.db (its projects.json is no session log)
        "opencode-db": 1,
        "cursor-cli": 2,
    }
    for result in results:
        for session in result.sessions:
            assert session.origin in vocab.ORIGINS
            assert session.id == f"{session.origin}:{session.native_id}"
            assert all(m.role in vocab.ROLES and m.surface in vocab.SURFACES for m in session.messages)
            assert all(b.type in vocab.BLOCK_TYPES for m in session.messages for b in m.blocks)
            assert all(a.category in vocab.ACTION_CATEGORIES for a in session.actions)


def test_subagent_files_link_to_their_parent_session() -> None:
    main = parse_file(CC / "Xu-Wentao__dotfile__d4fd5afb-e837-4595-a12a-6c44c0f09739.jsonl").sessions[0]
    agents = [
        parse_file(path).sessions[0] for path in sorted(CC.glob("*d4fd5afb-e837-4595-a12a-6c44c0f09739__subagents__*"))
    ]
    assert [a.parent_session_id for a in agents] == [main.id, main.id]
    assert main.parent_session_id == ""
    # The parent's two Agent calls are the subagents' prompts, not something a human typed.
    prompts = [orjson.loads(a.input_json)["prompt"] for a in main.actions]
    assert [a.messages[0].blocks[0].text for a in agents] == prompts
    assert all(not a.messages[0].authored and a.counts.authored_user_messages == 0 for a in agents)


def test_claude_split_assistant_lines_are_one_message_with_usage_counted_once() -> None:
    session = parse_file(CC / "entireio__cli__c9_883595c929_0_full.jsonl").sessions[0]
    first = next(m for m in session.messages if m.role == "assistant")
    # Lines 4 and 5 share message.id: thinking then Write, with the usage repeated on both.
    assert [b.type for b in first.blocks] == ["thinking", "tool_use"]
    assert (first.input_tokens, first.output_tokens) == (10, 8)
    assert session.actions[0].path == ".github/CODEOWNERS"  # relative to the session cwd, the repo root
    assert session.title.startswith("create me a .github/CODEOWNERS")
    assert session.counts.authored_user_messages == 1  # the IDE-opened-file row is part of that prompt


def test_claude_compaction_shadows_what_came_before() -> None:
    session = parse_file(CC / "entireio__cli__a6_e4c2a0fbd1_0_full.jsonl").sessions[0]
    surfaces = [m.surface for m in session.messages]
    boundary = next(m for m in session.messages if m.role == "system")
    assert boundary.blocks[0].text == "Conversation compacted"
    # The summary row replaced what came before; the boundary record itself is log-only.
    assert set(surfaces[: boundary.seq]) == {"shadowed"} and surfaces[boundary.seq] == "log-only"
    assert set(surfaces[boundary.seq + 1 :]) == {"current"}
    summary = session.messages[boundary.seq + 1]
    assert summary.role == "user" and not summary.authored
    assert session.counts.user_messages == 16 and session.counts.authored_user_messages == 2


def test_claude_meta_commands_images_and_titles() -> None:
    image_session = parse_file(CC / "Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl").sessions[0]
    image = next(b for m in image_session.messages for b in m.blocks if b.type == "image")
    assert image.media_type == "image/png" and image.text == ""
    held = image_session.held_payloads  # the PNG and a thinking signature, each held apart from its record once
    assert len(held) == 2 and image_session.ByteSize() - sum(p.ByteSize() for p in held) < 20_000  # copied nowhere else
    assert image_session.counts.paste_messages == 1

    titled = parse_file(CC / "Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl").sessions[0]
    assert titled.title == "Explain function logic"
    assert [m.authored for m in titled.messages if m.role == "user"] == [False, False, False, True]
    assert titled.repo == "volcano" and titled.branch == "feat-capacity-dra"

    errored = parse_file(CC / "Xu-Wentao__dotfile__bba7ac89-419c-401d-a0c2-f9352555f545.jsonl").sessions[0]
    assert errored.messages[1].model == "<synthetic>" and not errored.messages[1].authored
    assert errored.model == ""  # a synthetic reply is not the model the session used


def test_codex_duplicated_dialogue_is_counted_once() -> None:
    result = parse_file(
        CODEX / "Xu-Wentao__dotfile__rollout-2026-04-08T22-02-46-019d6d67-1952-7e83-93ef-94497e3c15b6.jsonl"
    )
    session = result.sessions[0]
    prompts = [m.blocks[0].text for m in session.messages if m.role == "user" and m.authored]
    assert prompts == [
        "比较适合macos系统terminal的中文字体有哪些推荐？",
        "帮我配置下Maple Mono NF CN这个",
        "我现在用的是ghostty",
    ]
    assert result.skipped_record_types["codex:event_msg/user_message"] == 3
    assert session.counts.authored_user_messages == 3 and session.counts.user_messages == 5
    assert session.model == "gpt-5.4" and session.repo == "volcano"


def test_codex_json_encoded_outputs_and_apply_patch() -> None:
    session = parse_file(
        CODEX
        / "chunrui-qashier__md-http-server__rollout-2025-11-24T00-07-08-019ab178-1682-7892-912f-cd70b0725a0c.jsonl"
    ).sessions[0]
    listing = next(a for a in session.actions if a.command.endswith("&& ls specs"))
    assert listing.failed and listing.output == "ls: specs: No such file or directory\n"
    patch = next(a for a in session.actions if a.tool == "apply_patch")
    assert (patch.category, patch.path, patch.failed) == ("file_edit", "specs/001-extension-system/spec.md", False)
    assert session.counts.thinking_messages == 22


def test_chatgpt_export_conversations_branches_and_tools() -> None:
    result = parse_file(CHATGPT)
    assert result.format == "chatgpt" and result.issues == []
    assert len(result.sessions) == 21
    surfaces = Counter((m.role, m.surface) for s in result.sessions for m in s.messages)
    assert surfaces == {
        ("user", "current"): 129,
        ("assistant", "current"): 181,
        ("tool", "current"): 54,
        ("user", "shadowed"): 4,
        ("assistant", "shadowed"): 5,
    }
    actions = [a for s in result.sessions for a in s.actions]
    assert Counter(a.tool for a in actions) == {
        "python": 36,
        "canmore.create_textdoc": 4,
        "canmore.update_textdoc": 2,
        "bio": 2,
    }
    assert Counter(a.category for a in actions) == {"shell": 36, "other": 8}
    assert sum(a.failed for a in actions) == 16 and all(a.output for a in actions)
    assert result.skipped_record_types == {"chatgpt:empty-message": 59}

    # Derived units: 54 tool messages have content (jq: author.role=="tool" with non-empty text or parts;
    # the 5 others are empty tether_browsing_display); one conversation's current node is not an
    # assistant reply (jq: .mapping[.current_node].message.author.role != "assistant"), so its run's
    # status is unknown. No tool names a path; nothing dispatches a subagent.
    sessions = result.sessions
    assert Counter(e.kind for s in sessions for e in s.events) == {"session_started": 21, "tool_finished": 54}
    assert Counter(r.status for s in sessions for r in s.runs) == {"completed": 20, "unknown": 1}
    assert Counter(b.boundary for s in sessions for b in s.snapshots) == {"session_start": 21}
    assert sum(len(s.files) + len(s.delegations) for s in sessions) == 0

    branched = next(s for s in result.sessions if s.title == "Command List Summary")
    assert roles(branched) == {"user": 1, "assistant": 1}
    assert roles(branched, "shadowed") == {"user": 4, "assistant": 4}
    assert branched.counts.messages == 10  # the replaced branch was the model's context once: counted
    assert [m.surface for m in branched.messages] == ["current"] * 2 + ["shadowed"] * 8


def test_gemini_jsonl_named_file_is_one_json_session() -> None:
    result = parse_file(REAL_LOGS / "gemini" / "entireio__cli__ab_2b9748b105_0_full.jsonl")
    assert result.format == "gemini"
    session = result.sessions[0]
    assert session.counts.thinking_messages == 10 and session.counts.tool_use_messages == 9
    assert session.model == "gemini-2.5-flash"
    first_reply = session.messages[1]
    assert [b.type for b in first_reply.blocks] == ["thinking", "thinking", "text", "tool_use", "tool_result"]
    assert (first_reply.input_tokens, first_reply.cache_read_tokens, first_reply.output_tokens) == (9649, 2558, 258)
    assert session.duration_ms == 67_800
