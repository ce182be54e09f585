"""Payloads held apart from a raw record: media data and opaque data, found by the record's structure.

A raw record is stored as its source bytes, except the JSON strings its format marks as a media file's
data or as opaque data; each of those (when it has at least MIN_HELD_BYTES bytes) is held apart, and
the record holds a placeholder object in its place:

    {"held_apart": "media" | "opaque", "media_type": "image/png", "bytes": 138964, "sha256": "…"}

`bytes` and `sha256` describe the held bytes: the string's contents between its quotes exactly as the
source wrote them (escapes such as `\\/` or `\\u00e9` kept, not decoded), so `"` + those bytes + `"` in
the placeholder's place gives back the source record byte for byte. `media_type` is there when the
record names one. Where each placeholder sits is kept beside the record (units.proto `HeldPlace`).

What is held apart is decided by key and container, never by a string looking like base64:
- media: `data` / `Data` / `blob` / `base64` of an object that names a media type (`media_type`,
  `mimeType`, `mime_type`, `MIMEType`, or a `type` such as `image/png`) or is a base64 source
  (`{"type": "base64", …}`: Claude's image and document blocks; Gemini's `inlineData`, MCP image and
  resource contents, Crush's binary parts, Claude Code's read image files). A plain-text document
  source (`"type": "text"`) stays inline.
- media: any string that is a base64 data URL (`data:<media type>;base64,…`), wherever it is.
- opaque: Claude's thinking `signature` and a `redacted_thinking` block's `data`; `encrypted_content`
  (OpenAI reasoning and compaction items: Codex), `reasoningOpaque` (Copilot CLI), `statefulMarker`
  and a `thinking` object's `encrypted` (Copilot Chat), `thoughtSignature` (Gemini).
A shorter payload stays inline: its placeholder would take about as many bytes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import orjson

from quarry.v1 import units_pb2

MIN_HELD_BYTES = 256
MEDIA = "media"
OPAQUE = "opaque"
# Keys as written in the record (a key spelled with escapes is not one of them).
_MEDIA_TYPE_KEYS = frozenset((b"media_type", b"mimeType", b"mime_type", b"MIMEType"))
_MEDIA_DATA_KEYS = frozenset((b"data", b"Data", b"blob", b"base64"))
_OPAQUE_KEYS = frozenset((b"encrypted_content", b"reasoningOpaque", b"statefulMarker", b"thoughtSignature"))
_OPAQUE_OF_TYPE = frozenset((("thinking", b"signature"), ("redacted_thinking", b"data")))  # (object's type, key)
_OPAQUE_UNDER = frozenset(((b"thinking", b"encrypted"),))  # (the object's own key, key)
_TEXT_SOURCE = "text"
_DATA_URL = b"data:"
_BASE64_MARK = b";base64"
_HEADER_BYTES = 256  # a data URL's media type and parameters end before this
# A record holds a payload only where one of these keys has a string value of MIN_HELD_BYTES or more, or
# a string starts as a data URL: most records are never tokenized. (Every alternative begins with a quote,
# which the pattern engine skips to: three times faster than a bytes.find per key.)
_KEYS = sorted(_MEDIA_DATA_KEYS | _OPAQUE_KEYS | {key for _, key in _OPAQUE_OF_TYPE | _OPAQUE_UNDER})
_MAY_HOLD = re.compile(
    rb'"(?:%s)"[ \t\r\n]*:[ \t\r\n]*"(?:[^"\\]|\\.){%d}|"data:'
    % (b"|".join(re.escape(key) for key in _KEYS), MIN_HELD_BYTES),
    re.DOTALL,
)
# A JSON string (group 1) or a structural character: all the walk needs of valid JSON.
_TOKEN = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")|[{}\[\],]', re.DOTALL)
_OPEN_OBJECT, _OPEN_LIST, _COMMA = b"{[,"


@dataclass(frozen=True, slots=True)
class Payload:
    """A JSON string of a record to hold apart: the bytes from its opening quote up to `end` (past its
    closing quote), what it is, and the media type its record names for it ("" for none)."""

    start: int
    end: int
    kind: str
    media_type: str = ""


@dataclass(slots=True)
class Held:
    """A record with its payloads held apart: the stored bytes, where each placeholder is, and the bytes
    each holds (by digest, once each)."""

    raw: bytes
    places: list[units_pb2.HeldPlace] = field(default_factory=list)
    payloads: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class _Object:
    key: bytes  # the key this object is the value of, as written (b"" at the top or in a list)
    members: list[tuple[bytes, int, int]] = field(default_factory=list)  # (key, start, end) of its long strings
    type: str = ""
    media_type: str = ""
    expecting_key: bool = True
    current: bytes = b""  # the key whose value comes next


def hold_apart(record: bytes) -> Held:
    """The record with every payload it holds replaced by its placeholder (module docstring)."""
    found = find(record)
    if not found:
        return Held(record)
    held = Held(b"")
    parts: list[bytes] = []
    size = previous = 0
    for payload in found:
        data = record[payload.start + 1 : payload.end - 1]
        digest = hashlib.sha256(data).hexdigest()
        marker = placeholder(payload, data, digest)
        parts.append(record[previous : payload.start])
        size += payload.start - previous
        held.places.append(units_pb2.HeldPlace(start=size, end=size + len(marker), sha256=digest))
        parts.append(marker)
        size += len(marker)
        previous = payload.end
        held.payloads.setdefault(digest, data)
    parts.append(record[previous:])
    held.raw = b"".join(parts)
    return held


def placeholder(payload: Payload, data: bytes, digest: str) -> bytes:
    """The object a held payload leaves in its record: what it is, its media type, size and digest."""
    fields: dict[str, object] = {"held_apart": payload.kind}
    if payload.media_type:
        fields["media_type"] = payload.media_type
    fields["bytes"] = len(data)
    fields["sha256"] = digest
    return orjson.dumps(fields)


def find(record: bytes) -> list[Payload]:
    """The payloads of one JSON value's bytes, in byte order.

    The record is valid JSON (a line its parser read, or a value serialized here), so the walk needs only
    its strings and structural characters; scalars and whitespace between them are skipped."""
    if len(record) < MIN_HELD_BYTES or _MAY_HOLD.search(record) is None:
        return []
    found: list[Payload] = []
    stack: list[_Object | None] = [None]  # None: a list, or the top
    for token in _TOKEN.finditer(record):
        top = stack[-1]
        if token.lastindex == 1:
            start, end = token.span()
            if top is None:
                if (url := _data_url(record, start, end)) is not None:
                    found.append(url)
            elif top.expecting_key:
                top.current = record[start + 1 : end - 1]
                top.expecting_key = False
            else:
                key = top.current
                if end - start - 2 >= MIN_HELD_BYTES:
                    top.members.append((key, start, end))
                elif key == b"type":
                    top.type = _text(record, start, end)
                elif key in _MEDIA_TYPE_KEYS:
                    top.media_type = _text(record, start, end)
            continue
        punctuation = record[token.start()]
        if punctuation == _OPEN_OBJECT:
            stack.append(_Object(top.current if top is not None else b""))
        elif punctuation == _OPEN_LIST:
            stack.append(None)
        elif punctuation == _COMMA:
            if top is not None:
                top.expecting_key = True
        elif len(stack) > 1:
            closed = stack.pop()
            if closed is not None:
                found.extend(_members(record, closed))
    found.sort(key=lambda payload: payload.start)
    return found


def _members(record: bytes, obj: _Object) -> list[Payload]:
    """The payloads among an object's string members, now that all of them (its `type` too) are known."""
    media_type = obj.media_type or (obj.type if "/" in obj.type else "")
    media = obj.type != _TEXT_SOURCE and bool(media_type or obj.type == "base64")
    out = []
    for key, start, end in obj.members:
        if media and key in _MEDIA_DATA_KEYS:
            out.append(Payload(start, end, MEDIA, media_type))
        elif key in _OPAQUE_KEYS or (obj.type, key) in _OPAQUE_OF_TYPE or (obj.key, key) in _OPAQUE_UNDER:
            out.append(Payload(start, end, OPAQUE))
        elif (url := _data_url(record, start, end)) is not None:
            out.append(url)
    return out


