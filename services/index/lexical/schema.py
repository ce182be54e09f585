"""The Tantivy schema of a lexical shard: one document per message that has searchable text.

Fields
- `text`: the dialogue text (text / code / thinking blocks joined), stored for snippets, folded.
- `actions`: the action text (tool names, tool_use summaries, commands, paths, tool_result output;
  never the bodies of Write/Edit inputs), stored, folded. The `actions` lane searches it.
- `session_id`: raw, indexed: deletes a session's documents by term; allow-lists by term set.
- `message_id`: raw, stored: read only for the top hits.
- `role`, `origin`, `repo`, `tag`: raw, lowercased, indexed: const-score filters.
- `sess`: the session's ordinal in the SQLite store (i64, fast + indexed). Collapsing hits to sessions
  reads it as a fast field, never the doc store; SQL-evaluated session sets filter on it by term set.
- `msg`: the message's ordinal in the SQLite store (i64, fast): message-level matches map to rows.
- `time`: the message time in epoch ms (i64, fast).

Integer fields are signed on purpose: unsigned fast fields panic the indexing thread when given
Python ints through `Document(...)` (see the library notes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
import tantivy

from quarry.core.vocab import DIALOGUE_BLOCK_TYPES
from quarry.index.lexical import analyzer
from quarry.v1 import units_pb2

TEXT = "text"
ACTIONS = "actions"
SESSION_ID = "session_id"
MESSAGE_ID = "message_id"
ROLE = "role"
ORIGIN = "origin"
REPO = "repo"
TAG = "tag"
SESSION_ORD = "sess"
MESSAGE_ORD = "msg"
TIME = "time"

LANE_FIELDS = {"dialogue": TEXT, "actions": ACTIONS}


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(TEXT, stored=True, tokenizer_name=analyzer.ANALYZER_NAME, index_option="position")
    sb.add_text_field(ACTIONS, stored=True, tokenizer_name=analyzer.ANALYZER_NAME, index_option="position")
    sb.add_text_field(SESSION_ID, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(MESSAGE_ID, stored=True, tokenizer_name="raw", index_option="basic")
    for name in (ROLE, ORIGIN, REPO, TAG):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field(SESSION_ORD, indexed=True, fast=True)
    sb.add_integer_field(MESSAGE_ORD, fast=True)
    sb.add_integer_field(TIME, fast=True)
    return sb.build()


def open_index(directory: Path) -> tantivy.Index:
    """Create or reopen the index, re-register the folding analyzer, and take manual reloads."""
    directory.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(build_schema(), path=str(directory), reuse=True)
    analyzer.register(index)
    index.config_reader(reload_policy="manual")
    return index


def dialogue_text(message: units_pb2.Message) -> str:
    return "\n".join(b.text for b in message.blocks if b.type in DIALOGUE_BLOCK_TYPES and b.text)


def action_text(message: units_pb2.Message, commands: dict[str, str]) -> str:
    """Tool traffic of a message: what a user remembers of an action, not the file bodies it wrote.

    `commands` maps a tool_use block id to its normalized action's command, which some agents
    keep only inside the input JSON.
    """
    parts: list[str] = []
    for block in message.blocks:
        if block.type == "tool_use":
            parts.extend((block.tool_name, block.text, block.path))
            command = commands.get(block.id, "")
            if command and command not in block.text:
                parts.append(command)
        elif block.type == "tool_result":
            parts.append(block.text)
    return "\n".join(p for p in parts if p)


def message_texts(session: units_pb2.Session) -> list[tuple[str, str]]:
    """(dialogue, action) text of every message of the session, in message order."""
    commands = {a.block_id: a.command for a in session.actions if a.block_id and a.command}
    return [(dialogue_text(m), action_text(m, commands)) for m in session.messages]


def documents(
    session: units_pb2.Session,
    session_ord: int,
    message_ords: Sequence[int],
    texts: Sequence[tuple[str, str]],
) -> Iterator[str]:
    """The documents of one session, as JSON for `IndexWriter.add_json` (typed by the schema, and a
    third cheaper than building `Document` objects): one per message with dialogue or action text."""
    common = {
        SESSION_ID: session.id,
        ORIGIN: session.origin.lower(),
        REPO: session.repo.lower(),
        TAG: [t.lower() for t in session.tags],
        SESSION_ORD: session_ord,
    }
    for message, message_ord, (dialogue, actions) in zip(session.messages, message_ords, texts, strict=True):
        if not dialogue and not actions:
            continue
        yield orjson.dumps(
            {
                **common,
                TEXT: dialogue,
                ACTIONS: actions,
                MESSAGE_ID: message.id,
                ROLE: message.role.lower(),
                MESSAGE_ORD: message_ord,
                TIME: message.time_ms,
            }
        ).decode()


def document_count(texts: Sequence[tuple[str, str]]) -> int:
    return sum(1 for dialogue, actions in texts if dialogue or actions)
