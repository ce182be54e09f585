from quarry.v1 import errors_pb2 as _errors_pb2
from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionRecord(_message.Message):
    __slots__ = ("header", "live", "persisted")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    PERSISTED_FIELD_NUMBER: _ClassVar[int]
    header: _units_pb2.Session
    live: bool
    persisted: bool
    def __init__(self, header: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., live: _Optional[bool] = ..., persisted: _Optional[bool] = ...) -> None: ...

class Strings(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, values: _Optional[_Iterable[str]] = ...) -> None: ...

class Range(_message.Message):
    __slots__ = ("min", "max")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    min: int
    max: int
    def __init__(self, min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class SessionFilter(_message.Message):
    __slots__ = ("ids", "cwds", "created_at", "parents", "availability")
    IDS_FIELD_NUMBER: _ClassVar[int]
    CWDS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    AVAILABILITY_FIELD_NUMBER: _ClassVar[int]
    ids: Strings
    cwds: Strings
    created_at: Range
    parents: Strings
    availability: Strings
    def __init__(self, ids: _Optional[_Union[Strings, _Mapping]] = ..., cwds: _Optional[_Union[Strings, _Mapping]] = ..., created_at: _Optional[_Union[Range, _Mapping]] = ..., parents: _Optional[_Union[Strings, _Mapping]] = ..., availability: _Optional[_Union[Strings, _Mapping]] = ...) -> None: ...

class EventFilter(_message.Message):
    __slots__ = ("seq", "time", "types", "surfaces", "text")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    SURFACES_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    seq: Range
    time: Range
    types: Strings
    surfaces: Strings
    text: str
    def __init__(self, seq: _Optional[_Union[Range, _Mapping]] = ..., time: _Optional[_Union[Range, _Mapping]] = ..., types: _Optional[_Union[Strings, _Mapping]] = ..., surfaces: _Optional[_Union[Strings, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class SessionEventRecord(_message.Message):
    __slots__ = ("session_id", "seq", "type", "time_ms", "surface")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SURFACE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    seq: int
    type: str
    time_ms: int
    surface: str
    def __init__(self, session_id: _Optional[str] = ..., seq: _Optional[int] = ..., type: _Optional[str] = ..., time_ms: _Optional[int] = ..., surface: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("filters", "limit", "cursor")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[SessionFilter]
    limit: int
    cursor: str
    def __init__(self, filters: _Optional[_Iterable[_Union[SessionFilter, _Mapping]]] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ...) -> None: ...

class SessionRecordPage(_message.Message):
    __slots__ = ("items", "next_cursor")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[SessionRecord]
    next_cursor: str
    def __init__(self, items: _Optional[_Iterable[_Union[SessionRecord, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class SessionIdRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class SessionLogChunk(_message.Message):
    __slots__ = ("session", "events")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    events: _containers.RepeatedCompositeFieldContainer[_units_pb2.SessionEvent]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_units_pb2.SessionEvent, _Mapping]]] = ...) -> None: ...

class SurfaceSnapshot(_message.Message):
    __slots__ = ("session", "captured_through_seq", "events")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    CAPTURED_THROUGH_SEQ_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    captured_through_seq: int
    events: _containers.RepeatedCompositeFieldContainer[_units_pb2.SessionEvent]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., captured_through_seq: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_units_pb2.SessionEvent, _Mapping]]] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ("session_id", "filters", "with_text", "limit", "cursor")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    WITH_TEXT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    filters: _containers.RepeatedCompositeFieldContainer[EventFilter]
    with_text: bool
    limit: int
    cursor: str
    def __init__(self, session_id: _Optional[str] = ..., filters: _Optional[_Iterable[_Union[EventFilter, _Mapping]]] = ..., with_text: _Optional[bool] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ...) -> None: ...

class EventDocument(_message.Message):
    __slots__ = ("record", "text")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    record: SessionEventRecord
    text: str
    def __init__(self, record: _Optional[_Union[SessionEventRecord, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class EventPage(_message.Message):
    __slots__ = ("session", "events", "next_cursor")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    events: _containers.RepeatedCompositeFieldContainer[EventDocument]
    next_cursor: str
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., events: _Optional[_Iterable[_Union[EventDocument, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ReadEventRequest(_message.Message):
    __slots__ = ("session_id", "seq", "before", "after", "with_messages")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    WITH_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    seq: int
    before: int
    after: int
    with_messages: bool
    def __init__(self, session_id: _Optional[str] = ..., seq: _Optional[int] = ..., before: _Optional[int] = ..., after: _Optional[int] = ..., with_messages: _Optional[bool] = ...) -> None: ...

class EventWindow(_message.Message):
    __slots__ = ("session", "target", "events", "start_seq", "end_seq", "messages")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    END_SEQ_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    target: _units_pb2.SessionEvent
    events: _containers.RepeatedCompositeFieldContainer[_units_pb2.SessionEvent]
    start_seq: int
    end_seq: int
    messages: _containers.RepeatedCompositeFieldContainer[_units_pb2.Message]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., target: _Optional[_Union[_units_pb2.SessionEvent, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_units_pb2.SessionEvent, _Mapping]]] = ..., start_seq: _Optional[int] = ..., end_seq: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[_units_pb2.Message, _Mapping]]] = ...) -> None: ...

class TraceEventRequest(_message.Message):
    __slots__ = ("session_id", "seq")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    seq: int
    def __init__(self, session_id: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class EventTrace(_message.Message):
    __slots__ = ("session", "target", "replaced_by", "replacement_chain", "replaced_event_seqs", "source_event_seqs", "derived_event_seqs")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_CHAIN_FIELD_NUMBER: _ClassVar[int]
    REPLACED_EVENT_SEQS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_EVENT_SEQS_FIELD_NUMBER: _ClassVar[int]
    DERIVED_EVENT_SEQS_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    target: SessionEventRecord
    replaced_by: int
    replacement_chain: _containers.RepeatedScalarFieldContainer[int]
    replaced_event_seqs: _containers.RepeatedScalarFieldContainer[int]
    source_event_seqs: _containers.RepeatedScalarFieldContainer[int]
    derived_event_seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., target: _Optional[_Union[SessionEventRecord, _Mapping]] = ..., replaced_by: _Optional[int] = ..., replacement_chain: _Optional[_Iterable[int]] = ..., replaced_event_seqs: _Optional[_Iterable[int]] = ..., source_event_seqs: _Optional[_Iterable[int]] = ..., derived_event_seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class LineageNode(_message.Message):
    __slots__ = ("session", "descendants")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    DESCENDANTS_FIELD_NUMBER: _ClassVar[int]
    session: SessionRecord
    descendants: _containers.RepeatedCompositeFieldContainer[LineageNode]
    def __init__(self, session: _Optional[_Union[SessionRecord, _Mapping]] = ..., descendants: _Optional[_Iterable[_Union[LineageNode, _Mapping]]] = ...) -> None: ...

class LineageTrace(_message.Message):
    __slots__ = ("target", "ancestors", "descendants", "root", "unresolved_parent_id")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ANCESTORS_FIELD_NUMBER: _ClassVar[int]
    DESCENDANTS_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    UNRESOLVED_PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    target: SessionRecord
    ancestors: _containers.RepeatedCompositeFieldContainer[SessionRecord]
    descendants: _containers.RepeatedCompositeFieldContainer[LineageNode]
    root: SessionRecord
    unresolved_parent_id: str
    def __init__(self, target: _Optional[_Union[SessionRecord, _Mapping]] = ..., ancestors: _Optional[_Iterable[_Union[SessionRecord, _Mapping]]] = ..., descendants: _Optional[_Iterable[_Union[LineageNode, _Mapping]]] = ..., root: _Optional[_Union[SessionRecord, _Mapping]] = ..., unresolved_parent_id: _Optional[str] = ...) -> None: ...

class SessionSearchRequest(_message.Message):
    __slots__ = ("query", "session_filters", "event_filters", "limit", "cursor")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FILTERS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FILTERS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    query: str
    session_filters: _containers.RepeatedCompositeFieldContainer[SessionFilter]
    event_filters: _containers.RepeatedCompositeFieldContainer[EventFilter]
    limit: int
    cursor: str
    def __init__(self, query: _Optional[str] = ..., session_filters: _Optional[_Iterable[_Union[SessionFilter, _Mapping]]] = ..., event_filters: _Optional[_Iterable[_Union[EventFilter, _Mapping]]] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ...) -> None: ...

class EventSearchHit(_message.Message):
    __slots__ = ("record", "snippet", "score")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    record: SessionEventRecord
    snippet: str
    score: float
    def __init__(self, record: _Optional[_Union[SessionEventRecord, _Mapping]] = ..., snippet: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class SessionSearchHit(_message.Message):
    __slots__ = ("record", "best_match")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    BEST_MATCH_FIELD_NUMBER: _ClassVar[int]
    record: SessionRecord
    best_match: EventSearchHit
    def __init__(self, record: _Optional[_Union[SessionRecord, _Mapping]] = ..., best_match: _Optional[_Union[EventSearchHit, _Mapping]] = ...) -> None: ...

class SessionSearchPage(_message.Message):
    __slots__ = ("items", "next_cursor", "missing_partitions")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    MISSING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[SessionSearchHit]
    next_cursor: str
    missing_partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, items: _Optional[_Iterable[_Union[SessionSearchHit, _Mapping]]] = ..., next_cursor: _Optional[str] = ..., missing_partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class EventSearchRequest(_message.Message):
    __slots__ = ("session_id", "query", "filters", "limit", "cursor")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    query: str
    filters: _containers.RepeatedCompositeFieldContainer[EventFilter]
    limit: int
    cursor: str
    def __init__(self, session_id: _Optional[str] = ..., query: _Optional[str] = ..., filters: _Optional[_Iterable[_Union[EventFilter, _Mapping]]] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ...) -> None: ...

class EventSearchPage(_message.Message):
    __slots__ = ("session", "items", "next_cursor")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    items: _containers.RepeatedCompositeFieldContainer[EventSearchHit]
    next_cursor: str
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., items: _Optional[_Iterable[_Union[EventSearchHit, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ReadTitlesRequest(_message.Message):
    __slots__ = ("session_ids",)
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TitleObservation(_message.Message):
    __slots__ = ("session", "title")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    title: _units_pb2.TitleSnapshot
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., title: _Optional[_Union[_units_pb2.TitleSnapshot, _Mapping]] = ...) -> None: ...

class TitleResult(_message.Message):
    __slots__ = ("session_id", "value", "reason")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    value: TitleObservation
    reason: _errors_pb2.ErrorDetail
    def __init__(self, session_id: _Optional[str] = ..., value: _Optional[_Union[TitleObservation, _Mapping]] = ..., reason: _Optional[_Union[_errors_pb2.ErrorDetail, _Mapping]] = ...) -> None: ...

class ReadTitlesResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[TitleResult]
    def __init__(self, results: _Optional[_Iterable[_Union[TitleResult, _Mapping]]] = ...) -> None: ...

class SessionAnchor(_message.Message):
    __slots__ = ("updated_ms", "session_id")
    UPDATED_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    updated_ms: int
    session_id: str
    def __init__(self, updated_ms: _Optional[int] = ..., session_id: _Optional[str] = ...) -> None: ...

class NodeListSessionsRequest(_message.Message):
    __slots__ = ("partitions", "filters", "after", "limit")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    filters: _containers.RepeatedCompositeFieldContainer[SessionFilter]
    after: SessionAnchor
    limit: int
    def __init__(self, partitions: _Optional[_Iterable[int]] = ..., filters: _Optional[_Iterable[_Union[SessionFilter, _Mapping]]] = ..., after: _Optional[_Union[SessionAnchor, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class PartitionSessionList(_message.Message):
    __slots__ = ("partition", "sessions")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    sessions: _containers.RepeatedCompositeFieldContainer[_units_pb2.Session]
    def __init__(self, partition: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[_units_pb2.Session, _Mapping]]] = ...) -> None: ...

class NodeSessionLists(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionSessionList]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionSessionList, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionReadEvents(_message.Message):
    __slots__ = ("partition", "session_id", "filters", "full", "with_text", "with_payloads", "with_messages")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    WITH_TEXT_FIELD_NUMBER: _ClassVar[int]
    WITH_PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    WITH_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    session_id: str
    filters: _containers.RepeatedCompositeFieldContainer[EventFilter]
    full: bool
    with_text: bool
    with_payloads: bool
    with_messages: bool
    def __init__(self, partition: _Optional[int] = ..., session_id: _Optional[str] = ..., filters: _Optional[_Iterable[_Union[EventFilter, _Mapping]]] = ..., full: _Optional[bool] = ..., with_text: _Optional[bool] = ..., with_payloads: _Optional[bool] = ..., with_messages: _Optional[bool] = ...) -> None: ...

class StoredEvents(_message.Message):
    __slots__ = ("session", "events", "event_count", "messages")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    events: _containers.RepeatedCompositeFieldContainer[_units_pb2.SessionEvent]
    event_count: int
    messages: _containers.RepeatedCompositeFieldContainer[_units_pb2.Message]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_units_pb2.SessionEvent, _Mapping]]] = ..., event_count: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[_units_pb2.Message, _Mapping]]] = ...) -> None: ...

class PartitionSearchEvents(_message.Message):
    __slots__ = ("partition", "request", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: int
    request: EventSearchRequest
    offset: int
    def __init__(self, partition: _Optional[int] = ..., request: _Optional[_Union[EventSearchRequest, _Mapping]] = ..., offset: _Optional[int] = ...) -> None: ...

class NodeSearchSessions(_message.Message):
    __slots__ = ("partitions", "request", "limit", "after")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    request: SessionSearchRequest
    limit: int
    after: SessionHitAnchor
    def __init__(self, partitions: _Optional[_Iterable[int]] = ..., request: _Optional[_Union[SessionSearchRequest, _Mapping]] = ..., limit: _Optional[int] = ..., after: _Optional[_Union[SessionHitAnchor, _Mapping]] = ...) -> None: ...

class SessionHitAnchor(_message.Message):
    __slots__ = ("score", "session_id")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    score: float
    session_id: str
    def __init__(self, score: _Optional[float] = ..., session_id: _Optional[str] = ...) -> None: ...

class PartitionSessionHits(_message.Message):
    __slots__ = ("partition", "hits")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    hits: _containers.RepeatedCompositeFieldContainer[SessionSearchHit]
    def __init__(self, partition: _Optional[int] = ..., hits: _Optional[_Iterable[_Union[SessionSearchHit, _Mapping]]] = ...) -> None: ...

class NodeSessionHits(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionSessionHits]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionSessionHits, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...
