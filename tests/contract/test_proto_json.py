"""Proto3 JSON (`quarry.core.proto_json.to_json`) is exactly `json_format.MessageToDict`'s, field order
included, on random messages of every type Quarry's protos declare: the HTTP API's and the MCP tools'
bodies do not change with the compiled encoder."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import orjson
import pytest
from google.protobuf import json_format, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quarry.v1
from quarry.core.proto_json import to_json
from quarry.v1 import query_pb2

# Every generated module of Quarry's protos (a new .proto is covered as soon as its stubs are generated).
MODULES = tuple(
    importlib.import_module(f"quarry.v1.{m.name}")
    for m in pkgutil.iter_modules(quarry.v1.__path__)
    if m.name.endswith("_pb2")
)
_INTEGERS = {
    FieldDescriptor.CPPTYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_UINT32: st.integers(0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT64: st.integers(0, 2**64 - 1),
}
_JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False)
)


def _every_message_type() -> list[Descriptor]:
    found: list[Descriptor] = []

    def visit(descriptor: Descriptor) -> None:
        if not descriptor.GetOptions().map_entry:
            found.append(descriptor)
        for nested in descriptor.nested_types:
            visit(nested)

    for module in MODULES:
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            visit(descriptor)
    return found


MESSAGE_TYPES = _every_message_type()


def _scalar(data: st.DataObject, field: FieldDescriptor) -> Any:
    kind = field.cpp_type
    if kind == FieldDescriptor.CPPTYPE_ENUM:
        known = [v.number for v in field.enum_type.values]
        return data.draw(st.one_of(st.sampled_from(known), st.integers(0, 40)))  # unknown numbers too
    if kind in _INTEGERS:
        return data.draw(_INTEGERS[kind])
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return data.draw(st.booleans())
    if kind == FieldDescriptor.CPPTYPE_FLOAT:
        return data.draw(st.floats(width=32))
    if kind == FieldDescriptor.CPPTYPE_DOUBLE:
        return data.draw(st.floats())
    if field.type == FieldDescriptor.TYPE_BYTES:
        return data.draw(st.binary(max_size=12))
    return data.draw(st.text(max_size=12))


def _fill(data: st.DataObject, message: Message, depth: int) -> None:
    """Sets a random subset of the message's fields (defaults included, for fields with presence)."""
    if isinstance(message, struct_pb2.Struct):
        message.update(data.draw(st.dictionaries(st.text(max_size=6), _JSON_SCALARS, max_size=3)))
        return
    for field in message.DESCRIPTOR.fields:
        if not data.draw(st.booleans()):
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            entry_fields = field.message_type.fields_by_name
            key_field, value_field = entry_fields["key"], entry_fields["value"]
            entries = getattr(message, field.name)
            for _ in range(data.draw(st.integers(0, 2))):
                key = _scalar(data, key_field)
                if value_field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                    if depth > 0:
                        _fill(data, entries[key], depth - 1)
                else:
                    entries[key] = _scalar(data, value_field)
        elif field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            if depth == 0:
                continue
            if field.is_repeated:
                for _ in range(data.draw(st.integers(0, 2))):
                    _fill(data, getattr(message, field.name).add(), depth - 1)
            else:
                getattr(message, field.name).SetInParent()
                _fill(data, getattr(message, field.name), depth - 1)
        elif field.is_repeated:
            getattr(message, field.name).extend(_scalar(data, field) for _ in range(data.draw(st.integers(0, 3))))
        else:
            setattr(message, field.name, _scalar(data, field))


def test_every_module_is_covered() -> None:
    assert len(MESSAGE_TYPES) > 100
    assert query_pb2.SearchEnvelope.DESCRIPTOR in MESSAGE_TYPES


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_proto3_json_is_json_formats_own(data: st.DataObject) -> None:
    descriptor = data.draw(st.sampled_from(MESSAGE_TYPES))
    message = GetMessageClass(descriptor)()
    _fill(data, message, depth=3)
    expected = json_format.MessageToDict(message)
    written = to_json(message)
    assert written == expected
    assert orjson.dumps(written) == orjson.dumps(expected)  # the same fields in the same order


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 0.1, 1e300])
def test_scores_that_are_not_numbers_are_named(value: float) -> None:
    envelope = query_pb2.SearchEnvelope(hits=[query_pb2.SearchHit(match=query_pb2.SessionSearchMatch(score=value))])
    assert to_json(envelope) == json_format.MessageToDict(envelope)


def test_quarrys_own_messages_never_fall_back_to_json_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled encoder knows every field of a message Quarry declares (json_format is kept for the
    well-known types only)."""
    envelope = query_pb2.SearchEnvelope(hits=[query_pb2.SearchHit(match=query_pb2.SessionSearchMatch(score=0.5))])
    envelope.hits[0].session.id = "codex:s1"
    expected = json_format.MessageToDict(envelope)

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("json_format was used")

    monkeypatch.setattr(json_format, "MessageToDict", refused)
    assert to_json(envelope) == expected
