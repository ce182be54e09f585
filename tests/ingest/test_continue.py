"""Continue sessions (`~/.continue/sessions/<id>.json`) from the IDE extension and the `cn` CLI, on real logs:
counts are checked against the history counted here, straight from the JSON."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from quarry.ingest.parse import parse_file
from tests.ingest.support import roles
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = needs_shared
LOGS = REAL_LOGS / "continue"
CLI = LOGS / "fabien-lessirard__dotfiles__.continue__sessions__e00926af-e2ae-429b-8fc2-2c4f66629d7f.json"
AGENT = LOGS / "fabien-lessirard__dotfiles__.continue__sessions__4574729b-64b1-4f10-82fe-706e9a81a541.json"
OLLAMA = LOGS / "dimits-ts__dotfiles__.continue__sessions__e8bf7236-0a9a-4c73-a2c3-c3396508ca63.json"


def _session(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_cli_session_reads_calls_outcomes_tokens_and_cost() -> None:
    document = _session(CLI)
    history = document["history"]
    kinds = Counter(item["message"]["role"] for item in history)
    calls = [call for item in history for call in item["message"].get("toolCalls", [])]
    states = {s["toolCallId"]: s["status"] for item in history for s in item.get("toolCallStates", [])}
    result = parse_file(CLI)
    assert result.format == "continue" and result.issues == []
    (session,) = result.sessions
    assert session.id == "continue-session:e00926af-e2ae-429b-8fc2-2c4f66629d7f"
    assert (session.title, session.cwd, session.repo) == (
        "JavaScript",
        r"C:\Users\acodu\dev\dashboard_mictlan",
        "dashboard_mictlan",
    )
    assert roles(session)["user"] == kinds["user"] == 21 and roles(session)["assistant"] == kinds["assistant"] == 59
    assert Counter(a.tool for a in session.actions) == Counter(c["function"]["name"].lower() for c in calls)
    assert sum(a.failed for a in session.actions) == sum(s in ("errored", "canceled") for s in states.values()) == 2
    assert next(a.output for a in session.actions if a.failed).startswith("Edit at index 0: string not found")
    assert Counter(a.category for a in session.actions) == {
        "shell": 8,
        "file_read": 17,
        "file_write": 2,
        "file_edit": 12,
    }
    assert all(a.path for a in session.actions if a.tool == "read")  # Continue names the file `filepath`
    usage = document["usage"]
    messages = session.messages
    assert sum(m.input_tokens for m in messages) == usage["promptTokens"]
    assert sum(m.output_tokens for m in messages) == usage["completionTokens"]
    assert sum(m.cost_usd for m in messages) == pytest.approx(usage["totalCost"])
    assert session.model == "gemini-2.5-pro"


def test_extension_session_reads_its_file_uri_and_a_canceled_command() -> None:
    (session,) = parse_file(AGENT).sessions
    assert (session.cwd, session.repo) == ("c:/Users/acodu/dev/dashboard_mictlan", "dashboard_mictlan")
    assert session.model == "Gemini 2.5 Pro" and session.title == "Custom"
    (action,) = session.actions
    assert (action.tool, action.command, action.failed) == ("run_terminal_command", "ls -R", True)  # canceled


def test_reasoning_is_thinking_and_a_think_title_is_no_title() -> None:
    document = _session(OLLAMA)
    (session,) = parse_file(OLLAMA).sessions
    reply = session.messages[1]
    assert reply.blocks[0].type == "thinking"
    assert reply.blocks[0].text == document["history"][1]["reasoning"]["text"].strip()
    assert not session.title.startswith("<think>") and session.title.startswith("let no_mod_df be a dataframe")
    assert reply.model == "Deepseek-R1-Llama-7b"  # from the prompt log
    assert session.created_ms == document["history"][1]["reasoning"]["startAt"]
