"""Grok data exports (`prod-grok-backend.json`, in the ZIP xAI's "Download your data" sends, under
`ttl/30d/export_data/<user id>/`): one JSON object whose `conversations` hold `{conversation, responses}`.

Learnt from Polylogue (Sinity/polylogue at d250e578bf7353519f667a96fafd7ea7d43f8e0b:
polylogue/sources/parsers/grok.py and tests/unit/sources/parsers/test_grok.py: the wrapper, the nested
`{"response": {...}}` entries and their flat variant, `sender` "human", MongoDB extended-JSON times) and from
the exports' documented fields (codeface-io/mac-stack grok/export_conversations/README.md: the conversation's
`id`, `modify_time`, a response's `model`; field inventories of real exports: `_id`, `parent_response_id`,
`thinking_trace`, `agent_thinking_traces`, `generated_image_urls`, `file_attachments`, `error`).

Each conversation is a session `grok-export:<conversation.id>`, titled by its `title`, its times from
`create_time` and `modify_time` (ISO 8601) and each response's `create_time` (`{"$date": {"$numberLong":
"<ms>"}}`, or a plain stamp). Responses form a tree by `parent_response_id` (a regeneration or an edit
forks it); the export names no current response, so the current thread is the path from the root to the
newest leaf (by time, then array order): its messages come first, every other branch's follow, shadowed
(as Claude.ai's export, `claude_ai`).

- roles: `sender` "human" (any case) is the user; anything else is Grok (exports hold "assistant",
  "ASSISTANT" and a model name such as "grok-3", which is then the reply's model when `model` is empty).
- a reply's blocks: `thinking_trace` and each of `agent_thinking_traces` (thinking), the `message` (text),
  `generated_image_urls` (images, referenced). A user's `file_attachments` and `image_attachments` (asset
  ids; the files are beside the export in `prod-mc-asset-server/`) are referenced by id in a text block,
  so a message that only uploaded a file is kept.
- `error` ("Failed to respond.") is an API error event of that reply.
- not read: web search results, cited results, X posts and cards (kept in the raw event), the export's
  `projects`, `tasks` and `media_posts` (counted), a response without text or attachments (counted).
"""

from __future__ import annotations

from typing import Any

from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_dict,
    as_list,
    as_str,
    claude_ai,
    parse_conversations,
    to_ms,
)

FORMAT = "grok"
ORIGIN = "grok-export"
OTHER_SECTIONS = ("projects", "tasks", "media_posts")


def recognize(document: Any) -> str:
    """A Grok export: an object whose `conversations` hold `{conversation: {...}, responses: [...]}`."""
    conversations = as_list(as_dict(document).get("conversations"))
    first = next((item for item in conversations if isinstance(item, dict)), None)
    if first is not None and isinstance(first.get("conversation"), dict) and isinstance(first.get("responses"), list):
        return FORMAT
    return ""


def grok_time(value: Any) -> int:
    """Epoch ms of an ISO stamp, an epoch number or MongoDB's `{"$date": {"$numberLong": "<ms>"}}` (or
    `{"$date": <stamp>}`); 0 when unreadable."""
    date = as_dict(value).get("$date") if isinstance(value, dict) else value
    if isinstance(date, dict):
        number = as_str(date.get("$numberLong"))
        return to_ms(int(number)) if number.isdigit() else 0
    return to_ms(date)


def _fields(entry: Any) -> dict[str, Any]:
    """A response's fields: nested under `response` as xAI writes it, or flat."""
    entry = as_dict(entry)
    return as_dict(entry["response"]) if isinstance(entry.get("response"), dict) else entry


def _role(fields: dict[str, Any]) -> str:
    return "user" if as_str(fields.get("sender")).lower() == "human" else "assistant"


class _Conversation(claude_ai.ClaudeConversation):
    """A conversation's response tree, read as Claude.ai's message tree is (current thread, shadowed
    branches, one raw event per response); only the fields differ."""

    def __init__(self, data: dict[str, Any], path: str, result: SourceResult) -> None:
        self.result = result
        conversation = as_dict(data.get("conversation"))
        self.messages: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, Any] = {}
        for index, entry in enumerate(as_list(data.get("responses"))):
            key = as_str(_fields(entry).get("_id")) or f"#{index}"
            if key not in self.messages:
                self.messages[key] = _fields(entry)
                self.raw[key] = entry
        self.order = list(self.messages)
        self.children: dict[str, list[str]] = {key: [] for key in self.order}
        for key in self.order:
            if (parent := self._parent(key)) is not None:
                self.children[parent].append(key)
        native_id, title = as_str(conversation.get("id")), as_str(conversation.get("title"))
        self.draft = DraftSession(ORIGIN, native_id, path, title, header_title_kind="export")
        self.records: dict[str, DraftRecord] = {}
        for stamp in (conversation.get("create_time"), conversation.get("modify_time")):
            self.draft.observe_time(grok_time(stamp))

    def _parent(self, key: str) -> str | None:
        parent = as_str(self.messages[key].get("parent_response_id"))
        return parent if parent in self.messages and parent != key else None

    def _created(self, key: str) -> int:
        return grok_time(self.messages[key].get("create_time"))

    def _records(self, thread: list[str]) -> None:
        super()._records(thread)
        for key, record in self.records.items():
            record.type = f"{FORMAT}:response/{_role(self.messages[key])}"
            record.raw = self.raw[key]

    def _add(self, key: str) -> None:
        fields = self.messages[key]
        role = _role(fields)
        blocks = _blocks(fields, role)
        self.draft.current = self.records[key]
        time_ms = self._created(key)
        self.draft.observe_time(time_ms)
        error = as_str(fields.get("error"))
        if not blocks and not error:
            self.result.skipped[f"{FORMAT}:empty-response"] += 1
            return
        sender = as_str(fields.get("sender"))
        model = as_str(fields.get("model")) or (sender if sender.lower() not in ("human", "assistant") else "")
        message = DraftMessage(role=role, authored=True, time_ms=time_ms, model=model if role == "assistant" else "")
        if blocks:
            self.draft.add_message(message)
            for block in blocks:
                self.draft.add_block(message, block)
        if error:
            self.draft.record("api_error", time_ms, error, failed=True, message_seq=message.seq)


def _blocks(fields: dict[str, Any], role: str) -> list[DraftBlock]:
    blocks: list[DraftBlock] = []
    if role == "assistant":
        traces = [fields.get("thinking_trace")]
        traces += [as_dict(trace).get("thinking_trace") for trace in as_list(fields.get("agent_thinking_traces"))]
        blocks += [DraftBlock("thinking", text=trace) for trace in traces if as_str(trace).strip()]
    if as_str(fields.get("message")).strip():
        blocks.append(DraftBlock("text", text=fields["message"]))
    blocks += [DraftBlock("image", text=url) for url in as_list(fields.get("generated_image_urls")) if as_str(url)]
    assets = [as_str(a) for name in ("file_attachments", "image_attachments") for a in as_list(fields.get(name))]
    if any(assets):
        blocks.append(DraftBlock("text", text="attachments: " + ", ".join(asset for asset in assets if asset)))
    return blocks


def parse(document: Any, path: str) -> SourceResult:
    data = as_dict(document)
    result = parse_conversations(
        as_list(data.get("conversations")),
        path,
        FORMAT,
        "conversation.id",
        lambda item, found: _Conversation(item, path, found).build(),
    )
    for section in OTHER_SECTIONS:
        if as_list(data.get(section)):
            result.skipped[f"{FORMAT}:{section}"] += len(data[section])
    return result
