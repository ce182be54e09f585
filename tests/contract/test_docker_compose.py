"""docker-compose.yml parses, and every service command it names is a command the CLI accepts."""

from __future__ import annotations

import pytest
import typer
import yaml

from quarry.client.cli.main import app
from tests.shared_paths import REPO


def _resolve(args: list[str]):
    """Parse argv through the CLI's command tree without running anything: unknown commands or
    options, missing required options and ill-typed values raise click's usage errors."""
    command = typer.main.get_command(app)
    ctx = command.make_context("quarry", list(args))
    while hasattr(command, "resolve_command"):
        name, command, rest = command.resolve_command(ctx, ctx._protected_args + ctx.args)
        assert command is not None, f"unknown command {name!r} in {args}"
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


def test_every_quarry_service_command_exists_in_the_cli():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    roles = set()
    for name, service in services.items():
        if service.get("image", "").startswith("otel/"):
            continue
        ctx = _resolve(service["command"])
        roles.add(ctx.info_name)
        assert ctx.params.get("host") == "0.0.0.0", f"{name} must listen beyond loopback in a container"
    assert roles == {"index", "vector", "ingest", "query"}
    assert "otel-collector" in services


def test_an_unknown_option_in_a_service_command_would_be_caught():
    with pytest.raises(Exception) as raised:
        _resolve(["node", "index", "--partition", "0", "--data", "/d", "--no-such-option"])
    assert type(raised.value).__name__ == "NoSuchOption"
    with pytest.raises(Exception) as missing:
        _resolve(["node", "index", "--partition", "0"])
    assert type(missing.value).__name__ == "MissingParameter"
