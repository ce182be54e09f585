"""/openapi.json is a valid OpenAPI 3.1 document of exactly the routes the HTTP API serves, generated from
the proto descriptors: every request field is a documented parameter the API accepts, every response and
the error body a JSON Schema (tests/cluster/test_http_sessions.py checks real answers against them).

`openapi_3_1_schema.json` beside this file is the OpenAPI Initiative's schema of OpenAPI 3.1 documents
(https://spec.openapis.org/oas/3.1/schema/2022-10-07, Apache-2.0, as openapi-spec-validator 0.9.0 ships
it); the schemas inside a document are JSON Schema 2020-12, checked against its metaschema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.applications import Starlette
from starlette.datastructures import QueryParams

from quarry.query.embedding import EmbeddingOps
from quarry.query.http_api import OperationRoute, build_app
from quarry.query.http_contract import Operation, request_of
from quarry.query.http_hosts import AllowedHosts
from quarry.query.openapi import openapi_document
from quarry.query.root import Coordinator
from quarry.query.topology import StaticTopology

OAS_SCHEMA = Path(__file__).with_name("openapi_3_1_schema.json")


@pytest.fixture(scope="module")
def app() -> Iterator[Starlette]:
    coordinator = Coordinator(StaticTopology.index_nodes(["127.0.0.1:9"]), None, None)  # no node is asked
    try:
        yield build_app(coordinator, EmbeddingOps(coordinator.cluster, None, ""), AllowedHosts.of("127.0.0.1"))
    finally:
        coordinator.cluster.close()


@pytest.fixture(scope="module")
def operations(app: Starlette) -> list[Operation]:
    return [route.operation for route in app.routes if isinstance(route, OperationRoute)]


@pytest.fixture(scope="module")
def document(operations: list[Operation]) -> dict[str, Any]:
    return openapi_document(operations)


def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    validator = Draft202012Validator(json.loads(OAS_SCHEMA.read_text()))
    assert [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)] == []
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def test_every_reference_resolves(document: dict[str, Any]) -> None:
    resolver = Registry().with_resource("urn:doc", DRAFT202012.create_resource(document)).resolver("urn:doc")
    refs = [value for key, value in _walk(document) if key == "$ref"]
    assert refs and all(ref.startswith("#/components/schemas/") for ref in refs)
    for ref in set(refs):
        resolver.lookup(ref)


def test_it_documents_exactly_the_served_routes(app: Starlette, document: dict[str, Any]) -> None:
    served = {r.operation.path for r in app.routes if isinstance(r, OperationRoute)}
    assert set(document["paths"]) == served
    assert {"/api/sessions", "/api/sessions/{session_id}/events", "/api/sessions/{session_id}/log"} <= served
    assert all(set(item) == {"get"} for item in document["paths"].values())
    names = [item["get"]["operationId"] for item in document["paths"].values()]
    assert len(names) == len(set(names))


def test_every_request_field_is_a_parameter_the_api_accepts(
    operations: list[Operation], document: dict[str, Any]
) -> None:
    """Each documented parameter, given a value of its documented type, reads into the request; together
    they reach every field of the request message."""
    for operation in operations:
        documented = document["paths"][operation.path]["get"]["parameters"]
        path = {p["name"]: _sample(p) for p in documented if p["in"] == "path"}
        query = QueryParams([(p["name"], _sample(p)) for p in documented if p["in"] == "query"])
        message = request_of(operation, path, query)
        if operation.request is None:
            assert documented == [] and message is None
            continue
        named = {p["name"].split(".")[0] for p in documented}
        outer = {target: name for name, target in operation.renamed.items()}
        assert named == {outer.get(f.name, f.name) for f in operation.request.DESCRIPTOR.fields}, operation.path


def test_search_controls_and_filters_are_typed(document: dict[str, Any]) -> None:
    search = {p["name"]: p for p in document["paths"]["/api/sessions"]["get"]["parameters"]}
    assert search["controls.admission.lexical_coverage"]["schema"] == {"type": "number"}
    assert search["controls.include_scores"]["schema"] == {"type": "boolean"}
    weights = search["controls.fusion.params.weights"]["content"]["application/json"]["schema"]
    assert weights["type"] == "object" and "additionalProperties" in weights
    events = {p["name"]: p for p in document["paths"]["/api/sessions/{session_id}/events"]["get"]["parameters"]}
    assert events["session_id"] == {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
    element = {"$ref": "#/components/schemas/quarry.v1.EventFilter"}
    assert events["filters"]["content"]["application/json"]["schema"]["anyOf"][0] == element
    error = document["components"]["schemas"]["quarry.v1.ErrorDetail"]["properties"]["code"]
    assert "NOT_FOUND" in error["enum"] and error["type"] == "string"
    log = document["paths"]["/api/sessions/{session_id}/log"]["get"]["responses"]["200"]["content"]
    assert log == {"application/x-ndjson": {"schema": {"$ref": "#/components/schemas/quarry.v1.SessionLogChunk"}}}
    session = document["components"]["schemas"]["quarry.v1.Session"]["properties"]
    assert session["createdMs"]["type"] == "string"  # int64: a string in proto3 JSON


def _sample(parameter: dict[str, Any]) -> str:
    """A value of the parameter's documented type, as a query string holds it."""
    if "content" in parameter:
        schema = parameter["content"]["application/json"]["schema"]
        return "{}" if schema.get("type") == "object" else "[]"
    schema = parameter["schema"]
    schema = schema.get("items", schema)
    if "enum" in schema:
        return str(schema["enum"][0])
    return {"integer": "1", "number": "0.5", "boolean": "true"}.get(schema.get("type", ""), "x")


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)
