from google.protobuf import struct_pb2 as _struct_pb2
from quarry.v1 import assertions_pb2 as _assertions_pb2
from quarry.v1 import plan_pb2 as _plan_pb2
from quarry.v1 import refs_pb2 as _refs_pb2
from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchRequest(_message.Message):
    __slots__ = ("query", "lane", "limit", "offset", "deadline_ms", "cursor", "controls", "require_complete", "reading")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    CONTROLS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    READING_FIELD_NUMBER: _ClassVar[int]
    query: str
    lane: str
    limit: int
    offset: int
    deadline_ms: float
    cursor: str
    controls: SearchControls
    require_complete: bool
    reading: str
    def __init__(self, query: _Optional[str] = ..., lane: _Optional[str] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., deadline_ms: _Optional[float] = ..., cursor: _Optional[str] = ..., controls: _Optional[_Union[SearchControls, _Mapping]] = ..., require_complete: _Optional[bool] = ..., reading: _Optional[str] = ...) -> None: ...

class SearchControls(_message.Message):
    __slots__ = ("admission", "fusion", "min_score", "include_scores")
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SCORES_FIELD_NUMBER: _ClassVar[int]
    admission: Admission
    fusion: Fusion
    min_score: float
    include_scores: bool
    def __init__(self, admission: _Optional[_Union[Admission, _Mapping]] = ..., fusion: _Optional[_Union[Fusion, _Mapping]] = ..., min_score: _Optional[float] = ..., include_scores: _Optional[bool] = ...) -> None: ...

class Admission(_message.Message):
    __slots__ = ("lexical_coverage", "lexical_min_matched_terms", "min_semantic_similarity")
    LEXICAL_COVERAGE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_MIN_MATCHED_TERMS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEMANTIC_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    lexical_coverage: float
    lexical_min_matched_terms: int
    min_semantic_similarity: float
    def __init__(self, lexical_coverage: _Optional[float] = ..., lexical_min_matched_terms: _Optional[int] = ..., min_semantic_similarity: _Optional[float] = ...) -> None: ...

class Fusion(_message.Message):
    __slots__ = ("method", "params")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    method: str
    params: FusionParams
    def __init__(self, method: _Optional[str] = ..., params: _Optional[_Union[FusionParams, _Mapping]] = ...) -> None: ...

class FusionParams(_message.Message):
    __slots__ = ("rank_constant", "weights")
    class WeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RANK_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    rank_constant: int
    weights: _containers.ScalarMap[str, float]
    def __init__(self, rank_constant: _Optional[int] = ..., weights: _Optional[_Mapping[str, float]] = ...) -> None: ...

class ChannelScore(_message.Message):
    __slots__ = ("raw", "metric", "higher_is_better")
    RAW_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    HIGHER_IS_BETTER_FIELD_NUMBER: _ClassVar[int]
    raw: float
    metric: str
    higher_is_better: bool
    def __init__(self, raw: _Optional[float] = ..., metric: _Optional[str] = ..., higher_is_better: _Optional[bool] = ...) -> None: ...

class HitScores(_message.Message):
    __slots__ = ("retrieval", "channels")
    class ChannelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ChannelScore
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ChannelScore, _Mapping]] = ...) -> None: ...
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    retrieval: float
    channels: _containers.MessageMap[str, ChannelScore]
    def __init__(self, retrieval: _Optional[float] = ..., channels: _Optional[_Mapping[str, ChannelScore]] = ...) -> None: ...

