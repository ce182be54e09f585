"""Cursor's SQLite stores (`state.vscdb`, global `globalStorage/` and per-workspace `workspaceStorage/<hash>/`).

A VS Code key-value database: `ItemTable(key, value)` and, in newer versions, `cursorDiskKV(key, value)`;
values are JSON text. Only the values of the keys below are read (the global database's ItemTable also
holds access tokens: the other rows are only counted). Every chat tab and every composer is a session
`cursor-session:<tabId | composerId>`, titled by its `chatTitle` / `name` (a header title), its bubbles
its messages in order:

- old chat panel (ItemTable `workbench.panel.aichat.view.aichat.chatdata`): {tabs[{tabId, chatTitle,
  lastSendTime, bubbles[{type: user | ai, id, text, modelType, selections, fileSelections,
  selectedImages}]}]}.
- composers stored inline (ItemTable `composer.composerData`, Cursor ≈0.42): {allComposers[{composerId,
  name, createdAt, lastUpdatedAt, conversation[{type: 1 | 2, bubbleId, text, context, codeBlocks}],
  codeBlockData}]}. Newer workspaces list only `{type: "head", composerId, name, …}` there: their
  bubbles live in the global database; a head without a conversation is counted as
  `cursor:composer-head` (the global database's `composerData:<id>` is the session).
- composers of the global database (cursorDiskKV): `composerData:<composerId>` holds the composer and
  its `fullConversationHeadersOnly` [{bubbleId, type}] (older: an inline `conversation`, or
  `conversationMap`); each bubble is the row `bubbleId:<composerId>:<bubbleId>`. Bubbles of a composer
  that its headers no longer list (an edited or restored conversation dropped them) follow the current
  ones as `shadowed` messages (by createdAt). Bubbles whose composer has no row, and the other row
  kinds (checkpointId, messageRequestContext, codeBlockDiff, …), are counted in `skipped`.

Bubbles: 1 / user -> user, 2 / ai -> assistant (both authored); any other type is counted. A bubble
with nothing to show (the unsent input a chat tab ends with: no text, no code selection, no image, at most
the open file Cursor attaches to it) is counted as `cursor:empty-bubble`.
A fence's info string `<language>:<path>` (Cursor's) gives its code block the language alone.
- user: its text; attached code selections as text (their fences become code blocks); attached files
  and folders referenced by path in one text block (`files: a.ts, b.ts`); images referenced by path
  (an image block: path and media type, never the pixels).
- assistant: `thinking.text` (thinking), text, then its tool call: `toolFormerData` {name, toolCallId,
  rawArgs (else params) JSON, status, result JSON, additionalData, userDecision} is a tool_use and,
  once it has a result or ended, a tool_result: failed when its status is error or cancelled, the
  user rejected it, `additionalData.status` is error, or a command's `exitCodeV2` / `exitCode` is
  nonzero. A composer reply without a tool call may carry `codeBlocks` [{uri, version}]: each is a
  file edit (`edit_file` tool_use, path from the uri), its result the status the composer's
  `codeBlockData[uri][version]` records (accepted, rejected, cancelled, outdated, completed); rejected
  and cancelled edits were not applied: failed.
- model: the bubble's `modelType` / `modelInfo.modelName`, else the one its request asked for (the
  preceding user bubble's), else the composer's `modelConfig.modelName` ("default", Cursor's automatic
  choice, names no model). Tokens: `tokenCount` {inputTokens, outputTokens}.
- times: a bubble's `createdAt` (ISO or epoch ms), else `timingInfo.clientRpcSendTime`; a reply's
  duration is `clientEndTime - clientRpcSendTime`. A composer adds createdAt / lastUpdatedAt, a chat
  tab `lastSendTime`.
- cwd: a bubble's `workspaceProjectDir` / first `workspaceUris`, the composer's `workspaceIdentifier`,
  else the workspace folder the database's explorer state (`workbench.explorer.treeViewState`) is
  rooted at; repo is its last component. branch: the composer's `createdOnBranch`.
- lineage: a composer listed in another's `subComposerIds` is that composer's child session.
- `aiService.prompts` (typed prompts, no answers, no times) and `aiService.generations` (request times)
  only repeat what the conversations hold, or hold prompts of conversations stored elsewhere: counted
  as `cursor:prompt` / `cursor:generation`, never a session. The other ItemTable rows (editor and
  extension state) are counted as `cursor:item/other`: a VS Code database without chats has only those.

Raw log events (docs/sessions.md#events): every bubble is an event, in conversation order, keyed `bubble:<id>`; a
bubble that became a message is a surface node. A `composerData` row is a log-only event (without its
inline bubbles and its encryption keys) that replaces the composer's dropped bubbles. A row the
database cannot read any more, or a value that is not JSON, is an issue; the rest is still read.
"""

