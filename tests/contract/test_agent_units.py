"""The push agents in deploy/agent/ (a systemd user unit, a launchd agent) start a command this CLI
accepts, keep it running, and say how they are installed."""

from __future__ import annotations

import configparser
import plistlib
import shlex
from pathlib import Path

from tests.contract.cli_commands import resolve, role

AGENT = Path(__file__).resolve().parents[2] / "deploy" / "agent"


def test_the_systemd_unit_runs_push_follow_and_restarts_it() -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive in systemd
    unit.read(AGENT / "quarry-push.service")
    program, *args = shlex.split(unit["Service"]["ExecStart"])
    assert program.endswith("/quarry")
    ctx = resolve(args)
    assert (role(ctx), ctx.params["follow"]) == ("push", True)
    assert unit["Service"]["Restart"] == "always"
    assert unit["Install"]["WantedBy"] == "default.target"
    assert "systemctl --user enable --now quarry-push" in (AGENT / "quarry-push.service").read_text()


def test_the_launchd_agent_runs_push_follow_at_login_and_keeps_it_alive() -> None:
    agent = plistlib.loads((AGENT / "com.quarry.push.plist").read_bytes())
    program, *args = agent["ProgramArguments"]
    assert program == "@QUARRY@"
    ctx = resolve(args)
    assert (role(ctx), ctx.params["follow"]) == ("push", True)
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] is True
    assert agent["Label"] == "com.quarry.push"
