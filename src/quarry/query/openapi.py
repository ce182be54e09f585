"""The HTTP JSON API as an OpenAPI 3.1 document, generated from the operations and the proto descriptors.

Nothing is written per route: a route's parameters are its request message's fields as the API reads
them (quarry.query.http_contract: path segments, scalar query parameters with their types, repeated ones
as arrays, nested messages as dotted names, repeated messages and maps as JSON), and its response is the
response message's schema. `components.schemas` holds one JSON Schema (the 2020-12 dialect OpenAPI 3.1
uses) per message the routes reach, walked from the descriptors under proto3 JSON's names and forms:
lowerCamelCase keys, 64-bit integers as strings, enums by name, bytes as base64, the well-known types in
their own JSON forms; `Error` is the failure body, `{"error": ErrorDetail}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from quarry.query.http_contract import WELL_KNOWN_PACKAGE, Operation, Parameter, is_map, parameters
from quarry.v1 import errors_pb2

REF = "#/components/schemas/"
ERROR = "Error"
NDJSON = "application/x-ndjson"
_INT32 = {"type": "integer", "format": "int32"}
_INT64 = {"type": "string", "pattern": "^-?[0-9]+$", "format": "int64"}  # proto3 JSON writes 64-bit integers as strings
_NUMBER = {"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_INT32: _INT32,
    FieldDescriptor.TYPE_SINT32: _INT32,
    FieldDescriptor.TYPE_SFIXED32: _INT32,
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "uint32", "minimum": 0},
    FieldDescriptor.TYPE_FIXED32: {"type": "integer", "format": "uint32", "minimum": 0},
    FieldDescriptor.TYPE_INT64: _INT64,
    FieldDescriptor.TYPE_SINT64: _INT64,
    FieldDescriptor.TYPE_SFIXED64: _INT64,
    FieldDescriptor.TYPE_UINT64: {"type": "string", "pattern": "^[0-9]+$", "format": "uint64"},
    FieldDescriptor.TYPE_FIXED64: {"type": "string", "pattern": "^[0-9]+$", "format": "uint64"},
    FieldDescriptor.TYPE_DOUBLE: _NUMBER,
    FieldDescriptor.TYPE_FLOAT: _NUMBER,
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}
_TEXT = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
# The well-known types' own proto3 JSON forms; a wrapper is its value's.
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?s$"},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Empty": {"type": "object", "maxProperties": 0},
    "google.protobuf.Any": {"type": "object", "properties": {"@type": {"type": "string"}}, "required": ["@type"]},
}


class Schemas:
    """components.schemas, filled as messages are reached."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {}

    def ref(self, descriptor: Descriptor) -> dict[str, Any]:
        """A reference to the message's schema (its form, for a well-known type), added on first use."""
        if descriptor.file.package == WELL_KNOWN_PACKAGE:
            value = descriptor.fields_by_name.get("value")
            if descriptor.full_name not in _WELL_KNOWN and value is not None:  # a wrapper: its value's form
                return self.field(value)
            return dict(_WELL_KNOWN.get(descriptor.full_name, {}))
        if descriptor.full_name not in self.components:
            self.components[descriptor.full_name] = {}  # reserved first: messages may reach themselves
            properties = {f.json_name: self.field(f) for f in descriptor.fields}
            self.components[descriptor.full_name] = {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
            }
        return {"$ref": REF + descriptor.full_name}

    def field(self, field: FieldDescriptor, *, repeated: bool | None = None) -> dict[str, Any]:
        """A field's value as proto3 JSON writes it (one element of a repeated field with repeated=False)."""
        if is_map(field):
            return {"type": "object", "additionalProperties": self.field(field.message_type.fields_by_name["value"])}
        if field.is_repeated if repeated is None else repeated:
            return {"type": "array", "items": self.field(field, repeated=False)}
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            return self.ref(field.message_type)
        if field.type == FieldDescriptor.TYPE_ENUM:
            return {"type": "string", "enum": [value.name for value in field.enum_type.values]}
        return dict(_SCALARS[field.type])


def openapi_document(operations: Sequence[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the operations (every one a GET)."""
    schemas = Schemas()
    schemas.ref(errors_pb2.ErrorDetail.DESCRIPTOR)
    schemas.components[ERROR] = {
        "type": "object",
        "properties": {"error": {"$ref": REF + errors_pb2.ErrorDetail.DESCRIPTOR.full_name}},
        "required": ["error"],
        "additionalProperties": False,
    }
    paths = {operation.path: {"get": _operation(operation, schemas)} for operation in operations}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Quarry",
            "version": "v1",
            "description": "Quarry's HTTP JSON API: each route answers the gRPC message of the same request, "
            "in proto3 JSON (docs/search-api.md#http-json-api, docs/sessions.md#http).",
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.components.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(operation: Operation, schemas: Schemas) -> dict[str, Any]:
    media = NDJSON if operation.stream else "application/json"
    answered = f"{operation.response.DESCRIPTOR.full_name} in proto3 JSON" + (
        ", one a line" if operation.stream else ""
    )
    return {
        "operationId": operation.name,
        "summary": operation.summary,
        "parameters": [_parameter(p, schemas) for p in parameters(operation)],
        "responses": {
            "200": {
                "description": answered,
                "content": {media: {"schema": schemas.ref(operation.response.DESCRIPTOR)}},
            },
            "default": {
                "description": 'a failure: {"error": ErrorDetail}, with the HTTP status of its code',
                "content": {"application/json": {"schema": {"$ref": REF + ERROR}}},
            },
        },
        # Without tokens configured the API takes none; with them, a bearer token with `read`.
        "security": [{}, {"bearer": []}],
    }


def _parameter(parameter: Parameter, schemas: Schemas) -> dict[str, Any]:
    leaf = parameter.leaf
    described: dict[str, Any] = {"name": parameter.name, "in": parameter.where}
    if parameter.where == "path":
        described["required"] = True
    if parameter.form == "value":
        described["schema"] = _value_schema(leaf, schemas)
        if leaf.is_repeated:
            described.update(style="form", explode=True, description="repeat the parameter for each value")
        return described
    if is_map(leaf):
        described["description"] = f"a JSON object, or one parameter per key: {parameter.name}.<key>=<value>"
        schema = schemas.field(leaf)
    elif leaf.is_repeated:
        described["description"] = "proto3 JSON: one element per parameter, or a JSON array of them"
        element = schemas.field(leaf, repeated=False)
        schema = {"anyOf": [element, {"type": "array", "items": element}]}
    else:
        schema = schemas.field(leaf)
    described["content"] = {"application/json": {"schema": schema}}
    return described


def _value_schema(leaf: FieldDescriptor, schemas: Schemas) -> dict[str, Any]:
    """A scalar parameter's schema: a query string holds any integer as digits, 64-bit ones too."""
    if _SCALARS.get(leaf.type, {}).get("type") == "string" and leaf.type not in _TEXT:  # 64-bit integers
        element: dict[str, Any] = {"type": "integer", "format": _SCALARS[leaf.type]["format"]}
    elif leaf.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        element = {"type": "number"}
    else:
        element = schemas.field(leaf, repeated=False)
    return {"type": "array", "items": element} if leaf.is_repeated else element
