"""OTLP attributes (KeyValue lists) as the projection writes them: empty values left out, the
redactions named."""

from __future__ import annotations

from opentelemetry.proto.common.v1 import common_pb2

from quarry.cli.otel_export.redaction import Redactor


def _any(value: object) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=[_any(v) for v in value]))
    return common_pb2.AnyValue(string_value=str(value))


class Attributes:
    """Attributes in insertion order; None, "" and [] are left out (zero numbers and False are kept only
    when `keep_zero`)."""

    def __init__(self) -> None:
        self.items: list[common_pb2.KeyValue] = []

    def add(self, key: str, value: object, keep_zero: bool = False) -> Attributes:
        if value is None or value == "" or value == [] or value == ():
            return self
        if not keep_zero and not isinstance(value, str) and value in (0, False):
            return self
        self.items.append(common_pb2.KeyValue(key=key, value=_any(value)))
        return self

    def redacted(self, redactor: Redactor) -> Attributes:
        return self.add("quarry.redacted", sorted(redactor.redacted))

    @classmethod
    def of(cls, ref: str, session_id: str) -> Attributes:
        """The attributes every span and record of an archive object starts with: its ref and session."""
        return (
            cls().add("quarry.ref", ref).add("quarry.session.id", session_id).add("gen_ai.conversation.id", session_id)
        )
