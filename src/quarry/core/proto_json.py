"""Proto3 JSON, the one JSON form of Quarry's messages on every surface that is not gRPC (HTTP, MCP).

`json_format` writes lowerCamelCase names and 64-bit integers as strings, as the proto3 JSON mapping says;
it reads either spelling of a field's name. A failure is `{"error": ErrorDetail}` in the same form.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2


def to_json(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def error_json(error: QuarryError) -> dict[str, Any]:
    return {"error": to_json(error.to_detail())}


def from_json(message_type: type[Message], fields: dict[str, Any]) -> Message:
    """The request message of JSON fields; INVALID_REQUEST naming what does not fit."""
    try:
        return json_format.ParseDict(fields, message_type())
    except json_format.ParseError as error:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"invalid arguments: {error}") from None
