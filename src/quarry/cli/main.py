"""The `quarry` command line. Options common to every command go before it, as in git:
`quarry [--home DIR] [--cluster URL | --context NAME] [--format plain|json|ndjson|yaml|csv] [--explain]
COMMAND …`; a query given without a command is a search (`quarry 'sqlite locking'`), or rows for a unit
query (`quarry 'files where …'`); with --explain, the query's AST and plan instead of its results."""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

# The sub-apps' modules import only typer at the top: what a command needs (gRPC, protobuf, rich,
# the query language, OpenTelemetry) is imported when it runs (issue 13; tests/client/test_cli_imports.py).
from quarry.cli.cluster import cluster_app
from quarry.cli.context import context_app
from quarry.cli.embed import embed_app
from quarry.cli.export import export_app
from quarry.cli.facets import facets
from quarry.cli.lazy import lazy_module, stderr, stdout
from quarry.cli.lines import stdout_lines
from quarry.cli.mark import mark_app
from quarry.cli.node import HttpAllowedHost, check_http_allowed_hosts, host_port, node_app
from quarry.cli.read import read
from quarry.cli.sessions import sessions_app
from quarry.cli.tokens import token_app

if TYPE_CHECKING:
    from rich.console import Console

    from quarry.cli.push import Pusher
    from quarry.client.client import QuarryClient
    from quarry.client.target import Target
    from quarry.v1 import query_pb2
    from quarry.v1.ingest_pb2 import IngestProgress, IngestReport

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


def __getattr__(name: str) -> Console:
    """`console` and `err_console` (what the sub-apps print to), made on first use: rich is imported
    when a command prints, not for `--help`."""
    if name == "console":
        return stdout()
    if name == "err_console":
        return stderr()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Settings:
    home: Path
    format: str = "plain"
    query: str = ""  # the query being run, to point at an error's position
    explain: bool = False
    cluster: str | None = None  # --cluster URL
    context: str | None = None  # --context NAME
    ca: Path | None = None  # --ca FILE
    allow_plaintext: bool = False


settings = Settings()


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
    _target.cache_clear()  # chosen again for every command run in this process (tests run many)


@functools.cache
def _target() -> Target:
    """The cluster this command talks to (quarry.client.target: --cluster, $QUARRY_URL, --context,
    $QUARRY_CONTEXT, the current context, else the local cluster under --home)."""
    from quarry.client.target import CLI_NAMES, resolve_target

    return resolve_target(
        settings.cluster,
        settings.context,
        ca=settings.ca,
        home=settings.home,
        allow_plaintext=settings.allow_plaintext,
        names=CLI_NAMES,
    )


def _client() -> QuarryClient:
    from quarry.client.client import QuarryClient

    return QuarryClient.for_target(_target())


