"""The `quarry` command line. Options common to every command go before it, as in git:
`quarry [--home DIR] [--cluster URL | --context NAME] [--format plain|json|ndjson|yaml|csv] [--explain]
COMMAND …`; a query given without a command is a search (`quarry 'sqlite locking'`), or rows for a unit
query (`quarry 'files where …'`); with --explain, the query's AST and plan instead of its results.

This module assembles the app (every command and group, each in its own module), parses the global
options into quarry.cli.state, and runs a command line: the default command, the app of the one
command run, a typed error printed as such."""

from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

# The commands' modules import only typer and light modules of the CLI at the top: what a command needs
# (gRPC, protobuf, rich, the query language, OpenTelemetry) is imported when it runs (issue 13;
# tests/client/test_cli_imports.py).
# They share the global options and the cluster through quarry.cli.state, not through this module.
from quarry.cli.cluster import cluster_app
from quarry.cli.context import context_app
from quarry.cli.embed import embed_app
from quarry.cli.export import export_app
from quarry.cli.facets import facets
from quarry.cli.ingest import delete, ingest, push
from quarry.cli.lazy import lazy_module, stderr, stdout
from quarry.cli.mark import mark_app
from quarry.cli.node import host_port, node_app
from quarry.cli.read import read
from quarry.cli.search import search
from quarry.cli.sessions import sessions_app
from quarry.cli.state import cluster_target, open_client, settings
from quarry.cli.tokens import token_app
from quarry.cli.up import down, status, up
from quarry.cli.usage import usage

if TYPE_CHECKING:
    from quarry.client.client import QuarryClient

render = lazy_module("quarry.cli.render")

