from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VectorSearchRequest(_message.Message):
    __slots__ = ("text", "limit", "allow_session_ids", "restrict_to_allowed", "near_session_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ALLOW_SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    RESTRICT_TO_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    NEAR_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    limit: int
    allow_session_ids: _containers.RepeatedScalarFieldContainer[str]
    restrict_to_allowed: bool
    near_session_id: str
    def __init__(self, text: _Optional[str] = ..., limit: _Optional[int] = ..., allow_session_ids: _Optional[_Iterable[str]] = ..., restrict_to_allowed: _Optional[bool] = ..., near_session_id: _Optional[str] = ...) -> None: ...

class VectorHit(_message.Message):
    __slots__ = ("session_id", "message_id", "distance")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    message_id: str
    distance: float
    def __init__(self, session_id: _Optional[str] = ..., message_id: _Optional[str] = ..., distance: _Optional[float] = ...) -> None: ...

class VectorSearchResponse(_message.Message):
    __slots__ = ("hits", "embed_ms", "search_ms")
    HITS_FIELD_NUMBER: _ClassVar[int]
    EMBED_MS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_MS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[VectorHit]
    embed_ms: float
    search_ms: float
    def __init__(self, hits: _Optional[_Iterable[_Union[VectorHit, _Mapping]]] = ..., embed_ms: _Optional[float] = ..., search_ms: _Optional[float] = ...) -> None: ...

class VectorStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VectorStats(_message.Message):
    __slots__ = ("vectors", "pending", "embedder", "model", "dimension", "ready", "last_error")
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    EMBEDDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    vectors: int
    pending: int
    embedder: str
    model: str
    dimension: int
    ready: bool
    last_error: str
    def __init__(self, vectors: _Optional[int] = ..., pending: _Optional[int] = ..., embedder: _Optional[str] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ..., ready: _Optional[bool] = ..., last_error: _Optional[str] = ...) -> None: ...
