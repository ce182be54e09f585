"""Check a command line against the Quarry CLI without running it: what docker-compose.yml and the
Kubernetes manifests start must be a command the `quarry` entry point accepts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from quarry.cli.main import app
from quarry.core import auth, outgoing


def resolve(args: list[str]) -> Any:
    """Parse argv through the CLI's command tree without running anything: unknown commands or
    options, missing required options and ill-typed values raise click's usage errors. Returns the
    (click) context of the leaf command: `role(ctx)` names it, `ctx.params` holds the parsed options."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("quarry", list(args))
    while hasattr(command, "resolve_command"):
        name, command, rest = command.resolve_command(ctx, ctx._protected_args + ctx.args)
        assert command is not None, f"unknown command {name!r} in {args}"
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


def role(ctx: Any) -> str:
    """`node index`, `cluster init`, …: the leaf command's path without the program name."""
    return str(ctx.command_path).removeprefix("quarry").strip()


def node_security(ctx: Any, local: Callable[[Path], Path]) -> auth.NodeSecurity:
    """The authentication the node `ctx` (a resolved `node …` command) sets up as it starts, its
    --tokens and --cluster-key-file read at `local(path)` (where a test put what the deployment
    mounts there): raises where the node would refuse to start. This process's node security is left
    as it was."""
    tokens, key = ctx.params.get("tokens"), ctx.params.get("cluster_key_file")
    saved = auth.security()
    try:
        return auth.configure_node(
            role(ctx).removeprefix("node "),
            ctx.params["host"],
            None if tokens is None else local(tokens),
            None if key is None else local(key),
        )
    finally:
        auth._security = saved
        outgoing.configure(saved.outgoing)
