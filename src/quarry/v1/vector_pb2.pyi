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
    __slots__ = ("recent_backlog",)
    RECENT_BACKLOG_FIELD_NUMBER: _ClassVar[int]
    recent_backlog: bool
    def __init__(self, recent_backlog: _Optional[bool] = ...) -> None: ...

class VectorStats(_message.Message):
    __slots__ = ("vectors", "pending", "embedder", "model", "dimension", "ready", "last_error", "scopes_enforced")
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    EMBEDDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    SCOPES_ENFORCED_FIELD_NUMBER: _ClassVar[int]
    vectors: int
    pending: int
    embedder: str
    model: str
    dimension: int
    ready: bool
    last_error: str
    scopes_enforced: bool
    def __init__(self, vectors: _Optional[int] = ..., pending: _Optional[int] = ..., embedder: _Optional[str] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ..., ready: _Optional[bool] = ..., last_error: _Optional[str] = ..., scopes_enforced: _Optional[bool] = ...) -> None: ...

class EmbedStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CatchUpRun(_message.Message):
    __slots__ = ("trigger", "started_ms", "finished_ms", "running", "sessions", "texts", "characters", "seconds", "texts_per_second")
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_MS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    TEXTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    trigger: str
    started_ms: int
    finished_ms: int
    running: bool
    sessions: int
    texts: int
    characters: int
    seconds: float
    texts_per_second: float
    def __init__(self, trigger: _Optional[str] = ..., started_ms: _Optional[int] = ..., finished_ms: _Optional[int] = ..., running: _Optional[bool] = ..., sessions: _Optional[int] = ..., texts: _Optional[int] = ..., characters: _Optional[int] = ..., seconds: _Optional[float] = ..., texts_per_second: _Optional[float] = ...) -> None: ...

class EmbedStatusResponse(_message.Message):
    __slots__ = ("embedder", "model", "dimension", "mode", "ready", "vectors", "embedded_sessions", "queued_texts", "queued_sessions", "feed_backlog_texts", "last_error", "last_run", "covered_after_ms", "embedded_oldest_ms", "embedded_newest_ms")
    EMBEDDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_TEXTS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    FEED_BACKLOG_TEXTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    COVERED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_OLDEST_MS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_NEWEST_MS_FIELD_NUMBER: _ClassVar[int]
    embedder: str
    model: str
    dimension: int
    mode: str
    ready: bool
    vectors: int
    embedded_sessions: int
    queued_texts: int
    queued_sessions: int
    feed_backlog_texts: int
    last_error: str
    last_run: CatchUpRun
    covered_after_ms: int
    embedded_oldest_ms: int
    embedded_newest_ms: int
    def __init__(self, embedder: _Optional[str] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ..., mode: _Optional[str] = ..., ready: _Optional[bool] = ..., vectors: _Optional[int] = ..., embedded_sessions: _Optional[int] = ..., queued_texts: _Optional[int] = ..., queued_sessions: _Optional[int] = ..., feed_backlog_texts: _Optional[int] = ..., last_error: _Optional[str] = ..., last_run: _Optional[_Union[CatchUpRun, _Mapping]] = ..., covered_after_ms: _Optional[int] = ..., embedded_oldest_ms: _Optional[int] = ..., embedded_newest_ms: _Optional[int] = ...) -> None: ...

class EmbedWindowRequest(_message.Message):
    __slots__ = ("max_sessions",)
    MAX_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    max_sessions: int
    def __init__(self, max_sessions: _Optional[int] = ...) -> None: ...

class EmbedWindow(_message.Message):
    __slots__ = ("max_sessions", "sessions", "session_ids", "texts", "characters", "estimated_seconds", "estimate_basis", "sessions_left", "texts_left")
    MAX_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_BASIS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_LEFT_FIELD_NUMBER: _ClassVar[int]
    TEXTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    max_sessions: int
    sessions: int
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    texts: int
    characters: int
    estimated_seconds: float
    estimate_basis: str
    sessions_left: int
    texts_left: int
    def __init__(self, max_sessions: _Optional[int] = ..., sessions: _Optional[int] = ..., session_ids: _Optional[_Iterable[str]] = ..., texts: _Optional[int] = ..., characters: _Optional[int] = ..., estimated_seconds: _Optional[float] = ..., estimate_basis: _Optional[str] = ..., sessions_left: _Optional[int] = ..., texts_left: _Optional[int] = ...) -> None: ...

class EmbedBackfillResult(_message.Message):
    __slots__ = ("window", "sessions", "texts", "seconds", "sessions_left", "texts_left", "cancelled", "run")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_LEFT_FIELD_NUMBER: _ClassVar[int]
    TEXTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    window: EmbedWindow
    sessions: int
    texts: int
    seconds: float
    sessions_left: int
    texts_left: int
    cancelled: bool
    run: CatchUpRun
    def __init__(self, window: _Optional[_Union[EmbedWindow, _Mapping]] = ..., sessions: _Optional[int] = ..., texts: _Optional[int] = ..., seconds: _Optional[float] = ..., sessions_left: _Optional[int] = ..., texts_left: _Optional[int] = ..., cancelled: _Optional[bool] = ..., run: _Optional[_Union[CatchUpRun, _Mapping]] = ...) -> None: ...