class SessionSearchMatch(_message.Message):
    __slots__ = ("rank", "score", "score_kind", "score_components", "matched_terms", "snippet", "match_surface", "message_id", "target_ref", "scores")
    class ScoreComponentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SCORE_KIND_FIELD_NUMBER: _ClassVar[int]
    SCORE_COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_TERMS_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    MATCH_SURFACE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    rank: int
    score: float
    score_kind: str
    score_components: _containers.ScalarMap[str, float]
    matched_terms: _containers.RepeatedScalarFieldContainer[str]
    snippet: str
    match_surface: str
    message_id: str
    target_ref: str
    scores: HitScores
    def __init__(self, rank: _Optional[int] = ..., score: _Optional[float] = ..., score_kind: _Optional[str] = ..., score_components: _Optional[_Mapping[str, float]] = ..., matched_terms: _Optional[_Iterable[str]] = ..., snippet: _Optional[str] = ..., match_surface: _Optional[str] = ..., message_id: _Optional[str] = ..., target_ref: _Optional[str] = ..., scores: _Optional[_Union[HitScores, _Mapping]] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("session", "match", "projections")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    session: _units_pb2.Session
    match: SessionSearchMatch
    projections: _containers.RepeatedCompositeFieldContainer[ProjectedRows]
    def __init__(self, session: _Optional[_Union[_units_pb2.Session, _Mapping]] = ..., match: _Optional[_Union[SessionSearchMatch, _Mapping]] = ..., projections: _Optional[_Iterable[_Union[ProjectedRows, _Mapping]]] = ...) -> None: ...

class ProjectedRows(_message.Message):
    __slots__ = ("unit", "fields", "rows", "total", "cut")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    unit: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    total: int
    cut: bool
    def __init__(self, unit: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., total: _Optional[int] = ..., cut: _Optional[bool] = ...) -> None: ...

class SearchEnvelope(_message.Message):
    __slots__ = ("query", "requested_lane", "retrieval_lane", "ranking_policy", "ranking_policy_version", "hits", "next_cursor", "caveats", "limit", "offset", "timings_ms", "controls", "partial", "missing", "reading")
    class TimingsMsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_LANE_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_LANE_FIELD_NUMBER: _ClassVar[int]
    RANKING_POLICY_FIELD_NUMBER: _ClassVar[int]
    RANKING_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_MS_FIELD_NUMBER: _ClassVar[int]
    CONTROLS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    READING_FIELD_NUMBER: _ClassVar[int]
    query: str
    requested_lane: str
    retrieval_lane: str
    ranking_policy: str
    ranking_policy_version: int
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    next_cursor: str
    caveats: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    offset: int
    timings_ms: _containers.ScalarMap[str, float]
    controls: SearchControls
    partial: bool
    missing: _containers.RepeatedCompositeFieldContainer[MissingPartition]
    reading: str
    def __init__(self, query: _Optional[str] = ..., requested_lane: _Optional[str] = ..., retrieval_lane: _Optional[str] = ..., ranking_policy: _Optional[str] = ..., ranking_policy_version: _Optional[int] = ..., hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., next_cursor: _Optional[str] = ..., caveats: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., timings_ms: _Optional[_Mapping[str, float]] = ..., controls: _Optional[_Union[SearchControls, _Mapping]] = ..., partial: _Optional[bool] = ..., missing: _Optional[_Iterable[_Union[MissingPartition, _Mapping]]] = ..., reading: _Optional[str] = ...) -> None: ...

class MissingPartition(_message.Message):
    __slots__ = ("partition", "reason")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    partition: int
    reason: str
    def __init__(self, partition: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class QueryUnitsRequest(_message.Message):
    __slots__ = ("query", "limit", "offset", "deadline_ms", "require_complete", "cursor")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    offset: int
    deadline_ms: float
    require_complete: bool
    cursor: str
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., deadline_ms: _Optional[float] = ..., require_complete: _Optional[bool] = ..., cursor: _Optional[str] = ...) -> None: ...

class QueryUnitEnvelope(_message.Message):
    __slots__ = ("query", "unit", "rows", "limit", "offset", "caveats", "aggregate", "group_by", "groups", "partial", "missing", "has_more", "next_cursor", "groups_total")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    GROUPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    query: str
    unit: str
    rows: _containers.RepeatedCompositeFieldContainer[QueryUnitRow]
    limit: int
    offset: int
    caveats: _containers.RepeatedScalarFieldContainer[str]
    aggregate: bool
    group_by: str
    groups: _containers.RepeatedCompositeFieldContainer[AggregateCount]
    partial: bool
    missing: _containers.RepeatedCompositeFieldContainer[MissingPartition]
    has_more: bool
    next_cursor: str
    groups_total: int
    def __init__(self, query: _Optional[str] = ..., unit: _Optional[str] = ..., rows: _Optional[_Iterable[_Union[QueryUnitRow, _Mapping]]] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., caveats: _Optional[_Iterable[str]] = ..., aggregate: _Optional[bool] = ..., group_by: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[AggregateCount, _Mapping]]] = ..., partial: _Optional[bool] = ..., missing: _Optional[_Iterable[_Union[MissingPartition, _Mapping]]] = ..., has_more: _Optional[bool] = ..., next_cursor: _Optional[str] = ..., groups_total: _Optional[int] = ...) -> None: ...

