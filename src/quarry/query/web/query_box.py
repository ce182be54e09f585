"""What the search page and the units console share around their query box: the page parameters they
read, a refused query shown under the box, and how they write a time.

A query the language refuses (docs/query-language.md#errors) is shown as the CLI shows it: the code and
the message, the query's line echoed with the offending part marked and a caret under it, and the
correction, when the error has one, as a link that runs the corrected query. The position is the
error's `offset` (0-based characters): the caret is placed from it, so a multi-line query shows the
line that holds it.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.requests import Request

from quarry.core.errors import QuarryError
from quarry.query.http_status import http_status
from quarry.v1 import errors_pb2

MAX_LIMIT = 1000  # the API's range for `limit` (docs/search-api.md#limits)
# the units' fields that hold an instant (epoch ms), written as a time; `duration_ms` is no instant
TIME_FIELDS = frozenset(("time_ms", "started_ms", "ended_ms", "first_time_ms", "last_time_ms", "created_ms"))


@dataclass(frozen=True)
class Echo:
    """The query's line holding the error, cut around the offending part, and the caret's indent."""

    before: str
    at: str
    after: str
    indent: str
    carets: str


@dataclass(frozen=True)
class ShownError:
    """A refused request as the page shows it under the box."""

    code: str
    message: str
    status: int
    echo: Echo | None
    where: str  # "line 1, column 26", or "" without a position
    correction: str
    correction_href: str
    expected: list[str]


def text_param(request: Request, name: str) -> str:
    return request.query_params.get(name, "")


def limit_param(request: Request) -> int:
    """`limit`: a whole number (absent: 0, the call's default); the call checks its range."""
    raw = request.query_params.get("limit", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > MAX_LIMIT:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"limit must be a whole number 1..{MAX_LIMIT}, not {raw!r}", parameter="limit"
        )
    return int(raw)


def href(path: str, **params: str | int) -> str:
    """`path` with the parameters that are set (empty strings and 0 left out)."""
    kept = {k: v for k, v in params.items() if v not in ("", 0)}
    return path + ("?" + urllib.parse.urlencode(kept) if kept else "")


def when(epoch_ms: int | str) -> str:
    """An instant as the pages write it (UTC, to the second); "" for none. proto3 JSON writes an int64 as a
    string: both are taken."""
    if not epoch_ms:
        return ""
    return datetime.fromtimestamp(int(epoch_ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def shown_error(error: QuarryError, query: str, path: str, **keep: str | int) -> ShownError:
    """The error as shown under the box of the page at `path`, whose other parameters `keep` the
    correction's link carries."""
    where = f"line {error.line}, column {error.column}" if error.line else ""
    correction_href = href(path, q=error.correction, **keep) if error.correction else ""
    return ShownError(
        code=error.code_name,
        message=error.message,
        status=http_status(error),
        echo=echo(query, error.offset, error.token) if error.offset is not None else None,
        where=where,
        correction=error.correction,
        correction_href=correction_href,
        expected=list(error.expected[:20]),
    )


def echo(query: str, offset: int, token: str = "") -> Echo:
    """The line of `query` holding character `offset`, the offending part marked (the error's token when
    the text there is the token, else one character; a blank at the end of the text) and the caret's
    indent under it."""
    offset = max(0, min(offset, len(query)))
    start = query.rfind("\n", 0, offset) + 1
    end = query.find("\n", offset)
    line = query[start : len(query) if end < 0 else end].replace("\t", " ")  # one column each, as the caret
    column = offset - start
    width = len(token) if token and line.startswith(token, column) else 1
    at = line[column : column + width] or " "
    return Echo(line[:column], at, line[column + width :], " " * column, "^" * len(at))
