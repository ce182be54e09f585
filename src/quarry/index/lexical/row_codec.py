"""How a partition store's rows hold messages, units and actions compactly, and how they are read back.

A message or derived-unit row stores its proto as `body`, without the two ids (the unit's own and its
session's) that the row's `id` column gives back (`pack_proto`); the `proto` column, generated on read
by the SQL function `quarry_unpack` (`unpack_proto`) every connection of the store registers, is the
serialized proto byte for byte. A connection opened elsewhere reads every other column, but `proto`
needs `quarry_unpack` registered. Likewise an action's `id` and `block_id` are generated (plain SQL)
from its message id (`pack_action`), and `action_from_row` builds the Action back from its columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from quarry.v1 import units_pb2

_PACKED = b"\x00"  # the first byte of a packed body (pack_proto)
_BYTES = tuple(bytes((n,)) for n in range(0x80))
_ID_TAG, _SESSION_TAG = b"\x0a", b"\x12"  # wire tags (field << 3 | type 2) of Message.id and .session_id
# The Action field each of store_schema.ACTION_COLUMNS gives ("": session_ord, which the caller's session
# id replaces); a NULL (exit_code: not recorded) leaves its field unset.
_ACTION_FIELDS = (
    "id",
    "",
    "message_id",
    "block_id",
    "seq",
    "category",
    "tool",
    "command",
    "path",
    "output",
    "failed",
    "input_json",
    "time_ms",
    "exit_code",
    "followup",
)


def action_from_row(row: Sequence[object], session_id: str) -> units_pb2.Action:
    """An Action from the `ACTION_COLUMNS` of a row (session_ord replaced by the session id)."""
    columns = zip(_ACTION_FIELDS, row, strict=True)
    fields: dict[str, Any] = {name: value for name, value in columns if name and value is not None}
    fields["failed"] = bool(fields["failed"])
    return units_pb2.Action(session_id=session_id, **fields)


def pack_proto(proto: bytes, unit_id: str) -> bytes:
    """A row's `body`: its serialized message or unit (`proto`) without the ids its row's `id` gives back.

    Messages and the derived units begin with `id` (field 1) and `session_id` (field 2), and every id
    begins with its session's long id: the two repeated it twice, a fifth of a message's bytes and
    two fifths of an observed event's. Protobuf writes fields in number order, so the two lead the
    bytes. When they are the row's id and a prefix of it, the body is a zero byte (no serialized proto
    starts with one: field number 0 is invalid), the session id's length in bytes (a varint) and the
    bytes after the two fields; otherwise `proto` itself. A body is kept only when `unpack_proto`
    gives back exactly `proto`. The `proto` column (SQL function `quarry_unpack`) gives them back to
    every read: slicing bytes costs about a µs each way. Block ids (`<message id>:<index>`) repeat
    the id too, but taking them out means walking every field of the message.
    """
    mid = unit_id.encode()
    lead = _ID_TAG + _encode_varint(len(mid)) + mid
    if not mid or not proto.startswith(lead):
        return proto
    pos = len(lead)
    session_bytes = 0
    if proto[pos : pos + 1] == _SESSION_TAG:
        try:
            session_bytes, pos = _varint(proto, pos + 1)
        except IndexError:
            return proto
        pos += session_bytes
    body = _PACKED + _encode_varint(session_bytes) + proto[pos:]
    return body if unpack_proto(body, unit_id) == proto else proto


def pack_action(row: Sequence[Any]) -> tuple[object, ...]:
    """The `INSERT_ACTION` values of an action row (`ACTION_COLUMNS` + path_norm, session_rows.py).

    An action's id (`<session id>:action:<seq>`) and block id (`<message id>:<index>`) repeat its
    message id, which the row holds: the generated columns `id` and `block_id` give them back from
    message_id, seq, the id's prefix length and the block index; `own_id` / `own_block_id` hold an id
    only when it does not have that form."""
    action_id, session_ord, message_id, block_id, seq, *rest = row
    suffix = f":action:{seq}"
    prefix = len(action_id) - len(suffix)
    derived = prefix >= 0 and action_id.endswith(suffix) and message_id[:prefix] == action_id[:prefix]
    head, colon, index = block_id.rpartition(":")
    indexed = bool(colon) and head == message_id and index.isascii() and index.isdigit() and str(int(index)) == index
    return (
        session_ord,
        message_id,
        seq,
        *rest,
        None if derived else action_id,
        prefix if derived else None,
        None if indexed else block_id,
        int(index) if indexed else None,
    )


def unpack_proto(body: bytes | None, unit_id: str | None) -> bytes | None:
    """The serialized proto of a `body` (pack_proto) and its row's id: SQL function `quarry_unpack`."""
    if body is None or body[:1] != _PACKED:
        return body
    mid = unit_id.encode()  # type: ignore[union-attr]
    session_bytes, pos = _varint(body, 1)
    lead = _ID_TAG + _encode_varint(len(mid)) + mid
    if session_bytes:
        lead += _SESSION_TAG + _encode_varint(session_bytes) + mid[:session_bytes]
    return lead + body[pos:]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    if value < 0x80:  # ids are mostly shorter than 128 bytes
        return _BYTES[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
