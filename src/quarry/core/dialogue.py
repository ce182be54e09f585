"""Which text of a session is embedded: the prose of user and assistant messages.

Tool traffic (tool_use / tool_result) and thinking are left out: they are bulk, and the semantic
lane is for what people and models said. One rule for everyone: the lexical partition counts a session's
texts with it while taking the session apart (records.py) and builds them from its stored messages
for the vector node's feed; the benchmark uses it to know how many vectors to expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from quarry.v1 import index_pb2, units_pb2

EMBEDDED_ROLES = frozenset(("user", "assistant"))
EMBEDDED_BLOCK_TYPES = frozenset(("text", "code"))
# A message's first 6,000 characters: about the word pieces of its first MAX_PASSAGES passages
# (quarry.vector.passages), which is all the vector node embeds of it.
MAX_EMBED_CHARS = 6000


def embeds(role: str, surface: str, block_texts: Sequence[str]) -> bool:
    """Whether a message with this role and surface, and these texts of its text and code blocks, has
    text to embed. Cheap (it builds nothing): the partition counts every message of an ingest with it."""
    return role in EMBEDDED_ROLES and surface != "log-only" and any(t and not t.isspace() for t in block_texts)


def embed_text(role: str, surface: str, block_texts: Sequence[str]) -> str:
    """The text embedded for such a message; "" exactly when `embeds` says it has none."""
    if not embeds(role, surface, block_texts):
        return ""
    return "\n".join(t for t in block_texts if t).strip()[:MAX_EMBED_CHARS]


def message_text(message: units_pb2.Message) -> str:
    """The text embedded for one message; "" when it has none."""
    return embed_text(message.role, message.surface, [b.text for b in message.blocks if b.type in EMBEDDED_BLOCK_TYPES])


def message_items(
    session_id: str, session_updated_ms: int, messages: Iterable[units_pb2.Message]
) -> list[index_pb2.EmbedItem]:
    """One item per message with text to embed, in message order."""
    items: list[index_pb2.EmbedItem] = []
    for message in messages:
        text = message_text(message)
        if text:
            items.append(
                index_pb2.EmbedItem(
                    message_id=message.id, session_id=session_id, text=text, session_updated_ms=session_updated_ms
                )
            )
    return items


def dialogue_items(session: units_pb2.Session) -> list[index_pb2.EmbedItem]:
    """The texts of a session the vector node embeds."""
    return message_items(session.id, session.updated_ms, session.messages)
