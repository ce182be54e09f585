"""`quarry node …`: run one node of a cluster in the foreground (what `quarry up`, docker-compose and
the Kubernetes manifests start). Each role takes either the addresses of its peers (the embedded
default: fixed partitions, pushed to directly) or `--nats` (a cluster on the replicated log, whose map
tells every node where the partitions are)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from quarry.core.in_process import HeldServices

node_app = typer.Typer(help="Run one node of a cluster (what `quarry up`, docker-compose and Kubernetes start).")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
WRITER_BUDGET_MB = 128  # Tantivy's indexing memory, shared by a node's partitions


@node_app.callback()
def node_logging(
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="QUARRY_LOG_LEVEL", help="Least level of the node's log lines.")
    ] = "INFO",
) -> None:
    """A node logs to stderr, each line with its time and level: without a handler Python prints only
    warnings, bare, and a log that cannot be lined up with another node's tells nothing of a cluster."""
    import logging

    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        from quarry.core.errors import QuarryError
        from quarry.v1 import errors_pb2

        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"--log-level {log_level!r} is not one of DEBUG, INFO, WARNING, ERROR",
            parameter="--log-level",
        )
    logging.basicConfig(level=level, format=LOG_FORMAT)
    import faulthandler

    faulthandler.enable(all_threads=True)  # a crash in native code leaves every thread's stack in the log


Host = Annotated[str, typer.Option(help="Interface to listen on.")]
Port = Annotated[int, typer.Option(help="Port to listen on (0: any free one, announced in --run-file).")]
RunFile = Annotated[Path | None, typer.Option(help="Where to announce the bound address once serving.")]
Tokens = Annotated[
    Path | None,
    typer.Option("--tokens", help="The token file (`quarry token create`): every call needs a bearer token."),
]
ClusterKey = Annotated[
    Path | None,
    typer.Option("--cluster-key-file", help="The cluster's shared key: node-to-node calls carry it, and need it."),
]


TlsCert = Annotated[Path | None, typer.Option("--tls-cert", help="TLS: this node's certificate chain (PEM).")]
TlsKey = Annotated[Path | None, typer.Option("--tls-key", help="TLS: this node's private key (PEM).")]
TlsCa = Annotated[Path | None, typer.Option("--tls-ca", help="TLS: the CA that signed every node's certificate (PEM).")]


EmbedMode = Annotated[
    str, typer.Option("--embed-mode", help="auto (embed in the background) | manual (on `quarry embed backfill`)")
]


@dataclass(frozen=True)
class Serving:
    """Where a node listens and how it is secured: the options every `quarry node` command takes
    (`node_command` adds them to its own)."""

    host: str
    port: int
    run_file: Path | None
    cluster_key_file: Path | None
    tls_cert: Path | None
    tls_key: Path | None
    tls_ca: Path | None
    tokens: Path | None = None

    @property
    def listen(self) -> tuple[str, int, Path | None]:
        """(host, port, run file): where the node's server binds, and announces the bound address."""
        return self.host, self.port, self.run_file

    def secure(self, role: str, host: str | None = None, holds_partitions: bool = False) -> None:
        """Authentication (quarry.core.auth) and TLS (quarry.core.tls) of this node; `host`: the
        interface whose reach decides what authentication needs (default: the one it listens on)."""
        from quarry.core import tls
        from quarry.core.auth import configure_node

        configure_node(role, host or self.host, self.tokens, self.cluster_key_file, holds_partitions)
        tls.configure_node(tls.TlsFiles.of_options(self.tls_cert, self.tls_key, self.tls_ca), role)

    def start(
        self,
        role: str,
        nats_credentials: Path | None,
        nats_tls_ca: Path | None,
        host: str | None = None,
        holds_partitions: bool = False,
    ) -> None:
        """What a node does before it serves: its security, its NATS connections' user and TLS, and
        its telemetry (the service `quarry-<role>`)."""
        from quarry.core.telemetry import setup_telemetry

        self.secure(role, host, holds_partitions)
        _reach_nats(nats_credentials, nats_tls_ca)
        setup_telemetry(f"quarry-{role}")


