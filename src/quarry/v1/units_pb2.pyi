from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionCounts(_message.Message):
    __slots__ = ("messages", "words", "user_messages", "authored_user_messages", "assistant_messages", "system_messages", "tool_messages", "user_words", "authored_user_words", "assistant_words", "tool_use_messages", "thinking_messages", "paste_messages")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    WORDS_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    AUTHORED_USER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOL_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    USER_WORDS_FIELD_NUMBER: _ClassVar[int]
    AUTHORED_USER_WORDS_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_WORDS_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    THINKING_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PASTE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: int
    words: int
    user_messages: int
    authored_user_messages: int
    assistant_messages: int
    system_messages: int
    tool_messages: int
    user_words: int
    authored_user_words: int
    assistant_words: int
    tool_use_messages: int
    thinking_messages: int
    paste_messages: int
    def __init__(self, messages: _Optional[int] = ..., words: _Optional[int] = ..., user_messages: _Optional[int] = ..., authored_user_messages: _Optional[int] = ..., assistant_messages: _Optional[int] = ..., system_messages: _Optional[int] = ..., tool_messages: _Optional[int] = ..., user_words: _Optional[int] = ..., authored_user_words: _Optional[int] = ..., assistant_words: _Optional[int] = ..., tool_use_messages: _Optional[int] = ..., thinking_messages: _Optional[int] = ..., paste_messages: _Optional[int] = ...) -> None: ...

class Block(_message.Message):
    __slots__ = ("id", "index", "type", "text", "language", "tool_name", "tool_use_id", "tool_input_json", "path", "is_error", "media_type")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    id: str
    index: int
    type: str
    text: str
    language: str
    tool_name: str
    tool_use_id: str
    tool_input_json: str
    path: str
    is_error: bool
    media_type: str
    def __init__(self, id: _Optional[str] = ..., index: _Optional[int] = ..., type: _Optional[str] = ..., text: _Optional[str] = ..., language: _Optional[str] = ..., tool_name: _Optional[str] = ..., tool_use_id: _Optional[str] = ..., tool_input_json: _Optional[str] = ..., path: _Optional[str] = ..., is_error: _Optional[bool] = ..., media_type: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("id", "session_id", "seq", "role", "authored", "time_ms", "model", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "duration_ms", "surface", "blocks", "words", "cost_usd")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    AUTHORED_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    SURFACE_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    WORDS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    seq: int
    role: str
    authored: bool
    time_ms: int
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    duration_ms: int
    surface: str
    blocks: _containers.RepeatedCompositeFieldContainer[Block]
    words: int
    cost_usd: float
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., seq: _Optional[int] = ..., role: _Optional[str] = ..., authored: _Optional[bool] = ..., time_ms: _Optional[int] = ..., model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., duration_ms: _Optional[int] = ..., surface: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[Block, _Mapping]]] = ..., words: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("id", "session_id", "message_id", "block_id", "seq", "category", "tool", "command", "path", "output", "failed", "input_json", "time_ms", "exit_code", "followup")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FOLLOWUP_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    message_id: str
    block_id: str
    seq: int
    category: str
    tool: str
    command: str
    path: str
    output: str
    failed: bool
    input_json: str
    time_ms: int
    exit_code: int
    followup: str
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., message_id: _Optional[str] = ..., block_id: _Optional[str] = ..., seq: _Optional[int] = ..., category: _Optional[str] = ..., tool: _Optional[str] = ..., command: _Optional[str] = ..., path: _Optional[str] = ..., output: _Optional[str] = ..., failed: _Optional[bool] = ..., input_json: _Optional[str] = ..., time_ms: _Optional[int] = ..., exit_code: _Optional[int] = ..., followup: _Optional[str] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("id", "origin", "native_id", "title", "repo", "cwd", "branch", "created_ms", "updated_ms", "parent_session_id", "tags", "duration_ms", "counts", "messages", "actions", "source_path", "model", "content_hash", "agent", "files", "runs", "events", "snapshots", "delegations", "log_events", "title_snapshot", "scope", "host", "pusher", "held_payloads")
    ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    NATIVE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    REPO_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_MS_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PATH_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    DELEGATIONS_FIELD_NUMBER: _ClassVar[int]
    LOG_EVENTS_FIELD_NUMBER: _ClassVar[int]
    TITLE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PUSHER_FIELD_NUMBER: _ClassVar[int]
    HELD_PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    id: str
    origin: str
    native_id: str
    title: str
    repo: str
    cwd: str
    branch: str
    created_ms: int
    updated_ms: int
    parent_session_id: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    duration_ms: int
    counts: SessionCounts
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    actions: _containers.RepeatedCompositeFieldContainer[Action]
    source_path: str
    model: str
    content_hash: str
    agent: str
    files: _containers.RepeatedCompositeFieldContainer[FileTouch]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    events: _containers.RepeatedCompositeFieldContainer[ObservedEvent]
    snapshots: _containers.RepeatedCompositeFieldContainer[ContextSnapshot]
    delegations: _containers.RepeatedCompositeFieldContainer[Delegation]
    log_events: _containers.RepeatedCompositeFieldContainer[SessionEvent]
    title_snapshot: TitleSnapshot
    scope: str
    host: str
    pusher: str
    held_payloads: _containers.RepeatedCompositeFieldContainer[HeldPayload]
    def __init__(self, id: _Optional[str] = ..., origin: _Optional[str] = ..., native_id: _Optional[str] = ..., title: _Optional[str] = ..., repo: _Optional[str] = ..., cwd: _Optional[str] = ..., branch: _Optional[str] = ..., created_ms: _Optional[int] = ..., updated_ms: _Optional[int] = ..., parent_session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., duration_ms: _Optional[int] = ..., counts: _Optional[_Union[SessionCounts, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., source_path: _Optional[str] = ..., model: _Optional[str] = ..., content_hash: _Optional[str] = ..., agent: _Optional[str] = ..., files: _Optional[_Iterable[_Union[FileTouch, _Mapping]]] = ..., runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[ObservedEvent, _Mapping]]] = ..., snapshots: _Optional[_Iterable[_Union[ContextSnapshot, _Mapping]]] = ..., delegations: _Optional[_Iterable[_Union[Delegation, _Mapping]]] = ..., log_events: _Optional[_Iterable[_Union[SessionEvent, _Mapping]]] = ..., title_snapshot: _Optional[_Union[TitleSnapshot, _Mapping]] = ..., scope: _Optional[str] = ..., host: _Optional[str] = ..., pusher: _Optional[str] = ..., held_payloads: _Optional[_Iterable[_Union[HeldPayload, _Mapping]]] = ...) -> None: ...

