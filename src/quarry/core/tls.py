"""TLS on gRPC, by configuration: certificates in PEM files, given to each node.

With `--tls-cert`, `--tls-key` and `--tls-ca`, a node serves TLS with its certificate, and its calls to
other nodes verify their certificates against the CA and present its own. Index and vector nodes, which
only nodes call, require that client certificate (mutual TLS); the query and ingest nodes serve their
clients without one (the clients authenticate with tokens) and only verify the server side. A client
(the CLI, the SDK) reaches a TLS cluster with the CA: `QuarryClient(..., tls_ca=PATH)`, `$QUARRY_TLS_CA`,
or the CA `quarry up --tls-dir` recorded for its cluster.

A certificate must name the address it is reached at (an IP SAN of 127.0.0.1 for a local cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

CERT_FILE, KEY_FILE, CA_FILE = "node.pem", "node.key", "ca.pem"


@dataclass(frozen=True)
class TlsFiles:
    """A node's certificate chain and key, and the CA its peers' certificates are checked against."""

    cert: Path
    key: Path
    ca: Path

    @classmethod
    def in_dir(cls, folder: Path) -> TlsFiles:
        """The conventional names under a folder (what `quarry up --tls-dir` takes)."""
        return cls(folder / CERT_FILE, folder / KEY_FILE, folder / CA_FILE)

    @classmethod
    def of_options(cls, cert: Path | None, key: Path | None, ca: Path | None) -> TlsFiles | None:
        given = [p for p in (cert, key, ca) if p is not None]
        if not given:
            return None
        if len(given) != 3:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                "TLS needs all three of --tls-cert, --tls-key and --tls-ca",
                parameter="--tls-cert" if cert is None else "--tls-key" if key is None else "--tls-ca",
            )
        assert cert is not None and key is not None and ca is not None
        return cls(cert, key, ca)

    def args(self) -> list[str]:
        return ["--tls-cert", str(self.cert), "--tls-key", str(self.key), "--tls-ca", str(self.ca)]


@dataclass(frozen=True)
class NodeTls:
    """The PEM contents a node serves and calls with."""

    cert: bytes
    key: bytes
    ca: bytes

    @classmethod
    def load(cls, files: TlsFiles) -> NodeTls:
        try:
            return cls(files.cert.read_bytes(), files.key.read_bytes(), files.ca.read_bytes())
        except OSError as error:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, f"cannot read a TLS file: {error}", parameter="--tls-cert"
            ) from None

    def server_credentials(self, require_client_cert: bool) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)], root_certificates=self.ca, require_client_auth=require_client_cert
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )


_files: TlsFiles | None = None
_node: NodeTls | None = None
_node_requires_client_cert = False


def configure_node(files: TlsFiles | None, role: str) -> None:
    """This process is a node of `role`: serve and call with TLS when `files` are given."""
    global _files, _node, _node_requires_client_cert
    _files = files
    _node = NodeTls.load(files) if files is not None else None
    _node_requires_client_cert = role in ("index", "vector")


def server_credentials() -> grpc.ServerCredentials | None:
    """The credentials this node's server binds with (None: plaintext)."""
    return _node.server_credentials(_node_requires_client_cert) if _node is not None else None


def node_channel_credentials() -> grpc.ChannelCredentials | None:
    """What this node's calls to other nodes use (None: plaintext)."""
    return _node.channel_credentials() if _node is not None else None


def client_channel_credentials(ca: Path | None) -> grpc.ChannelCredentials:
    """A client's: the cluster's CA (None: the system's roots), no client certificate."""
    if ca is None:
        return grpc.ssl_channel_credentials()
    try:
        return grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    except OSError as error:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"cannot read the TLS CA: {error}", parameter="tls_ca") from None


def http_files() -> tuple[str, str] | None:
    """(certfile, keyfile) for the query node's HTTP API (HTTPS), when the node serves TLS."""
    return (str(_files.cert), str(_files.key)) if _files is not None else None
