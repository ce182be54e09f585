from quarry.v1 import errors_pb2 as _errors_pb2
from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PartitionOpOutcomeRequest(_message.Message):
    __slots__ = ("partition", "op_id")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    partition: int
    op_id: str
    def __init__(self, partition: _Optional[int] = ..., op_id: _Optional[str] = ...) -> None: ...

class OperationOutcome(_message.Message):
    __slots__ = ("applied", "assertion", "judged", "error")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    JUDGED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    assertion: _units_pb2.Assertion
    judged: JudgeCandidateResponse
    error: _errors_pb2.ErrorDetail
    def __init__(self, applied: _Optional[bool] = ..., assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., judged: _Optional[_Union[JudgeCandidateResponse, _Mapping]] = ..., error: _Optional[_Union[_errors_pb2.ErrorDetail, _Mapping]] = ...) -> None: ...

class PartitionWriteAssertion(_message.Message):
    __slots__ = ("partition", "request")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    partition: int
    request: WriteAssertionRequest
    def __init__(self, partition: _Optional[int] = ..., request: _Optional[_Union[WriteAssertionRequest, _Mapping]] = ...) -> None: ...

class PartitionJudgeCandidate(_message.Message):
    __slots__ = ("partition", "request")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    partition: int
    request: JudgeCandidateRequest
    def __init__(self, partition: _Optional[int] = ..., request: _Optional[_Union[JudgeCandidateRequest, _Mapping]] = ...) -> None: ...

class NodeGetAssertion(_message.Message):
    __slots__ = ("partitions", "id")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    id: str
    def __init__(self, partitions: _Optional[_Iterable[int]] = ..., id: _Optional[str] = ...) -> None: ...

class PartitionAssertion(_message.Message):
    __slots__ = ("partition", "found", "assertion")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    partition: int
    found: bool
    assertion: _units_pb2.Assertion
    def __init__(self, partition: _Optional[int] = ..., found: _Optional[bool] = ..., assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ...) -> None: ...

class NodeAssertions(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionAssertion]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionAssertion, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class NodeListCandidates(_message.Message):
    __slots__ = ("partitions", "request")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedScalarFieldContainer[int]
    request: ListCandidatesRequest
    def __init__(self, partitions: _Optional[_Iterable[int]] = ..., request: _Optional[_Union[ListCandidatesRequest, _Mapping]] = ...) -> None: ...

class PartitionCandidates(_message.Message):
    __slots__ = ("partition", "entries")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    entries: _containers.RepeatedCompositeFieldContainer[CandidateEntry]
    def __init__(self, partition: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[CandidateEntry, _Mapping]]] = ...) -> None: ...

class NodeCandidateLists(_message.Message):
    __slots__ = ("partitions", "failures")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionCandidates]
    failures: _containers.RepeatedCompositeFieldContainer[_errors_pb2.PartitionFailure]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionCandidates, _Mapping]]] = ..., failures: _Optional[_Iterable[_Union[_errors_pb2.PartitionFailure, _Mapping]]] = ...) -> None: ...

class WriteAssertionRequest(_message.Message):
    __slots__ = ("assertion",)
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    assertion: _units_pb2.Assertion
    def __init__(self, assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ...) -> None: ...

class GetAssertionRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ListCandidatesRequest(_message.Message):
    __slots__ = ("target_ref", "review", "limit")
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    REVIEW_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    target_ref: str
    review: bool
    limit: int
    def __init__(self, target_ref: _Optional[str] = ..., review: _Optional[bool] = ..., limit: _Optional[int] = ...) -> None: ...

class CandidateEntry(_message.Message):
    __slots__ = ("assertion", "actions", "disabled_reason")
    ASSERTION_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    DISABLED_REASON_FIELD_NUMBER: _ClassVar[int]
    assertion: _units_pb2.Assertion
    actions: _containers.RepeatedScalarFieldContainer[str]
    disabled_reason: str
    def __init__(self, assertion: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., actions: _Optional[_Iterable[str]] = ..., disabled_reason: _Optional[str] = ...) -> None: ...

class CandidateList(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[CandidateEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[CandidateEntry, _Mapping]]] = ...) -> None: ...

class JudgeCandidateRequest(_message.Message):
    __slots__ = ("id", "judgment", "reason", "kind", "body")
    ID_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    id: str
    judgment: str
    reason: str
    kind: str
    body: str
    def __init__(self, id: _Optional[str] = ..., judgment: _Optional[str] = ..., reason: _Optional[str] = ..., kind: _Optional[str] = ..., body: _Optional[str] = ...) -> None: ...

class JudgeCandidateResponse(_message.Message):
    __slots__ = ("candidate", "created")
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    candidate: _units_pb2.Assertion
    created: _units_pb2.Assertion
    def __init__(self, candidate: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ..., created: _Optional[_Union[_units_pb2.Assertion, _Mapping]] = ...) -> None: ...
