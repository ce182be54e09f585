"""A message's blocks as the transcript shows them, and the facts of its header (tokens, role).

Every text goes through `clean` (the export's redaction, or nothing on the reader), so what a transcript
holds is exactly what was cleaned.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from quarry.core.vocab import ROLES
from quarry.query.web.transcript.view import Part
from quarry.v1 import units_pb2

Clean = Callable[[str], str]


def keep(text: str) -> str:
    """The reader's `clean`: the text as the archive holds it."""
    return text


def parts_of(message: units_pb2.Message, clean: Clean) -> list[Part]:
    return [part_of(block, clean) for block in message.blocks]


def part_of(block: units_pb2.Block, clean: Clean) -> Part:
    if block.type == "tool_use":
        call = pretty_json(block.tool_input_json)
        return Part("tool_use", clean(block.text), tool=block.tool_name, input=clean(call), call_id=block.tool_use_id)
    if block.type == "tool_result":
        return Part(
            "tool_result", clean(block.text), tool=block.tool_name, error=block.is_error, call_id=block.tool_use_id
        )
    if block.type == "image":
        return Part("image", "", media_type=block.media_type)
    return Part(block.type or "text", clean(block.text))


def pretty_json(text: str) -> str:
    """A tool call's input indented for reading; as recorded when it is not JSON."""
    if not text:
        return ""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def tokens_of(message: units_pb2.Message) -> str:
    """`in 8 · out 20 · cache read 1,024`: the token counts the source recorded (none: "")."""
    counts = (
        ("in", message.input_tokens),
        ("out", message.output_tokens),
        ("cache read", message.cache_read_tokens),
        ("cache write", message.cache_write_tokens),
    )
    return " · ".join(f"{name} {count:,}" for name, count in counts if count)


def role_of_type(event_type: str) -> str:
    """The role an event's native type names (`claude-code:assistant`, `chatgpt:message/user`), else "log"."""
    record = event_type.partition(":")[2]
    for word in record.replace("/", " ").replace("_", " ").split():
        if word in ROLES:
            return word
    return "log"
