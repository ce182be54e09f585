"""What one route of the HTTP JSON API takes and answers, declared once: http_api.py serves a route from
its Operation and openapi.py documents it from the same declaration, so the two cannot drift apart.

An Operation is a GET of a path template whose `{name}` segments are fields of the request message (a
string segment may hold `/`, as a child session's id does: `…/agent-a1b2`). Every other field of the
request is a query parameter, named by its proto name or its JSON name (`deadline_ms` or `deadlineMs`):

- a scalar or enum field takes its value (a boolean `true`/`false`, or 1/0); a repeated one, one value
  per repetition of the parameter;
- a field of a nested message, by its dotted path: `controls.admission.lexical_coverage=0.5`; a map
  entry by its key, `controls.fusion.params.weights.vector=2`, or the whole map as a JSON object;
- a repeated message field takes JSON, in proto3 JSON: one element per parameter, or a JSON array of
  them (`filters={"surfaces":{"values":["current"]}}`).

Anything else (a name no field has, a path through a repeated or scalar field, a nested message without
a field named, a path field given again in the query) is INVALID_REQUEST naming the parameter, and so is
a value that does not fit its field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from quarry.core.errors import QuarryError
from quarry.core.proto_json import from_json
from quarry.v1 import embedding_pb2, errors_pb2, query_pb2, sessions_pb2

WELL_KNOWN_PACKAGE = "google.protobuf"
_PATH_FIELD = re.compile(r"\{(\w+)\}")
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
PUBLIC_SERVICES = (
    query_pb2.DESCRIPTOR.services_by_name["QueryService"],
    sessions_pb2.DESCRIPTOR.services_by_name["SessionQueryService"],
    embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"],
)


@dataclass(frozen=True)
class Operation:
    """One GET route: `path` (`/api/sessions/{session_id}`), the request message its parameters fill (None:
    it takes none), the response message, and `call`, the method the gRPC servicer calls. With `stream`,
    `call` yields messages, answered as NDJSON (one message a line). `renamed`: a parameter name -> the
    request field it sets (`expression` -> `query`)."""

    name: str  # the operationId: the gRPC method it answers as, or a name of its own
    path: str
    request: type[Message] | None
    response: type[Message]
    call: Callable[[Any], Message] | Callable[[Any], Iterator[Message]]
    summary: str
    renamed: Mapping[str, str] = field(default_factory=dict)
    stream: bool = False

    @classmethod
    def of_method(
        cls,
        method: MethodDescriptor,
        path: str,
        call: Callable[[Any], Any],
        summary: str,
        renamed: Mapping[str, str] | None = None,
    ) -> Operation:
        """The route answering as a gRPC method: its name, request and response (a stream: NDJSON)."""
        request, response = GetMessageClass(method.input_type), GetMessageClass(method.output_type)
        return cls(method.name, path, request, response, call, summary, renamed or {}, method.server_streaming)

    @classmethod
    def answering(
        cls,
        path: str,
        request: type[Message],
        call: Callable[[Any], Message],
        summary: str,
        renamed: Mapping[str, str] | None = None,
    ) -> Operation:
        """The route of the public gRPC method that takes `request` (the only one that does)."""
        wanted = request.DESCRIPTOR.full_name
        methods = [m for s in PUBLIC_SERVICES for m in s.methods if m.input_type.full_name == wanted]
        if len(methods) != 1:
            raise ValueError(f"{wanted} is the request of {[m.full_name for m in methods]}: use Operation.of_method")
        return cls.of_method(methods[0], path, call, summary, renamed)

    @property
    def path_fields(self) -> list[str]:
        return _PATH_FIELD.findall(self.path)

    @property
    def route_path(self) -> str:
        """The path as Starlette matches it: a string field's segment may hold `/`."""

        def convert(match: re.Match[str]) -> str:
            if self.request is None or _field(self.request.DESCRIPTOR, match[1]).type != FieldDescriptor.TYPE_STRING:
                return match[0]
            return f"{{{match[1]}:path}}"

        return _PATH_FIELD.sub(convert, self.path)


@dataclass(frozen=True)
class Parameter:
    """A query or path parameter of a request: `fields` is the path of fields from the request to the one it
    sets; `form` is `value` (a scalar, repeated by repeating the parameter) or `json`."""

    name: str
    fields: tuple[FieldDescriptor, ...]
    where: str  # path | query
    form: str

    @property
    def leaf(self) -> FieldDescriptor:
        return self.fields[-1]


def parameters(operation: Operation) -> list[Parameter]:
    """Every parameter the operation's request takes, in field order, path fields first."""
    if operation.request is None:
        return []
    descriptor = operation.request.DESCRIPTOR
    path = [Parameter(name, (_field(descriptor, name),), "path", "value") for name in operation.path_fields]
    outer = {target: name for name, target in operation.renamed.items()}
    query = [p for p in _query_parameters(descriptor, ()) if p.fields[0].name not in operation.path_fields]
    return path + [Parameter(outer.get(p.name, p.name), p.fields, p.where, p.form) for p in query]


def _query_parameters(descriptor: Descriptor, prefix: tuple[FieldDescriptor, ...]) -> Iterator[Parameter]:
    for child in descriptor.fields:
        fields = (*prefix, child)
        name = ".".join(f.name for f in fields)
        if child.type != FieldDescriptor.TYPE_MESSAGE:
            yield Parameter(name, fields, "query", "value")
        elif takes_json(child):
            yield Parameter(name, fields, "query", "json")
        else:
            yield from _query_parameters(child.message_type, fields)