from __future__ import annotations

import mimetypes
import sqlite3
from collections.abc import Iterator
from typing import Any

import orjson

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_count,
    as_dict,
    as_list,
    as_str,
    json_text,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import tool_use_block
from quarry.ingest.sources.vscode import file_uri_path, uri_path

FORMAT = "cursor"
ORIGIN = "cursor-session"
ITEM_TABLE = "ItemTable"
DISK_KV = "cursorDiskKV"
CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSERS_KEY = "composer.composerData"
HISTORY_KEYS = {"aiService.prompts": "prompt", "aiService.generations": "generation"}
EXPLORER_KEY = "workbench.explorer.treeViewState"
COMPOSER_PREFIX = "composerData:"
BUBBLE_PREFIX = "bubbleId:"
ROLES: dict[Any, str] = {1: "user", 2: "assistant", "user": "user", "ai": "assistant"}
# Keys of a composerData row its log event leaves out: its inline bubbles (events of their own), its keys.
UNLOGGED_COMPOSER_KEYS = frozenset(
    {"conversation", "conversationMap", "blobEncryptionKey", "speculativeSummarizationEncryptionKey"}
)
UNNAMED_MODELS = frozenset({"", "default"})
FAILED_TOOL_STATUSES = frozenset({"error", "cancelled"})
UNAPPLIED_EDITS = frozenset({"rejected", "cancelled"})
EDIT_TOOL = "edit_file"
_RESULT_TEXT_KEYS = ("output", "contents", "content", "error", "message")
UNREAD = object()  # a row value that is not JSON (reported as an issue)


def recognize(tables: dict[str, set[str]]) -> str:
    """The format name when the database's tables (name -> column names) are this format's, else ""."""
    return FORMAT if any({"key", "value"} <= tables.get(name, set()) for name in (ITEM_TABLE, DISK_KV)) else ""


def parse(conn: sqlite3.Connection, path: str) -> SourceResult:
    return _Database(conn, path).read()


