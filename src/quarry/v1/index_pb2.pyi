from quarry.v1 import errors_pb2 as _errors_pb2
from quarry.v1 import plan_pb2 as _plan_pb2
from quarry.v1 import refs_pb2 as _refs_pb2
from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UpsertSessionsRequest(_message.Message):
    __slots__ = ("sessions", "partition")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[_units_pb2.Session]
    partition: int
    def __init__(self, sessions: _Optional[_Iterable[_Union[_units_pb2.Session, _Mapping]]] = ..., partition: _Optional[int] = ...) -> None: ...

class UpsertSessionsResponse(_message.Message):
    __slots__ = ("sessions_written", "sessions_unchanged", "messages_written", "source_conflicts", "scope_conflicts")
    SESSIONS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    sessions_written: int
    sessions_unchanged: int
    messages_written: int
    source_conflicts: _containers.RepeatedCompositeFieldContainer[SourceConflict]
    scope_conflicts: _containers.RepeatedCompositeFieldContainer[ScopeConflict]
    def __init__(self, sessions_written: _Optional[int] = ..., sessions_unchanged: _Optional[int] = ..., messages_written: _Optional[int] = ..., source_conflicts: _Optional[_Iterable[_Union[SourceConflict, _Mapping]]] = ..., scope_conflicts: _Optional[_Iterable[_Union[ScopeConflict, _Mapping]]] = ...) -> None: ...

class ScopeConflict(_message.Message):
    __slots__ = ("session_id", "source_path")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PATH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    source_path: str
    def __init__(self, session_id: _Optional[str] = ..., source_path: _Optional[str] = ...) -> None: ...

class SourceConflict(_message.Message):
    __slots__ = ("session_id", "source_path", "stored_source_path", "first_difference", "cut")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PATH_FIELD_NUMBER: _ClassVar[int]
    STORED_SOURCE_PATH_FIELD_NUMBER: _ClassVar[int]
    FIRST_DIFFERENCE_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    source_path: str
    stored_source_path: str
    first_difference: int
    cut: bool
    def __init__(self, session_id: _Optional[str] = ..., source_path: _Optional[str] = ..., stored_source_path: _Optional[str] = ..., first_difference: _Optional[int] = ..., cut: _Optional[bool] = ...) -> None: ...

class DeleteSessionsRequest(_message.Message):
    __slots__ = ("partition", "session_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, partition: _Optional[int] = ..., session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteSessionsResponse(_message.Message):
    __slots__ = ("deleted", "not_found")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    deleted: _containers.RepeatedScalarFieldContainer[str]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, deleted: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionSearchRequest(_message.Message):
    __slots__ = ("plan", "lane", "limit", "with_snippets", "admission", "partitions", "global_stats", "rank_only", "node_term_stats", "explain")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WITH_SNIPPETS_FIELD_NUMBER: _ClassVar[int]
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_STATS_FIELD_NUMBER: _ClassVar[int]
    RANK_ONLY_FIELD_NUMBER: _ClassVar[int]
    NODE_TERM_STATS_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    plan: _plan_pb2.QueryPlan
    lane: str
    limit: int
    with_snippets: bool
    admission: LexicalAdmission
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionAnchor]
    global_stats: GlobalTermStats
    rank_only: bool
    node_term_stats: bool
    explain: _containers.RepeatedCompositeFieldContainer[PartitionHits]
    def __init__(self, plan: _Optional[_Union[_plan_pb2.QueryPlan, _Mapping]] = ..., lane: _Optional[str] = ..., limit: _Optional[int] = ..., with_snippets: _Optional[bool] = ..., admission: _Optional[_Union[LexicalAdmission, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionAnchor, _Mapping]]] = ..., global_stats: _Optional[_Union[GlobalTermStats, _Mapping]] = ..., rank_only: _Optional[bool] = ..., node_term_stats: _Optional[bool] = ..., explain: _Optional[_Iterable[_Union[PartitionHits, _Mapping]]] = ...) -> None: ...

class TermFrequency(_message.Message):
    __slots__ = ("field", "term", "doc_freq")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    DOC_FREQ_FIELD_NUMBER: _ClassVar[int]
    field: str
    term: str
    doc_freq: int
    def __init__(self, field: _Optional[str] = ..., term: _Optional[str] = ..., doc_freq: _Optional[int] = ...) -> None: ...