@app.command()
def up(
    detach: Annotated[bool, typer.Option("--detach", "-d", help="Start and return; stop with `quarry down`.")] = False,
    embedder: Annotated[
        str,
        typer.Option(
            help="minilm (ONNX int8; a torch-made store stays torch) | minilm-torch | none | openai:<base-url>#<model>"
        ),
    ] = "minilm",
    embed_mode: Annotated[
        str, typer.Option("--embed-mode", help="auto (embed in the background) | manual (on `quarry embed backfill`)")
    ] = "auto",
    log: Annotated[
        str, typer.Option("--log", help="direct (the embedded default: no log) | nats (replicated, on NATS JetStream)")
    ] = "direct",
    index_nodes: Annotated[int, typer.Option("--index-nodes", min=1, max=32, help="--log nats: index nodes.")] = 3,
    replicas: Annotated[int, typer.Option(min=1, max=5, help="--log nats: copies of each partition.")] = 2,
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1024,
            help="Partitions: the embedded default's index nodes, one each (default 2, at most 64); "
            "--log nats: spread over --index-nodes, fixed at creation (default 16).",
        ),
    ] = None,
    nats_servers: Annotated[
        int, typer.Option("--nats-servers", min=1, max=5, help="--log nats: NATS servers (the log on up to 3).")
    ] = 3,
    http: Annotated[
        str, typer.Option("--http", help="Serve the HTTP JSON API on HOST:PORT (the query node).", show_default=False)
    ] = "",
    http_allowed_host: HttpAllowedHost = None,
    auth: Annotated[
        bool,
        typer.Option(
            "--auth",
            help="Require bearer tokens (`quarry token create`) on every call; on anyway once a token exists.",
        ),
    ] = False,
    tls_dir: Annotated[
        Path | None,
        typer.Option(
            "--tls-dir",
            help="Serve and call with TLS: node.pem, node.key (naming 127.0.0.1) and ca.pem in this folder.",
        ),
    ] = None,
    ingest_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--ingest-root",
            help="A folder whose files `quarry ingest` may read, repeatable (default: your home folder).",
        ),
    ] = None,
) -> None:
    """Start a local cluster and supervise it (a node that dies is restarted). The embedded default: an index
    node per partition, a vector, an ingest and a query node. With --log nats: NATS servers, index nodes holding
    replicated partitions, and the other nodes on the log. Once `quarry token create` made a token (or
    with --auth), every call needs a token and node-to-node calls a cluster key."""
    from quarry.cli.local import LocalCluster
    from quarry.core.tls import TlsFiles

    if detach:
        _up_in_background()
        return
    check_http_allowed_hosts(http, http_allowed_host or [])  # a bad address fails here, not in the node's log
    cluster = LocalCluster(
        settings.home,
        embedder=embedder,
        embed_mode=embed_mode,
        log=log,
        index_nodes=index_nodes,
        replicas=replicas,
        partitions=partitions,
        nats_servers=nats_servers,
        supervise=True,
        http=http,
        http_allowed_hosts=http_allowed_host or [],
        auth=True if auth else None,
        tls=TlsFiles.in_dir(tls_dir.resolve()) if tls_dir else None,
        ingest_roots=[root.resolve() for root in ingest_root] if ingest_root else None,
    )
    import signal
    import threading

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        info = cluster.start()
        stdout().print(f"quarry cluster up under {settings.home}: query {info.query}, ingest {info.ingest}")
        stdout().print("Ctrl-C stops every node")
        stop.wait()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a foreground cluster is meant to stop
    finally:
        cluster.stop()
        stdout().print("stopped")


def _up_in_background() -> None:
    """`quarry up --detach`: the same command without --detach, as a background process that supervises
    the nodes; returns once it recorded the cluster (or failed, with its log)."""
    import subprocess
    import time

    from quarry.cli.local import process_alive
    from quarry.core.config import ClusterInfo
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    argv = [a for a in sys.argv[1:] if a not in ("--detach", "-d")]
    if "--home" not in argv:
        argv = ["--home", str(settings.home), *argv]
    (settings.home / "logs").mkdir(parents=True, exist_ok=True)
    log_path = settings.home / "logs" / "supervisor.log"
    with open(log_path, "ab") as log:
        background = subprocess.Popen(
            [sys.executable, "-m", "quarry.cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 300
    while True:
        info = ClusterInfo.load(settings.home)
        if info is not None and info.supervisor == background.pid:
            stdout().print(f"quarry cluster up under {settings.home}: query {info.query}, ingest {info.ingest}")
            return
        if background.poll() is not None or time.monotonic() > deadline:
            if process_alive(background.pid):
                background.terminate()
            tail = log_path.read_text(errors="replace")[-3000:]
            raise QuarryError(errors_pb2.INTERNAL, f"the cluster did not start (log {log_path}):\n{tail}")
        time.sleep(0.1)


@app.command()
def down() -> None:
    """Stop the cluster started with `quarry up --detach`."""
    from quarry.cli.local import stop_recorded

    stopped = stop_recorded(settings.home)
    stdout().print(f"stopped {', '.join(stopped)}" if stopped else f"no cluster was running under {settings.home}")


@app.command()
def status() -> None:
    """Every node: up, partition, sessions, documents, vectors, embedding backlog; for the local cluster, how
    often its supervisor restarted each."""
    from quarry.core.config import ClusterInfo

    target = _target()
    recorded = ClusterInfo.load(target.home) if target.home is not None else None
    with _client() as client:
        render.status(client.status(), settings.format, stdout(), recorded.restarts if recorded else None)


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders; none: every tool's standard locations and this folder's session files."),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", help="Keep watching: ingest files as they appear or grow (searchable within 2 s) until Ctrl-C."
        ),
    ] = False,
    ack: Annotated[
        str,
        typer.Option(help="applied (searchable when it returns) | log (in the replicated log; a cluster on the log)"),
    ] = "applied",
    scope: Annotated[
        str, typer.Option(help="The scope the sessions go into (default: the token's one writable scope).")
    ] = "",
) -> None:
    """Ingest the session logs of Claude Code, Codex, Gemini CLI, Cursor, Copilot Chat, Cline, Roo Code,
    OpenCode, Crush, Aider and Goose, and ChatGPT and Claude.ai exports (format found from content), read
    by the ingest node from its own machine: for the cluster `quarry up` runs here, or an operator's (its
    --ingest-root folders; an admin token). To send this machine's logs to a remote cluster, `quarry push`.
    A file unchanged since its last ingest is skipped; one that grew is ingested again. Exits 1 when a
    file failed."""
    from quarry.client.ingest_outcome import failures

    standard = not paths
    if standard:
        from quarry.ingest.discover import project_locations  # only here: it loads every parser

        paths = project_locations(Path.cwd())
    with _client() as client:
        events = client.ingest_paths(paths, standard_locations=standard, follow=follow, ack=ack, scope=scope)
        try:
            if not follow:
                report = _ingest_once(events)
                if report is not None and failures(report):
                    raise typer.Exit(1)  # the report named each file that failed
            elif settings.format == "plain":
                _ingest_once(events)
                stderr().print("following; Ctrl-C stops")
                for event in events:
                    render.ingest_event(event, settings.format, stdout())
            else:
                for event in events:
                    render.ingest_event(event, settings.format, stdout())
        except KeyboardInterrupt:
            if not follow:
                raise
            stderr().print("stopped following")
        finally:
            events.close()  # cancels the call