class _Conversation:
    """One chat tab or composer on its way to a session: each bubble a record and, unless empty, a message."""

    def __init__(self, draft: DraftSession, result: SourceResult, edits: dict[str, Any], model: str) -> None:
        self.draft = draft
        self.result = result
        self.edits = edits  # the composer's codeBlockData: uri -> the states of its code blocks
        self.model = "" if model in UNNAMED_MODELS else model
        self.request_model = ""  # the model the last user bubble asked for

    def add(self, bubble: Any, raw_bytes: bytes = b"") -> DraftRecord:
        data = as_dict(bubble)
        kind = data.get("type")
        role = ROLES.get(kind) if isinstance(kind, str | int) and not isinstance(kind, bool) else None
        bubble_id = as_str(data.get("bubbleId")) or as_str(data.get("id"))
        time_ms = _bubble_time(data)
        self.draft.observe_time(time_ms)
        name = role or f"type-{kind if isinstance(kind, str | int) else '(none)'}"
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:bubble/{name}", bubble, raw_bytes, time_ms))
        if bubble_id:
            record.keys.append(f"bubble:{bubble_id}")
        if not self.draft.cwd:
            self.draft.cwd = _bubble_cwd(data)
        if role is None:
            self.result.skipped[f"{FORMAT}:bubble/{name}"] += 1
            return record
        blocks = _user_blocks(data) if role == "user" else self._reply_blocks(data, bubble_id)
        if not blocks:
            self.result.skipped[f"{FORMAT}:empty-bubble"] += 1
            return record
        record.node = True
        message = DraftMessage(role=role, authored=True, time_ms=time_ms)
        model = _model_name(data)
        if role == "user":
            self.request_model = model or self.request_model
        else:
            message.model = model or self.request_model or self.model
            tokens = as_dict(data.get("tokenCount"))
            message.input_tokens = as_count(tokens.get("inputTokens"))
            message.output_tokens = as_count(tokens.get("outputTokens"))
            message.duration_ms = _duration(data)
        self.draft.add_message(message)
        for block in blocks:
            self.draft.add_block(message, block)
        for block in message.blocks:
            if block.type == "code":  # Cursor's fence names the file after the language: ```ts:src/app.ts
                block.language = block.language.partition(":")[0]
        return record

    def _reply_blocks(self, data: dict[str, Any], bubble_id: str) -> list[DraftBlock]:
        blocks: list[DraftBlock] = []
        thinking = as_str(as_dict(data.get("thinking")).get("text"))
        if thinking:
            blocks.append(DraftBlock("thinking", text=thinking))
        text = as_str(data.get("text")) or as_str(data.get("rawText"))
        if text:
            blocks.append(DraftBlock("text", text=text))
        tool = as_dict(data.get("toolFormerData"))
        if tool:
            blocks.extend(_tool_call(tool, bubble_id))
        else:
            blocks.extend(self._code_edits(data, bubble_id))
        return blocks

    def _code_edits(self, data: dict[str, Any], bubble_id: str) -> list[DraftBlock]:
        """The file edits a composer reply proposed (its code blocks that name a file), with their fate."""
        blocks: list[DraftBlock] = []
        for index, item in enumerate(as_list(data.get("codeBlocks"))):
            item = as_dict(item)
            uri = item.get("uri")
            path = uri_path(uri)
            if not path:
                continue  # a code block of the reply's text that names no file: the text holds it
            state = self._edit_state(uri, item)
            tool_use_id = f"{bubble_id}:edit:{item.get('codeBlockIdx', index)}"
            tool_input = {
                "target_file": path,
                "language": as_str(state.get("languageId")),
                "version": item.get("version"),
            }
            blocks.append(tool_use_block(EDIT_TOOL, tool_use_id, tool_input))
            status = as_str(state.get("status"))
            if status:
                failed = status in UNAPPLIED_EDITS
                blocks.append(
                    DraftBlock(
                        "tool_result", text=status, tool_name=EDIT_TOOL, tool_use_id=tool_use_id, is_error=failed
                    )
                )
        return blocks

    def _edit_state(self, uri: Any, item: dict[str, Any]) -> dict[str, Any]:
        """The composer's record of one code block: codeBlockData[uri] is a list by version (≈0.42) or a
        map by code block id."""
        uri = as_dict(uri)
        states = self.edits.get(as_str(uri.get("external"))) or self.edits.get(as_str(uri.get("fsPath")))
        version = item.get("version")
        if isinstance(states, list):
            valid = isinstance(version, int) and not isinstance(version, bool) and 0 <= version < len(states)
            return as_dict(states[version]) if valid else {}
        states = as_dict(states)
        return as_dict(states.get(as_str(item.get("codeblockId")))) or as_dict(states.get(str(version)))