def _data_url(record: bytes, start: int, end: int) -> Payload | None:
    """The string from `start` to `end` as a payload when it is a base64 data URL of at least MIN_HELD_BYTES."""
    if end - start - 2 < MIN_HELD_BYTES or record[start + 1 : start + 6] != _DATA_URL:
        return None
    header = record[start + 6 : min(end - 1, start + _HEADER_BYTES)].replace(b"\\/", b"/")
    comma = header.find(b",")
    if comma < 0 or not header[:comma].endswith(_BASE64_MARK):
        return None
    media_type = header[:comma].split(b";", 1)[0].decode("utf-8", "replace")
    return Payload(start, end, MEDIA, media_type)


def _text(record: bytes, start: int, end: int) -> str:
    """The value of a short JSON string token (a type, a media type); "" when it does not decode."""
    token = record[start:end]
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "replace")
    try:
        value = orjson.loads(token)
    except orjson.JSONDecodeError:
        return ""
    return value if isinstance(value, str) else ""


def problems(session: units_pb2.Session) -> list[str]:
    """What makes a session's held-apart payloads unable to give back its records (a session pushed by a
    client is checked as one parsed here): a digest that is not of its bytes, a place outside its record
    or out of order, a place whose payload the session does not carry."""
    out = []
    carried = set()
    for payload in session.held_payloads:
        if hashlib.sha256(payload.data).hexdigest() != payload.sha256:
            out.append(f"held payload sha256:{payload.sha256} is not the sha256 of its {len(payload.data)} bytes")
        carried.add(payload.sha256)
    for event in session.log_events:
        previous = 0
        for place in event.held:
            if not previous <= place.start < place.end <= len(event.raw_json):
                out.append(
                    f"event {event.seq}: held place {place.start}..{place.end} is out of order or outside its "
                    f"{len(event.raw_json)}-byte raw record"
                )
            if place.sha256 not in carried:
                out.append(f"event {event.seq}: holds apart payload sha256:{place.sha256}, which the session lacks")
            previous = place.end
    return out
