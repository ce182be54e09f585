"""The HTTP API of the loopback default (no tokens) cannot be read by a web page through DNS rebinding:
it answers only the names it is served under (the loopback names, its bound host, and those given with
`quarry up --http-allowed-host`), and no page of another origin. The attacker's page makes the user's
browser call 127.0.0.1 under the attacker's own name, or sends its own Origin along."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from quarry.cli.local import LocalCluster
from quarry.cli.main import app
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from tests.cluster.corpus import write_corpus
from tests.cluster.test_http_api import free_port
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

ALLOWED = "quarry.internal"
SEARCH = "/api/sessions?query=sqlite"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port = free_port()
    home = tmp_path_factory.mktemp("rebinding")
    local = LocalCluster(
        home,
        partitions=1,
        embedder="none",
        http=f"127.0.0.1:{port}",
        http_allowed_hosts=[ALLOWED],
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    try:
        archive = write_corpus(tmp_path_factory.mktemp("archive"))
        with QuarryClient(local.info().query, local.info().ingest) as client:
            assert list(client.ingest_paths([next(iter(archive.values())).parent]))[-1].report.sessions_written
        yield port
    finally:
        local.stop()


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:{port}",
        "127.0.0.1.attacker.example:{port}",
        "localhost.attacker.example",
        "localhost@attacker.example",
        "attacker.example#127.0.0.1",
        "127.0.0.1:{port}:{port}",
        "[::ffff:7f00:1]x",
        "",
    ],
)
def test_a_rebound_name_reads_nothing(port: int, host: str) -> None:
    for path in (SEARCH, "/api/query-units?expression=messages+where+role:user", "/openapi.json", "/nowhere"):
        status, body = get(port, path, {"Host": host.format(port=port)})
        assert status == 421, (host, path, body)
        assert set(body) == {"error"} and body["error"]["code"] == "INVALID_REQUEST"
        assert body["error"]["parameter"] == "host" and "--http-allowed-host" in body["error"]["message"]


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "localhost",
        "LOCALHOST.:{port}",
        "[::1]:{port}",
        ALLOWED,
        "Quarry.Internal:80",
    ],
)
def test_the_loopback_names_and_the_allowed_ones_are_served(port: int, host: str) -> None:
    status, body = get(port, SEARCH, {"Host": host.format(port=port)})
    assert status == 200 and body["hits"], body


@pytest.mark.parametrize(
    "origin", ["http://attacker.example", "https://attacker.example:443", "null", "http://127.0.0.1.nip.io", "file://"]
)
def test_a_page_of_another_origin_is_refused(port: int, origin: str) -> None:
    status, body = get(port, SEARCH, {"Host": f"127.0.0.1:{port}", "Origin": origin})
    assert status == 403, (origin, body)
    assert set(body) == {"error"}
    assert (body["error"]["code"], body["error"]["parameter"]) == ("PERMISSION_DENIED", "origin")


@pytest.mark.parametrize("origin", ["http://127.0.0.1:{port}", "http://localhost:3000", f"https://{ALLOWED}"])
def test_a_page_on_an_allowed_name_is_served(port: int, origin: str) -> None:
    status, body = get(port, SEARCH, {"Host": f"127.0.0.1:{port}", "Origin": origin.format(port=port)})
    assert status == 200 and body["hits"], body


@pytest.mark.parametrize("name", ["http://quarry.internal", "quarry.internal:8080", "*", "a b"])
def test_an_allowed_host_that_is_no_host_name_stops_quarry_up_before_it_starts(tmp_path: Any, name: str) -> None:
    args = ["--home", str(tmp_path), "up", "--http", "127.0.0.1:0", "--http-allowed-host", name]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, QuarryError), result.output
    assert result.exception.parameter == "--http-allowed-host"
    assert not (tmp_path / "cluster.json").exists()