@app.command()
def push(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders of this machine; none: every tool's standard locations and this folder's."
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", help="Keep watching: send files as they appear or grow, until Ctrl-C or SIGTERM."),
    ] = False,
    scope: Annotated[
        str, typer.Option(help="The scope the sessions go into (default: the token's one writable scope).")
    ] = "",
    ack: Annotated[
        str,
        typer.Option(help="applied (searchable when it returns) | log (in the replicated log; a cluster on the log)"),
    ] = "applied",
    retry_for: Annotated[
        float,
        typer.Option(
            "--retry-for", min=0, help="Seconds a batch the cluster could not take is sent again (--follow: for ever)."
        ),
    ] = 600.0,
) -> None:
    """Send this machine's agent logs to the cluster: parsed here (the formats `quarry ingest` reads),
    sent with your token. What the cluster acknowledged is remembered, so a push stopped anywhere resumes
    where it stopped and an unchanged file costs one stat. Exits 1 when a file failed."""
    import signal
    import threading

    from rich.markup import escape

    from quarry.cli.push import Pusher
    from quarry.client.ingest_outcome import failures

    if not paths:
        from quarry.ingest.discover import project_locations, standard_locations

        paths = [*standard_locations(), *project_locations(Path.cwd())]
    roots = [path.expanduser().absolute() for path in paths]

    def warn(text: str) -> None:
        stderr().print(f"[yellow]push[/yellow] {escape(text)}", soft_wrap=True)

    with _client() as client, Pusher(client, scope, ack, retry_for=None if follow else retry_for, warn=warn) as pusher:
        if not follow:
            report = _pushed_with_progress(pusher, roots)
            render.ingest_report(report, settings.format, stdout())
            if failures(report):
                raise typer.Exit(1)
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if settings.format == "plain":
            stderr().print(f"pushing {len(roots)} location(s) into scope {pusher.scope}; Ctrl-C stops")
        try:
            pusher.follow(roots, lambda report: _push_round(report), stop)
        except KeyboardInterrupt:
            stderr().print("stopped following")


def _pushed_with_progress(pusher: Pusher, roots: list[Path]) -> IngestReport:
    """One push with a progress bar over its files."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=stderr(), transient=True
    )
    with progress:
        task = progress.add_task("pushing", total=None)
        return pusher.push(roots, lambda done, total: progress.update(task, total=total, completed=done))


def _push_round(report: IngestReport) -> None:
    """A followed push's round: the report when it wrote or found something (plain), every one otherwise."""
    from quarry.v1.ingest_pb2 import IngestProgress

    if settings.format != "plain":
        render.ingest_event(IngestProgress(report=report), settings.format, stdout())
    elif report.sessions_written or report.issues or report.skipped:
        render.ingest_report(report, settings.format, stdout())


