from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    INVALID_QUERY: _ClassVar[ErrorCode]
    UNKNOWN_FIELD: _ClassVar[ErrorCode]
    BAD_VALUE: _ClassVar[ErrorCode]
    UNSUPPORTED_FORM: _ClassVar[ErrorCode]
    UNSUPPORTED_NEGATION: _ClassVar[ErrorCode]
    SEMANTIC_UNAVAILABLE: _ClassVar[ErrorCode]
    INVALID_REQUEST: _ClassVar[ErrorCode]
    INVALID_CURSOR: _ClassVar[ErrorCode]
    STALE_CURSOR: _ClassVar[ErrorCode]
    NOT_FOUND: _ClassVar[ErrorCode]
    NODE_UNAVAILABLE: _ClassVar[ErrorCode]
    DEADLINE_EXCEEDED: _ClassVar[ErrorCode]
    INGEST_REJECTED: _ClassVar[ErrorCode]
    INTERNAL: _ClassVar[ErrorCode]
    NOT_JUDGEABLE: _ClassVar[ErrorCode]
    PARTITION_UNAVAILABLE: _ClassVar[ErrorCode]
    NOT_HOSTED: _ClassVar[ErrorCode]
    INVALID_LINEAGE: _ClassVar[ErrorCode]
    CORRUPT_SESSION: _ClassVar[ErrorCode]
    UNAUTHENTICATED: _ClassVar[ErrorCode]
    PERMISSION_DENIED: _ClassVar[ErrorCode]
    QUERY_TOO_COSTLY: _ClassVar[ErrorCode]
ERROR_CODE_UNSPECIFIED: ErrorCode
INVALID_QUERY: ErrorCode
UNKNOWN_FIELD: ErrorCode
BAD_VALUE: ErrorCode
UNSUPPORTED_FORM: ErrorCode
UNSUPPORTED_NEGATION: ErrorCode
SEMANTIC_UNAVAILABLE: ErrorCode
INVALID_REQUEST: ErrorCode
INVALID_CURSOR: ErrorCode
STALE_CURSOR: ErrorCode
NOT_FOUND: ErrorCode
NODE_UNAVAILABLE: ErrorCode
DEADLINE_EXCEEDED: ErrorCode
INGEST_REJECTED: ErrorCode
INTERNAL: ErrorCode
NOT_JUDGEABLE: ErrorCode
PARTITION_UNAVAILABLE: ErrorCode
NOT_HOSTED: ErrorCode
INVALID_LINEAGE: ErrorCode
CORRUPT_SESSION: ErrorCode
UNAUTHENTICATED: ErrorCode
PERMISSION_DENIED: ErrorCode
QUERY_TOO_COSTLY: ErrorCode

class QueryPosition(_message.Message):
    __slots__ = ("offset", "line", "column")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    offset: int
    line: int
    column: int
    def __init__(self, offset: _Optional[int] = ..., line: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ("code", "message", "position", "token", "parameter", "expected", "partitions", "correction")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CORRECTION_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    message: str
    position: QueryPosition
    token: str
    parameter: str
    expected: _containers.RepeatedScalarFieldContainer[str]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    correction: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., message: _Optional[str] = ..., position: _Optional[_Union[QueryPosition, _Mapping]] = ..., token: _Optional[str] = ..., parameter: _Optional[str] = ..., expected: _Optional[_Iterable[str]] = ..., partitions: _Optional[_Iterable[int]] = ..., correction: _Optional[str] = ...) -> None: ...

class PartitionFailure(_message.Message):
    __slots__ = ("partition", "error")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: ErrorDetail
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[ErrorDetail, _Mapping]] = ...) -> None: ...
