from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Comparison(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPARISON_UNSPECIFIED: _ClassVar[Comparison]
    GT: _ClassVar[Comparison]
    GE: _ClassVar[Comparison]
    LT: _ClassVar[Comparison]
    LE: _ClassVar[Comparison]
    BETWEEN: _ClassVar[Comparison]
COMPARISON_UNSPECIFIED: Comparison
GT: Comparison
GE: Comparison
LT: Comparison
LE: Comparison
BETWEEN: Comparison

class FtsExpr(_message.Message):
    __slots__ = ("term", "phrase", "prefix", "all", "any", "negate")
    TERM_FIELD_NUMBER: _ClassVar[int]
    PHRASE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    ANY_FIELD_NUMBER: _ClassVar[int]
    NEGATE_FIELD_NUMBER: _ClassVar[int]
    term: str
    phrase: str
    prefix: str
    all: FtsList
    any: FtsList
    negate: FtsExpr
    def __init__(self, term: _Optional[str] = ..., phrase: _Optional[str] = ..., prefix: _Optional[str] = ..., all: _Optional[_Union[FtsList, _Mapping]] = ..., any: _Optional[_Union[FtsList, _Mapping]] = ..., negate: _Optional[_Union[FtsExpr, _Mapping]] = ...) -> None: ...

class FtsList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[FtsExpr]
    def __init__(self, items: _Optional[_Iterable[_Union[FtsExpr, _Mapping]]] = ...) -> None: ...

class FieldClause(_message.Message):
    __slots__ = ("field", "values", "op", "session_scoped")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    SESSION_SCOPED_FIELD_NUMBER: _ClassVar[int]
    field: str
    values: _containers.RepeatedScalarFieldContainer[str]
    op: Comparison
    session_scoped: bool
    def __init__(self, field: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ..., op: _Optional[_Union[Comparison, str]] = ..., session_scoped: _Optional[bool] = ...) -> None: ...

class Predicate(_message.Message):
    __slots__ = ("all", "any", "negate", "field", "fts", "semantic", "session_ids", "exists", "seq", "lineage", "near_session")
    ALL_FIELD_NUMBER: _ClassVar[int]
    ANY_FIELD_NUMBER: _ClassVar[int]
    NEGATE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    FTS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    LINEAGE_FIELD_NUMBER: _ClassVar[int]
    NEAR_SESSION_FIELD_NUMBER: _ClassVar[int]
    all: PredicateList
    any: PredicateList
    negate: Predicate
    field: FieldClause
    fts: FtsExpr
    semantic: str
    session_ids: SessionIdSet
    exists: ExistsPredicate
    seq: SeqPredicate
    lineage: str
    near_session: str
    def __init__(self, all: _Optional[_Union[PredicateList, _Mapping]] = ..., any: _Optional[_Union[PredicateList, _Mapping]] = ..., negate: _Optional[_Union[Predicate, _Mapping]] = ..., field: _Optional[_Union[FieldClause, _Mapping]] = ..., fts: _Optional[_Union[FtsExpr, _Mapping]] = ..., semantic: _Optional[str] = ..., session_ids: _Optional[_Union[SessionIdSet, _Mapping]] = ..., exists: _Optional[_Union[ExistsPredicate, _Mapping]] = ..., seq: _Optional[_Union[SeqPredicate, _Mapping]] = ..., lineage: _Optional[str] = ..., near_session: _Optional[str] = ...) -> None: ...

class ExistsPredicate(_message.Message):
    __slots__ = ("unit", "where")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    unit: str
    where: Predicate
    def __init__(self, unit: _Optional[str] = ..., where: _Optional[_Union[Predicate, _Mapping]] = ...) -> None: ...

class SeqPredicate(_message.Message):
    __slots__ = ("steps",)
    STEPS_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[Predicate]
    def __init__(self, steps: _Optional[_Iterable[_Union[Predicate, _Mapping]]] = ...) -> None: ...

class PredicateList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Predicate]
    def __init__(self, items: _Optional[_Iterable[_Union[Predicate, _Mapping]]] = ...) -> None: ...

class SessionIdSet(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class PipelineStage(_message.Message):
    __slots__ = ("sort", "limit", "offset", "group_by", "count", "session_scope", "agg")
    SORT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SESSION_SCOPE_FIELD_NUMBER: _ClassVar[int]
    AGG_FIELD_NUMBER: _ClassVar[int]
    sort: SortStage
    limit: int
    offset: int
    group_by: str
    count: bool
    session_scope: SessionScopeStage
    agg: AggregateStage
    def __init__(self, sort: _Optional[_Union[SortStage, _Mapping]] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., group_by: _Optional[str] = ..., count: _Optional[bool] = ..., session_scope: _Optional[_Union[SessionScopeStage, _Mapping]] = ..., agg: _Optional[_Union[AggregateStage, _Mapping]] = ...) -> None: ...

class AggregateStage(_message.Message):
    __slots__ = ("functions",)
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    functions: _containers.RepeatedCompositeFieldContainer[AggregateFunction]
    def __init__(self, functions: _Optional[_Iterable[_Union[AggregateFunction, _Mapping]]] = ...) -> None: ...

class AggregateFunction(_message.Message):
    __slots__ = ("function", "field")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    function: str
    field: str
    def __init__(self, function: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class SortStage(_message.Message):
    __slots__ = ("key", "descending")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DESCENDING_FIELD_NUMBER: _ClassVar[int]
    key: str
    descending: bool
    def __init__(self, key: _Optional[str] = ..., descending: _Optional[bool] = ...) -> None: ...

class SessionScopeStage(_message.Message):
    __slots__ = ("where",)
    WHERE_FIELD_NUMBER: _ClassVar[int]
    where: Predicate
    def __init__(self, where: _Optional[_Union[Predicate, _Mapping]] = ...) -> None: ...

class QueryPlan(_message.Message):
    __slots__ = ("unit", "where", "session_scope", "stages", "ranking_text", "semantic_text", "projections")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    SESSION_SCOPE_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    RANKING_TEXT_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TEXT_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    unit: str
    where: Predicate
    session_scope: Predicate
    stages: _containers.RepeatedCompositeFieldContainer[PipelineStage]
    ranking_text: FtsExpr
    semantic_text: str
    projections: _containers.RepeatedCompositeFieldContainer[Projection]
    def __init__(self, unit: _Optional[str] = ..., where: _Optional[_Union[Predicate, _Mapping]] = ..., session_scope: _Optional[_Union[Predicate, _Mapping]] = ..., stages: _Optional[_Iterable[_Union[PipelineStage, _Mapping]]] = ..., ranking_text: _Optional[_Union[FtsExpr, _Mapping]] = ..., semantic_text: _Optional[str] = ..., projections: _Optional[_Iterable[_Union[Projection, _Mapping]]] = ...) -> None: ...

class Projection(_message.Message):
    __slots__ = ("unit", "fields", "labels", "where", "rows", "last")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    unit: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    labels: _containers.RepeatedScalarFieldContainer[str]
    where: Predicate
    rows: int
    last: bool
    def __init__(self, unit: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., labels: _Optional[_Iterable[str]] = ..., where: _Optional[_Union[Predicate, _Mapping]] = ..., rows: _Optional[int] = ..., last: _Optional[bool] = ...) -> None: ...