_SERVING_OPTIONS = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
    for name, option, default in (
        ("host", Host, "127.0.0.1"),
        ("port", Port, 0),
        ("run_file", RunFile, None),
        ("tokens", Tokens, None),
        ("cluster_key_file", ClusterKey, None),
        ("tls_cert", TlsCert, None),
        ("tls_key", TlsKey, None),
        ("tls_ca", TlsCa, None),
    )
)


def node_command(name: str, *, tokens: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register `quarry node NAME`: the command's own options (its parameters but `serving`), then
    the Serving options (--tokens only when `tokens`: the nodes clients call), which reach the command
    as its `serving` argument."""

    def register(command: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "serving"]
        shared = [p for p in _SERVING_OPTIONS if tokens or p.name != "tokens"]

        @functools.wraps(command)
        def with_serving(**options: object) -> None:
            serving = Serving(**{p.name: options.pop(p.name) for p in shared})  # type: ignore[arg-type]
            command(**options, serving=serving)

        with_serving.__signature__ = inspect.Signature([*own, *shared])  # type: ignore[attr-defined]
        with_serving.__annotations__ = {p.name: p.annotation for p in (*own, *shared)}
        node_app.command(name)(with_serving)
        return command

    return register


def _addresses(value: str | None, option: str) -> list[str]:
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    addresses = [a.strip() for a in (value or "").split(",") if a.strip()]
    if not addresses:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"{option} needs at least one address", parameter=option)
    return addresses


Nats = Annotated[
    str | None,
    typer.Option("--nats", help="Cluster mode: comma-separated NATS server URLs of the cluster's log and map."),
]
NatsCredentials = Annotated[
    Path | None,
    typer.Option(
        "--nats-credentials",
        envvar="QUARRY_NATS_CREDENTIALS",
        help="Cluster mode: the file of this role's NATS user (`quarry cluster nats-credentials`).",
    ),
]
NatsTlsCa = Annotated[
    Path | None,
    typer.Option(
        "--nats-tls-ca",
        envvar="QUARRY_NATS_TLS_CA",
        help="Cluster mode: speak TLS to NATS (handshake first) and check the servers' certificates against this CA.",
    ),
]


def _reach_nats(credentials: Path | None, tls_ca: Path | None) -> None:
    """This node's NATS connections: as the user of `credentials`, over TLS checked against `tls_ca`."""
    from quarry.cluster.nats_access import NatsAccess, configure

    configure(NatsAccess(credentials, tls_ca))


def host_port(text: str, parameter: str) -> tuple[str, int]:
    """HOST:PORT as (host, port); INVALID_REQUEST naming the option otherwise."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"{parameter} {text!r} is not HOST:PORT", parameter=parameter)
    return host, int(port)


HttpAllowedHost = Annotated[
    list[str] | None,
    typer.Option(
        "--http-allowed-host",
        help="A name the HTTP API answers to (the Host browsers send), beside the loopback names and the "
        "host it binds; repeatable. Requests naming another host, or sent by a page of another site, are refused.",
    ),
]


def check_http_allowed_hosts(http: str, names: list[str]) -> None:
    """INVALID_REQUEST naming --http-allowed-host when it is given without --http or is no host name."""
    from quarry.core.errors import QuarryError
    from quarry.query.http_hosts import OPTION, AllowedHosts
    from quarry.v1 import errors_pb2

    if names and not http:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"{OPTION} names hosts of the HTTP API: give --http too", parameter=OPTION
        )
    if http:
        AllowedHosts.of(host_port(http, "--http")[0], names)


def _mode(index: str | None, nats: str | None) -> tuple[list[str], list[str]]:
    """(index addresses, NATS URLs): exactly one of --index (the embedded default) and --nats."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if bool(index) == bool(nats):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "give either --index ADDRESSES (the embedded default) or --nats URLS (a cluster on the log)",
            parameter="--nats" if index else "--index",
        )
    return (_addresses(index, "--index") if index else []), (_addresses(nats, "--nats") if nats else [])


