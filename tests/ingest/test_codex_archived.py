"""Codex rollouts as Codex archives them (`~/.codex/archived_sessions/`), from its three other writers: the VS Code
extension, the CLI on Windows and the Desktop app (../shared/real-logs/codex_archived), each counted with json in the
test itself; and prompts the VS Code extension wraps in its context, written as it writes them."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.ingest.validate import session_problems
from tests.shared_paths import REAL_LOGS, needs_shared

ARCHIVED = REAL_LOGS / "codex_archived"
PREFIX = "LAF-US__IDAHO-VAULT__.codex__archived_sessions__rollout-"
VSCODE = ARCHIVED / f"{PREFIX}2026-03-23T01-39-29-019d19a2-6ff2-7cf3-a8e7-16f38b9dee35.jsonl"
WINDOWS_CLI = ARCHIVED / f"{PREFIX}2026-03-30T19-05-55-019d416c-ff6d-7182-9e9a-8a3dc87fa7ff.jsonl"
DESKTOP = ARCHIVED / f"{PREFIX}2026-03-31T21-41-47-019d4722-0ff9-75e0-8965-28d7e43e19a0.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _payloads(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line["payload"] for line in lines if line["payload"].get("type") == kind]


@needs_shared
@pytest.mark.parametrize("path", [VSCODE, WINDOWS_CLI, DESKTOP], ids=["vscode", "windows-cli", "desktop"])
def test_every_writer_s_rollout_reads_with_its_turns_tokens_and_model(path: Path) -> None:
    result = parse_file(path)
    assert result.format == "codex" and not result.issues
    (session,) = result.sessions
    assert not session_problems(session)
    lines = _lines(path)
    (meta,) = [line["payload"] for line in lines if line["type"] == "session_meta"]
    assert session.id == f"codex-session:{meta['id']}" and session.cwd == meta["cwd"]
    turns = Counter(e.kind for e in session.events)
    assert turns["turn_started"] == len(_payloads(lines, "task_started"))
    assert turns["turn_completed"] == len(_payloads(lines, "task_complete"))
    models = {line["payload"]["model"] for line in lines if line["type"] == "turn_context"}
    assert {m.model for m in session.messages if m.role == "assistant"} == models
    # The last running total is the session's: uncached input, cached input, output.
    total = [p["info"]["total_token_usage"] for p in _payloads(lines, "token_count") if p.get("info")][-1]
    assert sum(m.input_tokens for m in session.messages) == total["input_tokens"] - total["cached_input_tokens"]
    assert sum(m.cache_read_tokens for m in session.messages) == total["cached_input_tokens"]
    assert sum(m.output_tokens for m in session.messages) == total["output_tokens"]
    calls = _payloads(lines, "function_call")
    assert len(session.actions) == len(calls) and all(a.output for a in session.actions)


@needs_shared
def test_the_desktop_app_s_shell_command_outcomes_are_read_from_its_exit_code_header() -> None:
    (session,) = parse_file(DESKTOP).sessions
    lines = _lines(DESKTOP)
    outputs = [re.match(r"Exit code: (-?\d+)\n", p["output"]) for p in _payloads(lines, "function_call_output")]
    codes = Counter(int(match.group(1)) for match in outputs if match)  # 0: 6, 1: 1 (rg.exe: access denied)
    assert {p["name"] for p in _payloads(lines, "function_call")} == {"shell_command"}
    assert {a.category for a in session.actions} == {"shell"}
    assert Counter(a.exit_code for a in session.actions if a.HasField("exit_code")) == codes == {0: 6, 1: 1}
    (failed,) = [a for a in session.actions if a.failed]
    assert failed.exit_code == 1 and failed.command.startswith("rg -n")


@needs_shared
def test_the_desktop_app_s_prior_conversation_is_context_and_the_typed_request_is_the_prompt() -> None:
    (session,) = parse_file(DESKTOP).sessions
    (typed,) = _payloads(_lines(DESKTOP), "user_message")
    request = typed["message"].split("## My request for Codex:\n", 1)[1].strip()  # "?"
    authored = [m for m in session.messages if m.role == "user" and m.authored]
    assert [[b.text for b in m.blocks] for m in authored] == [[request]]
    assert session.title == request and session.counts.authored_user_messages == 1
    context = [m for m in session.messages if m.role == "user" and not m.authored]
    assert any(m.blocks[0].text.lstrip().startswith("## Prior conversation with Codex:") for m in context)


def _rollout(*prompts: str) -> bytes:
    meta = {"id": "019d0000-0000-7000-8000-000000000001", "cwd": "/home/me/shop", "originator": "codex_vscode",
            "source": "vscode", "cli_version": "0.116.0"}  # fmt: skip
    lines = [{"timestamp": "2026-03-23T01:39:29.000Z", "type": "session_meta", "payload": meta}]
    for prompt in prompts:
        content = [{"type": "input_text", "text": prompt}]
        lines.append({"timestamp": "2026-03-23T01:39:30.000Z", "type": "response_item",
                      "payload": {"type": "message", "role": "user", "content": content}})  # fmt: skip
        lines.append({"timestamp": "2026-03-23T01:39:31.000Z", "type": "response_item",
                      "payload": {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "Done."}]}})  # fmt: skip
    return "\n".join(json.dumps(line) for line in lines).encode() + b"\n"


def test_the_vscode_extension_s_ide_context_is_not_the_users_words() -> None:
    wrapped = (
        "# Context from my IDE setup:\n\n## Active file: shop/cart.py\n\n## Open tabs:\n- cart.py: shop/cart.py\n\n"
    )
    data = _rollout(wrapped + "## My request for Codex:\nfix the rounding in the cart total\n")
    (session,) = parse_bytes(data, "/logs/rollout.jsonl").sessions
    context, prompt = (m for m in session.messages if m.role == "user")
    assert not context.authored and "## Active file: shop/cart.py" in context.blocks[0].text
    assert prompt.authored and [b.text for b in prompt.blocks] == ["fix the rounding in the cart total"]
    assert session.title == "fix the rounding in the cart total"


def test_a_typed_prompt_that_quotes_the_marker_is_left_whole() -> None:
    typed = "why does my log say\n## My request for Codex:\nin the middle?"
    (session,) = parse_bytes(_rollout(typed), "/logs/rollout.jsonl").sessions
    (prompt,) = (m for m in session.messages if m.role == "user")
    assert prompt.authored and prompt.blocks[0].text == typed
