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
from quarry.client.controls_json import controls_from_json
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
    one = "/api/sessions/{session_id}"
    assert set(document["paths"]) == {
        "/api/sessions",
        "/api/query-units",
        "/api/facets",
        "/api/refs/resolve",
        "/api/embedding/status",
        "/api/usage",
        "/api/session-records",
        "/api/session-search",
        "/api/titles",
        *(one + suffix for suffix in ("", "/events", "/events/{seq}", "/events/{seq}/trace", "/search")),
        *(one + suffix for suffix in ("/surface", "/lineage", "/log")),
    }
    search = {p["name"] for p in document["paths"]["/api/sessions"]["get"]["parameters"]}
    assert {"controls.admission.lexical_coverage", "controls.fusion.params.weights", "controls.min_score"} <= search


CONTROLS = {
    "admission": {"lexical_coverage": 0.5, "lexical_min_matched_terms": 1},
    "fusion": {"method": "rrf", "params": {"rank_constant": 30, "weights": {"text": 2}}},
    "min_score": 0.01,
    "include_scores": True,
}


def test_search_controls_over_http_are_the_grpc_controls(http_cluster: tuple[str, QuarryClient]) -> None:
    """Every SearchRequest field is a parameter: the controls by their dotted paths, a map by key or as JSON."""
    base, client = http_cluster
    dotted = {
        "controls.admission.lexical_coverage": 0.5,
        "controls.admission.lexical_min_matched_terms": 1,
        "controls.fusion.method": "rrf",
        "controls.fusion.params.rank_constant": 30,
        "controls.fusion.params.weights.text": 2,
        "controls.min_score": 0.01,
        "controls.include_scores": "true",
    }
    query = "sqlite writers timeout kubernetes"
    grpc_page = to_json(client.search(query, lane="dialogue", controls=controls_from_json(CONTROLS)))
    status, page = get(base, "/api/sessions", query=query, lane="dialogue", **dotted)
    assert status == 200 and same_page(page, grpc_page)
    assert page["hits"] and all("scores" in hit["match"] for hit in page["hits"])
    assert page["controls"]["admission"] == {"lexicalCoverage": 0.5, "lexicalMinMatchedTerms": 1}
    as_json = {**dotted, "controls.fusion.params.weights": json.dumps({"text": 2})}
    del as_json["controls.fusion.params.weights.text"]
    assert same_page(get(base, "/api/sessions", query=query, lane="dialogue", **as_json)[1], grpc_page)
    assert get(base, "/api/sessions", query=query, lane="dialogue", deadline_ms=4000, offset=0)[0] == 200


@pytest.mark.parametrize(
    ("parameter", "value", "named"),
    [
        ("controls.admission.lexical_coverage", "2", "controls.admission.lexical_coverage"),
        ("controls.admission.lexical_min_matched_terms", "1.5", "controls.admission.lexical_min_matched_terms"),
        ("controls.fusion.params.weights.vector", "1", "controls.fusion.params.weights.vector"),
        ("controls.fusion.params.weights", "[1]", "controls.fusion.params.weights"),
        ("controls.fusion.method", "borda", "controls.fusion.method"),
        ("controls.min_score", "abc", "controls.min_score"),
        ("controls.min_score", "NaN", "controls.min_score"),
        ("controls.include_scores", "maybe", "controls.include_scores"),
        ("controls", '{"min_score": 0.2}', "controls"),
        ("controls.colour", "1", "controls.colour"),
        ("controls.min_score.deeper", "1", "controls.min_score.deeper"),
    ],
)
def test_bad_controls_are_a_typed_400_naming_the_parameter(
    http_cluster: tuple[str, QuarryClient], parameter: str, value: str, named: str
) -> None:
    status, body = get(http_cluster[0], "/api/sessions", query="sqlite", lane="dialogue", **{parameter: value})
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["parameter"]) == ("INVALID_REQUEST", named), body