class GlobalTermStats(_message.Message):
    __slots__ = ("num_docs", "terms")
    NUM_DOCS_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    num_docs: int
    terms: _containers.RepeatedCompositeFieldContainer[TermFrequency]
    def __init__(self, num_docs: _Optional[int] = ..., terms: _Optional[_Iterable[_Union[TermFrequency, _Mapping]]] = ...) -> None: ...

class PartitionTermStats(_message.Message):
    __slots__ = ("partition", "num_docs", "terms")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    NUM_DOCS_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    num_docs: int
    terms: _containers.RepeatedCompositeFieldContainer[TermFrequency]
    def __init__(self, partition: _Optional[int] = ..., num_docs: _Optional[int] = ..., terms: _Optional[_Iterable[_Union[TermFrequency, _Mapping]]] = ...) -> None: ...

class NodeTermStats(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionTermStats]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionTermStats, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionAnchor(_message.Message):
    __slots__ = ("partition", "has_after", "after_score", "after_session_id", "after_time_ms")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    HAS_AFTER_FIELD_NUMBER: _ClassVar[int]
    AFTER_SCORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    has_after: bool
    after_score: float
    after_session_id: str
    after_time_ms: int
    def __init__(self, partition: _Optional[int] = ..., has_after: _Optional[bool] = ..., after_score: _Optional[float] = ..., after_session_id: _Optional[str] = ..., after_time_ms: _Optional[int] = ...) -> None: ...

class LexicalAdmission(_message.Message):
    __slots__ = ("coverage", "min_matched_terms")
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    MIN_MATCHED_TERMS_FIELD_NUMBER: _ClassVar[int]
    coverage: float
    min_matched_terms: int
    def __init__(self, coverage: _Optional[float] = ..., min_matched_terms: _Optional[int] = ...) -> None: ...

class PartitionHit(_message.Message):
    __slots__ = ("session", "score", "ranked", "message_id", "snippet", "matched_terms", "match_surface", "sort_time_ms", "without_tool_calls", "best")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANKED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    MATCHED_TERMS_FIELD_NUMBER: _ClassVar[int]
    MATCH_SURFACE_FIELD_NUMBER: _ClassVar[int]
    SORT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    WITHOUT_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    score: float
    ranked: bool
    message_id: str
    snippet: str
    matched_terms: _containers.RepeatedScalarFieldContainer[str]
    match_surface: str
    sort_time_ms: int
    without_tool_calls: bool
    best: HitPlace
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., score: _Optional[float] = ..., ranked: _Optional[bool] = ..., message_id: _Optional[str] = ..., snippet: _Optional[str] = ..., matched_terms: _Optional[_Iterable[str]] = ..., match_surface: _Optional[str] = ..., sort_time_ms: _Optional[int] = ..., without_tool_calls: _Optional[bool] = ..., best: _Optional[_Union[HitPlace, _Mapping]] = ...) -> None: ...

class HitPlace(_message.Message):
    __slots__ = ("session_ord", "message_ord")
    SESSION_ORD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ORD_FIELD_NUMBER: _ClassVar[int]
    session_ord: int
    message_ord: int
    def __init__(self, session_ord: _Optional[int] = ..., message_ord: _Optional[int] = ...) -> None: ...

class PartitionHits(_message.Message):
    __slots__ = ("partition", "hits")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    hits: _containers.RepeatedCompositeFieldContainer[PartitionHit]
    def __init__(self, partition: _Optional[int] = ..., hits: _Optional[_Iterable[_Union[PartitionHit, _Mapping]]] = ...) -> None: ...

class PartitionSearchResponse(_message.Message):
    __slots__ = ("hits", "partition", "matched_sessions", "elapsed_ms", "rank_ms", "hydrate_ms", "snippets_ms")
    HITS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MATCHED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    RANK_MS_FIELD_NUMBER: _ClassVar[int]
    HYDRATE_MS_FIELD_NUMBER: _ClassVar[int]
    SNIPPETS_MS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[PartitionHit]
    partition: int
    matched_sessions: int
    elapsed_ms: float
    rank_ms: float
    hydrate_ms: float
    snippets_ms: float
    def __init__(self, hits: _Optional[_Iterable[_Union[PartitionHit, _Mapping]]] = ..., partition: _Optional[int] = ..., matched_sessions: _Optional[int] = ..., elapsed_ms: _Optional[float] = ..., rank_ms: _Optional[float] = ..., hydrate_ms: _Optional[float] = ..., snippets_ms: _Optional[float] = ...) -> None: ...

