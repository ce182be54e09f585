from quarry.v1 import vector_pb2 as _vector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EmbeddingStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EmbeddingWindowRequest(_message.Message):
    __slots__ = ("max_sessions",)
    MAX_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    max_sessions: int
    def __init__(self, max_sessions: _Optional[int] = ...) -> None: ...

class NextAction(_message.Message):
    __slots__ = ("code", "reason", "command")
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    code: str
    reason: str
    command: str
    def __init__(self, code: _Optional[str] = ..., reason: _Optional[str] = ..., command: _Optional[str] = ...) -> None: ...

class EmbeddingStatus(_message.Message):
    __slots__ = ("vector_address", "vector_reachable", "vector", "archive_sessions", "archive_messages", "coverage", "backlog_texts", "semantic_usable", "next_action", "caveats")
    VECTOR_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_REACHABLE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_TEXTS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_USABLE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    vector_address: str
    vector_reachable: bool
    vector: _vector_pb2.EmbedStatusResponse
    archive_sessions: int
    archive_messages: int
    coverage: float
    backlog_texts: int
    semantic_usable: bool
    next_action: NextAction
    caveats: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, vector_address: _Optional[str] = ..., vector_reachable: _Optional[bool] = ..., vector: _Optional[_Union[_vector_pb2.EmbedStatusResponse, _Mapping]] = ..., archive_sessions: _Optional[int] = ..., archive_messages: _Optional[int] = ..., coverage: _Optional[float] = ..., backlog_texts: _Optional[int] = ..., semantic_usable: _Optional[bool] = ..., next_action: _Optional[_Union[NextAction, _Mapping]] = ..., caveats: _Optional[_Iterable[str]] = ...) -> None: ...

class EmbeddingPreflight(_message.Message):
    __slots__ = ("window", "backfill_args")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    BACKFILL_ARGS_FIELD_NUMBER: _ClassVar[int]
    window: _vector_pb2.EmbedWindow
    backfill_args: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, window: _Optional[_Union[_vector_pb2.EmbedWindow, _Mapping]] = ..., backfill_args: _Optional[_Iterable[str]] = ...) -> None: ...

class EmbeddingBackfill(_message.Message):
    __slots__ = ("result", "next_action")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    result: _vector_pb2.EmbedBackfillResult
    next_action: NextAction
    def __init__(self, result: _Optional[_Union[_vector_pb2.EmbedBackfillResult, _Mapping]] = ..., next_action: _Optional[_Union[NextAction, _Mapping]] = ...) -> None: ...
