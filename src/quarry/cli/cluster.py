"""`quarry cluster …`: the cluster on the replicated log.

quarry cluster nats-credentials DIR          # the NATS users of each role, and the servers' authorization
quarry cluster init --nats URLS --nats-credentials DIR/admin.json [--partitions 16] [--replicas 2]
quarry cluster status                          # partitions -> replicas, lag, generation, log servers
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quarry.cli.lazy import stdout
from quarry.cli.state import open_client, settings

cluster_app = typer.Typer(help="A cluster on the replicated log: create it, and see its partitions and log.")


@cluster_app.command("nats-credentials")
def nats_credentials(
    directory: Annotated[Path, typer.Argument(help="Where the role files go (made if absent).")],
    authorization: Annotated[
        Path | None,
        typer.Option(help="Where the servers' authorization file goes. [default: DIR/authorization.conf]"),
    ] = None,
) -> None:
    """The cluster's NATS users: `<role>.json` for each role (admin, ingest, index, vector, query; a
    random secret, mode 0600, kept when it exists) and the servers' authorization file (each user's
    bcrypt hash and permissions: no secret), which every NATS server's config includes."""
    from quarry.cluster.nats_credentials import credentials_file, write_authorization
    from quarry.cluster.nats_permissions import ROLES

    written = write_authorization(directory, authorization)
    console = stdout()
    for role in ROLES:
        console.print(f"{role}: {credentials_file(directory, role)}")
    console.print(f"servers' authorization: {written}")


@cluster_app.command("init")
def init(
    nats: Annotated[str, typer.Option("--nats", help="Comma-separated NATS server URLs.")],
    partitions: Annotated[int, typer.Option(min=1, max=1024, help="Fixed for the cluster's life.")] = 16,
    replicas: Annotated[int, typer.Option(min=1, max=5, help="Copies of each partition on index nodes.")] = 2,
    log_replicas: Annotated[
        int, typer.Option("--log-replicas", min=1, max=5, help="Copies of the log on NATS servers (1, 3 or 5).")
    ] = 3,
    node_left_delay_s: Annotated[
        float,
        typer.Option("--node-left-delay", min=0, help="Seconds a node may be gone before its partitions are copied."),
    ] = 60.0,
    max_moves: Annotated[
        int, typer.Option("--max-moves", min=1, help="Partitions copied to other nodes at once at most.")
    ] = 4,
    nats_credentials: Annotated[
        Path | None,
        typer.Option(
            "--nats-credentials",
            envvar="QUARRY_NATS_CREDENTIALS",
            help="The file of the NATS `admin` user (`quarry cluster nats-credentials`).",
        ),
    ] = None,
    nats_tls_ca: Annotated[
        Path | None,
        typer.Option(
            "--nats-tls-ca",
            envvar="QUARRY_NATS_TLS_CA",
            help="Speak TLS to NATS (handshake first) and check the servers' certificates against this CA.",
        ),
    ] = None,
) -> None:
    """Create the cluster's stream and KV buckets on NATS; an existing cluster is left as it is (its
    partition count cannot change, and asking for another one fails)."""
    from quarry.cluster.nats_access import NatsAccess
    from quarry.cluster.setup import ClusterConfig, ensure_cluster
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    urls = [u.strip() for u in nats.split(",") if u.strip()]
    if not urls:
        raise QuarryError(errors_pb2.INVALID_REQUEST, "--nats needs at least one URL", parameter="--nats")
    wanted = ClusterConfig(partitions, replicas, log_replicas, int(node_left_delay_s * 1000), max_moves)
    config = ensure_cluster(urls, wanted, NatsAccess(nats_credentials, nats_tls_ca))
    stdout().print(
        f"cluster on {', '.join(urls)}: {config.partitions} partitions, {config.replicas} replicas each, "
        f"log on {config.log_replicas} server(s)"
    )


@cluster_app.command("status")
def status() -> None:
    """Partitions and their replicas (active / catching up / draining), lag, the map's generation and the log."""
    from quarry.cli import render

    with open_client() as client:
        render.cluster_status(client.status(), settings.format, stdout())