class NodeSearchResponse(_message.Message):
    __slots__ = ("partitions", "failures", "elapsed_ms")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionSearchResponse]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    elapsed_ms: float
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionSearchResponse, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ..., elapsed_ms: _Optional[float] = ...) -> None: ...

class MatchSessionIdsRequest(_message.Message):
    __slots__ = ("where", "partitions")
    WHERE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    where: _plan_pb2.Predicate
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, where: _Optional[_Union[_plan_pb2.Predicate, _Mapping]] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionSessionIds(_message.Message):
    __slots__ = ("partition", "session_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, partition: _Optional[int] = ..., session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class MatchSessionIdsResponse(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionSessionIds]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionSessionIds, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionLanesRequest(_message.Message):
    __slots__ = ("searches", "partitions", "summary_session_ids")
    SEARCHES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    searches: _containers.RepeatedCompositeFieldContainer[PartitionSearchRequest]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionAnchor]
    summary_session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, searches: _Optional[_Iterable[_Union[PartitionSearchRequest, _Mapping]]] = ..., partitions: _Optional[_Iterable[_Union[PartitionAnchor, _Mapping]]] = ..., summary_session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionLanes(_message.Message):
    __slots__ = ("partition", "searches", "summaries")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEARCHES_FIELD_NUMBER: _ClassVar[int]
    SUMMARIES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    searches: _containers.RepeatedCompositeFieldContainer[PartitionSearchResponse]
    summaries: _containers.RepeatedCompositeFieldContainer[_units_pb2.Session]
    def __init__(self, partition: _Optional[int] = ..., searches: _Optional[_Iterable[_Union[PartitionSearchResponse, _Mapping]]] = ..., summaries: _Optional[_Iterable[_Union[_units_pb2.Session, _Mapping]]] = ...) -> None: ...

class NodeLanesResponse(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionLanes]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionLanes, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class GetSessionsRequest(_message.Message):
    __slots__ = ("session_ids", "partitions")
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, session_ids: _Optional[_Iterable[str]] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionSessions(_message.Message):
    __slots__ = ("partition", "sessions")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    sessions: _containers.RepeatedCompositeFieldContainer[_units_pb2.Session]
    def __init__(self, partition: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[_units_pb2.Session, _Mapping]]] = ...) -> None: ...

class GetSessionsResponse(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionSessions]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionSessions, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionUnitsRequest(_message.Message):
    __slots__ = ("plan", "limit", "partitions", "after", "per_session")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    PER_SESSION_FIELD_NUMBER: _ClassVar[int]
    plan: _plan_pb2.QueryPlan
    limit: int
    partitions: _containers.RepeatedScalarFieldContainer[int]
    after: UnitAnchor
    per_session: PerSession
    def __init__(self, plan: _Optional[_Union[_plan_pb2.QueryPlan, _Mapping]] = ..., limit: _Optional[int] = ..., partitions: _Optional[_Iterable[int]] = ..., after: _Optional[_Union[UnitAnchor, _Mapping]] = ..., per_session: _Optional[_Union[PerSession, _Mapping]] = ...) -> None: ...

class PerSession(_message.Message):
    __slots__ = ("session_ids", "last")
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    last: bool
    def __init__(self, session_ids: _Optional[_Iterable[str]] = ..., last: _Optional[bool] = ...) -> None: ...

class UnitAnchor(_message.Message):
    __slots__ = ("time_ms", "id")
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    time_ms: int
    id: str
    def __init__(self, time_ms: _Optional[int] = ..., id: _Optional[str] = ...) -> None: ...