class SessionEvent(_message.Message):
    __slots__ = ("seq", "type", "time_ms", "time_inferred", "surface", "line", "message_id", "text", "replaced_by", "replaced_event_seqs", "source_event_seqs", "raw_json", "held")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_INFERRED_FIELD_NUMBER: _ClassVar[int]
    SURFACE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_FIELD_NUMBER: _ClassVar[int]
    REPLACED_EVENT_SEQS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_EVENT_SEQS_FIELD_NUMBER: _ClassVar[int]
    RAW_JSON_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    seq: int
    type: str
    time_ms: int
    time_inferred: bool
    surface: str
    line: int
    message_id: str
    text: str
    replaced_by: int
    replaced_event_seqs: _containers.RepeatedScalarFieldContainer[int]
    source_event_seqs: _containers.RepeatedScalarFieldContainer[int]
    raw_json: bytes
    held: _containers.RepeatedCompositeFieldContainer[HeldPlace]
    def __init__(self, seq: _Optional[int] = ..., type: _Optional[str] = ..., time_ms: _Optional[int] = ..., time_inferred: _Optional[bool] = ..., surface: _Optional[str] = ..., line: _Optional[int] = ..., message_id: _Optional[str] = ..., text: _Optional[str] = ..., replaced_by: _Optional[int] = ..., replaced_event_seqs: _Optional[_Iterable[int]] = ..., source_event_seqs: _Optional[_Iterable[int]] = ..., raw_json: _Optional[bytes] = ..., held: _Optional[_Iterable[_Union[HeldPlace, _Mapping]]] = ...) -> None: ...

class HeldPlace(_message.Message):
    __slots__ = ("start", "end", "sha256")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    sha256: str
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class HeldPayload(_message.Message):
    __slots__ = ("sha256", "data")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    sha256: str
    data: bytes
    def __init__(self, sha256: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class SessionEventList(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[SessionEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[SessionEvent, _Mapping]]] = ...) -> None: ...

class TitleSnapshot(_message.Message):
    __slots__ = ("title", "kind", "seq", "time_ms")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    title: str
    kind: str
    seq: int
    time_ms: int
    def __init__(self, title: _Optional[str] = ..., kind: _Optional[str] = ..., seq: _Optional[int] = ..., time_ms: _Optional[int] = ...) -> None: ...

