"""The query node's HTTP JSON API on a 2-partition cluster: each route answers exactly the gRPC message of the
same request in proto3 JSON, and a typed error with the same detail and a status that fits its code."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.core.proto_json import to_json
from tests.cluster.corpus import write_corpus
from tests.cluster.test_mcp import without_timings
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, QuarryClient]]:
    port = free_port()
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-http"),
        partitions=2,
        embedder="none",
        http=f"127.0.0.1:{port}",
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    archive = tmp_path_factory.mktemp("archive")
    write_corpus(archive)
    with QuarryClient(local.info().query, local.info().ingest) as client:
        assert list(client.ingest_paths([archive]))[-1].report.sessions_written > 0
        yield f"http://127.0.0.1:{port}", client
    local.stop()


def same_page(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Two envelopes of one request: equal but for timings and their cursors' bytes (each first page
    seals the clock it was minted at); both have a cursor or neither (the pages they lead to are compared
    by the tests)."""
    rest = [{k: v for k, v in without_timings(e).items() if k != "nextCursor"} for e in (one, other)]
    return rest[0] == rest[1] and ("nextCursor" in one) == ("nextCursor" in other)


def get(base: str, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
    url = f"{base}{path}?{urllib.parse.urlencode(params, doseq=True)}" if params else f"{base}{path}"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_routes_answer_the_grpc_messages(http_cluster: tuple[str, QuarryClient], tmp_path: Path) -> None:
    base, client = http_cluster
    status, page = get(base, "/api/sessions", query="timeout", limit=1)
    assert status == 200 and page["hits"] and page["nextCursor"]
    grpc_page = to_json(client.search("timeout", limit=1))
    assert same_page(page, grpc_page)
    status, second = get(base, "/api/sessions", query="timeout", limit=1, cursor=page["nextCursor"])
    grpc_second = client.search("timeout", limit=1, cursor=page["nextCursor"])
    assert status == 200 and same_page(second, to_json(grpc_second))
    assert same_page(second, to_json(client.search("timeout", limit=1, cursor=grpc_page["nextCursor"])))
    assert (page["reading"], get(base, "/api/sessions", query="timeout", reading="query")[1]["reading"]) == (
        "prose",
        "query",
    )
    status, refused = get(base, "/api/sessions", query="timeout", reading="poetry")
    assert status == 400 and refused["error"]["parameter"] == "reading"
    status, units = get(base, "/api/query-units", expression="actions where tool:bash", limit=5)
    assert status == 200
    assert without_timings(units) == without_timings(to_json(client.query_units("actions where tool:bash", limit=5)))
    status, facets = get(base, "/api/facets", query="sqlite", families=["origins", "tags"])
    grpc_facets = client.facets("sqlite", families=["origins", "tags"])
    assert status == 200 and without_timings(facets) == without_timings(to_json(grpc_facets))
    session_id = page["hits"][0]["session"]["id"]
    status, ref = get(base, "/api/refs/resolve", ref=f"session:{session_id}")
    assert status == 200 and ref == to_json(client.resolve_ref(f"session:{session_id}"))
    status, embedding = get(base, "/api/embedding/status")
    assert status == 200 and "vectorAddress" in embedding


def test_errors_carry_the_typed_detail_and_a_fitting_status(http_cluster: tuple[str, QuarryClient]) -> None:
    base, client = http_cluster
    with pytest.raises(QuarryError) as bad:
        client.search("sessions where (")
    status, body = get(base, "/api/sessions", query="sessions where (")
    assert status == 422 and body == {"error": to_json(bad.value.to_detail())}
    status, body = get(base, "/api/sessions", query="sqlite", colour="red")
    assert status == 400 and body["error"]["code"] == "INVALID_REQUEST" and body["error"]["parameter"] == "colour"
    status, body = get(base, "/api/sessions", query="sqlite", cursor="not-a-cursor")
    assert status == 400 and body["error"]["code"] == "INVALID_CURSOR"
    status, body = get(base, "/api/sessions", query="sqlite", limit="many")
    assert status == 400 and body["error"]["code"] == "INVALID_REQUEST"


def test_the_openapi_document_lists_every_route(http_cluster: tuple[str, QuarryClient]) -> None:
    status, document = get(http_cluster[0], "/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.")
    assert set(document["paths"]) == {
        "/api/sessions",
        "/api/query-units",
        "/api/facets",
        "/api/refs/resolve",
        "/api/embedding/status",
    }