def _ingest_once(events: Iterator[IngestProgress]) -> IngestReport | None:
    """Up to the first report: a progress bar over the files, then the report (returned)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    report = None
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=stderr(), transient=True
    )
    with progress:
        task = progress.add_task("ingesting", total=None)
        for event in events:
            if event.HasField("file"):
                progress.update(task, total=event.file.files_total, completed=event.file.files_done)
            else:
                report = event.report
                break
    if report is not None:
        render.ingest_report(report, settings.format, stdout())
    return report


@app.command()
def delete(
    refs: Annotated[list[str], typer.Argument(help="Sessions: session:<id> refs or session ids.")],
    ack: Annotated[str, typer.Option(help="applied (gone from searches when it returns) | log")] = "applied",
) -> None:
    """Remove sessions from the archive: from every replica of their partition, their vectors, and (in a
    cluster on the log) from the log, where a tombstone takes their place."""
    with _client() as client:
        render.delete_report(client.delete(refs, ack=ack), settings.format, stdout())


@app.command()
def search(
    query: Annotated[list[str], typer.Argument(help="A query in the Quarry query language.")],
    lane: Annotated[
        str | None,
        typer.Option(help="auto (default: lexical) | dialogue | actions (tool calls and output) | semantic | hybrid"),
    ] = None,
    lexical: Annotated[bool, typer.Option("--lexical", help="Shortcut for --lane dialogue (keywords only).")] = False,
    semantic: Annotated[
        bool, typer.Option("--semantic", help="Shortcut for --lane semantic (the query as a similarity probe).")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    cursor: Annotated[str, typer.Option(help="Continue a walk: the next_cursor of the previous page.")] = "",
    plain: Annotated[
        bool,
        typer.Option("--plain", help="Read the text as prose whatever it holds: its words, no operators or fields."),
    ] = False,
    syntax: Annotated[
        bool,
        typer.Option("--syntax", help="Read the text as the query language, even when it looks like prose."),
    ] = False,
    controls: Annotated[
        str | None,
        typer.Option(
            "--controls",
            help='Search controls as JSON: {"admission": {...}, "fusion": {"method": "rrf", "params": '
            '{"rank_constant": 60, "weights": {"text": 2}}}, "min_score": 0.2, "include_scores": true}.',
        ),
    ] = None,
    min_score: Annotated[
        float | None, typer.Option("--min-score", help="Drop hits whose retrieval score (0..1) is below this.")
    ] = None,
    include_scores: Annotated[
        bool, typer.Option("--include-scores", help="Show each hit's retrieval score and raw channel scores.")
    ] = False,
    coverage: Annotated[
        float | None, typer.Option("--coverage", help="Lexical admission: the share of query words a session needs.")
    ] = None,
    min_matched_terms: Annotated[
        int | None, typer.Option("--min-matched-terms", help="Lexical admission: at least this many words.")
    ] = None,
    min_similarity: Annotated[
        float | None, typer.Option("--min-similarity", help="Vector admission: cosine similarity -1..1.")
    ] = None,
    fusion: Annotated[str | None, typer.Option("--fusion", help="rrf (default) | minmax (hybrid lane).")] = None,
    rank_constant: Annotated[int | None, typer.Option("--rank-constant", help="rrf's k (default 60).")] = None,
    weight: Annotated[
        list[str] | None, typer.Option("--weight", help="CHANNEL=W: text, action or vector weight; repeatable.")
    ] = None,
    require_complete: Annotated[
        bool,
        typer.Option("--require-complete", help="Fail (PARTITION_UNAVAILABLE) rather than answer without a partition."),
    ] = False,
) -> None:
    """Ranked sessions; a unit query (`messages|actions|blocks|files|assertions|runs|observed-events|
    context-snapshots|delegations where …`) returns rows, or groups for `… | group by FIELD | count`."""
    from quarry.dsl.shell import join_words

    text = join_words(query)
    reading = search_reading(plain=plain, syntax=syntax)
    settings.query = text
    chosen = search_lane(lane, lexical=lexical, semantic=semantic)
    flags: dict[tuple[str, ...], tuple[str, object]] = {}
    for path, flag, value in (
        (("min_score",), "--min-score", min_score),
        (("include_scores",), "--include-scores", True if include_scores else None),
        (("admission", "lexical_coverage"), "--coverage", coverage),
        (("admission", "lexical_min_matched_terms"), "--min-matched-terms", min_matched_terms),
        (("admission", "min_semantic_similarity"), "--min-similarity", min_similarity),
        (("fusion", "method"), "--fusion", fusion),
        (("fusion", "params", "rank_constant"), "--rank-constant", rank_constant),
    ):
        if value is not None:
            flags[path] = (flag, value)
    for channel, value in parse_weights(weight or []).items():
        flags[("fusion", "params", "weights", channel)] = ("--weight", value)
    chosen_controls = search_controls(controls, flags)
    with _client() as client:
        if settings.explain:
            render.explain(client.explain(text, reading), settings.format, stdout())
        elif is_unit_query(text, reading):
            envelope = client.query_units(
                text, limit=limit, offset=offset, require_complete=require_complete, cursor=cursor
            )
            render.unit_envelope(envelope, settings.format, stdout_lines())
        else:
            envelope = client.search(
                text,
                lane=chosen,
                limit=limit,
                offset=offset,
                cursor=cursor,
                controls=chosen_controls,
                require_complete=require_complete,
                reading=reading,
            )
            render.search_envelope(envelope, settings.format, stdout_lines())


def search_reading(*, plain: bool, syntax: bool) -> str:
    """SearchRequest.reading of the flags: prose (--plain), query (--syntax), or "" (the text decides)."""
    if plain and syntax:
        from quarry.core.errors import QuarryError
        from quarry.v1 import errors_pb2

        raise QuarryError(errors_pb2.INVALID_REQUEST, "--plain and --syntax exclude each other", parameter="--syntax")
    return "prose" if plain else "query" if syntax else ""


def is_unit_query(text: str, reading: str = "") -> bool:
    """Whether `text` is a unit query (rows) rather than a search (sessions). Every unit query holds the
    keyword `where` (grammar.lark: `UNIT WHERE …`, the terminal lower-case only), so a query without it
    is a search, sent without compiling it here: building the Lark parser is the slowest step of a
    command's start (issue 13). The query node compiles it and answers INVALID_QUERY, with its
    position, as the local compile does."""
    if "where" not in text or reading == "prose":
        return False
    from quarry.dsl.reading import uses_the_language

    if not reading and not uses_the_language(text):
        return False
    from quarry.dsl import compile_query

    return compile_query(text).kind == "units"


def parse_weights(pairs: list[str]) -> dict[str, float]:
    """`--weight CHANNEL=W` values as channel -> weight; the query node checks the channel names."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    weights: dict[str, float] = {}
    for pair in pairs:
        channel, sep, value = pair.partition("=")
        try:
            number = float(value) if sep and channel else None
        except ValueError:
            number = None
        if number is None:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"--weight takes CHANNEL=NUMBER (e.g. text=2), got {pair!r}",
                parameter="--weight",
            )
        if channel in weights:
            raise QuarryError(errors_pb2.INVALID_REQUEST, f"--weight {channel} is given twice", parameter="--weight")
        weights[channel] = number
    return weights