class AggregateCount(_message.Message):
    __slots__ = ("key", "count", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    count: int
    values: _containers.RepeatedCompositeFieldContainer[AggregateValue]
    def __init__(self, key: _Optional[str] = ..., count: _Optional[int] = ..., values: _Optional[_Iterable[_Union[AggregateValue, _Mapping]]] = ...) -> None: ...

class AggregateValue(_message.Message):
    __slots__ = ("name", "value", "empty")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    empty: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., empty: _Optional[bool] = ...) -> None: ...

class QueryUnitRow(_message.Message):
    __slots__ = ("message", "action", "block", "file", "assertion", "run", "observed_event", "context_snapshot", "delegation", "session_id", "ref")
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
    REF_FIELD_NUMBER: _ClassVar[int]
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
    ref: str
    def __init__(self, message: _Optional[_Union[_units_pb2.Message, _Mapping]] = ..., action: _Optional[_Union[_units_pb2.Action, _Mapping]] = ..., block: _Optional[_Union[_units_pb2.Block, _Mapping]] = ..., file: _Optional[_Union[_units_pb2.FileTouch, _Mapping]] = ..., assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., run: _Optional[_Union[_units_pb2.Run, _Mapping]] = ..., observed_event: _Optional[_Union[_units_pb2.ObservedEvent, _Mapping]] = ..., context_snapshot: _Optional[_Union[_units_pb2.ContextSnapshot, _Mapping]] = ..., delegation: _Optional[_Union[_units_pb2.Delegation, _Mapping]] = ..., session_id: _Optional[str] = ..., ref: _Optional[str] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("query", "reading")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    READING_FIELD_NUMBER: _ClassVar[int]
    query: str
    reading: str
    def __init__(self, query: _Optional[str] = ..., reading: _Optional[str] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("query", "kind", "unit_source", "ast_json", "plan", "reading", "query_read")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    UNIT_SOURCE_FIELD_NUMBER: _ClassVar[int]
    AST_JSON_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    READING_FIELD_NUMBER: _ClassVar[int]
    QUERY_READ_FIELD_NUMBER: _ClassVar[int]
    query: str
    kind: str
    unit_source: str
    ast_json: str
    plan: _plan_pb2.QueryPlan
    reading: str
    query_read: str
    def __init__(self, query: _Optional[str] = ..., kind: _Optional[str] = ..., unit_source: _Optional[str] = ..., ast_json: _Optional[str] = ..., plan: _Optional[_Union[_plan_pb2.QueryPlan, _Mapping]] = ..., reading: _Optional[str] = ..., query_read: _Optional[str] = ...) -> None: ...

class ClusterStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeStatus(_message.Message):
    __slots__ = ("name", "role", "address", "up", "partition", "sessions", "documents", "vectors", "vectors_pending", "detail", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_PENDING_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: str
    address: str
    up: bool
    partition: int
    sessions: int
    documents: int
    vectors: int
    vectors_pending: int
    detail: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., role: _Optional[str] = ..., address: _Optional[str] = ..., up: _Optional[bool] = ..., partition: _Optional[int] = ..., sessions: _Optional[int] = ..., documents: _Optional[int] = ..., vectors: _Optional[int] = ..., vectors_pending: _Optional[int] = ..., detail: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class ClusterStatusResponse(_message.Message):
    __slots__ = ("nodes", "map", "log")
    NODES_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeStatus]
    map: ClusterMap
    log: LogStatus
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeStatus, _Mapping]]] = ..., map: _Optional[_Union[ClusterMap, _Mapping]] = ..., log: _Optional[_Union[LogStatus, _Mapping]] = ...) -> None: ...

class ClusterMap(_message.Message):
    __slots__ = ("mode", "generation", "partitions", "replicas", "partition_replicas")
    MODE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    mode: str
    generation: int
    partitions: int
    replicas: int
    partition_replicas: _containers.RepeatedCompositeFieldContainer[PartitionReplicas]
    def __init__(self, mode: _Optional[str] = ..., generation: _Optional[int] = ..., partitions: _Optional[int] = ..., replicas: _Optional[int] = ..., partition_replicas: _Optional[_Iterable[_Union[PartitionReplicas, _Mapping]]] = ...) -> None: ...

class PartitionReplicas(_message.Message):
    __slots__ = ("partition", "replicas", "log_seq")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LOG_SEQ_FIELD_NUMBER: _ClassVar[int]
    partition: int
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaStatus]
    log_seq: int
    def __init__(self, partition: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[ReplicaStatus, _Mapping]]] = ..., log_seq: _Optional[int] = ...) -> None: ...