@node_command("index")
def node_index(
    data: Annotated[
        Path | None, typer.Option(help="The node's data directory (its partitions live under it); --join: optional.")
    ] = None,
    partition: Annotated[
        list[int] | None,
        typer.Option("--partition", help="Embedded default: a partition this node holds (repeatable)."),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", help="Embedded default: the cluster's number of partitions.")
    ] = None,
    join: Annotated[
        bool,
        typer.Option("--join", help="Cluster mode: join the cluster on the log; the map assigns its partitions."),
    ] = False,
    nats: Nats = None,
    nats_credentials: NatsCredentials = None,
    nats_tls_ca: NatsTlsCa = None,
    node_id: Annotated[
        str | None, typer.Option("--node-id", help="The node's name, stable across restarts (default: index-N).")
    ] = None,
    advertise: Annotated[
        str | None, typer.Option(help="--join: the address other nodes reach it at (default: the bound one).")
    ] = None,
    writer_budget_mb: Annotated[
        int, typer.Option("--writer-budget-mb", min=15, help="Tantivy indexing memory shared by the node's partitions.")
    ] = WRITER_BUDGET_MB,
    home: Annotated[
        Path | None, typer.Option("--home", help="--join: the local cluster to join (default: $QUARRY_HOME).")
    ] = None,
    *,
    serving: Serving,
) -> None:
    """An index node: replicas of partitions (Tantivy + SQLite each). With --join it joins a cluster on
    the log (found from --nats, else from the local cluster under --home) and holds what the map gives it."""
    from quarry.core.errors import QuarryError
    from quarry.core.telemetry import setup_telemetry
    from quarry.v1 import errors_pb2

    budget = writer_budget_mb * 1_000_000
    serving.secure("index")
    if join:
        from quarry.cli.join import joining
        from quarry.index.replica import serve_replicas

        if partition or partitions is not None:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                "--join takes its partitions from the cluster map: drop --partition/--partitions",
                parameter="--partition",
            )
        plan = joining(home, nats, node_id, data, nats_credentials, nats_tls_ca)
        _reach_nats(plan.credentials, plan.tls_ca)
        setup_telemetry(f"quarry-{plan.node_id}")
        serve_replicas(plan.node_id, plan.data, plan.nats, *serving.listen, advertise, budget)
        return
    from quarry.index.server import serve_direct

    if nats:
        raise QuarryError(errors_pb2.INVALID_REQUEST, "--nats is for --join (cluster mode)", parameter="--nats")
    held = sorted(set(partition or []))
    if not held or data is None:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "an index node of the embedded default needs --data and --partition N (or --join a cluster on the log)",
            parameter="--partition" if not held else "--data",
        )
    name = node_id or f"index-{held[0]}"
    setup_telemetry(f"quarry-{name}")
    count = partitions if partitions is not None else held[-1] + 1
    serve_direct(name, data, held, count, *serving.listen, budget)


@node_command("vector")
def node_vector(
    data: Annotated[Path, typer.Option()],
    index: Annotated[
        str | None,
        typer.Option(help="Comma-separated index node addresses, in partition order, whose sessions it embeds."),
    ] = None,
    nats: Nats = None,
    nats_credentials: NatsCredentials = None,
    nats_tls_ca: NatsTlsCa = None,
    embedder: Annotated[str, typer.Option()] = "minilm",
    embed_mode: EmbedMode = "auto",
    approximate_above: Annotated[
        int | None,
        typer.Option(
            "--approximate-above",
            min=1,
            help="Vectors past which FAISS serves approximately (IVF); exact below. [default: 200000]",
        ),
    ] = None,
    *,
    serving: Serving,
) -> None:
    """The vector node (FAISS + sqlite-vec): embeds what the partitions hold (--index) or the log carries (--nats)."""
    from quarry.vector.server import serve_vector

    addresses, urls = (_addresses(index, "--index"), []) if index or not nats else ([], _addresses(nats, "--nats"))
    serving.start("vector", nats_credentials, nats_tls_ca)
    serve_vector(
        data,
        embedder,
        addresses,
        *serving.listen,
        embed_mode=embed_mode,
        nats=urls,
        approximate_above=approximate_above,
    )


