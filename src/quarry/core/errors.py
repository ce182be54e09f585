"""Typed errors and their mapping onto gRPC status codes with an ErrorDetail in the details.

Every failure a user can cause is a QuarryError carrying a closed ErrorCode. Servers abort with
`abort_with(context, error)`; clients turn an RpcError back into a QuarryError with
`from_rpc_error`, so a typed error survives every hop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2, json_format
from google.rpc import status_pb2
from grpc_status import rpc_status

from quarry.v1 import errors_pb2

ErrorCode = errors_pb2.ErrorCode

_STATUS_BY_CODE: dict[int, grpc.StatusCode] = {
    errors_pb2.INVALID_QUERY: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.UNKNOWN_FIELD: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.BAD_VALUE: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.UNSUPPORTED_FORM: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.UNSUPPORTED_NEGATION: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.SEMANTIC_UNAVAILABLE: grpc.StatusCode.FAILED_PRECONDITION,
    errors_pb2.INVALID_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.INVALID_CURSOR: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.STALE_CURSOR: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    errors_pb2.NODE_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    errors_pb2.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors_pb2.INGEST_REJECTED: grpc.StatusCode.INVALID_ARGUMENT,
    errors_pb2.INTERNAL: grpc.StatusCode.INTERNAL,
    errors_pb2.NOT_JUDGEABLE: grpc.StatusCode.FAILED_PRECONDITION,
    errors_pb2.PARTITION_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    errors_pb2.NOT_HOSTED: grpc.StatusCode.UNAVAILABLE,
    errors_pb2.INVALID_LINEAGE: grpc.StatusCode.FAILED_PRECONDITION,
    errors_pb2.CORRUPT_SESSION: grpc.StatusCode.DATA_LOSS,
    errors_pb2.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    errors_pb2.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    errors_pb2.QUERY_TOO_COSTLY: grpc.StatusCode.INVALID_ARGUMENT,
}
# Refusals of the caller (its token, its grants on a scope): never a failure of a node or of storage, so
# never named as one (the session API's names: quarry.client.sessions.session_query_code).
ACCESS_CODES = frozenset((errors_pb2.UNAUTHENTICATED, errors_pb2.PERMISSION_DENIED))


@dataclass
class QuarryError(Exception):
    """A failure with a closed code, a message, and where it happened when that is known."""

    code: int
    message: str
    offset: int | None = None
    line: int | None = None
    column: int | None = None
    token: str = ""
    parameter: str = ""
    expected: list[str] = field(default_factory=list)
    partitions: list[int] = field(default_factory=list)
    correction: str = ""  # the whole query with the error's one evident fix applied
    # (old, new): the fix, applied once the query text is known (quarry.dsl.errors.locate): the first
    # `old` at or after `offset` becomes `new` ("" inserts `new` at the offset; None: `new` is the query).
    fix: tuple[str | None, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        where = f" at line {self.line}, column {self.column}" if self.line else ""
        return f"{self.code_name}: {self.message}{where}"

    @property
    def code_name(self) -> str:
        return errors_pb2.ErrorCode.Name(self.code)

    @property
    def status_code(self) -> grpc.StatusCode:
        return _STATUS_BY_CODE.get(self.code, grpc.StatusCode.INTERNAL)

    def to_detail(self) -> errors_pb2.ErrorDetail:
        detail = errors_pb2.ErrorDetail(
            code=self.code,
            message=self.message,
            token=self.token,
            parameter=self.parameter,
            expected=self.expected,
            partitions=self.partitions,
            correction=self.correction,
        )
        if self.offset is not None:
            detail.position.offset = self.offset
            detail.position.line = self.line or 0
            detail.position.column = self.column or 0
        return detail

    @classmethod
    def from_detail(cls, detail: errors_pb2.ErrorDetail) -> QuarryError:
        has_position = detail.HasField("position")
        return cls(
            code=detail.code,
            message=detail.message,
            offset=detail.position.offset if has_position else None,
            line=detail.position.line if has_position else None,
            column=detail.position.column if has_position else None,
            token=detail.token,
            parameter=detail.parameter,
            expected=list(detail.expected),
            partitions=list(detail.partitions),
            correction=detail.correction,
        )

    def to_status(self) -> grpc.Status:
        packed = any_pb2.Any()
        packed.Pack(self.to_detail())
        status = status_pb2.Status(code=self.status_code.value[0], message=str(self), details=[packed])
        return rpc_status.to_status(status)

    def as_dict(self) -> dict[str, object]:
        """The error's ErrorDetail in proto3 JSON: what the CLI prints, as the HTTP API and MCP answer it."""
        return json_format.MessageToDict(self.to_detail())


def abort_with(context: grpc.ServicerContext, error: QuarryError) -> None:
    """Abort the current RPC with the error's status code and typed detail."""
    context.abort_with_status(error.to_status())


def from_rpc_error(error: grpc.RpcError) -> QuarryError:
    """Recover the typed error from a failed call; untyped failures map by status code."""
    status = rpc_status.from_call(error) if hasattr(error, "trailing_metadata") else None
    if status is not None:
        for detail in status.details:
            if detail.Is(errors_pb2.ErrorDetail.DESCRIPTOR):
                unpacked = errors_pb2.ErrorDetail()
                detail.Unpack(unpacked)
                return QuarryError.from_detail(unpacked)
    code = error.code() if hasattr(error, "code") else None
    text = error.details() if hasattr(error, "details") else str(error)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return QuarryError(errors_pb2.DEADLINE_EXCEEDED, f"deadline exceeded: {text}")
    if code == grpc.StatusCode.UNAVAILABLE:
        return QuarryError(errors_pb2.NODE_UNAVAILABLE, f"node unavailable: {text}")
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return QuarryError(errors_pb2.UNAUTHENTICATED, text)
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return QuarryError(errors_pb2.PERMISSION_DENIED, text)
    return QuarryError(errors_pb2.INTERNAL, f"{code.name if code else 'error'}: {text}")
