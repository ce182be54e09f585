"""Tolerant reading of JSON Lines and whole JSON documents.

A bad line never costs its neighbours: it becomes an `IngestIssue` with its 1-based line number and
the rest of the file is still read; what cannot be read of it is still handed to the parser as a
`Record` with `malformed` set (its text in `data`), so the line is kept as a log-only event. A line
holding several concatenated JSON values is split and
every value is kept; a final line cut in the middle of a value is reported as `truncated_line`.
The fast path is one `orjson.loads` per line; the slow stdlib decoder runs only on lines orjson
rejected.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from quarry.v1 import ingest_pb2

BOM = b"\xef\xbb\xbf"
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


@dataclass(slots=True)
class Record:
    """One JSON value read from a JSON Lines file and the 1-based line it came from.

    `raw` is the line's bytes when the line is exactly this one value; `malformed` says why a line
    (or the rest of one) is not JSON, and then `data` is its text."""

    line: int
    data: Any
    raw: bytes = b""
    malformed: str = ""


def issue(path: str, line: int, code: str, reason: str) -> ingest_pb2.IngestIssue:
    return ingest_pb2.IngestIssue(path=path, line=line, code=code, reason=reason)


def strip_bom(data: bytes) -> bytes:
    return data[len(BOM) :] if data.startswith(BOM) else data


def read_document(data: bytes) -> tuple[Any, str]:
    """Parse a whole file as one JSON value: (value, "") on success, (None, error text) otherwise."""
    try:
        return orjson.loads(data), ""
    except orjson.JSONDecodeError as error:
        return None, str(error)


def cut_document(data: bytes) -> str:
    """Why `data` reads as one JSON document cut short (a pretty-printed file truncated mid-write or
    mid-copy), or "" when it is not that: not opened by `{` or `[`, a JSON Lines file (its first line is a
    whole value), whole, or wrong before its end."""
    body = strip_bom(data).strip()
    if body[:1] not in (b"{", b"["):
        return ""
    newline = body.find(b"\n")
    if newline >= 0 and not read_document(body[:newline])[1]:
        return ""
    text = body.decode("utf-8", errors="replace")
    try:
        _DECODER.raw_decode(text)
    except json.JSONDecodeError as error:
        if error.pos >= len(text) or error.msg.startswith("Unterminated"):
            return f"truncated JSON: the document ends after {len(data)} bytes before its value closes ({error.msg})"
    except RecursionError:
        pass
    return ""


def iter_jsonl(data: bytes, path: str, issues: list[ingest_pb2.IngestIssue]) -> Iterator[Record]:
    """Every JSON value of a JSON Lines buffer, in file order, read lazily so that a large file's
    records never all live at once; an issue per unreadable line is appended to `issues`."""
    lines = data.split(b"\n")
    last = len(lines)
    while last > 0 and (not lines[last - 1] or lines[last - 1].isspace()):
        last -= 1
    loads = orjson.loads
    for number in range(1, last + 1):
        raw = lines[number - 1]
        if not raw or raw.isspace():
            continue
        try:
            yield Record(number, loads(raw), raw)
            continue
        except orjson.JSONDecodeError:
            pass
        values, problem = _salvage(raw, is_last=number == last)
        for value in values:
            yield Record(number, value)
        if problem is not None:
            code, reason = problem
            issues.append(issue(path, number, code, reason))
            yield Record(number, raw.decode("utf-8", errors="replace"), raw, malformed=code)


def _salvage(raw: bytes, is_last: bool) -> tuple[list[Any], tuple[str, str] | None]:
    """Decode a line orjson rejected: split concatenated values, report what cannot be read.

    Returns the values recovered and, if part of the line is unreadable, (issue code, reason).
    """
    text = raw.decode("utf-8", errors="replace")
    values: list[Any] = []
    index = _skip_whitespace(text, 0)
    while index < len(text):
        try:
            value, index = _DECODER.raw_decode(text, index)
        except json.JSONDecodeError as error:
            at_end = error.pos >= len(text.rstrip(_WHITESPACE)) or error.msg.startswith("Unterminated")
            if is_last and at_end:
                return values, ("truncated_line", f"the last line ends in the middle of a JSON value ({error})")
            return values, ("malformed_json", f"not valid JSON: {error}")
        except RecursionError:
            return values, ("malformed_json", "not valid JSON: nested too deeply")
        try:
            orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return values, ("malformed_json", "a lone surrogate escape or an integer beyond 64 bits")
        values.append(value)
        index = _skip_whitespace(text, index)
    return values, None


def _skip_whitespace(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


class RecordParser(Protocol):
    """A source parser fed one record at a time (quarry.ingest.sources.*)."""

    result: Any

    def feed(self, record: Record) -> None: ...

    def unread(self, record: Record, kind: str) -> None:
        """Keep a value the parser cannot read (a malformed line, a value that is not an object) as a
        log-only event of type `kind`."""

    def finish(self) -> Any: ...


def feed_all(parser: RecordParser, records: Iterable[Record], path: str) -> Any:
    """Feed every JSON-object record; anything else, or a record the parser cannot use, becomes an issue,
    never a failed file, and is still kept as a log-only event."""
    for record in records:
        if record.malformed:
            parser.unread(record, "(malformed)")
            continue
        if not isinstance(record.data, dict):
            parser.result.issues.append(issue(path, record.line, "invalid_record", "a JSON line that is not an object"))
            parser.unread(record, "(not-an-object)")
            continue
        try:
            parser.feed(record)
        except (TypeError, ValueError, AttributeError, KeyError) as error:
            parser.result.issues.append(issue(path, record.line, "invalid_record", f"unusable record: {error}"))
    return parser.finish()
