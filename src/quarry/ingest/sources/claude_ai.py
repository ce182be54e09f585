"""Claude.ai data exports (`conversations.json`: one JSON array of conversations).

Each conversation is a session `claude-ai-export:<uuid>`, titled by its `name`. Its `chat_messages`
form a tree by `parent_message_uuid` (the root's parent is a nil-like UUID; a message with several
children is an edit or a regeneration). The export names no current message, so the current thread
is the path from the root to the newest leaf (by `created_at`, then array order); its messages come
first, in order, and the messages of every other branch follow in tree order.

Raw log events (docs/sessions.md#events): every message is an event, in array order. Surfaces: the current thread
is `current`; a branch hanging off it was the model's context until an edit or a regeneration
replaced it, so its messages are `shadowed`, replaced by the thread's child at that fork (first
prompts edited are sibling roots).

- roles: `human` is user, `assistant` is assistant.
- content blocks: text, thinking, tool_use and tool_result (both sit in the assistant message:
  Claude.ai's tools run on the server). A tool_use without an id is given `<message uuid>:<index>`;
  a tool_result without a `tool_use_id` is paired with the earliest unpaired call of the same
  message. A result's content items are text, knowledge (title, url, text), local resources (their
  name) and images (referenced, never inlined). `token_budget` blocks are counted in `skipped`.
- a message without content blocks keeps its flattened `text`.
- attachments carry the text the export extracted from an uploaded file: kept as a pasted text
  block of the user's message; `files` (uploads the export does not carry) are referenced by name in
  a text block (`files: a.pdf, b.xlsx`), so a message that only uploaded files is kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from quarry.ingest.sources import (
    BranchedConversation,
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_dict,
    as_list,
    as_str,
    json_text,
    parse_conversations,
    to_ms,
)
from quarry.ingest.sources.tool_calls import describe_tool_input

FORMAT = "claude-ai"
ORIGIN = "claude-ai-export"
ROLES = {"human": "user", "assistant": "assistant"}
NIL_PARENT = "00000000-0000-4000-8000-000000000000"


class ClaudeConversation(BranchedConversation):
    """A Claude.ai conversation: its message tree (parents by uuid) read as branches; Grok's export reads
    its response tree the same way (grok.py)."""

    def __init__(self, data: dict[str, Any], path: str, result: SourceResult) -> None:
        self.data = data
        self.result = result
        self.messages: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        for message in as_list(data.get("chat_messages")):
            uuid = as_str(as_dict(message).get("uuid"))
            if uuid and uuid not in self.messages:
                self.messages[uuid] = message
                self.order.append(uuid)
        self.children: dict[str, list[str]] = {uuid: [] for uuid in self.order}
        for uuid in self.order:
            parent = self._parent(uuid)
            if parent is not None:
                self.children[parent].append(uuid)
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=as_str(data.get("uuid")),
            source_path=path,
            title=as_str(data.get("name")),
            header_title_kind="export",
        )
        self.records: dict[str, DraftRecord] = {}
        self.draft.observe_time(to_ms(data.get("created_at")))
        self.draft.observe_time(to_ms(data.get("updated_at")))

    def _parent(self, uuid: str) -> str | None:
        parent = as_str(self.messages[uuid].get("parent_message_uuid"))
        return parent if parent and parent != NIL_PARENT and parent in self.messages and parent != uuid else None

    def _created(self, uuid: str) -> int:
        return to_ms(self.messages[uuid].get("created_at"))

    def _current_thread(self) -> list[str]:
        """Root to the newest leaf (the last of the array among equally new ones)."""
        leaves = [uuid for uuid in self.order if not self.children[uuid]]
        if not leaves:
            return []
        position = {uuid: n for n, uuid in enumerate(self.order)}
        node: str | None = max(leaves, key=lambda uuid: (self._created(uuid), position[uuid]))
        thread: list[str] = []
        seen: set[str] = set()
        while node is not None and node not in seen:
            seen.add(node)
            thread.append(node)
            node = self._parent(node)
        thread.reverse()
        return thread

    def _tree_order(self) -> Iterator[str]:
        """Every message once: depth-first from the roots in array order, then any a cycle left out."""
        seen: set[str] = set()
        roots = [uuid for uuid in self.order if self._parent(uuid) is None]
        for root in roots:
            stack = [root]
            while stack:
                uuid = stack.pop()
                if uuid in seen:
                    continue
                seen.add(uuid)
                yield uuid
                stack.extend(reversed(self.children[uuid]))
        yield from (uuid for uuid in self.order if uuid not in seen)

    def _subtree(self, top: str) -> list[str]:
        found, stack, seen = [], [top], set()
        while stack:
            uuid = stack.pop()
            if uuid not in seen:
                seen.add(uuid)
                found.append(uuid)
                stack.extend(self.children[uuid])
        return found

    def _records(self, thread: list[str]) -> None:
        """One event per message, in array order; the thread's child at a fork replaces the branches
        hanging off its parent (module docstring)."""
        for uuid in self.order:
            message = self.messages[uuid]
            record = DraftRecord(0, f"{FORMAT}:message/{_role(message)}", message, time_ms=self._created(uuid))
            record.keys.append(f"message:{uuid}")
            record.node = True
            parent = self._parent(uuid)
            if parent is not None:
                record.source_keys.append(f"message:{parent}")
            self.records[uuid] = record
            self.draft.records.append(record)
        roots = [uuid for uuid in self.order if self._parent(uuid) is None]
        forks = [(roots, thread[0])] if thread else []  # an edited first prompt: the roots are siblings
        forks += [(self.children[parent], child) for parent, child in itertools.pairwise(thread)]
        for siblings, child in forks:
            replaced = [
                f"message:{uuid}" for sibling in siblings if sibling != child for uuid in self._subtree(sibling)
            ]
            self.records[child].replaces_keys.extend(replaced)

    def _add(self, uuid: str) -> None:
        message = self.messages[uuid]
        role = _role(message)
        blocks = self._blocks(uuid, message)
        if not blocks:
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
            return
        self.draft.current = self.records.get(uuid)
        pasted = role == "user" and any(
            as_str(as_dict(a).get("extracted_content")) for a in as_list(message.get("attachments"))
        )
        draft_message = DraftMessage(role=role, authored=True, time_ms=self._created(uuid), paste=pasted)
        self.draft.add_message(draft_message)
        for block in blocks:
            self.draft.add_block(draft_message, block)

    def _blocks(self, uuid: str, message: dict[str, Any]) -> list[DraftBlock]:
        blocks: list[DraftBlock] = []
        unpaired: list[str] = []  # this message's calls not yet answered, in order
        for index, item in enumerate(as_list(message.get("content"))):
            item = as_dict(item)
            kind = as_str(item.get("type"))
            if kind == "text":
                if as_str(item.get("text")):
                    blocks.append(DraftBlock("text", text=item["text"]))
                else:
                    self.result.skipped[f"{FORMAT}:empty-text"] += 1
            elif kind == "thinking" and as_str(item.get("thinking")):
                blocks.append(DraftBlock("thinking", text=item["thinking"]))
            elif kind == "tool_use":
                call = _tool_call(item, f"{uuid}:{index}")
                unpaired.append(call.tool_use_id)
                blocks.append(call)
            elif kind == "tool_result":
                caller = as_str(item.get("tool_use_id")) or (unpaired[0] if unpaired else "")
                if caller in unpaired:
                    unpaired.remove(caller)
                blocks.extend(self._tool_result(item, caller))
            elif as_str(item.get("text")):  # a block type not seen yet, with text
                blocks.append(DraftBlock("text", text=item["text"]))
            else:
                self.result.skipped[f"{FORMAT}:content/{kind or '(untyped)'}"] += 1
        if not blocks and as_str(message.get("text")):
            blocks.append(DraftBlock("text", text=message["text"]))
        for attachment in as_list(message.get("attachments")):
            attachment = as_dict(attachment)
            text = as_str(attachment.get("extracted_content"))
            if text:
                name = as_str(attachment.get("file_name"))
                blocks.append(DraftBlock("text", text=f"{name}:\n{text}" if name else text))
        names = [as_str(as_dict(f).get("file_name")) for f in as_list(message.get("files"))]
        if any(names):  # uploads the export does not carry: referenced by name
            blocks.append(DraftBlock("text", text="files: " + ", ".join(name for name in names if name)))
        return blocks

    def _tool_result(self, item: dict[str, Any], caller: str) -> list[DraftBlock]:
        texts: list[str] = []
        images: list[DraftBlock] = []
        content = item.get("content")
        for part in as_list(content) if isinstance(content, list) else [content]:
            if isinstance(part, str):
                texts.append(part)
                continue
            part = as_dict(part)
            kind = as_str(part.get("type"))
            if kind == "image":
                images.append(DraftBlock("image", media_type=as_str(as_dict(part.get("source")).get("media_type"))))
            elif kind == "knowledge":
                texts.append(
                    "\n".join(
                        x for x in (as_str(part.get("title")), as_str(part.get("url")), as_str(part.get("text"))) if x
                    )
                )
            elif kind == "local_resource":
                texts.append(as_str(part.get("name")) or as_str(part.get("file_path")) or as_str(part.get("uri")))
            elif as_str(part.get("text")):
                texts.append(part["text"])
        result = DraftBlock(
            "tool_result",
            text="\n\n".join(text for text in texts if text),
            tool_name=as_str(item.get("name")),
            tool_use_id=caller,
            is_error=item.get("is_error") is True,
        )
        return [result, *images]


def _role(message: dict[str, Any]) -> str:
    return ROLES.get(as_str(message.get("sender")), "user")


def _tool_call(item: dict[str, Any], fallback_id: str) -> DraftBlock:
    tool_input = item.get("input") if isinstance(item.get("input"), dict) else {}
    call = describe_tool_input(tool_input)
    name = as_str(item.get("name"))
    return DraftBlock(
        "tool_use",
        text=call.command or call.summary or as_str(item.get("message")) or name,
        tool_name=name,
        tool_use_id=as_str(item.get("id")) or fallback_id,
        tool_input_json=json_text(tool_input),
        path=call.path,
        command=call.command,
    )


def parse(document: Any, path: str) -> SourceResult:
    return parse_conversations(
        document, path, FORMAT, "uuid", lambda data, result: ClaudeConversation(data, path, result).build()
    )