class _Database:
    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        self.result = SourceResult()
        self.tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.composers: dict[str, DraftSession] = {}
        self.children: dict[str, list[str]] = {}  # composer id -> its subComposerIds
        self.root = ""

    def read(self) -> SourceResult:
        if ITEM_TABLE in self.tables:
            self.root = _explorer_root(self._item(EXPLORER_KEY))
        if DISK_KV in self.tables:
            self._disk_composers()
            self._count_other_rows()
        if ITEM_TABLE in self.tables:
            self._chat_tabs()
            self._item_composers()
            self._count_other_items()
        self._link_children()
        return self.result

    # ---------------------------------------------------------------- reading rows

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a query; a page the database cannot read ends them with an issue, not the file."""
        try:
            yield from self.conn.execute(sql, params)
        except sqlite3.DatabaseError as error:
            self.result.issues.append(
                issue(self.path, 0, "unreadable", f"a part of the database is unreadable: {error}")
            )

    def _json(self, value: Any, where: str) -> Any:
        """A row's JSON value (None for NULL); UNREAD, with an issue, when it is not JSON."""
        if value is None:
            return None
        try:
            return orjson.loads(value)
        except (orjson.JSONDecodeError, TypeError) as error:
            self.result.issues.append(issue(self.path, 0, "invalid_record", f"{where} is not JSON: {error}"))
            return UNREAD

    def _item(self, key: str) -> Any:
        for (value,) in self._rows(f"SELECT CAST(value AS BLOB) FROM {ITEM_TABLE} WHERE key = ?", (key,)):
            value = self._json(value, f"{ITEM_TABLE} {key}")
            return None if value is UNREAD else value
        return None

    def _prefixed(self, prefix: str, *, values: bool = True) -> Iterator[tuple[Any, ...]]:
        """(key, value) of the cursorDiskKV rows whose key starts with `prefix`, in key order (an index range;
        without `values`, the value is NULL and not read)."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        column = "CAST(value AS BLOB)" if values else "NULL"  # bytes: text that is not UTF-8 fails its row alone
        sql = f"SELECT key, {column} FROM {DISK_KV} WHERE key >= ? AND key < ? ORDER BY key"
        yield from self._rows(sql, (prefix, upper))

    # ---------------------------------------------------------------- the global database's composers

    def _disk_composers(self) -> None:
        for key, value in self._prefixed(COMPOSER_PREFIX):
            data = self._json(value, f"{DISK_KV} {key}")
            if isinstance(data, dict):
                self._disk_composer(as_str(key).removeprefix(COMPOSER_PREFIX), data)
            elif data is not UNREAD:
                self.result.skipped[f"{FORMAT}:composer-not-an-object"] += 1

    def _disk_composer(self, key_id: str, data: dict[str, Any]) -> None:
        composer_id = as_str(data.get("composerId")) or key_id
        conversation = self._conversation(composer_id, data)
        logged = {name: item for name, item in data.items() if name not in UNLOGGED_COMPOSER_KEYS}
        composer = conversation.draft.begin(DraftRecord(0, f"{FORMAT}:composerData", logged))
        composer.keys.append(f"composer:{composer_id}")
        rows = {
            as_str(key).rsplit(":", 1)[-1]: (key, row) for key, row in self._prefixed(f"{BUBBLE_PREFIX}{composer_id}:")
        }
        headers = as_list(data.get("fullConversationHeadersOnly"))
        if headers:
            stored = {as_str(as_dict(bubble).get("bubbleId")): bubble for bubble in as_list(data.get("conversation"))}
            stored.update(as_dict(data.get("conversationMap")))
            for header in headers:
                bubble_id = as_str(as_dict(header).get("bubbleId"))
                if bubble_id in rows:
                    key, row = rows.pop(bubble_id)
                    self._add_row(conversation, self._json(row, f"{DISK_KV} {key}"), row)
                elif bubble_id in stored:
                    conversation.add(stored[bubble_id])
                else:
                    self.result.skipped[f"{FORMAT}:missing-bubble"] += 1
        else:
            for bubble in as_list(data.get("conversation")):
                rows.pop(as_str(as_dict(bubble).get("bubbleId")), None)
                conversation.add(bubble)
        self._add_dropped(conversation, composer, list(rows.values()))
        self.children[composer_id] = _ids(data.get("subComposerIds"))
        self._finish(conversation.draft, f"{DISK_KV} {COMPOSER_PREFIX}{key_id}")

    def _add_row(self, conversation: _Conversation, bubble: Any, row: Any) -> DraftRecord | None:
        if bubble is UNREAD:
            return None  # an issue already
        if bubble is None:
            self.result.skipped[f"{FORMAT}:empty-bubble"] += 1
            return None
        return conversation.add(bubble, _raw_bytes(row))

    def _add_dropped(self, conversation: _Conversation, composer: DraftRecord, rows: list[tuple[str, Any]]) -> None:
        """Bubbles the composer's headers no longer list, oldest first: shadowed by the composer's row."""
        decoded = [(key, row, self._json(row, f"{DISK_KV} {key}")) for key, row in rows]
        decoded.sort(key=lambda item: (_bubble_time(as_dict(item[2])), item[0]))  # UNREAD reads as {}
        for _, row, bubble in decoded:
            record = self._add_row(conversation, bubble, row)
            if record is not None:
                composer.replaces_keys.extend(record.keys)

    def _count_other_rows(self) -> None:
        """Rows that are no composer's: bubbles of composers without a row, and the other kinds of rows."""
        sql = (
            f"SELECT substr(key, 1, instr(key, ':') - 1) AS kind, count(*) FROM {DISK_KV} "
            "WHERE key NOT LIKE 'composerData:%' AND key NOT LIKE 'bubbleId:%' GROUP BY kind ORDER BY kind"
        )
        for kind, count in self._rows(sql):
            self.result.skipped[f"{FORMAT}:row/{kind or '(unprefixed)'}"] += count
        orphans = 0
        for key, _ in self._prefixed(BUBBLE_PREFIX, values=False):
            if as_str(key)[len(BUBBLE_PREFIX) :].partition(":")[0] not in self.composers:
                orphans += 1
        if orphans:
            self.result.skipped[f"{FORMAT}:bubble-without-composer"] += orphans

    # ---------------------------------------------------------------- the workspace database's chats

    def _chat_tabs(self) -> None:
        for index, tab in enumerate(as_list(as_dict(self._item(CHAT_KEY)).get("tabs"))):
            tab = as_dict(tab)
            title = as_str(tab.get("chatTitle"))
            draft = DraftSession(
                origin=ORIGIN,
                native_id=as_str(tab.get("tabId")),
                source_path=self.path,
                title=title,
                header_title_kind="export" if title else "",
            )
            draft.observe_time(to_ms(tab.get("lastSendTime")))
            conversation = _Conversation(draft, self.result, {}, "")
            for bubble in as_list(tab.get("bubbles")):
                conversation.add(bubble)
            self._finish(draft, f"chat tab #{index}")

    def _item_composers(self) -> None:
        for index, composer in enumerate(as_list(as_dict(self._item(COMPOSERS_KEY)).get("allComposers"))):
            data = as_dict(composer)
            composer_id = as_str(data.get("composerId"))
            if composer_id in self.composers:
                continue  # the workspace's entry of a composer the global database holds
            if "conversation" not in data:
                self.result.skipped[f"{FORMAT}:composer-head"] += 1
                continue
            conversation = self._conversation(composer_id, data)
            for bubble in as_list(data.get("conversation")):
                conversation.add(bubble)
            self.children[composer_id] = _ids(data.get("subComposerIds"))
            self._finish(conversation.draft, f"composer #{index}")

    def _count_other_items(self) -> None:
        """The prompt history entries, and the ItemTable rows that hold no chat (editor and extension state)."""
        for key, kind in HISTORY_KEYS.items():
            count = len(as_list(self._item(key)))
            if count:
                self.result.skipped[f"{FORMAT}:{kind}"] += count
        read = (CHAT_KEY, COMPOSERS_KEY, EXPLORER_KEY, *HISTORY_KEYS)
        marks = ", ".join("?" * len(read))
        for (count,) in self._rows(f"SELECT count(*) FROM {ITEM_TABLE} WHERE key NOT IN ({marks})", read):
            if count:
                self.result.skipped[f"{FORMAT}:item/other"] += count

    # ---------------------------------------------------------------- sessions

    def _conversation(self, composer_id: str, data: dict[str, Any]) -> _Conversation:
        title = as_str(data.get("name"))
        draft = DraftSession(
            origin=ORIGIN,
            native_id=composer_id,
            source_path=self.path,
            title=title,
            header_title_kind="export" if title else "",
            branch=as_str(data.get("createdOnBranch")),
        )
        draft.observe_time(to_ms(data.get("createdAt")))
        draft.observe_time(to_ms(data.get("lastUpdatedAt")))
        draft.cwd = uri_path(as_dict(data.get("workspaceIdentifier")).get("uri"))
        model = as_str(as_dict(data.get("modelConfig")).get("modelName"))
        return _Conversation(draft, self.result, as_dict(data.get("codeBlockData")), model)

    def _finish(self, draft: DraftSession, where: str) -> None:
        draft.current = None
        if not draft.native_id:
            self.result.issues.append(issue(self.path, 0, "invalid_record", f"{where} has no id"))
            return
        self.composers[draft.native_id] = draft
        if not draft.messages:
            self.result.skipped[f"{FORMAT}:empty-conversation"] += 1
            return
        draft.cwd = draft.cwd or self.root
        draft.repo = folder_name(draft.cwd)
        self.result.sessions.append(draft)

    def _link_children(self) -> None:
        for parent, children in self.children.items():
            for child in children:
                draft = self.composers.get(child)
                if draft is not None and child != parent:
                    draft.parent_session_id = f"{ORIGIN}:{parent}"


