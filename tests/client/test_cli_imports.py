"""The `quarry` command imports only what the command it runs needs (issue 13): `--help` loads no gRPC,
protobuf, query language or OpenTelemetry, and a search none of OpenTelemetry, MCP, the HTTP server,
numpy, Tantivy or FAISS. Each check runs in a fresh interpreter and reads sys.modules, so a heavy
top-level import added back to the CLI (or to what it imports) fails here. Then the CLI's one shortcut
against Typer's own way: an app holding only the command run (main.app_for)."""

from __future__ import annotations

import json
import subprocess
import sys

# Modules no command needs at start: the ones that run them import them inside the command.
NEVER_AT_START = (
    "opentelemetry",
    "opentelemetry.sdk",
    "opentelemetry.instrumentation",
    "lark",
    "quarry.dsl.parser",
    "mcp",
    "uvicorn",
    "starlette",
    "numpy",
    "tantivy",
    "faiss",
    "torch",
    "nats",
    "yaml",
    "hypothesis",
    "quarry.cli.otel_export",
    "quarry.cli.local",
)
# What a search needs and `--help` does not.
NOT_FOR_HELP = ("grpc", "google.protobuf", "quarry.core.errors", "quarry.client.client", "quarry.dsl")
# A search imports quarry.dsl.shell (join_words), and with it the package quarry.dsl, whose __init__
# imports the compiler and so Lark; it does not build the parser unless the query holds `where`.
SEARCH_IMPORTS_ANYWAY = ("lark", "quarry.dsl.parser")

_PROBE = """
import json, sys
sys.argv = ["quarry", *json.loads(sys.argv[1])]
from quarry.cli import main
try:
    {action}
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.__stderr__)
"""


def _loaded(action: str, args: list[str] = ()) -> set[str]:
    """The modules a fresh interpreter holds after importing the CLI and doing `action`."""
    code = _PROBE.format(action=action)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))], capture_output=True, text=True, timeout=120
    )
    last = done.stderr.strip().splitlines()[-1]
    return set(json.loads(last))


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if name in loaded)


def test_importing_the_cli_loads_nothing_heavy() -> None:
    loaded = _loaded("pass")
    assert _heavy(loaded, NEVER_AT_START + NOT_FOR_HELP + ("rich",)) == []


def test_help_loads_nothing_heavy() -> None:
    loaded = _loaded("main.run()", ["--help"])
    assert "typer._click.textwrap" in loaded or "typer._click._textwrap" in loaded  # Click wrapped the help
    # Click's plain help: Typer's rich one would import rich's markdown and traceback modules.
    assert _heavy(loaded, NEVER_AT_START + NOT_FOR_HELP + ("typer.rich_utils", "rich.markdown")) == []


def test_every_sub_command_help_loads_nothing_heavy() -> None:
    for command in ("node", "mark", "embed", "cluster", "sessions", "export", "token", "read", "facets"):
        loaded = _loaded("main.run()", [command, "--help"])
        assert _heavy(loaded, (*NEVER_AT_START, "typer.rich_utils")) == [], command  # the root's plain help


def test_a_search_loads_no_tracing_parser_or_server(tmp_path) -> None:
    """`quarry search sqlite` with no cluster under its home: the command runs as far as the client
    (which finds no cluster) and fails; it has imported what a search imports, and nothing more."""
    home = tmp_path / "home"
    loaded = _loaded("main.run()", ["--home", str(home), "search", "sqlite"])
    assert "quarry.client.client" in loaded  # it got as far as the client
    heavy = [name for name in NEVER_AT_START if name not in SEARCH_IMPORTS_ANYWAY]
    assert _heavy(loaded, tuple(heavy)) == []
    # A client checks no caller: the token store and the server side of authentication stay unloaded.
    assert _heavy(loaded, ("quarry.core.auth", "quarry.core.tokens")) == []


def test_the_help_spells_the_token_grants_as_the_token_store_does() -> None:
    from quarry.cli import tokens
    from quarry.core.tokens import GRANTS

    assert tokens.GRANTS == GRANTS


def test_the_app_of_one_command_parses_helps_and_fails_as_the_whole_app() -> None:
    """run() hands Typer only the command a command line names (main.app_for): help, usage errors
    and exit codes are those of the whole app."""
    from typer.testing import CliRunner

    from quarry.cli import main

    runner = CliRunner()
    lines = [
        *([name, "--help"] for name in ("search", "up", "down", "status", "ingest", "delete", "demo", "mcp")),
        *([name, "--help"] for name in ("read", "facets", "node", "mark", "embed", "cluster", "sessions", "export")),
        ["token", "--help"],
        ["token", "create", "--help"],
        ["mark", "candidates", "--help"],
        ["node", "index", "--help"],
        ["--format", "json", "search", "--help"],
        ["search", "--limit", "0", "sqlite"],
        ["search", "--limit", "x", "sqlite"],
        ["search"],
        ["token", "create"],
        ["token", "nonsense"],
        ["--format", "bad", "status"],
        ["--help"],
        ["--help", "search"],
    ]
    for args in lines:
        only = main.app_for(args)
        if args[0] not in ("--help",):
            assert only is not main.app, args  # the reduced app is what these run
        whole = runner.invoke(main.app, args, prog_name="quarry")
        one = runner.invoke(only, args, prog_name="quarry")
        assert (one.exit_code, one.output) == (whole.exit_code, whole.output), args
