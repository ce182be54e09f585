from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResolveRefRequest(_message.Message):
    __slots__ = ("ref", "max_chars")
    REF_FIELD_NUMBER: _ClassVar[int]
    MAX_CHARS_FIELD_NUMBER: _ClassVar[int]
    ref: str
    max_chars: int
    def __init__(self, ref: _Optional[str] = ..., max_chars: _Optional[int] = ...) -> None: ...

class DelegationCard(_message.Message):
    __slots__ = ("delegation", "dispatch_result", "dispatch_result_truncated", "child_excerpt", "child_excerpt_truncated", "parent_context", "parent_context_truncated", "parent_follow_up", "parent_follow_up_truncated")
    DELEGATION_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_RESULT_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_RESULT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    CHILD_EXCERPT_FIELD_NUMBER: _ClassVar[int]
    CHILD_EXCERPT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PARENT_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PARENT_CONTEXT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PARENT_FOLLOW_UP_FIELD_NUMBER: _ClassVar[int]
    PARENT_FOLLOW_UP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    delegation: _units_pb2.Delegation
    dispatch_result: str
    dispatch_result_truncated: bool
    child_excerpt: str
    child_excerpt_truncated: bool
    parent_context: str
    parent_context_truncated: bool
    parent_follow_up: str
    parent_follow_up_truncated: bool
    def __init__(self, delegation: _Optional[_Union[_units_pb2.Delegation, _Mapping]] = ..., dispatch_result: _Optional[str] = ..., dispatch_result_truncated: _Optional[bool] = ..., child_excerpt: _Optional[str] = ..., child_excerpt_truncated: _Optional[bool] = ..., parent_context: _Optional[str] = ..., parent_context_truncated: _Optional[bool] = ..., parent_follow_up: _Optional[str] = ..., parent_follow_up_truncated: _Optional[bool] = ...) -> None: ...

class ResolvedRef(_message.Message):
    __slots__ = ("ref", "kind", "resolved", "session_id", "caveats", "session", "message", "block", "assertion", "delegation", "run", "observed_event", "context_snapshot")
    REF_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_EVENT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    ref: str
    kind: str
    resolved: bool
    session_id: str
    caveats: _containers.RepeatedScalarFieldContainer[str]
    session: _units_pb2.Session
    message: _units_pb2.Message
    block: _units_pb2.Block
    assertion: _units_pb2.Assertion
    delegation: DelegationCard
    run: _units_pb2.Run
    observed_event: _units_pb2.ObservedEvent
    context_snapshot: _units_pb2.ContextSnapshot
    def __init__(self, ref: _Optional[str] = ..., kind: _Optional[str] = ..., resolved: _Optional[bool] = ..., session_id: _Optional[str] = ..., caveats: _Optional[_Iterable[str]] = ..., session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., message: _Optional[_Union[_units_pb2.Message, _Mapping]] = ..., block: _Optional[_Union[_units_pb2.Block, _Mapping]] = ..., assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., delegation: _Optional[_Union[DelegationCard, _Mapping]] = ..., run: _Optional[_Union[_units_pb2.Run, _Mapping]] = ..., observed_event: _Optional[_Union[_units_pb2.ObservedEvent, _Mapping]] = ..., context_snapshot: _Optional[_Union[_units_pb2.ContextSnapshot, _Mapping]] = ...) -> None: ...
