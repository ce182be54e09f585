"""`quarry cluster …`: the cluster on the replicated log.

quarry cluster init --nats URLS [--partitions 16] [--replicas 2]   # create the log and the map
quarry cluster status                          # partitions -> replicas, lag, generation, log servers
"""

from __future__ import annotations

from types import ModuleType
from typing import Annotated

import typer

cluster_app = typer.Typer(help="A cluster on the replicated log: create it, and see its partitions and log.")


def _cli() -> ModuleType:
    """The root CLI module (imported when a command runs: the root module imports this one)."""
    from quarry.client.cli import main

    return main


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
) -> None:
    """Create the cluster's stream and KV buckets on NATS; an existing cluster is left as it is (its
    partition count cannot change, and asking for another one fails)."""
    from quarry.cluster.setup import ClusterConfig, ensure_cluster
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    urls = [u.strip() for u in nats.split(",") if u.strip()]
    if not urls:
        raise QuarryError(errors_pb2.INVALID_REQUEST, "--nats needs at least one URL", parameter="--nats")
    wanted = ClusterConfig(partitions, replicas, log_replicas, int(node_left_delay_s * 1000), max_moves)
    config = ensure_cluster(urls, wanted)
    _cli().console.print(
        f"cluster on {', '.join(urls)}: {config.partitions} partitions, {config.replicas} replicas each, "
        f"log on {config.log_replicas} server(s)"
    )


@cluster_app.command("status")
def status() -> None:
    """Partitions and their replicas (active / catching up / draining), lag, the map's generation and the log."""
    from quarry.client.cli import render

    cli = _cli()
    with cli._client() as client:
        render.cluster_status(client.status(), cli.settings.format, cli.console)