def is_map(field_: FieldDescriptor) -> bool:
    return field_.type == FieldDescriptor.TYPE_MESSAGE and field_.message_type.GetOptions().map_entry


def takes_json(field_: FieldDescriptor) -> bool:
    """A message field given as JSON: repeated, a map, or a well-known type (its own JSON form)."""
    return field_.type == FieldDescriptor.TYPE_MESSAGE and (
        field_.is_repeated or field_.message_type.file.package == WELL_KNOWN_PACKAGE
    )


def request_of(operation: Operation, path: Mapping[str, str], query: Any) -> Message | None:
    """The operation's request from the path's fields and the query's parameters (a multi-dict: Starlette's
    QueryParams)."""
    if operation.request is None:
        for key in query:
            raise _invalid(key, f"unknown parameter {key!r}: this route takes none")
        return None
    return request_from_params(operation.request, query, operation.renamed, path)


def request_from_params(
    message_type: type[Message],
    params: Any,
    renamed: Mapping[str, str] | None = None,
    path: Mapping[str, str] | None = None,
) -> Message:
    """The request message of a route's parameters (the module's docstring); INVALID_REQUEST naming a
    parameter that is not a field of the request, or a value that does not fit its field."""
    renamed = renamed or {}
    path = path or {}
    message = message_type()
    for name, value in path.items():
        _merge(message, (_field(message_type.DESCRIPTOR, name),), None, [value], name)
    for key in params:
        fields, map_key = _target(message_type.DESCRIPTOR, renamed.get(key, key), key)
        if fields[0].name in path:
            raise _invalid(key, f"{key!r} is given in the path: it takes no query parameter")
        _merge(message, fields, map_key, params.getlist(key), key)
    return message


def _target(descriptor: Descriptor, name: str, key: str) -> tuple[tuple[FieldDescriptor, ...], str | None]:
    """The fields a parameter's dotted name walks to, and a map entry's key when it names one."""
    segments = name.split(".")
    fields: list[FieldDescriptor] = []
    for index, segment in enumerate(segments):
        found = descriptor.fields_by_name.get(segment) or next(
            (f for f in descriptor.fields if f.json_name == segment), None
        )
        if found is None:
            raise _invalid(key, f"unknown parameter {key!r}")
        fields.append(found)
        rest = segments[index + 1 :]
        if not rest:
            return tuple(fields), None
        if is_map(found) and len(rest) == 1:
            return tuple(fields), rest[0]
        if found.type != FieldDescriptor.TYPE_MESSAGE or takes_json(found):
            where = ".".join(segments[: index + 1])
            raise _invalid(key, f"unknown parameter {key!r}: {where} has no fields to name (give it a value)")
        descriptor = found.message_type
    raise AssertionError("unreachable: a name has at least one segment")


def _merge(
    message: Message, fields: tuple[FieldDescriptor, ...], map_key: str | None, values: list[str], key: str
) -> None:
    """Set one parameter's field in `message`, parsed alone so that an error names the parameter."""
    document: Any = _value(fields[-1], map_key, values, key)
    for outer in reversed(fields):
        document = {outer.json_name: document}
    try:
        message.MergeFrom(from_json(type(message), document))
    except QuarryError as error:
        raise QuarryError(error.code, f"parameter {key!r}: {error.message}", parameter=key) from None


def _value(leaf: FieldDescriptor, map_key: str | None, values: list[str], key: str) -> Any:
    """A parameter's values as the JSON of its field."""
    if map_key is not None:
        return {map_key: _scalar(leaf.message_type.fields_by_name["value"], values[-1], key)}
    if takes_json(leaf):  # a map too: its entries are a repeated message
        decoded = [_decoded(value, key) for value in values]
        if is_map(leaf):
            return {k: v for item in decoded for k, v in _object(item, key).items()}
        if not leaf.is_repeated:
            return decoded[-1]
        return [element for item in decoded for element in (item if isinstance(item, list) else [item])]
    if leaf.type == FieldDescriptor.TYPE_MESSAGE:
        raise _invalid(key, f"{key!r} is a message: set its fields as parameters {key}.<field>")
    converted = [_scalar(leaf, value, key) for value in values]
    return converted if leaf.is_repeated else converted[-1]


def _scalar(leaf: FieldDescriptor, value: str, key: str) -> object:
    """A query string's value as its field's JSON: a boolean as a JSON boolean, which proto3 JSON takes only
    so; anything else as written (proto3 JSON reads numbers from strings)."""
    if leaf.type != FieldDescriptor.TYPE_BOOL:
        return value
    if value.lower() not in _BOOLEANS:
        raise _invalid(key, f"parameter {key!r} takes true or false, got {value!r}")
    return _BOOLEANS[value.lower()]


def _decoded(value: str, key: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise _invalid(key, f"parameter {key!r} takes JSON (proto3 JSON of its message): {error}") from None


def _object(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(key, f"parameter {key!r} takes a JSON object of key -> value")
    return value


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor:
    found = descriptor.fields_by_name.get(name)
    if found is None:
        raise ValueError(f"{descriptor.full_name} has no field {name!r}: fix the route's path")
    return found


def _invalid(parameter: str, message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)