class UnitRow(_message.Message):
    __slots__ = ("message", "action", "block", "file", "assertion", "run", "observed_event", "context_snapshot", "delegation", "session_id", "sort_time_ms", "sort_id")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_EVENT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SORT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SORT_ID_FIELD_NUMBER: _ClassVar[int]
    message: _units_pb2.Message
    action: _units_pb2.Action
    block: _units_pb2.Block
    file: _units_pb2.FileTouch
    assertion: _units_pb2.Assertion
    run: _units_pb2.Run
    observed_event: _units_pb2.ObservedEvent
    context_snapshot: _units_pb2.ContextSnapshot
    delegation: _units_pb2.Delegation
    session_id: str
    sort_time_ms: int
    sort_id: str
    def __init__(self, message: _Optional[_Union[_units_pb2.Message, _Mapping]] = ..., action: _Optional[_Union[_units_pb2.Action, _Mapping]] = ..., block: _Optional[_Union[_units_pb2.Block, _Mapping]] = ..., file: _Optional[_Union[_units_pb2.FileTouch, _Mapping]] = ..., assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., run: _Optional[_Union[_units_pb2.Run, _Mapping]] = ..., observed_event: _Optional[_Union[_units_pb2.ObservedEvent, _Mapping]] = ..., context_snapshot: _Optional[_Union[_units_pb2.ContextSnapshot, _Mapping]] = ..., delegation: _Optional[_Union[_units_pb2.Delegation, _Mapping]] = ..., session_id: _Optional[str] = ..., sort_time_ms: _Optional[int] = ..., sort_id: _Optional[str] = ...) -> None: ...

class AggregateRow(_message.Message):
    __slots__ = ("key", "count", "fields", "sessions")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    key: str
    count: int
    fields: _containers.RepeatedCompositeFieldContainer[FieldAggregate]
    sessions: int
    def __init__(self, key: _Optional[str] = ..., count: _Optional[int] = ..., fields: _Optional[_Iterable[_Union[FieldAggregate, _Mapping]]] = ..., sessions: _Optional[int] = ...) -> None: ...

class FieldAggregate(_message.Message):
    __slots__ = ("field", "count", "sum", "min", "max", "values")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    field: str
    count: int
    sum: float
    min: float
    max: float
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, field: _Optional[str] = ..., count: _Optional[int] = ..., sum: _Optional[float] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class PartitionUnitsResponse(_message.Message):
    __slots__ = ("rows", "partition", "groups", "session_rows")
    class SessionRowsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ROWS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[UnitRow]
    partition: int
    groups: _containers.RepeatedCompositeFieldContainer[AggregateRow]
    session_rows: _containers.ScalarMap[str, int]
    def __init__(self, rows: _Optional[_Iterable[_Union[UnitRow, _Mapping]]] = ..., partition: _Optional[int] = ..., groups: _Optional[_Iterable[_Union[AggregateRow, _Mapping]]] = ..., session_rows: _Optional[_Mapping[str, int]] = ...) -> None: ...

class NodeUnitsResponse(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionUnitsResponse]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionUnitsResponse, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionStatsRequest(_message.Message):
    __slots__ = ("partitions", "content_digest", "identity_only")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_ONLY_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    content_digest: bool
    identity_only: bool
    def __init__(self, partitions: _Optional[_Iterable[int]] = ..., content_digest: _Optional[bool] = ..., identity_only: _Optional[bool] = ...) -> None: ...

class PartitionStats(_message.Message):
    __slots__ = ("partition", "sessions", "messages", "documents", "actions", "data_dir", "applied_seq", "content_digest", "store_uuid")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    STORE_UUID_FIELD_NUMBER: _ClassVar[int]
    partition: int
    sessions: int
    messages: int
    documents: int
    actions: int
    data_dir: str
    applied_seq: int
    content_digest: str
    store_uuid: str
    def __init__(self, partition: _Optional[int] = ..., sessions: _Optional[int] = ..., messages: _Optional[int] = ..., documents: _Optional[int] = ..., actions: _Optional[int] = ..., data_dir: _Optional[str] = ..., applied_seq: _Optional[int] = ..., content_digest: _Optional[str] = ..., store_uuid: _Optional[str] = ...) -> None: ...

