"""Query-language errors: a QuarryError pointing at the offending part of the query text."""

from __future__ import annotations

from quarry.core.errors import QuarryError
from quarry.dsl.ast import Span
from quarry.v1 import errors_pb2

INVALID_QUERY = errors_pb2.INVALID_QUERY
UNKNOWN_FIELD = errors_pb2.UNKNOWN_FIELD
BAD_VALUE = errors_pb2.BAD_VALUE
UNSUPPORTED_FORM = errors_pb2.UNSUPPORTED_FORM
UNSUPPORTED_NEGATION = errors_pb2.UNSUPPORTED_NEGATION


def query_error(
    code: int,
    message: str,
    span: Span | None,
    token: str = "",
    expected: list[str] | tuple[str, ...] = (),
    fix: tuple[str | None, str] | None = None,
) -> QuarryError:
    """An error at `span`; line and column are filled in by `locate` once the text is known. `fix`
    (old, new): the one evident correction, the first `old` from the span on written as `new` ("":
    `new` inserted at the span's start; None: `new` is the whole corrected query)."""
    return QuarryError(
        code=code,
        message=message,
        offset=span.start if span is not None else None,
        token=token,
        expected=list(expected),
        fix=fix,
    )


def locate(error: QuarryError, text: str) -> QuarryError:
    """Fill line and column (1-based, in characters) from the error's offset into `text`, and the
    corrected query from its fix."""
    if error.offset is None:
        error.offset = 0
    offset = max(0, min(error.offset, len(text)))
    error.offset = offset
    error.line = text.count("\n", 0, offset) + 1
    error.column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    if error.fix is not None and not error.correction:
        old, new = error.fix
        if old is None:
            error.correction = new
        elif (at := text.find(old, offset) if old else offset) >= 0:
            error.correction = text[:at] + new + text[at + len(old) :]
    return error
