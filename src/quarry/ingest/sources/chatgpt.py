"""ChatGPT data exports (`conversations.json`: one JSON array of conversations).

Each conversation is a session `chatgpt-export:<conversation_id>`. Its `mapping` is a tree (a node
with several children is an edit or a regeneration); the current thread is found by walking up
from `current_node`. Its messages come first, in order; the messages of every other branch follow
in tree order.

Raw log events (docs/sessions.md#events): every node with a message is an event. Seq is a topological order of the
tree (a parent before its children), nodes ready at once ordered by create_time (a node without one
takes its parent's), then by node id: adding nodes never renumbers, and a regenerated or edited
sibling comes after what it replaced (create_time alone is not usable: a reply can be older than its
prompt). Surfaces: the thread from the root to `current_node` is `current`; a branch hanging off that
thread was the model's context until an edit or a regeneration replaced it, so its nodes are
`shadowed`, replaced by the thread's child at that fork; what lies below `current_node` never was on
the surface (`log-only`). A tool message cites its calling assistant node.

- roles: user, assistant, system, tool (any other author role is read as system).
- an assistant message addressed to a tool (`recipient` python, bio, canmore.*, …) is a tool_use
  (its tool_use_id is the node id); a tool message is a tool_result paired with the nearest
  calling ancestor of the same tool. `system_error` content and a failed `aggregate_result` mark
  the result as an error.
- content types: text, multimodal_text (strings, image pointers, audio transcriptions), code,
  execution_output, system_error, user_editable_context (the user's custom instructions: a
  non-authored user message), tether_browsing_display, tether_quote, thoughts (thinking); any other
  type with text is kept as text, the rest is counted in `skipped`.
- messages without any content (the hidden empty system rows, blank assistant placeholders) are
  counted as `chatgpt:empty-message`, not stored.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any

import orjson

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
from quarry.ingest.sources.tool_calls import action_category, describe_tool_input

FORMAT = "chatgpt"
ORIGIN = "chatgpt-export"
ROLES = frozenset({"user", "assistant", "system", "tool"})
PAIRING_DEPTH = 16
FAILED_STATUSES = frozenset({"failed", "error", "cancelled"})


class _Conversation(BranchedConversation):
    def __init__(self, data: dict[str, Any], path: str, result: SourceResult) -> None:
        self.data = data
        self.mapping: dict[str, Any] = data["mapping"] if isinstance(data.get("mapping"), dict) else {}
        self.result = result
        native_id = as_str(data.get("conversation_id")) or as_str(data.get("id"))
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=native_id,
            source_path=path,
            title=as_str(data.get("title")),
            header_title_kind="export",
        )
        self.paired_calls: set[str] = set()
        self.records: dict[str, DraftRecord] = {}
        self.draft.observe_time(to_ms(data.get("create_time")))
        self.draft.observe_time(to_ms(data.get("update_time")))

    def _records(self, thread: list[str]) -> None:
        """One event per node with a message, in seq order, with its surface role (module docstring)."""
        on_thread = set(thread)
        below_current: set[str] = set()
        if thread:
            below_current = set(self._subtree(thread[-1])) - {thread[-1]}
        for node_id, time_ms in self._topological():
            node = as_dict(self.mapping[node_id])
            if not isinstance(node.get("message"), dict):
                continue
            record = DraftRecord(0, f"{FORMAT}:message/{_role(node['message'])}", node, time_ms=time_ms)
            record.keys.append(f"node:{node_id}")
            record.node = node_id not in below_current
            self.records[node_id] = record
            self.draft.records.append(record)
        for parent, child in itertools.pairwise(thread):
            siblings = as_list(as_dict(self.mapping[parent]).get("children"))
            replaced = [
                f"node:{node_id}"
                for sibling in siblings
                if isinstance(sibling, str) and sibling != child and sibling not in on_thread
                for node_id in self._subtree(sibling)
            ]
            if replaced and child in self.records:
                self.records[child].replaces_keys.extend(replaced)

    def _topological(self) -> Iterator[tuple[str, int]]:
        """(node id, create_time or the parent's) parents first, ready nodes by time then id."""
        ready = [(self._created(root), root) for root in self._roots()]
        heapq.heapify(ready)
        seen: set[str] = set()
        while ready:
            time_ms, node_id = heapq.heappop(ready)
            if node_id in seen:
                continue
            seen.add(node_id)
            yield node_id, time_ms
            for child in as_list(as_dict(self.mapping[node_id]).get("children")):
                if isinstance(child, str) and child in self.mapping and child not in seen:
                    heapq.heappush(ready, (self._created(child) or time_ms, child))
        for node_id in self.mapping:  # a cycle leaves nodes unreachable from any root
            if node_id not in seen:
                seen.add(node_id)
                yield node_id, 0

    def _created(self, node_id: str) -> int:
        return to_ms(as_dict(as_dict(self.mapping[node_id]).get("message")).get("create_time"))

    def _subtree(self, top: str) -> list[str]:
        found: list[str] = []
        stack = [top]
        seen: set[str] = set()
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.mapping:
                continue
            seen.add(node_id)
            found.append(node_id)
            stack.extend(c for c in as_list(as_dict(self.mapping[node_id]).get("children")) if isinstance(c, str))
        return found

    def _current_thread(self) -> list[str]:
        thread: list[str] = []
        seen: set[str] = set()
        node_id = self.data.get("current_node")
        if not isinstance(node_id, str) or node_id not in self.mapping:
            node_id = self._last_leaf()
        while isinstance(node_id, str) and node_id in self.mapping and node_id not in seen:
            seen.add(node_id)
            thread.append(node_id)
            node_id = as_dict(self.mapping[node_id]).get("parent")
        thread.reverse()
        return thread

    def _last_leaf(self) -> str | None:
        """Without a usable current_node: follow the newest (last) child from the first root."""
        node_id = next(self._roots(), None)
        seen: set[str] = set()
        while node_id is not None and node_id not in seen:
            seen.add(node_id)
            children = [
                child for child in as_list(as_dict(self.mapping.get(node_id)).get("children")) if child in self.mapping
            ]
            if not children:
                return node_id
            node_id = children[-1]
        return node_id

    def _roots(self) -> Iterator[str]:
        for node_id, node in self.mapping.items():
            parent = as_dict(node).get("parent")
            if not isinstance(parent, str) or parent not in self.mapping:
                yield node_id

    def _tree_order(self) -> Iterator[str]:
        """Every node once: depth-first from the roots in listed child order, then anything a
        broken tree left unreachable, in mapping order."""
        seen: set[str] = set()
        for root in self._roots():
            stack = [root]
            while stack:
                node_id = stack.pop()
                if node_id in seen or node_id not in self.mapping:
                    continue
                seen.add(node_id)
                yield node_id
                children = as_list(as_dict(self.mapping[node_id]).get("children"))
                stack.extend(child for child in reversed(children) if isinstance(child, str))
        for node_id in self.mapping:
            if node_id not in seen:
                yield node_id

    def _add(self, node_id: str) -> None:
        message = as_dict(self.mapping.get(node_id)).get("message")
        if not isinstance(message, dict):
            return  # the root and other placeholders carry no message
        self.draft.current = self.records.get(node_id)
        author = as_dict(message.get("author"))
        role = as_str(author.get("role"))
        role = role if role in ROLES else "system"
        content = as_dict(message.get("content"))
        metadata = as_dict(message.get("metadata"))
        blocks = self._content_blocks(content)
        recipient = as_str(message.get("recipient")) or "all"
        if role == "assistant" and recipient != "all" and blocks:
            blocks = [_tool_call(node_id, recipient, content, blocks)]
        elif role == "tool" and blocks:
            blocks = self._tool_result(node_id, as_str(author.get("name")), content, metadata, blocks)
        if not blocks:
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
            return
        hidden = metadata.get("is_visually_hidden_from_conversation") is True
        authored = role == "assistant" or (
            role == "user"
            and not hidden
            and content.get("content_type") != "user_editable_context"
            and metadata.get("is_user_system_message") is not True
        )
        draft_message = DraftMessage(
            role=role,
            authored=authored,
            time_ms=to_ms(message.get("create_time")),
            model=as_str(metadata.get("model_slug")) if role == "assistant" else "",
        )
        self.draft.add_message(draft_message)
        for block in blocks:
            self.draft.add_block(draft_message, block)

    def _content_blocks(self, content: dict[str, Any]) -> list[DraftBlock]:
        kind = as_str(content.get("content_type"))
        if kind in ("text", "multimodal_text"):
            return self._parts(as_list(content.get("parts")))
        if kind == "code":
            text = as_str(content.get("text"))
            language = as_str(content.get("language"))
            return [DraftBlock("code", text=text, language="" if language == "unknown" else language)] if text else []
        if kind == "system_error":
            text = ": ".join(part for part in (as_str(content.get("name")), as_str(content.get("text"))) if part)
            return [DraftBlock("text", text=text)] if text else []
        if kind == "user_editable_context":
            text = "\n\n".join(
                part for part in (as_str(content.get("user_profile")), as_str(content.get("user_instructions"))) if part
            )
            return [DraftBlock("text", text=text)] if text else []
        if kind == "tether_browsing_display":
            text = as_str(content.get("result")) or as_str(content.get("summary"))
            return [DraftBlock("text", text=text)] if text else []
        if kind == "thoughts":
            blocks = []
            for thought in as_list(content.get("thoughts")):
                thought = as_dict(thought)
                text = "\n".join(
                    part for part in (as_str(thought.get("summary")), as_str(thought.get("content"))) if part
                )
                blocks.append(DraftBlock("thinking", text=text))
            return blocks
        text = as_str(content.get("text"))  # execution_output, tether_quote and unknown types with text
        if not text and isinstance(content.get("parts"), list):
            return self._parts(content["parts"])
        if text:
            return [DraftBlock("text", text=text)]
        self.result.skipped[f"{FORMAT}:content/{kind or '(untyped)'}"] += 1
        return []

    def _parts(self, parts: list[Any]) -> list[DraftBlock]:
        blocks: list[DraftBlock] = []
        texts: list[str] = []
        for part in parts:
            if isinstance(part, str):
                if part:
                    texts.append(part)
                continue
            part = as_dict(part)
            kind = as_str(part.get("content_type"))
            if kind == "audio_transcription" and as_str(part.get("text")):
                texts.append(part["text"])
                continue
            if texts:
                blocks.append(DraftBlock("text", text="\n".join(texts)))
                texts = []
            if kind == "image_asset_pointer":
                blocks.append(DraftBlock("image", media_type=as_str(part.get("mime_type"))))
            else:
                self.result.skipped[f"{FORMAT}:part/{kind or '(untyped)'}"] += 1
        if texts:
            blocks.append(DraftBlock("text", text="\n".join(texts)))
        return blocks

    def _tool_result(
        self, node_id: str, tool_name: str, content: dict[str, Any], metadata: dict[str, Any], blocks: list[DraftBlock]
    ) -> list[DraftBlock]:
        status = as_str(as_dict(metadata.get("aggregate_result")).get("status"))
        failed = content.get("content_type") == "system_error" or status in FAILED_STATUSES
        text = "\n\n".join(block.text for block in blocks if block.text)
        caller = self._calling_ancestor(node_id, tool_name)
        if caller and self.draft.current is not None:
            self.draft.current.source_keys.append(f"node:{caller}")
        result = DraftBlock("tool_result", text=text, tool_name=tool_name, tool_use_id=caller, is_error=failed)
        return [result, *(block for block in blocks if block.type == "image")]

    def _calling_ancestor(self, node_id: str, tool_name: str) -> str:
        """The nearest unpaired assistant call above this tool message, preferring the same tool."""
        fallback = ""
        parent = as_dict(self.mapping.get(node_id)).get("parent")
        for _ in range(PAIRING_DEPTH):
            if not isinstance(parent, str) or parent not in self.mapping:
                break
            message = as_dict(as_dict(self.mapping[parent]).get("message"))
            role = as_str(as_dict(message.get("author")).get("role"))
            if role == "user":
                break
            recipient = as_str(message.get("recipient")) or "all"
            if role == "assistant" and recipient != "all" and parent not in self.paired_calls:
                if recipient == tool_name or not tool_name:
                    self.paired_calls.add(parent)
                    return parent
                fallback = fallback or parent
            parent = as_dict(self.mapping[parent]).get("parent")
        if fallback:
            self.paired_calls.add(fallback)
        return fallback


def _role(message: dict[str, Any]) -> str:
    role = as_str(as_dict(message.get("author")).get("role"))
    return role if role in ROLES else "system"


def _tool_call(node_id: str, recipient: str, content: dict[str, Any], blocks: list[DraftBlock]) -> DraftBlock:
    text = "\n".join(block.text for block in blocks if block.text)
    if content.get("content_type") == "code":
        tool_input: Any = {"code": text}
    else:
        try:
            tool_input = orjson.loads(text)
        except orjson.JSONDecodeError:
            tool_input = {"text": text}
    call = describe_tool_input(tool_input)
    command = call.command or (text if action_category(recipient) == "shell" else "")
    return DraftBlock(
        "tool_use",
        text=command or call.summary or text[:300],
        tool_name=recipient,
        tool_use_id=node_id,
        tool_input_json=json_text(tool_input),
        path=call.path,
        command=command,
    )


def parse(document: Any, path: str) -> SourceResult:
    return parse_conversations(
        document, path, FORMAT, "conversation_id", lambda data, result: _Conversation(data, path, result).build()
    )
