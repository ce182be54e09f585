"""Qwen Code sessions (`~/.qwen/projects/<cwd>/chats/<id>.jsonl`) on real logs: told apart from Claude Code's
look-alike records, with counts checked against the records counted here, straight from the JSON."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from quarry.ingest.parse import parse_file
from tests.ingest.support import roles
from tests.shared_paths import REAL_LOGS, needs_shared

pytestmark = needs_shared
CHATS = REAL_LOGS / "qwen"
SHORT = CHATS / (
    "uncommonpope-png__New-backend-pope__.qwen__projects__-data-data-com-termux-files-home__chats__"
    "4afe6662-3c8a-4b5e-974c-5d8f9e50d2a6.jsonl"
)
LONG = CHATS / (
    "uncommonpope-png__New-backend-pope__.qwen__projects__-data-data-com-termux-files-home__chats__"
    "c265a5ef-324a-4ed1-9b12-080f9f202924.jsonl"
)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parts(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [part for r in records if r["type"] == kind for part in r["message"]["parts"]]


def test_a_chat_is_read_as_qwen_code_with_its_calls_and_unanswered_ones() -> None:
    records = _records(SHORT)
    kinds = Counter(r["type"] for r in records)
    calls = [p["functionCall"] for p in _parts(records, "assistant") if "functionCall" in p]
    answers = [p["functionResponse"] for p in _parts(records, "tool_result")]
    exits = [int(m) for a in answers for m in re.findall(r"^Exit Code: (\d+)$", a["response"]["output"], re.M)]
    result = parse_file(SHORT)
    assert result.format == "qwen-code" and result.issues == []  # not Claude Code, whose records look alike
    (session,) = result.sessions
    assert session.id == "qwen-code-session:4afe6662-3c8a-4b5e-974c-5d8f9e50d2a6"
    assert roles(session) == {"user": kinds["user"], "assistant": kinds["assistant"], "tool": kinds["tool_result"]}
    assert (session.cwd, session.repo, session.branch) == ("/data/data/com.termux/files/home", "home", "main")
    assert session.model == "coder-model" and session.title == "check profit brain"
    assert len(session.actions) == len(calls) == 7 and len(answers) == 5  # two calls never answered
    assert [a.exit_code for a in session.actions if a.HasField("exit_code")] == exits
    assert sum(a.failed for a in session.actions) == sum(code != 0 for code in exits) == 1
    assert {a.category for a in session.actions} == {"shell"}


def test_tokens_thoughts_and_tools_match_the_records() -> None:
    records = _records(LONG)
    usage = [r["usageMetadata"] for r in records if r["type"] == "assistant"]
    parts = _parts(records, "assistant")
    (session,) = parse_file(LONG).sessions
    messages = session.messages
    assert sum(m.cache_read_tokens for m in messages) == sum(u["cachedContentTokenCount"] for u in usage)
    assert sum(m.input_tokens for m in messages) == sum(
        u["promptTokenCount"] - u["cachedContentTokenCount"] for u in usage
    )
    assert sum(m.output_tokens for m in messages) == sum(u["totalTokenCount"] - u["promptTokenCount"] for u in usage)
    thinking = [b.text for m in messages for b in m.blocks if b.type == "thinking"]
    assert thinking == [p["text"] for p in parts if p.get("thought")]
    tools = Counter(p["functionCall"]["name"] for p in parts if "functionCall" in p)
    assert Counter(a.tool for a in session.actions) == tools
    assert Counter(a.category for a in session.actions)["file_read"] == tools["read_file"] == 5
    assert session.created_ms == 1774214657940  # 2026-03-22T21:24:17.940Z, the first record