# -------------------------------------------------------------------- bubbles


def _user_blocks(data: dict[str, Any]) -> list[DraftBlock]:
    """A user bubble's text, then what it attached: code selections, files and folders, images. Files
    alone make no message."""
    blocks: list[DraftBlock] = []
    text = as_str(data.get("text")) or as_str(data.get("rawText"))
    if text:
        blocks.append(DraftBlock("text", text=text))
    sources = (data, as_dict(data.get("context")))
    selections: list[str] = []
    files: list[str] = []
    images: list[str] = []
    for source in sources:
        for selection in as_list(source.get("selections")):
            selection = as_dict(selection)
            _append_new(selections, as_str(selection.get("text")) or as_str(selection.get("rawText")))
        for key in ("fileSelections", "folderSelections"):
            for item in as_list(source.get(key)):
                _append_new(files, uri_path(as_dict(item).get("uri")))
        for key in ("selectedImages", "images"):
            for image in as_list(source.get(key)):
                _append_new(images, as_str(as_dict(image).get("path")))
    if not (blocks or selections or images):
        return []  # the input box: Cursor attaches the open file to it before anything is typed
    blocks.extend(DraftBlock("text", text=selection) for selection in selections)
    if files:
        blocks.append(DraftBlock("text", text="files: " + ", ".join(files)))
    blocks.extend(DraftBlock("image", path=path, media_type=mimetypes.guess_type(path)[0] or "") for path in images)
    return blocks


