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
    __slots__ = ("id", "session_id", "seq", "role", "authored", "time_ms", "model", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "duration_ms", "surface", "blocks", "words")
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
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., seq: _Optional[int] = ..., role: _Optional[str] = ..., authored: _Optional[bool] = ..., time_ms: _Optional[int] = ..., model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., duration_ms: _Optional[int] = ..., surface: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[Block, _Mapping]]] = ..., words: _Optional[int] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("id", "session_id", "message_id", "block_id", "seq", "category", "tool", "command", "path", "output", "failed", "input_json", "time_ms")
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
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., message_id: _Optional[str] = ..., block_id: _Optional[str] = ..., seq: _Optional[int] = ..., category: _Optional[str] = ..., tool: _Optional[str] = ..., command: _Optional[str] = ..., path: _Optional[str] = ..., output: _Optional[str] = ..., failed: _Optional[bool] = ..., input_json: _Optional[str] = ..., time_ms: _Optional[int] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("id", "origin", "native_id", "title", "repo", "cwd", "branch", "created_ms", "updated_ms", "parent_session_id", "tags", "duration_ms", "counts", "messages", "actions", "source_path", "model", "content_hash")
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
    def __init__(self, id: _Optional[str] = ..., origin: _Optional[str] = ..., native_id: _Optional[str] = ..., title: _Optional[str] = ..., repo: _Optional[str] = ..., cwd: _Optional[str] = ..., branch: _Optional[str] = ..., created_ms: _Optional[int] = ..., updated_ms: _Optional[int] = ..., parent_session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., duration_ms: _Optional[int] = ..., counts: _Optional[_Union[SessionCounts, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., source_path: _Optional[str] = ..., model: _Optional[str] = ..., content_hash: _Optional[str] = ...) -> None: ...
