"""The HTTP status of each error code: the JSON API's and the web pages' answers to one failure agree."""

from __future__ import annotations

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

STATUS_BY_CODE = {
    errors_pb2.INVALID_REQUEST: 400,
    errors_pb2.INVALID_CURSOR: 400,
    errors_pb2.STALE_CURSOR: 400,
    errors_pb2.INVALID_QUERY: 422,
    errors_pb2.UNKNOWN_FIELD: 422,
    errors_pb2.BAD_VALUE: 422,
    errors_pb2.UNSUPPORTED_FORM: 422,
    errors_pb2.UNSUPPORTED_NEGATION: 422,
    errors_pb2.QUERY_TOO_COSTLY: 422,
    errors_pb2.NOT_FOUND: 404,
    errors_pb2.NOT_JUDGEABLE: 409,
    errors_pb2.INVALID_LINEAGE: 409,
    errors_pb2.SEMANTIC_UNAVAILABLE: 503,
    errors_pb2.NODE_UNAVAILABLE: 503,
    errors_pb2.PARTITION_UNAVAILABLE: 503,
    errors_pb2.NOT_HOSTED: 503,
    errors_pb2.DEADLINE_EXCEEDED: 504,
    errors_pb2.UNAUTHENTICATED: 401,
    errors_pb2.PERMISSION_DENIED: 403,
}


def http_status(error: QuarryError) -> int:
    """The status an error answers with over HTTP (500 for a code with none of its own)."""
    return STATUS_BY_CODE.get(error.code, 500)
