"""The sample archive `quarry demo` ingests on a machine without agent logs: a week of one developer's
coding-agent sessions that a person can read, written in the agents' real log formats.

Twenty sessions over the six days before a given day, in four made-up repositories (`ledger`, `billing`,
`storefront`, `tilekit`): fixing failing and flaky tests, adding command-line flags, a schema migration
long enough that the user compacts its context, reviews of pull requests that delegate to an Explore
subagent, documentation, retries with backoff, `database is locked`, a server that would not start, and
short questions. Claude Code sessions (`claude/projects/…`, their subagent runs beside them) and Codex CLI
rollouts (`codex/sessions/…`) are written as those tools write them, so ingesting the archive runs the
real parsers; token usage follows each session's context, and models differ by agent and task.

It is deterministic: the same `today` and `seed` give the same bytes. It is not the benchmarks' corpus
(`quarry.cli.synthetic`), which is generated at scale and must not change between runs.

The modules, by job: `script` (a session before any format, and the builder scenarios tell it with),
`repos` (the repositories), `outputs` (what the tools print), the scenarios (`ledger`,
`ledger_migration`, `billing`, `storefront`, `tilekit`, `questions`), `schedule` (days, agents, models,
ids) and the writers (`claude_code`, `codex`).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from quarry.cli.sample_archive import claude_code, codex
from quarry.cli.sample_archive.schedule import CLAUDE_CODE, sessions

SEED = 2026


def write_sample_archive(folder: Path, today: date, seed: int = SEED) -> list[Path]:
    """Write the archive under `folder` (`claude/projects/…` and `codex/sessions/…`); returns the files."""
    paths: list[Path] = []
    for session in sessions(today, seed):
        if session.agent == CLAUDE_CODE:
            paths += claude_code.write_session(session.script, folder / "claude" / "projects")
        else:
            paths += codex.write_session(session.script, folder / "codex" / "sessions")
    return paths


__all__ = ["SEED", "write_sample_archive"]