app = typer.Typer(
    # Click's plain help, for every group and command under it: Typer's rich help imports ~90 ms of rich
    # (markdown, tracebacks) per start.
    rich_markup_mode=None,
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Quarry: search the session logs of AI coding agents.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(node_app, name="node")
app.add_typer(mark_app, name="mark")
app.add_typer(embed_app, name="embed")
app.add_typer(cluster_app, name="cluster")
app.add_typer(sessions_app, name="sessions")
app.add_typer(export_app, name="export")
app.add_typer(token_app, name="token")
app.add_typer(context_app, name="context")
app.command("read")(read)
app.command("facets")(facets)
app.command("usage")(usage)
for command in (up, down, status, ingest, push, delete, search):
    app.command()(command)


@app.callback()
def main(
    home: Annotated[
        Path | None, typer.Option("--home", help="Data directory (default: $QUARRY_HOME, else per-user).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="plain | json | ndjson | yaml | csv")] = "plain",
    explain: Annotated[
        bool, typer.Option("--explain", help="Show the query's typed AST and plan instead of running it.")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="The cluster to talk to: grpcs://HOST:PORT (TLS) or grpc://HOST:PORT, ?ingest=HOST:PORT "
            "(default: $QUARRY_URL, else the context).",
            show_default=False,
        ),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option(
            "--context",
            help="A named cluster (`quarry context list`; `local`: the cluster under --home) "
            "(default: $QUARRY_CONTEXT, else the current one).",
            show_default=False,
        ),
    ] = None,
    ca: Annotated[
        Path | None,
        typer.Option(
            "--ca",
            help="The CA file a grpcs:// cluster is verified with (default: $QUARRY_TLS_CA, the context's, "
            "else the system's roots).",
            show_default=False,
        ),
    ] = None,
    allow_plaintext: Annotated[
        bool,
        typer.Option(
            "--allow-plaintext", help="Send tokens and sessions over a grpc:// URL to a host beyond loopback."
        ),
    ] = False,
) -> None:
    from quarry.core.config import resolve_home

    if fmt not in render.FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(render.FORMATS)}", param_hint="--format")
    settings.home = resolve_home(home)
    settings.format = fmt
    settings.explain = explain
    settings.cluster, settings.context, settings.ca = cluster, context, ca
    settings.allow_plaintext = allow_plaintext
    cluster_target.cache_clear()  # chosen again for every command run in this process (tests run many)


@app.command()
def demo() -> None:
    """Ingest the agent logs of this machine (a generated sample archive when it has none) into the
    running cluster and show a few example queries."""
    from quarry.cli.demo import run_demo

    with open_client() as client:
        run_demo(client, settings.home, settings.format, stdout())


GLOBAL_OPTIONS_WITH_VALUE = ("--home", "--format", "-f", "--cluster", "--context", "--ca")


GLOBAL_FLAGS = ("--explain", "--allow-plaintext", "--help")
GLOBAL_OPTION_PREFIXES = tuple(f"{option}=" for option in GLOBAL_OPTIONS_WITH_VALUE if option.startswith("--"))


@app.command()
def mcp(
    http: Annotated[
        str, typer.Option("--http", help="Serve streamable HTTP on HOST:PORT instead of stdio.", show_default=False)
    ] = "",
    auth: Annotated[
        bool,
        typer.Option(
            "--auth", help="--http: every request needs `Authorization: Bearer <token>`, and runs with that token."
        ),
    ] = False,
) -> None:
    """Serve Quarry's API as MCP tools to an agent (the official MCP SDK), for the cluster --cluster or
    --context names (else the local one): over stdio with $QUARRY_TOKEN or the context's token; over
    streamable HTTP with --auth, each request with its caller's own token. Without --auth, HTTP serves
    only on loopback and only when the server holds no token of its own (it would lend it to every
    caller that reaches the port)."""
    from quarry.cli.mcp_server import build_server, check_http_without_auth
    from quarry.client.client import QuarryClient

    @functools.lru_cache(maxsize=256)
    def client_for(token: str | None) -> QuarryClient:
        # Resolved at the first call, not at start: an agent may start `quarry mcp` before `quarry up`.
        return QuarryClient.for_target(cluster_target() if token is None else cluster_target().with_token(token))

    if not http:
        build_server(client_for).run("stdio")
        return
    host, port = host_port(http, "--http")
    if not auth:
        check_http_without_auth(host, cluster_target().token)
    url = f"http://{host}:{port}" if auth else None
    build_server(client_for, auth_url=url).run("streamable-http", host=host, port=port)


def with_default_command(argv: list[str]) -> list[str]:
    """Insert `search` where the global options end, unless a command follows them: `quarry --lane
    actions pytest` is `quarry search --lane actions pytest`."""
    commands = {c.name or c.callback.__name__ for c in app.registered_commands} | {
        g.name for g in app.registered_groups if g.name
    }
    i = _command_index(argv)
    if i is None:
        return argv
    return argv if argv[i] in commands else [*argv[:i], "search", *argv[i:]]


def _command_index(argv: list[str]) -> int | None:
    """Where the global options end: the index of the command word, None when there is none."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in GLOBAL_OPTIONS_WITH_VALUE:
            i += 2
        elif word in GLOBAL_FLAGS or word.startswith(GLOBAL_OPTION_PREFIXES):
            i += 1
        else:
            return i
    return None


def app_for(argv: list[str]) -> typer.Typer:
    """`app` holding only the command (or group) `argv` runs. At every start Typer reads the signature
    of each command the app holds to build its click commands, ~40 of them here: a third of a search's
    start once its imports were made lazy (issue 13), for one command run. The global options and the
    command's own parsing, help and errors are the same; `quarry --help …`, a bare `quarry` and
    anything else get the whole app."""
    i = _command_index(argv)
    if i is None or "--help" in argv[:i]:
        return app
    name = argv[i]
    only = copy.copy(app)
    only.registered_commands = [
        c for c in app.registered_commands if (c.name or typer.main.get_command_name(c.callback.__name__)) == name
    ]
    only.registered_groups = [g for g in app.registered_groups if g.name == name]
    return only if len(only.registered_commands) + len(only.registered_groups) == 1 else app


def run() -> None:
    argv = with_default_command(sys.argv[1:])
    try:
        app_for(argv)(args=argv, prog_name="quarry")
    except Exception as error:
        # quarry.core.errors (and so gRPC) is imported by the commands that can raise its QuarryError.
        errors = sys.modules.get("quarry.core.errors")
        if errors is None or not isinstance(error, errors.QuarryError):
            raise
        if settings.format in ("json", "ndjson", "yaml"):
            render.emit_document({"error": error.as_dict()}, settings.format)
        else:
            from rich.markup import escape

            # One line each, however long: the caret lines up under the query.
            stderr().print(f"[red]error[/red] {escape(str(error))}", soft_wrap=True)
            if error.offset is not None and settings.query:
                stderr().print(f"  {escape(settings.query)}\n  {' ' * error.offset}^", highlight=False, soft_wrap=True)
            if error.correction:
                stderr().print(f"  did you mean: {escape(error.correction)}", highlight=False, soft_wrap=True)
        sys.exit(2)
