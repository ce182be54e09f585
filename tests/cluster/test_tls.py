"""TLS by configuration on a 2-partition cluster: every node serves TLS with its certificate, nodes call each
other with theirs (index and vector nodes refuse a caller without one), a client reaches the cluster with
the CA, over gRPC and HTTPS, and a plaintext client reaches nothing."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.outgoing import CLUSTER_KEY_HEADER
from quarry.core.tls import TlsFiles
from quarry.v1 import errors_pb2, index_pb2, index_pb2_grpc
from tests.cluster.corpus import write_corpus
from tests.cluster.test_http_api import free_port
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster


def write_certificates(folder: Path) -> TlsFiles:
    """A CA and a node certificate it signed, naming 127.0.0.1 and localhost, as PEM files."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "quarry test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    node_key = ec.generate_private_key(ec.SECP256R1())
    node = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "quarry node")]))
        .issuer_name(ca_name)
        .public_key(node_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles.in_dir(folder)
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(node.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        node_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return files


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, TlsFiles, str]]:
    files = write_certificates(tmp_path_factory.mktemp("tls"))
    port = free_port()
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-tls"),
        partitions=2,
        embedder="none",
        http=f"127.0.0.1:{port}",
        tls=files,
        ingest_roots=INGEST_ROOTS,
        colocate=False,  # index nodes of their own, which want a node certificate
    )
    local.start()
    try:
        yield local, files, f"https://127.0.0.1:{port}"
    finally:
        local.stop()


def test_clients_reach_a_tls_cluster_with_its_ca(
    tls_cluster: tuple[LocalCluster, TlsFiles, str], tmp_path: Path
) -> None:
    local, files, https = tls_cluster
    write_corpus(tmp_path / "archive")
    with QuarryClient.for_home(local.home) as client:  # the CA recorded for the cluster
        assert list(client.ingest_paths([tmp_path / "archive"]))[-1].report.sessions_written > 0
        hits = client.search("sqlite locking").hits
        assert hits and hits[0].session.repo == "ledger"
    context = ssl.create_default_context(cafile=str(files.ca))
    with urllib.request.urlopen(f"{https}/api/sessions?query=sqlite", context=context, timeout=30) as response:
        assert json.loads(response.read())["hits"]


def test_plaintext_reaches_no_node(tls_cluster: tuple[LocalCluster, TlsFiles, str]) -> None:
    local, _, _ = tls_cluster
    info = local.info()
    with QuarryClient(info.query, info.ingest, tls_ca="") as plain, pytest.raises(QuarryError) as refused:
        plain.search("sqlite")
    assert refused.value.code == errors_pb2.NODE_UNAVAILABLE


def test_index_nodes_require_a_node_certificate(tls_cluster: tuple[LocalCluster, TlsFiles, str]) -> None:
    local, files, _ = tls_cluster
    index = local.info().index[0]
    request = index_pb2.PartitionStatsRequest()
    anonymous = grpc.ssl_channel_credentials(root_certificates=files.ca.read_bytes())
    with grpc.secure_channel(index, anonymous) as channel, pytest.raises(grpc.RpcError) as refused:
        index_pb2_grpc.IndexServiceStub(channel).Stats(request, timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    node = grpc.ssl_channel_credentials(files.ca.read_bytes(), files.key.read_bytes(), files.cert.read_bytes())
    key = (local.home / "auth" / "cluster.key").read_text().strip()
    with grpc.secure_channel(index, node) as channel:
        stub = index_pb2_grpc.IndexServiceStub(channel)
        assert stub.Stats(request, timeout=10, metadata=[(CLUSTER_KEY_HEADER, key)]).partitions