@node_command("ingest", tokens=True)
def node_ingest(
    data: Annotated[Path, typer.Option(help="Where it remembers what it ingested from each file.")],
    index: Annotated[str | None, typer.Option(help="Comma-separated index node addresses, in partition order.")] = None,
    nats: Nats = None,
    nats_credentials: NatsCredentials = None,
    nats_tls_ca: NatsTlsCa = None,
    ingest_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--ingest-root",
            help="A folder of this machine whose files callers may ingest by path (IngestPaths: admin tokens "
            "only), repeatable; none: no path of this machine is read.",
        ),
    ] = None,
    *,
    serving: Serving,
) -> None:
    """The ingest node: pushes to the partitions' index nodes (--index) or publishes to the log (--nats).
    Clients send the sessions they parsed (`quarry push`); paths of this machine are read only below the
    --ingest-root folders."""
    from quarry.ingest.server import Router, serve_ingest

    addresses, urls = _mode(index, nats)
    serving.start("ingest", nats_credentials, nats_tls_ca)
    router: Router
    if urls:
        from quarry.ingest.publisher import LogPublisher

        router = LogPublisher(urls)
    else:
        from quarry.ingest.router import DirectRouter

        router = DirectRouter(addresses)
    serve_ingest(router, data, *serving.listen, ingest_root or [])


@node_command("query", tokens=True)
def node_query(
    index: Annotated[str | None, typer.Option(help="Comma-separated index node addresses, in partition order.")] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            "--partitions",
            min=1,
            help="Hold the cluster's partitions itself (one machine: no index node to call), with --data.",
        ),
    ] = None,
    data: Annotated[Path | None, typer.Option(help="With --partitions: where the partitions live.")] = None,
    nats: Nats = None,
    nats_credentials: NatsCredentials = None,
    nats_tls_ca: NatsTlsCa = None,
    vector: Annotated[str | None, typer.Option()] = None,
    ingest: Annotated[str | None, typer.Option()] = None,
    http: Annotated[str, typer.Option(help="Also serve the HTTP JSON API on HOST:PORT.")] = "",
    http_allowed_host: HttpAllowedHost = None,
    *,
    serving: Serving,
) -> None:
    """The query node: over fixed partitions (--index), the cluster map on the log (--nats), or holding
    the partitions itself (--partitions N --data DIR: the embedded default on one machine, its searches
    calling them in-process; the ingest and vector nodes reach them at its address)."""
    from quarry.core.addresses import is_loopback
    from quarry.query.server import serve_query
    from quarry.query.topology import StaticTopology, Topology

    held = _held_partitions(partitions, data, index, nats)
    addresses, urls = _mode(index, nats) if held is None else ([], [])
    check_http_allowed_hosts(http, http_allowed_host or [])
    bound = [serving.host, host_port(http, "--http")[0]] if http else [serving.host]
    beyond = next((h for h in bound if not is_loopback(h)), serving.host)
    serving.start("query", nats_credentials, nats_tls_ca, host=beyond, holds_partitions=held is not None)
    topology: Topology
    if urls:
        from quarry.query.watched_topology import WatchedTopology

        topology = WatchedTopology(urls)
    elif held is not None:
        topology = StaticTopology.held_by(held.node, held.partitions)
    else:
        topology = StaticTopology.index_nodes(addresses)
    serve_query(
        topology,
        vector,
        ingest,
        *serving.listen,
        http=host_port(http, "--http") if http else None,
        http_allowed_hosts=http_allowed_host or [],
        held=held.open() if held is not None else None,
    )


@dataclass(frozen=True)
class _HeldPartitions:
    """The partitions a query node holds itself (`quarry node query --partitions N --data DIR`)."""

    node: str
    partitions: int
    data: Path

    def open(self) -> HeldServices:
        from quarry.core.in_process import HeldServices
        from quarry.index.partition_set import PartitionSet
        from quarry.index.server import index_services

        held = PartitionSet(self.data, WRITER_BUDGET_MB * 1_000_000, expected_partitions=self.partitions)
        for partition in range(self.partitions):
            held.open(partition)
        services = index_services(held, lambda: self.partitions, writable=True)
        return HeldServices(self.node, services, held.close_all)


def _held_partitions(
    partitions: int | None, data: Path | None, index: str | None, nats: str | None
) -> _HeldPartitions | None:
    """The partitions to hold, given --partitions and --data (neither: None); refused beside --index or
    --nats, or without --data."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if partitions is None and data is None:
        return None
    if index or nats:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "--partitions holds the partitions in the query node: drop --index / --nats (they name nodes holding them)",
            parameter="--partitions",
        )
    if partitions is None or data is None:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "a query node holding the partitions needs both --partitions N and --data DIR",
            parameter="--data" if data is None else "--partitions",
        )
    from quarry.core.config import QUERY_NODE

    return _HeldPartitions(QUERY_NODE, partitions, data)
