"""`quarry up`, `quarry down` and `quarry status`: a local cluster under --home, started and supervised
here (quarry.cli.local), stopped, and every node's state (docs/cluster.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from quarry.cli.lazy import lazy_module, stdout
from quarry.cli.node import EmbedMode, HttpAllowedHost, check_http_allowed_hosts
from quarry.cli.state import cluster_target, open_client, settings

if TYPE_CHECKING:
    from quarry.cli.local import LocalCluster
    from quarry.core.config import ClusterInfo

render = lazy_module("quarry.cli.render")

START_TIMEOUT_S = 300  # how long `up --detach` waits for the background cluster to record itself

Detach = Annotated[bool, typer.Option("--detach", "-d", help="Start and return; stop with `quarry down`.")]
Embedder = Annotated[
    str,
    typer.Option(
        help="minilm (ONNX int8; a torch-made store stays torch) | minilm-int8 | minilm-torch | "
        "e5-multilingual (finds sessions asked about in another language) | none | openai:<base-url>#<model>"
    ),
]
Log = Annotated[
    str, typer.Option("--log", help="direct (the embedded default: no log) | nats (replicated, on NATS JetStream)")
]
IndexNodes = Annotated[int, typer.Option("--index-nodes", min=1, max=32, help="--log nats: index nodes.")]
Replicas = Annotated[int, typer.Option(min=1, max=5, help="--log nats: copies of each partition.")]
Partitions = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=1024,
        help="Partitions: the embedded default's, held by the query node (default 2, at most 64); "
        "--log nats: spread over --index-nodes, fixed at creation (default 16).",
    ),
]
NatsServers = Annotated[
    int, typer.Option("--nats-servers", min=1, max=5, help="--log nats: NATS servers (the log on up to 3).")
]
Http = Annotated[
    str, typer.Option("--http", help="Serve the HTTP JSON API on HOST:PORT (the query node).", show_default=False)
]
Auth = Annotated[
    bool,
    typer.Option(
        "--auth", help="Require bearer tokens (`quarry token create`) on every call; on anyway once a token exists."
    ),
]
TlsDir = Annotated[
    Path | None,
    typer.Option(
        "--tls-dir", help="Serve and call with TLS: node.pem, node.key (naming 127.0.0.1) and ca.pem in this folder."
    ),
]
IndexProcesses = Annotated[
    bool,
    typer.Option(
        "--index-processes",
        help="The embedded default: an index node process per partition, called over loopback gRPC, rather than "
        "the partitions in the query node: more searches per second on many cores and faster ingest beside "
        "searches, at a hop and more CPU per search (docs/cluster.md).",
    ),
]
IngestRoot = Annotated[
    list[Path] | None,
    typer.Option(
        "--ingest-root", help="A folder whose files `quarry ingest` may read, repeatable (default: your home folder)."
    ),
]


def up(
    detach: Detach = False,
    embedder: Embedder = "minilm",
    embed_mode: EmbedMode = "auto",
    log: Log = "direct",
    index_nodes: IndexNodes = 3,
    replicas: Replicas = 2,
    partitions: Partitions = None,
    nats_servers: NatsServers = 3,
    http: Http = "",
    http_allowed_host: HttpAllowedHost = None,
    auth: Auth = False,
    tls_dir: TlsDir = None,
    ingest_root: IngestRoot = None,
    index_processes: IndexProcesses = False,
) -> None:
    """Start a local cluster and supervise it (a node that dies is restarted). The embedded default: a query
    node holding the partitions, a vector and an ingest node. With --log nats: NATS servers, index nodes holding
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
        colocate=not index_processes,
    )
    _run_in_foreground(cluster)


def _run_in_foreground(cluster: LocalCluster) -> None:
    """Start the cluster and supervise it until Ctrl-C or SIGTERM, then stop every node."""
    import signal

    from quarry.core.stop_signal import StopSignal

    stop = StopSignal(signal.SIGTERM)
    try:
        announce(cluster.start())
        stdout().print("Ctrl-C stops every node")
        stop.wait()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a foreground cluster is meant to stop
    finally:
        cluster.stop()
        stdout().print("stopped")


def announce(info: ClusterInfo) -> None:
    """Where the cluster answers: its gRPC addresses, and the web reader's address when it serves HTTP."""
    stdout().print(f"quarry cluster up under {settings.home}: query {info.query}, ingest {info.ingest}")
    if info.http:
        stdout().print(f"web reader: {info.http} (the HTTP API under {info.http}api, docs/web.md)")


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
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        info = ClusterInfo.load(settings.home)
        if info is not None and info.supervisor == background.pid:
            announce(info)
            return
        if background.poll() is not None or time.monotonic() > deadline:
            if process_alive(background.pid):
                background.terminate()
            tail = log_path.read_text(errors="replace")[-3000:]
            raise QuarryError(errors_pb2.INTERNAL, f"the cluster did not start (log {log_path}):\n{tail}")
        time.sleep(0.1)


def down() -> None:
    """Stop the cluster started with `quarry up --detach`."""
    from quarry.cli.local import stop_recorded

    stopped = stop_recorded(settings.home)
    stdout().print(f"stopped {', '.join(stopped)}" if stopped else f"no cluster was running under {settings.home}")


def status() -> None:
    """Every node: up, partition, sessions, documents, vectors, embedding backlog; for the local cluster, how
    often its supervisor restarted each."""
    from quarry.core.config import ClusterInfo

    target = cluster_target()
    recorded = ClusterInfo.load(target.home) if target.home is not None else None
    with open_client() as client:
        render.status(client.status(), settings.format, stdout(), recorded.restarts if recorded else None)