class NodeStats(_message.Message):
    __slots__ = ("node", "partitions", "failures")
    NODE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    node: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionStats]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, node: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionStats, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class EmbedItem(_message.Message):
    __slots__ = ("message_id", "session_id", "text", "session_updated_ms")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SESSION_UPDATED_MS_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    session_id: str
    text: str
    session_updated_ms: int
    def __init__(self, message_id: _Optional[str] = ..., session_id: _Optional[str] = ..., text: _Optional[str] = ..., session_updated_ms: _Optional[int] = ...) -> None: ...

class EmbedFeedRequest(_message.Message):
    __slots__ = ("after_seq", "max_sessions", "partition")
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    max_sessions: int
    partition: int
    def __init__(self, after_seq: _Optional[int] = ..., max_sessions: _Optional[int] = ..., partition: _Optional[int] = ...) -> None: ...

class FeedSession(_message.Message):
    __slots__ = ("session_id", "change_seq", "items")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    change_seq: int
    items: _containers.RepeatedCompositeFieldContainer[EmbedItem]
    def __init__(self, session_id: _Optional[str] = ..., change_seq: _Optional[int] = ..., items: _Optional[_Iterable[_Union[EmbedItem, _Mapping]]] = ...) -> None: ...

class EmbedFeedResponse(_message.Message):
    __slots__ = ("store_uuid", "head_seq", "backlog_texts", "sessions")
    STORE_UUID_FIELD_NUMBER: _ClassVar[int]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_TEXTS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    store_uuid: str
    head_seq: int
    backlog_texts: int
    sessions: _containers.RepeatedCompositeFieldContainer[FeedSession]
    def __init__(self, store_uuid: _Optional[str] = ..., head_seq: _Optional[int] = ..., backlog_texts: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[FeedSession, _Mapping]]] = ...) -> None: ...

class PartitionFacetsRequest(_message.Message):
    __slots__ = ("families", "scoped", "where", "budget_ms", "partitions")
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    SCOPED_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    families: _containers.RepeatedScalarFieldContainer[str]
    scoped: bool
    where: _plan_pb2.Predicate
    budget_ms: float
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, families: _Optional[_Iterable[str]] = ..., scoped: _Optional[bool] = ..., where: _Optional[_Union[_plan_pb2.Predicate, _Mapping]] = ..., budget_ms: _Optional[float] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionFacetCount(_message.Message):
    __slots__ = ("value", "count")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    value: str
    count: int
    def __init__(self, value: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class PartitionFacetFamily(_message.Message):
    __slots__ = ("family", "global_counts", "scoped_counts")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_COUNTS_FIELD_NUMBER: _ClassVar[int]
    SCOPED_COUNTS_FIELD_NUMBER: _ClassVar[int]
    family: str
    global_counts: _containers.RepeatedCompositeFieldContainer[PartitionFacetCount]
    scoped_counts: _containers.RepeatedCompositeFieldContainer[PartitionFacetCount]
    def __init__(self, family: _Optional[str] = ..., global_counts: _Optional[_Iterable[_Union[PartitionFacetCount, _Mapping]]] = ..., scoped_counts: _Optional[_Iterable[_Union[PartitionFacetCount, _Mapping]]] = ...) -> None: ...

class PartitionFacetsResponse(_message.Message):
    __slots__ = ("partition", "global_sessions", "scoped_sessions", "families", "unfinished", "elapsed_ms")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    SCOPED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    UNFINISHED_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    global_sessions: int
    scoped_sessions: int
    families: _containers.RepeatedCompositeFieldContainer[PartitionFacetFamily]
    unfinished: _containers.RepeatedScalarFieldContainer[str]
    elapsed_ms: float
    def __init__(self, partition: _Optional[int] = ..., global_sessions: _Optional[int] = ..., scoped_sessions: _Optional[int] = ..., families: _Optional[_Iterable[_Union[PartitionFacetFamily, _Mapping]]] = ..., unfinished: _Optional[_Iterable[str]] = ..., elapsed_ms: _Optional[float] = ...) -> None: ...

class NodeFacetsResponse(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionFacetsResponse]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionFacetsResponse, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionResolveRefRequest(_message.Message):
    __slots__ = ("partition", "request")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    partition: int
    request: _refs_pb2.ResolveRefRequest
    def __init__(self, partition: _Optional[int] = ..., request: _Optional[_Union[_refs_pb2.ResolveRefRequest, _Mapping]] = ...) -> None: ...