def _ids(value: Any) -> list[str]:
    return [item for item in as_list(value) if isinstance(item, str) and item]


def _append_new(items: list[str], item: str) -> None:
    if item and item not in items:
        items.append(item)


def _tool_call(tool: dict[str, Any], bubble_id: str) -> list[DraftBlock]:
    """A toolFormerData's tool_use and, when it has a result or has ended, its tool_result."""
    number = tool.get("tool")
    name = as_str(tool.get("name")) or (f"tool-{number}" if isinstance(number, int) else "tool")
    tool_use_id = as_str(tool.get("toolCallId")) or f"{bubble_id}:tool"
    tool_input = _arguments(tool.get("rawArgs"))
    if tool_input is None:
        tool_input = _arguments(tool.get("params"))
    call = tool_use_block(name, tool_use_id, tool_input if tool_input is not None else {})
    status = as_str(tool.get("status"))
    raw_result = tool.get("result")
    if raw_result is None and status in ("", "loading"):
        return [call]
    text, exit_code, refused = _result(raw_result)
    decision = as_str(tool.get("userDecision"))
    failed = (
        status in FAILED_TOOL_STATUSES
        or decision == "rejected"
        or as_str(as_dict(tool.get("additionalData")).get("status")) == "error"
        or refused
        or bool(exit_code)
    )
    error = as_str(tool.get("error"))
    text = "\n".join(part for part in (text, error) if part) or (decision if decision == "rejected" else status)
    result = DraftBlock(
        "tool_result", text=text, tool_name=name, tool_use_id=tool_use_id, is_error=failed, exit_code=exit_code
    )
    return [call, result]


