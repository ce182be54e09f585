"""`quarry node …`: run one node of a cluster in the foreground (what `quarry up`, docker-compose and
the Kubernetes manifests start). Each role takes either the addresses of its peers (the embedded
default: fixed partitions, pushed to directly) or `--nats` (a cluster on the replicated log, whose map
tells every node where the partitions are)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

node_app = typer.Typer(help="Run one node of a cluster (what `quarry up`, docker-compose and Kubernetes start).")

Host = Annotated[str, typer.Option(help="Interface to listen on.")]
Port = Annotated[int, typer.Option(help="Port to listen on (0: any free one, announced in --run-file).")]
RunFile = Annotated[Path | None, typer.Option(help="Where to announce the bound address once serving.")]


def _addresses(value: str | None, option: str) -> list[str]:
    addresses = [a.strip() for a in (value or "").split(",") if a.strip()]
    if not addresses:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"{option} needs at least one address", parameter=option)
    return addresses


@node_app.command("index")
def node_index(
    data: Annotated[Path, typer.Option(help="The node's data directory (its partitions live under it).")],
    partition: Annotated[
        list[int] | None,
        typer.Option("--partition", help="Embedded default: a partition this node holds (repeatable)."),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", help="Embedded default: the cluster's number of partitions.")
    ] = None,
    node_id: Annotated[
        str | None, typer.Option("--node-id", help="The node's name (default index-<partition>).")
    ] = None,
    writer_budget_mb: Annotated[
        int, typer.Option("--writer-budget-mb", min=15, help="Tantivy indexing memory shared by the node's partitions.")
    ] = 128,
    host: Host = "127.0.0.1",
    port: Port = 0,
    run_file: RunFile = None,
) -> None:
    """An index node: replicas of partitions (Tantivy + SQLite each)."""
    from quarry.core.telemetry import setup_telemetry
    from quarry.index.server import serve_direct

    held = sorted(set(partition or []))
    if not held:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, "name the partitions it holds: --partition N", parameter="--partition"
        )
    name = node_id or f"index-{held[0]}"
    setup_telemetry(f"quarry-{name}")
    count = partitions if partitions is not None else held[-1] + 1
    serve_direct(name, data, held, count, host, port, run_file, writer_budget_mb * 1_000_000)


@node_app.command("vector")
def node_vector(
    data: Annotated[Path, typer.Option()],
    index: Annotated[
        str | None,
        typer.Option(help="Comma-separated index node addresses, in partition order, whose sessions it embeds."),
    ] = None,
    embedder: Annotated[str, typer.Option()] = "minilm",
    embed_mode: Annotated[
        str, typer.Option("--embed-mode", help="auto (embed in the background) | manual (on `quarry embed backfill`)")
    ] = "auto",
    host: Host = "127.0.0.1",
    port: Port = 0,
    run_file: RunFile = None,
) -> None:
    """The vector node (FAISS + sqlite-vec, background embedding of what the partitions hold)."""
    from quarry.core.telemetry import setup_telemetry
    from quarry.index.vector.server import serve_vector

    setup_telemetry("quarry-vector")
    serve_vector(data, embedder, index.split(",") if index else [], host, port, run_file, embed_mode=embed_mode)


@node_app.command("ingest")
def node_ingest(
    data: Annotated[Path, typer.Option(help="Where it remembers what it ingested from each file.")],
    index: Annotated[str | None, typer.Option(help="Comma-separated index node addresses, in partition order.")] = None,
    host: Host = "127.0.0.1",
    port: Port = 0,
    run_file: RunFile = None,
) -> None:
    """The ingest node."""
    from quarry.core.telemetry import setup_telemetry
    from quarry.ingest.router import DirectRouter
    from quarry.ingest.server import serve_ingest

    setup_telemetry("quarry-ingest")
    router = DirectRouter(_addresses(index, "--index"))
    serve_ingest(router, data, host, port, run_file)


@node_app.command("query")
def node_query(
    index: Annotated[str | None, typer.Option(help="Comma-separated index node addresses, in partition order.")] = None,
    vector: Annotated[str | None, typer.Option()] = None,
    ingest: Annotated[str | None, typer.Option()] = None,
    host: Host = "127.0.0.1",
    port: Port = 0,
    run_file: RunFile = None,
) -> None:
    """The query node."""
    from quarry.core.telemetry import setup_telemetry
    from quarry.query.server import serve_query
    from quarry.query.topology import StaticTopology

    setup_telemetry("quarry-query")
    serve_query(StaticTopology(_addresses(index, "--index")), vector, ingest, host, port, run_file)