class FileTouch(_message.Message):
    __slots__ = ("id", "session_id", "path", "actions", "categories", "failed", "first_ref", "last_ref", "first_time_ms", "last_time_ms")
    class CategoriesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FIRST_REF_FIELD_NUMBER: _ClassVar[int]
    LAST_REF_FIELD_NUMBER: _ClassVar[int]
    FIRST_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    path: str
    actions: int
    categories: _containers.ScalarMap[str, int]
    failed: int
    first_ref: str
    last_ref: str
    first_time_ms: int
    last_time_ms: int
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., path: _Optional[str] = ..., actions: _Optional[int] = ..., categories: _Optional[_Mapping[str, int]] = ..., failed: _Optional[int] = ..., first_ref: _Optional[str] = ..., last_ref: _Optional[str] = ..., first_time_ms: _Optional[int] = ..., last_time_ms: _Optional[int] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("id", "session_id", "role", "status", "agent", "child_session_id", "delegation_id", "started_ms", "ended_ms", "duration_ms", "tool_uses", "total_tokens", "model", "provider", "branch", "cost_usd")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    ENDED_MS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    TOOL_USES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    role: str
    status: str
    agent: str
    child_session_id: str
    delegation_id: str
    started_ms: int
    ended_ms: int
    duration_ms: int
    tool_uses: int
    total_tokens: int
    model: str
    provider: str
    branch: str
    cost_usd: float
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., role: _Optional[str] = ..., status: _Optional[str] = ..., agent: _Optional[str] = ..., child_session_id: _Optional[str] = ..., delegation_id: _Optional[str] = ..., started_ms: _Optional[int] = ..., ended_ms: _Optional[int] = ..., duration_ms: _Optional[int] = ..., tool_uses: _Optional[int] = ..., total_tokens: _Optional[int] = ..., model: _Optional[str] = ..., provider: _Optional[str] = ..., branch: _Optional[str] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class ObservedEvent(_message.Message):
    __slots__ = ("id", "session_id", "seq", "kind", "time_ms", "text", "source_ref", "object_ref", "delivery_state")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_REF_FIELD_NUMBER: _ClassVar[int]
    OBJECT_REF_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    seq: int
    kind: str
    time_ms: int
    text: str
    source_ref: str
    object_ref: str
    delivery_state: str
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., seq: _Optional[int] = ..., kind: _Optional[str] = ..., time_ms: _Optional[int] = ..., text: _Optional[str] = ..., source_ref: _Optional[str] = ..., object_ref: _Optional[str] = ..., delivery_state: _Optional[str] = ...) -> None: ...

class ContextSnapshot(_message.Message):
    __slots__ = ("id", "session_id", "seq", "boundary", "time_ms", "message_ref", "trigger", "tokens_before", "preview", "cwd", "branch", "model", "inheritance")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    BOUNDARY_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_REF_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INHERITANCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    seq: int
    boundary: str
    time_ms: int
    message_ref: str
    trigger: str
    tokens_before: int
    preview: str
    cwd: str
    branch: str
    model: str
    inheritance: str
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., seq: _Optional[int] = ..., boundary: _Optional[str] = ..., time_ms: _Optional[int] = ..., message_ref: _Optional[str] = ..., trigger: _Optional[str] = ..., tokens_before: _Optional[int] = ..., preview: _Optional[str] = ..., cwd: _Optional[str] = ..., branch: _Optional[str] = ..., model: _Optional[str] = ..., inheritance: _Optional[str] = ...) -> None: ...

class Delegation(_message.Message):
    __slots__ = ("id", "session_id", "child_session_id", "mapping_state", "tool", "agent", "description", "instruction", "tool_use_ref", "result_state", "result_preview", "result_sha256", "child_excerpt_preview", "child_excerpt_sha256", "time_ms", "child_model", "is_error")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MAPPING_STATE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_REF_FIELD_NUMBER: _ClassVar[int]
    RESULT_STATE_FIELD_NUMBER: _ClassVar[int]
    RESULT_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    RESULT_SHA256_FIELD_NUMBER: _ClassVar[int]
    CHILD_EXCERPT_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    CHILD_EXCERPT_SHA256_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CHILD_MODEL_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    child_session_id: str
    mapping_state: str
    tool: str
    agent: str
    description: str
    instruction: str
    tool_use_ref: str
    result_state: str
    result_preview: str
    result_sha256: str
    child_excerpt_preview: str
    child_excerpt_sha256: str
    time_ms: int
    child_model: str
    is_error: bool
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., child_session_id: _Optional[str] = ..., mapping_state: _Optional[str] = ..., tool: _Optional[str] = ..., agent: _Optional[str] = ..., description: _Optional[str] = ..., instruction: _Optional[str] = ..., tool_use_ref: _Optional[str] = ..., result_state: _Optional[str] = ..., result_preview: _Optional[str] = ..., result_sha256: _Optional[str] = ..., child_excerpt_preview: _Optional[str] = ..., child_excerpt_sha256: _Optional[str] = ..., time_ms: _Optional[int] = ..., child_model: _Optional[str] = ..., is_error: _Optional[bool] = ...) -> None: ...

class Assertion(_message.Message):
    __slots__ = ("id", "kind", "status", "target_ref", "session_id", "body", "author", "evidence_refs", "supersedes", "reason", "created_ms", "updated_ms", "promotion_required", "context_inject")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_MS_FIELD_NUMBER: _ClassVar[int]
    PROMOTION_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_INJECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    status: str
    target_ref: str
    session_id: str
    body: str
    author: str
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    supersedes: str
    reason: str
    created_ms: int
    updated_ms: int
    promotion_required: bool
    context_inject: bool
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., status: _Optional[str] = ..., target_ref: _Optional[str] = ..., session_id: _Optional[str] = ..., body: _Optional[str] = ..., author: _Optional[str] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., supersedes: _Optional[str] = ..., reason: _Optional[str] = ..., created_ms: _Optional[int] = ..., updated_ms: _Optional[int] = ..., promotion_required: _Optional[bool] = ..., context_inject: _Optional[bool] = ...) -> None: ...
