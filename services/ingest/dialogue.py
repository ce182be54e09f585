"""Which text of a session is embedded: the prose of user and assistant messages.

Tool traffic (tool_use / tool_result) and thinking are left out: they are bulk, and the semantic
lane is for what people and models said.
"""

from __future__ import annotations

from quarry.v1 import units_pb2, vector_pb2

EMBEDDED_ROLES = ("user", "assistant")
MAX_EMBED_CHARS = 2000  # the model reads 256 word pieces; longer text only costs transfer


def dialogue_items(session: units_pb2.Session) -> list[vector_pb2.EmbedItem]:
    items: list[vector_pb2.EmbedItem] = []
    for message in session.messages:
        if message.role not in EMBEDDED_ROLES or message.surface == "log-only":
            continue
        text = "\n".join(b.text for b in message.blocks if b.type in ("text", "code") and b.text).strip()
        if text:
            items.append(
                vector_pb2.EmbedItem(message_id=message.id, session_id=session.id, text=text[:MAX_EMBED_CHARS])
            )
    return items