def _arguments(value: Any) -> Any:
    """A tool call's arguments: a JSON object (also as JSON text); text that is not JSON is kept as is."""
    if isinstance(value, str):
        if not value:
            return None
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"arguments": value}
        return decoded if isinstance(decoded, dict) else {"arguments": decoded}
    return value if isinstance(value, dict) and value else None


def _result(value: Any) -> tuple[str, int | None, bool]:
    """(text, exit code if stated, refused) of a tool result: JSON text of an object, or plain text."""
    if value is None:
        return "", None, False
    decoded: Any = value
    if isinstance(value, str):
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value, None, False
    if not isinstance(decoded, dict):
        return value if isinstance(value, str) else json_text(value), None, False
    exit_code = next(
        (
            code
            for key in ("exitCodeV2", "exitCode")
            if isinstance(code := decoded.get(key), int) and not isinstance(code, bool)
        ),
        None,
    )
    text = next((found for key in _RESULT_TEXT_KEYS if (found := as_str(decoded.get(key)))), "")
    return text or (value if isinstance(value, str) else json_text(value)), exit_code, decoded.get("rejected") is True


def _model_name(data: dict[str, Any]) -> str:
    model = as_str(data.get("modelType")) or as_str(as_dict(data.get("modelInfo")).get("modelName"))
    return "" if model in UNNAMED_MODELS else model


def _bubble_time(data: dict[str, Any]) -> int:
    return to_ms(data.get("createdAt")) or _epoch_ms(as_dict(data.get("timingInfo")).get("clientRpcSendTime"))


def _duration(data: dict[str, Any]) -> int:
    timing = as_dict(data.get("timingInfo"))
    start = _epoch_ms(timing.get("clientRpcSendTime"))
    end = _epoch_ms(timing.get("clientEndTime"))
    return end - start if start and end >= start else 0


def _epoch_ms(value: Any) -> int:
    """An epoch in ms (timingInfo also holds clientStartTime, a page clock, which is no epoch)."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and 1e12 <= value < 1e14 else 0


def _bubble_cwd(data: dict[str, Any]) -> str:
    directory = as_str(data.get("workspaceProjectDir"))
    if directory:
        return directory
    uris = as_list(data.get("workspaceUris"))
    return uri_path(uris[0]) if uris else ""


def _raw_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace")
    return bytes(value) if isinstance(value, bytes | bytearray | memoryview) else b""


# -------------------------------------------------------------------- paths


def _explorer_root(state: Any) -> str:
    """The workspace folder the explorer's tree is rooted at: its entries are `<root uri>::<item uri>`."""
    state = as_dict(state)
    for key in ("focus", "selection", "expanded"):
        for entry in as_list(state.get(key)):
            root = as_str(entry).partition("::")[0]
            if root:
                return file_uri_path(root)
    return ""