class ReplicaStatus(_message.Message):
    __slots__ = ("node", "state", "alive", "applied_seq", "lag")
    NODE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    node: str
    state: str
    alive: bool
    applied_seq: int
    lag: int
    def __init__(self, node: _Optional[str] = ..., state: _Optional[str] = ..., alive: _Optional[bool] = ..., applied_seq: _Optional[int] = ..., lag: _Optional[int] = ...) -> None: ...

class LogStatus(_message.Message):
    __slots__ = ("stream", "messages", "bytes", "first_seq", "last_seq", "leader", "servers", "detail")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    stream: str
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    leader: str
    servers: _containers.RepeatedCompositeFieldContainer[LogServer]
    detail: str
    def __init__(self, stream: _Optional[str] = ..., messages: _Optional[int] = ..., bytes: _Optional[int] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., leader: _Optional[str] = ..., servers: _Optional[_Iterable[_Union[LogServer, _Mapping]]] = ..., detail: _Optional[str] = ...) -> None: ...

class LogServer(_message.Message):
    __slots__ = ("name", "leader", "current", "offline", "lag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    leader: bool
    current: bool
    offline: bool
    lag: int
    def __init__(self, name: _Optional[str] = ..., leader: _Optional[bool] = ..., current: _Optional[bool] = ..., offline: _Optional[bool] = ..., lag: _Optional[int] = ...) -> None: ...

class FacetsRequest(_message.Message):
    __slots__ = ("query", "origins", "families", "include_deferred", "idf", "budget_ms")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    ORIGINS_FIELD_NUMBER: _ClassVar[int]
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DEFERRED_FIELD_NUMBER: _ClassVar[int]
    IDF_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    query: str
    origins: _containers.RepeatedScalarFieldContainer[str]
    families: _containers.RepeatedScalarFieldContainer[str]
    include_deferred: bool
    idf: bool
    budget_ms: float
    def __init__(self, query: _Optional[str] = ..., origins: _Optional[_Iterable[str]] = ..., families: _Optional[_Iterable[str]] = ..., include_deferred: _Optional[bool] = ..., idf: _Optional[bool] = ..., budget_ms: _Optional[float] = ...) -> None: ...

class FacetValue(_message.Message):
    __slots__ = ("value", "count", "idf")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    IDF_FIELD_NUMBER: _ClassVar[int]
    value: str
    count: int
    idf: float
    def __init__(self, value: _Optional[str] = ..., count: _Optional[int] = ..., idf: _Optional[float] = ...) -> None: ...

class FacetFamily(_message.Message):
    __slots__ = ("family", "values")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    family: str
    values: _containers.RepeatedCompositeFieldContainer[FacetValue]
    def __init__(self, family: _Optional[str] = ..., values: _Optional[_Iterable[_Union[FacetValue, _Mapping]]] = ...) -> None: ...

class FacetView(_message.Message):
    __slots__ = ("total_sessions", "families")
    TOTAL_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    total_sessions: int
    families: _containers.RepeatedCompositeFieldContainer[FacetFamily]
    def __init__(self, total_sessions: _Optional[int] = ..., families: _Optional[_Iterable[_Union[FacetFamily, _Mapping]]] = ...) -> None: ...

class FacetFamilyStatus(_message.Message):
    __slots__ = ("family", "status", "reason")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    family: str
    status: str
    reason: str
    def __init__(self, family: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class FacetsResponse(_message.Message):
    __slots__ = ("query", "origins", "scoped_to_query", "scoped", "complete_families", "deferred_families", "family_status", "generated_at", "budget_exceeded", "budget_ms", "idf", "caveats", "partial", "missing")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    ORIGINS_FIELD_NUMBER: _ClassVar[int]
    SCOPED_TO_QUERY_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_FIELD_NUMBER: _ClassVar[int]
    SCOPED_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    FAMILY_STATUS_FIELD_NUMBER: _ClassVar[int]
    GENERATED_AT_FIELD_NUMBER: _ClassVar[int]
    BUDGET_EXCEEDED_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    IDF_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    query: str
    origins: _containers.RepeatedScalarFieldContainer[str]
    scoped_to_query: bool
    scoped: FacetView
    complete_families: _containers.RepeatedScalarFieldContainer[str]
    deferred_families: _containers.RepeatedScalarFieldContainer[str]
    family_status: _containers.RepeatedCompositeFieldContainer[FacetFamilyStatus]
    generated_at: int
    budget_exceeded: bool
    budget_ms: float
    idf: bool
    caveats: _containers.RepeatedScalarFieldContainer[str]
    partial: bool
    missing: _containers.RepeatedCompositeFieldContainer[MissingPartition]
    def __init__(self, query: _Optional[str] = ..., origins: _Optional[_Iterable[str]] = ..., scoped_to_query: _Optional[bool] = ..., scoped: _Optional[_Union[FacetView, _Mapping]] = ..., complete_families: _Optional[_Iterable[str]] = ..., deferred_families: _Optional[_Iterable[str]] = ..., family_status: _Optional[_Iterable[_Union[FacetFamilyStatus, _Mapping]]] = ..., generated_at: _Optional[int] = ..., budget_exceeded: _Optional[bool] = ..., budget_ms: _Optional[float] = ..., idf: _Optional[bool] = ..., caveats: _Optional[_Iterable[str]] = ..., partial: _Optional[bool] = ..., missing: _Optional[_Iterable[_Union[MissingPartition, _Mapping]]] = ..., **kwargs) -> None: ...

class UsageRequest(_message.Message):
    __slots__ = ("by", "since", "until", "scopes", "deadline_ms", "require_complete")
    BY_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    by: str
    since: str
    until: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    deadline_ms: float
    require_complete: bool
    def __init__(self, by: _Optional[str] = ..., since: _Optional[str] = ..., until: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., deadline_ms: _Optional[float] = ..., require_complete: _Optional[bool] = ...) -> None: ...

class UsageFigures(_message.Message):
    __slots__ = ("sessions", "messages", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "recorded_cost_usd", "recorded_messages", "estimated_cost_usd", "estimated_messages", "unpriced_messages", "unpriced_tokens")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_COST_USD_FIELD_NUMBER: _ClassVar[int]
    RECORDED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_COST_USD_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    UNPRICED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    UNPRICED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    sessions: int
    messages: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    recorded_cost_usd: float
    recorded_messages: int
    estimated_cost_usd: float
    estimated_messages: int
    unpriced_messages: int
    unpriced_tokens: int
    def __init__(self, sessions: _Optional[int] = ..., messages: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., recorded_cost_usd: _Optional[float] = ..., recorded_messages: _Optional[int] = ..., estimated_cost_usd: _Optional[float] = ..., estimated_messages: _Optional[int] = ..., unpriced_messages: _Optional[int] = ..., unpriced_tokens: _Optional[int] = ...) -> None: ...

class UsageRow(_message.Message):
    __slots__ = ("key", "figures")
    KEY_FIELD_NUMBER: _ClassVar[int]
    FIGURES_FIELD_NUMBER: _ClassVar[int]
    key: str
    figures: UsageFigures
    def __init__(self, key: _Optional[str] = ..., figures: _Optional[_Union[UsageFigures, _Mapping]] = ...) -> None: ...

class UsageReport(_message.Message):
    __slots__ = ("by", "since", "until", "scopes", "rows", "total", "unit_queries", "price_table", "unpriced_models", "caveats", "partial", "missing", "priced_at_ms")
    BY_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    UNIT_QUERIES_FIELD_NUMBER: _ClassVar[int]
    PRICE_TABLE_FIELD_NUMBER: _ClassVar[int]
    UNPRICED_MODELS_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    PRICED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    by: str
    since: str
    until: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[UsageRow]
    total: UsageFigures
    unit_queries: _containers.RepeatedScalarFieldContainer[str]
    price_table: str
    unpriced_models: _containers.RepeatedScalarFieldContainer[str]
    caveats: _containers.RepeatedScalarFieldContainer[str]
    partial: bool
    missing: _containers.RepeatedCompositeFieldContainer[MissingPartition]
    priced_at_ms: int
    def __init__(self, by: _Optional[str] = ..., since: _Optional[str] = ..., until: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[UsageRow, _Mapping]]] = ..., total: _Optional[_Union[UsageFigures, _Mapping]] = ..., unit_queries: _Optional[_Iterable[str]] = ..., price_table: _Optional[str] = ..., unpriced_models: _Optional[_Iterable[str]] = ..., caveats: _Optional[_Iterable[str]] = ..., partial: _Optional[bool] = ..., missing: _Optional[_Iterable[_Union[MissingPartition, _Mapping]]] = ..., priced_at_ms: _Optional[int] = ...) -> None: ...