def search_controls(
    document: str | None, flags: dict[tuple[str, ...], tuple[str, object]]
) -> query_pb2.SearchControls | None:
    """--controls JSON merged with the flags that set single controls (a flag setting a field the JSON
    sets too is a contradiction); None when neither is given: the server's defaults."""
    if document is None and not flags:
        return None
    from quarry.client.controls_json import controls_from_json, controls_to_json, with_flags

    base = controls_to_json(controls_from_json(document)) if document is not None else {}
    return controls_from_json(with_flags(base, flags))


LANE_SHORTCUTS = {"--lexical": "dialogue", "--semantic": "semantic"}


def search_lane(lane: str | None, *, lexical: bool, semantic: bool) -> str:
    """The lane `search` asks for: --lane, or a shortcut's lane. The shortcuts exclude each other and a
    --lane naming another lane (INVALID_REQUEST); the query node validates the lane name itself."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    shortcuts = [name for name, on in (("--lexical", lexical), ("--semantic", semantic)) if on]
    if len(shortcuts) > 1:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, "--lexical and --semantic exclude each other", parameter="--semantic"
        )
    if not shortcuts:
        return lane or "auto"
    implied = LANE_SHORTCUTS[shortcuts[0]]
    if lane is not None and lane != implied:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{shortcuts[0]} means --lane {implied}, which contradicts --lane {lane}",
            parameter=shortcuts[0],
        )
    return implied


@app.command()
def demo() -> None:
    """Ingest the agent logs of this machine (a generated sample archive when it has none) into the
    running cluster and show a few example queries."""
    from quarry.cli.demo import run_demo

    with _client() as client:
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
        return QuarryClient.for_target(_target() if token is None else _target().with_token(token))

    if not http:
        build_server(client_for).run("stdio")
        return
    host, port = host_port(http, "--http")
    if not auth:
        check_http_without_auth(host, _target().token)
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
