from quarry.v1 import units_pb2 as _units_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeleteRequest(_message.Message):
    __slots__ = ("refs", "ack")
    REFS_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    refs: _containers.RepeatedScalarFieldContainer[str]
    ack: str
    def __init__(self, refs: _Optional[_Iterable[str]] = ..., ack: _Optional[str] = ...) -> None: ...

class DeleteReport(_message.Message):
    __slots__ = ("deleted", "not_found", "in_log", "searchable", "caveats")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    IN_LOG_FIELD_NUMBER: _ClassVar[int]
    SEARCHABLE_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    deleted: _containers.RepeatedScalarFieldContainer[str]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    in_log: bool
    searchable: bool
    caveats: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, deleted: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ..., in_log: _Optional[bool] = ..., searchable: _Optional[bool] = ..., caveats: _Optional[_Iterable[str]] = ...) -> None: ...

class IngestPathsRequest(_message.Message):
    __slots__ = ("paths", "standard_locations", "follow", "ack", "scope")
    PATHS_FIELD_NUMBER: _ClassVar[int]
    STANDARD_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    standard_locations: bool
    follow: bool
    ack: str
    scope: str
    def __init__(self, paths: _Optional[_Iterable[str]] = ..., standard_locations: _Optional[bool] = ..., follow: _Optional[bool] = ..., ack: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class IngestIssue(_message.Message):
    __slots__ = ("path", "line", "reason", "code")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    path: str
    line: int
    reason: str
    code: str
    def __init__(self, path: _Optional[str] = ..., line: _Optional[int] = ..., reason: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...

class IngestReport(_message.Message):
    __slots__ = ("files", "sessions_received", "sessions_written", "sessions_unchanged", "messages_written", "issues", "skipped_record_types", "caveats", "elapsed_ms", "files_unchanged", "files_appended", "files_rewritten", "in_log", "searchable", "watermarks", "skipped")
    class SkippedRecordTypesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    FILES_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    ISSUES_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_RECORD_TYPES_FIELD_NUMBER: _ClassVar[int]
    CAVEATS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    FILES_UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    FILES_APPENDED_FIELD_NUMBER: _ClassVar[int]
    FILES_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    IN_LOG_FIELD_NUMBER: _ClassVar[int]
    SEARCHABLE_FIELD_NUMBER: _ClassVar[int]
    WATERMARKS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    files: int
    sessions_received: int
    sessions_written: int
    sessions_unchanged: int
    messages_written: int
    issues: _containers.RepeatedCompositeFieldContainer[IngestIssue]
    skipped_record_types: _containers.ScalarMap[str, int]
    caveats: _containers.RepeatedScalarFieldContainer[str]
    elapsed_ms: float
    files_unchanged: int
    files_appended: int
    files_rewritten: int
    in_log: bool
    searchable: bool
    watermarks: _containers.RepeatedCompositeFieldContainer[PartitionWatermark]
    skipped: _containers.RepeatedCompositeFieldContainer[SkippedFile]
    def __init__(self, files: _Optional[int] = ..., sessions_received: _Optional[int] = ..., sessions_written: _Optional[int] = ..., sessions_unchanged: _Optional[int] = ..., messages_written: _Optional[int] = ..., issues: _Optional[_Iterable[_Union[IngestIssue, _Mapping]]] = ..., skipped_record_types: _Optional[_Mapping[str, int]] = ..., caveats: _Optional[_Iterable[str]] = ..., elapsed_ms: _Optional[float] = ..., files_unchanged: _Optional[int] = ..., files_appended: _Optional[int] = ..., files_rewritten: _Optional[int] = ..., in_log: _Optional[bool] = ..., searchable: _Optional[bool] = ..., watermarks: _Optional[_Iterable[_Union[PartitionWatermark, _Mapping]]] = ..., skipped: _Optional[_Iterable[_Union[SkippedFile, _Mapping]]] = ...) -> None: ...

class SkippedFile(_message.Message):
    __slots__ = ("path", "code", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    code: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., code: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DescribeArchiveRequest(_message.Message):
    __slots__ = ("scope",)
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    scope: str
    def __init__(self, scope: _Optional[str] = ...) -> None: ...

class ArchiveDescription(_message.Message):
    __slots__ = ("archive_id", "scope")
    ARCHIVE_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    archive_id: str
    scope: str
    def __init__(self, archive_id: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class PartitionWatermark(_message.Message):
    __slots__ = ("partition", "seq")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    partition: int
    seq: int
    def __init__(self, partition: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class IngestProgress(_message.Message):
    __slots__ = ("file", "report")
    FILE_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    file: FileProgress
    report: IngestReport
    def __init__(self, file: _Optional[_Union[FileProgress, _Mapping]] = ..., report: _Optional[_Union[IngestReport, _Mapping]] = ...) -> None: ...

class FileProgress(_message.Message):
    __slots__ = ("path", "files_done", "files_total", "sessions", "format", "change")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_DONE_FIELD_NUMBER: _ClassVar[int]
    FILES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    path: str
    files_done: int
    files_total: int
    sessions: int
    format: str
    change: str
    def __init__(self, path: _Optional[str] = ..., files_done: _Optional[int] = ..., files_total: _Optional[int] = ..., sessions: _Optional[int] = ..., format: _Optional[str] = ..., change: _Optional[str] = ...) -> None: ...
