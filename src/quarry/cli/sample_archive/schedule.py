"""When each sample session happened, and which agent ran it: the scenarios spread over the six days before
a given day, in working hours, one after another, each with its agent's model and a session id in the
agent's own form (a UUIDv4 for Claude Code, a UUIDv7 for Codex)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from quarry.cli.sample_archive import billing, ledger, ledger_migration, questions, storefront, tilekit
from quarry.cli.sample_archive.script import Builder, Scenario, Script

CLAUDE_CODE, CODEX = "claude-code", "codex"
SONNET, OPUS = "claude-sonnet-4-5", "claude-opus-4-5"
GPT5_CODEX, GPT51_CODEX = "gpt-5-codex", "gpt-5.1-codex"
DAYS = 6
# Tokens the model sees before the first prompt: the system prompt, tool definitions, AGENTS.md / CLAUDE.md.
_BASELINE = {CLAUDE_CODE: (14_000, 19_000), CODEX: (7_000, 10_000)}


@dataclass(frozen=True, slots=True)
class Session:
    """A session of the archive: its script and the agent whose log it is written as."""

    agent: str
    script: Script


def _plan() -> list[tuple[Scenario, str, str]]:
    """Every scenario with the agent and model that ran it."""
    (pool, flaky, export), (migration,) = ledger.SCENARIOS, ledger_migration.SCENARIOS
    outbox, xdist, retry, due, review88 = billing.SCENARIOS
    range_error, checkout, login, review214 = storefront.SCENARIOS
    casks, zoom, fetch = tilekit.SCENARIOS
    pre_ping, trimpath, tsc, vacuum = questions.SCENARIOS
    return [
        (pool, CLAUDE_CODE, SONNET),
        (flaky, CLAUDE_CODE, SONNET),
        (export, CODEX, GPT5_CODEX),
        (migration, CLAUDE_CODE, OPUS),
        (pre_ping, CODEX, GPT51_CODEX),
        (outbox, CLAUDE_CODE, OPUS),
        (xdist, CODEX, GPT5_CODEX),
        (retry, CLAUDE_CODE, SONNET),
        (due, CODEX, GPT51_CODEX),
        (review88, CLAUDE_CODE, OPUS),
        (vacuum, CLAUDE_CODE, SONNET),
        (range_error, CLAUDE_CODE, SONNET),
        (checkout, CODEX, GPT51_CODEX),
        (login, CLAUDE_CODE, SONNET),
        (review214, CLAUDE_CODE, OPUS),
        (tsc, CLAUDE_CODE, SONNET),
        (casks, CLAUDE_CODE, SONNET),
        (zoom, CODEX, GPT5_CODEX),
        (fetch, CLAUDE_CODE, SONNET),
        (trimpath, CODEX, GPT5_CODEX),
    ]


def sessions(today: date, seed: int) -> list[Session]:
    """The archive's sessions, in time order, on the `DAYS` days before `today` (UTC)."""
    rng = random.Random(seed)
    plan = _plan()
    rng.shuffle(plan)
    cuts = [0, *sorted(rng.sample(range(1, len(plan)), DAYS - 1)), len(plan)]
    out: list[Session] = []
    for day in range(DAYS):
        day_start = datetime.combine(today - timedelta(days=DAYS - day), time(8, 30), tzinfo=UTC)
        now_ms = int(day_start.timestamp() * 1000) + rng.randint(0, 90 * 60_000)
        for scenario, agent, model in plan[cuts[day] : cuts[day + 1]]:
            script = _play(rng, scenario, agent, model, now_ms)
            out.append(Session(agent, script))
            last = script.events[-1]
            now_ms = max(last.time_ms, getattr(last, "end_ms", 0)) + rng.randint(5 * 60_000, 95 * 60_000)
    return out


def _play(rng: random.Random, scenario: Scenario, agent: str, model: str, start_ms: int) -> Script:
    if scenario.delegates and agent != CLAUDE_CODE:
        raise ValueError(f"{scenario.title!r} delegates to subagents: only Claude Code logs can hold it")
    session_id = _uuid7(rng, start_ms) if agent == CODEX else str(uuid.UUID(int=rng.getrandbits(128), version=4))
    script = Script(session_id, scenario.title, scenario.repo, scenario.branch)
    builder = Builder(rng, script, model, start_ms, rng.randint(*_BASELINE[agent]))
    scenario.play(builder)
    return builder.finish()


def _uuid7(rng: random.Random, ms: int) -> str:
    """A UUIDv7 as Codex names its sessions: the time in its first 48 bits, then random bits."""
    value = (ms << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62) | rng.getrandbits(62)
    return str(uuid.UUID(int=value))
