"""Proto3 JSON, the one JSON form of Quarry's messages on every surface that is not gRPC (HTTP, MCP).

The proto3 JSON mapping writes lowerCamelCase names, 64-bit integers as strings, enums by name, bytes
in base64 and NaN / ±Infinity as strings; a reader takes either spelling of a field's name. A failure
is `{"error": ErrorDetail}` in the same form.

`to_json` gives exactly what `json_format.MessageToDict` gives (tests/contract/test_proto_json.py holds it
to that on random messages of every type the API answers with), from an encoder compiled once per
message type: `json_format` re-inspects each field's descriptor for every value it writes, which made
the JSON of a page of hits a fifth of an HTTP search's CPU (bench/RESULTS.md, "The cost of a query, continued").
Well-known types (Struct, Value, Timestamp, wrappers, Any) keep `json_format`'s own forms.
"""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.internal.type_checkers import ToShortestFloat
from google.protobuf.message import Message

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

Convert = Callable[[Any], Any]
_WELL_KNOWN_PACKAGE = "google.protobuf."
_INT64_TYPES = frozenset((FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64))
_encoders: dict[str, Callable[[Message], Any]] = {}
_compiling: dict[str, Callable[[Message], Any]] = {}  # types whose encoder is being compiled (a recursive field)
_compiling_lock = threading.RLock()


def to_json(message: Message) -> Any:
    """The message in proto3 JSON, as `json_format.MessageToDict(message)` writes it."""
    return _encoder(message.DESCRIPTOR)(message)


def error_json(error: QuarryError) -> dict[str, Any]:
    return {"error": to_json(error.to_detail())}


def from_json(message_type: type[Message], fields: dict[str, Any]) -> Message:
    """The request message of JSON fields; INVALID_REQUEST naming what does not fit."""
    try:
        return json_format.ParseDict(fields, message_type())
    except json_format.ParseError as error:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"invalid arguments: {error}") from None


def _encoder(descriptor: Descriptor) -> Callable[[Message], Any]:
    """The encoder of one message type, compiled on first use with those of the types its fields hold (a
    recursive type reaches its own encoder, while it compiles, through a forwarding call)."""
    name = descriptor.full_name
    encoder = _encoders.get(name)
    if encoder is not None:
        return encoder
    with _compiling_lock:
        encoder = _encoders.get(name) or _compiling.get(name)
        if encoder is None:
            _compiling[name] = lambda message: _encoders[name](message)
            try:
                encoder = _encoders[name] = _compile(descriptor)
            finally:
                del _compiling[name]
    return encoder


def _compile(descriptor: Descriptor) -> Callable[[Message], Any]:
    if descriptor.full_name.startswith(_WELL_KNOWN_PACKAGE):
        return json_format.MessageToDict
    # Keyed by the field descriptors themselves: ListFields hands back the same objects, and their hash is
    # cheaper than reading each one's number.
    plan = {field: (field.json_name, _field_converter(field)) for field in descriptor.fields}

    def encode(message: Message) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field, value in message.ListFields():
            entry = plan.get(field)
            if entry is None:  # a field the plan does not hold (an extension): written as json_format does
                return json_format.MessageToDict(message)
            name, convert = entry
            out[name] = value if convert is None else convert(value)
        return out

    return encode


def _field_converter(field: FieldDescriptor) -> Convert | None:
    """How a present field's value is written (None: as it is)."""
    if _is_map(field):
        key_field, value_field = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        key_of = _map_key(key_field)
        value_of = _value_converter(value_field)
        if value_of is None:
            return lambda entries: {key_of(k): v for k, v in entries.items()}
        return lambda entries: {key_of(k): value_of(v) for k, v in entries.items()}
    convert = _value_converter(field)
    if field.is_repeated:
        return list if convert is None else (lambda values: [convert(v) for v in values])
    return convert


def _is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


def _map_key(field: FieldDescriptor) -> Convert:
    if field.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        return lambda key: "true" if key else "false"
    return str


def _value_converter(field: FieldDescriptor) -> Convert | None:
    """How one value of the field's type is written (None: as it is: strings, booleans, 32-bit integers)."""
    kind = field.cpp_type
    if kind == FieldDescriptor.CPPTYPE_MESSAGE:
        return _encoder(field.message_type)
    if kind == FieldDescriptor.CPPTYPE_ENUM:
        if field.enum_type.full_name == "google.protobuf.NullValue":
            return lambda _: None
        names = {number: value.name for number, value in field.enum_type.values_by_number.items()}
        return lambda number: names.get(number, number)  # an open enum's unknown value: its number
    if field.type == FieldDescriptor.TYPE_BYTES:
        return lambda value: base64.b64encode(value).decode("utf-8")
    if kind in _INT64_TYPES:
        return str
    if kind == FieldDescriptor.CPPTYPE_DOUBLE:
        return _double
    if kind == FieldDescriptor.CPPTYPE_FLOAT:
        return _float
    return None


def _double(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return _non_finite(value)


def _float(value: float) -> float | str:
    if math.isfinite(value):
        return ToShortestFloat(value)
    return _non_finite(value)


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "-Infinity" if value < 0 else "Infinity"
