"""OpenCode (sst/opencode) sessions: `opencode export` documents and the on-disk JSON storage.

An export is one JSON object {info, messages[]}: `info` is the session record (`id` `ses_…`,
`title`, `directory`, `parentID` for a child session, `revert`, `time` in epoch ms) and each message
is {info, parts[]}. The storage keeps the same objects one per file; the session file is what is
parsed, and its messages and parts are read from the storage root beside it:
- 1.x: `<root>/session/<projectID>/<ses>.json`, `<root>/message/<ses>/<msg>.json`,
  `<root>/part/<msg>/<prt>.json` (root = the session file's third parent);
- 0.x: `<root>/session/info/<ses>.json`, `<root>/session/message/<ses>/<msg>.json`,
  `<root>/session/part/<ses>/<msg>/<prt>.json` (root = its second parent).
In the storage, messages and parts are read in id order (the ids sort by time). A message or part file
on its own is recognized but makes no session: it is counted as `opencode:storage-message` or
`opencode:storage-part` (a folder walk over a storage tree reads each session once, from its file).
A storage file that cannot be read is an issue of its own path; the rest of the session is kept.

Each session is `opencode-session:<info.id>`; a child session (a `task` tool's subagent) has its
`parentID` as parent, its first message's agent as `agent`, and its prompts are not authored.
The title is `info.title` unless it is OpenCode's placeholder (`New session - <date>`); the cwd is
`info.directory` (else the first assistant's `path.cwd`), the repo its last folder; a value
`opencode export --sanitize` replaced (`[redacted:…]`) is no cwd.

- roles: user and assistant. A message's `system` prompt (0.x assistants carry it on every reply)
  becomes a system message when it differs from the last one seen.
- parts: text (a user message's `synthetic` text, context OpenCode injected beside what was typed,
  is a non-authored user message of its own), reasoning -> thinking (an empty one: reasoning the
  provider encrypted), file -> image (by MIME type) or a `file: <name>` reference (never the data),
  subtask -> the instruction's text, tool -> tool_use and, once finished, its tool_result (status
  error, or a bash `metadata.exit` other than 0, marks it failed; images it attached follow it),
  patch -> a note naming the files the step changed, retry -> an api_error event. step-start,
  step-finish, snapshot, agent and compaction parts carry no text; other part types are counted
  as `opencode:part/<type>` (their text, if any, kept).
- tool paths: `filePath` (read, edit, write, multiedit), `path`, else the first file of an
  apply_patch / patch `patchText`. A `task` call is a dispatch: its `metadata.sessionId` links the
  child session, `metadata.model` its model, `metadata.summary` its tool calls.
- tokens: the sum of a reply's step-finish usages (the message's own `tokens` holds its last step
  only), else the message's; input_tokens is uncached input, output_tokens includes reasoning; the
  message's `cost` is its `cost_usd`.
- errors: `MessageAbortedError` is turn_aborted, any other `error` an api_error.
- a message with neither a block nor token counts (a compaction request, a reply that failed before
  writing anything) is counted as `opencode:empty-message`; its records are kept.
- compaction: a user message with a `compaction` part asks for a summary; the assistant reply with
  `summary: true` is it (a compaction at that message, trigger auto/manual from the part). Older
  versions wrote only the summary reply.

Raw log events (docs/sessions.md#events): the session record, every message and every part, in order. A node is
what OpenCode sends to the model: messages with parts (an assistant reply with an error only when it
was aborted after producing more than reasoning), and their text, reasoning, tool, file, subtask and
compaction parts (not `ignored` text, nor text/plain or directory files: their content is injected
as synthetic text). Once its summary finished, the compaction request replaces every node before it
(0.x: the summary reply itself); `info.revert` replaces the reverted tail (from its message, or from
its part within that message). A part cites its message, a reply the prompt it answers
(`parentID`); a tool part is keyed by its call id too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from quarry.ingest.reader import issue, strip_bom
from quarry.ingest.sources import (
    DraftBlock,
    DraftCompaction,
    DraftDispatch,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_cost,
    as_count,
    as_dict,
    as_list,
    as_str,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import patch_path, tool_use_block

FORMAT = "opencode"
ORIGIN = "opencode-session"
ROLES = frozenset({"user", "assistant"})
# Part types OpenCode sends to the model, by the role of their message.
SENT_PARTS = {
    "user": frozenset({"text", "file", "subtask", "compaction"}),
    "assistant": frozenset({"text", "reasoning", "tool"}),
}
SILENT_PARTS = frozenset({"step-start", "step-finish", "snapshot", "agent", "compaction", "patch", "retry"})
INJECTED_FILE_TYPES = frozenset({"text/plain", "application/x-directory"})
ABORTED = "MessageAbortedError"
_PLACEHOLDER_TITLE = re.compile(r"\A(?:New|Child) session - \d{4}-\d\d-\d\dT")
_REDACTED = re.compile(r"\A\[redacted:[^\]]*\]\Z")
_STORAGE_ID = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")


def recognize(document: Any) -> str:
    """An export ({info, messages}), a storage session file, or a storage message or part file."""
    if not isinstance(document, dict):
        return ""
    info = document.get("info")
    if isinstance(info, dict) and isinstance(document.get("messages"), list):
        return FORMAT if _is_session(info) else ""
    return FORMAT if _storage_kind(document) else ""


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    if not isinstance(document, dict):
        result.issues.append(issue(path, 0, "invalid_record", "the session is not a JSON object"))
        return result
    info = document.get("info")
    if isinstance(info, dict) and isinstance(document.get("messages"), list):
        messages = _export_messages(document["messages"], path, result)
    else:
        kind = _storage_kind(document)
        if kind != "session":
            result.skipped[f"{FORMAT}:storage-{kind or 'unknown'}"] += 1
            return result
        info = document
        messages = _storage_messages(Path(path), as_str(info.get("id")), result)
    draft = _Session(info, path, result).build(messages)
    if not draft.native_id:
        result.issues.append(issue(path, 0, "invalid_record", "the session has no id"))
    elif draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-session"] += 1
    return result


def _prefixed(value: Any, prefix: str) -> bool:
    return isinstance(value, str) and value.startswith(prefix) and len(value) > len(prefix)


def _is_session(data: dict[str, Any]) -> bool:
    return (
        _prefixed(data.get("id"), "ses_")
        and isinstance(data.get("time"), dict)
        and ("version" in data or "title" in data)
        and "role" not in data
    )


def _storage_kind(data: dict[str, Any]) -> str:
    """session | message | part, for one file of OpenCode's storage; "" for anything else."""
    if _is_session(data):
        return "session"
    if _prefixed(data.get("id"), "msg_") and _prefixed(data.get("sessionID"), "ses_") and "role" in data:
        return "message"
    if _prefixed(data.get("id"), "prt_") and _prefixed(data.get("messageID"), "msg_") and "type" in data:
        return "part"
    return ""


@dataclass(slots=True)
class _Message:
    """One message as read: its info and its parts (objects only), in order."""

    info: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return as_str(self.info.get("id"))

    @property
    def role(self) -> str:
        return as_str(self.info.get("role"))

    def part_types(self) -> list[str]:
        return [as_str(part.get("type")) for part in self.parts]


def _export_messages(items: list[Any], path: str, result: SourceResult) -> list[_Message]:
    messages: list[_Message] = []
    for index, item in enumerate(items):
        info = as_dict(item).get("info")
        if not isinstance(info, dict):
            result.issues.append(issue(path, 0, "invalid_record", f"message #{index} has no info object"))
            continue
        messages.append(_Message(info, _objects(as_list(item.get("parts")), f"message #{index}", path, result)))
    return messages


def _objects(parts: list[Any], where: str, path: str, result: SourceResult) -> list[dict[str, Any]]:
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            result.issues.append(issue(path, 0, "invalid_record", f"{where}: part #{index} is not an object"))
    return [part for part in parts if isinstance(part, dict)]


def _storage_messages(session_file: Path, session_id: str, result: SourceResult) -> list[_Message]:
    """The session's messages and parts from the storage root beside its file (module docstring)."""
    if not _STORAGE_ID.match(session_id):
        return []
    roots = (session_file.parent.parent.parent, session_file.parent.parent)
    root = next((root for root in roots if (root / "message" / session_id).is_dir()), None)
    if root is None:
        return []
    messages: list[_Message] = []
    for message_file in sorted((root / "message" / session_id).glob("*.json")):
        info = _read_storage_file(message_file, result)
        if info is None:
            continue
        message_id = as_str(info.get("id")) or message_file.stem
        folders = (root / "part" / message_id, root / "part" / session_id / message_id)
        folder = next((folder for folder in folders if _STORAGE_ID.match(message_id) and folder.is_dir()), None)
        part_files = sorted(folder.glob("*.json")) if folder is not None else []
        parts = [part for part in (_read_storage_file(file, result) for file in part_files) if part is not None]
        messages.append(_Message(info, parts))
    return messages


def _read_storage_file(file: Path, result: SourceResult) -> dict[str, Any] | None:
    try:
        value = orjson.loads(strip_bom(file.read_bytes()))
    except OSError as error:
        result.issues.append(issue(str(file), 0, "unreadable", error.strerror or str(error)))
        return None
    except orjson.JSONDecodeError as error:
        result.issues.append(issue(str(file), 0, "malformed_json", f"not JSON: {error}"))
        return None
    if not isinstance(value, dict):
        result.issues.append(issue(str(file), 0, "invalid_record", "not a JSON object"))
        return None
    return value


class _Session:
    def __init__(self, info: dict[str, Any], path: str, result: SourceResult) -> None:
        self.result = result
        native_id = as_str(info.get("id"))
        title = as_str(info.get("title"))
        title = "" if _PLACEHOLDER_TITLE.match(title) else title
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=native_id,
            source_path=path,
            title=title,
            header_title_kind="export" if title else "",
        )
        parent = as_str(info.get("parentID"))
        self.draft.parent_session_id = f"{ORIGIN}:{parent}" if parent else ""
        self._set_cwd(as_str(info.get("directory")))
        times = as_dict(info.get("time"))
        self.draft.observe_time(to_ms(times.get("created")))
        self.draft.observe_time(to_ms(times.get("updated")))
        self.session_record = self.draft.begin(
            DraftRecord(0, f"{FORMAT}:session", info, time_ms=to_ms(times.get("created")))
        )
        self.revert = as_dict(info.get("revert"))
        self.last_system = ""
        self.summaries: set[str] = set()  # compaction requests whose summary finished
        self.triggers: dict[str, str] = {}  # compaction request id -> auto | manual

    def build(self, messages: list[_Message]) -> DraftSession:
        self._scan_compactions(messages)
        for message in messages:
            self._message(message)
        self._revert(messages)
        self.draft.current = None
        return self.draft

    def _scan_compactions(self, messages: list[_Message]) -> None:
        for message in messages:
            for part in message.parts:
                if message.role == "user" and as_str(part.get("type")) == "compaction":
                    self.triggers[message.id] = "auto" if part.get("auto") is True else "manual"
        for message in messages:
            info = message.info
            if (
                message.role == "assistant"
                and info.get("summary") is True
                and info.get("finish")
                and not info.get("error")
            ):
                self.summaries.add(as_str(info.get("parentID")))

    def _set_cwd(self, cwd: str) -> None:
        if self.draft.cwd or not cwd or _REDACTED.match(cwd):
            return
        self.draft.cwd = cwd
        self.draft.repo = folder_name(cwd)

    def _message(self, message: _Message) -> None:
        info, role = message.info, message.role
        created = to_ms(as_dict(info.get("time")).get("created"))
        completed = to_ms(as_dict(info.get("time")).get("completed"))
        self.draft.observe_time(created)
        self.draft.observe_time(completed)
        if role in ROLES:
            self._system_prompt(info, created)
        else:
            self.result.skipped[f"{FORMAT}:message/{role or '(none)'}"] += 1
        record = self.draft.begin(
            DraftRecord(0, f"{FORMAT}:message/{role or '(none)'}", info, time_ms=created, node=_sent(message))
        )
        record.keys.append(f"message:{message.id}")
        parent = as_str(info.get("parentID"))
        if parent:
            record.source_keys.append(f"message:{parent}")
        record.replaces_all = self._replaces_context(message)
        if role not in ROLES:
            self._parts(message, record, None, [[] for _ in message.parts])
            return
        if role == "assistant":
            self._set_cwd(as_str(as_dict(info.get("path")).get("cwd")))
        if not self.draft.agent and self.draft.parent_session_id:
            self.draft.agent = as_str(info.get("agent")) or as_str(info.get("mode"))
        blocks = [self._part_blocks(part) for part in message.parts]
        draft_message = self._draft_message(message, created, completed, any(blocks))
        self._parts(message, record, draft_message, blocks)
        self.draft.current = record
        self._outcome(message, draft_message, completed or created)

    def _replaces_context(self, message: _Message) -> bool:
        """A finished compaction request (or a 0.x summary reply, which has none) starts a new context."""
        info = message.info
        if message.role == "user":
            return message.id in self.summaries and message.id in self.triggers
        return bool(
            info.get("summary") is True
            and info.get("finish")
            and not info.get("error")
            and as_str(info.get("parentID")) not in self.triggers
        )

    def _system_prompt(self, info: dict[str, Any], time_ms: int) -> None:
        system = info.get("system")
        texts = [system] if isinstance(system, str) else [as_str(text) for text in as_list(system)]
        text = "\n\n".join(text for text in texts if text)
        if not text or text == self.last_system:
            return
        self.last_system = text
        self.draft.begin(DraftRecord(0, f"{FORMAT}:message/system", system, time_ms=time_ms, node=True))
        message = self.draft.add_message(DraftMessage(role="system", authored=False, time_ms=time_ms))
        self.draft.add_block(message, DraftBlock("text", text=text))

    def _draft_message(self, message: _Message, created: int, completed: int, content: bool) -> DraftMessage | None:
        """The message, added to the draft when it holds a block or token counts (else counted as empty)."""
        info = message.info
        draft_message = DraftMessage(role=message.role, authored=message.role == "assistant", time_ms=created)
        if message.role == "user":
            draft_message.authored = not self.draft.parent_session_id and _typed(message)
        else:
            draft_message.model = as_str(info.get("modelID"))
            draft_message.duration_ms = completed - created if completed > created else 0
            _add_usage(draft_message, message)
        if not content and not (draft_message.input_tokens or draft_message.output_tokens):
            self.result.skipped[f"{FORMAT}:empty-message"] += 1
            return None
        return self.draft.add_message(draft_message)

    def _parts(
        self, message: _Message, record: DraftRecord, draft_message: DraftMessage | None, blocks: list[list[DraftBlock]]
    ) -> None:
        """A record per part, holding its blocks (a mixed prompt's synthetic text goes to a message of its
        own, after it) and what the part reports (changed files, a retried request)."""
        split = message.role == "user" and _typed(message) and any(_synthetic(part) for part in message.parts)
        injected: DraftMessage | None = None
        for part, part_blocks in zip(message.parts, blocks, strict=True):
            kind = as_str(part.get("type")) or "(untyped)"
            time_ms = _part_time(part)
            node = record.node and _part_sent(message.role, part)
            part_record = self.draft.begin(DraftRecord(0, f"{FORMAT}:part/{kind}", part, time_ms=time_ms, node=node))
            self.draft.observe_time(time_ms)
            part_record.keys.append(f"part:{as_str(part.get('id'))}")
            call_id = as_str(part.get("callID"))
            if kind == "tool" and call_id:
                part_record.keys.append(f"call:{call_id}")
            part_record.source_keys.append(f"message:{message.id}")
            self._part_report(kind, part, part_record)
            if draft_message is None:
                continue
            target = draft_message
            if split and _synthetic(part):
                if injected is None:
                    injected = self.draft.add_message(
                        DraftMessage(role="user", authored=False, time_ms=draft_message.time_ms)
                    )
                target = injected
            part_record.message = part_record.message or target
            for block in part_blocks:
                self.draft.add_block(target, block)

    def _part_blocks(self, part: dict[str, Any]) -> list[DraftBlock]:
        kind = as_str(part.get("type"))
        text = as_str(part.get("text"))
        if kind == "text":
            return [DraftBlock("text", text=text)] if text else []
        if kind == "reasoning":
            return [DraftBlock("thinking", text=text)]
        if kind == "tool":
            return self._tool(part)
        if kind == "file":
            return [_file_block(part)]
        if kind == "subtask":
            return _subtask_blocks(part)
        if kind in SILENT_PARTS:
            return []
        self.result.skipped[f"{FORMAT}:part/{kind or '(untyped)'}"] += 1
        return [DraftBlock("text", text=text)] if text else []

    def _part_report(self, kind: str, part: dict[str, Any], record: DraftRecord) -> None:
        if kind == "patch":
            files = [name for name in (as_str(name) for name in as_list(part.get("files"))) if name]
            if files:
                record.notes.append("files changed: " + ", ".join(files))
        elif kind == "retry":
            error = as_dict(part.get("error"))
            detail = as_str(as_dict(error.get("data")).get("message")) or as_str(error.get("name")) or "error"
            attempt = as_count(part.get("attempt"))
            text = f"API error (retry {attempt}): {detail}" if attempt else f"API error (retry): {detail}"
            self.draft.record("api_error", to_ms(as_dict(part.get("time")).get("created")), text, failed=True)

    def _tool(self, part: dict[str, Any]) -> list[DraftBlock]:
        name = as_str(part.get("tool"))
        call_id = as_str(part.get("callID")) or as_str(part.get("id"))
        state = as_dict(part.get("state"))
        tool_input = as_dict(state.get("input"))
        use = tool_use_block(name, call_id, tool_input)
        use.path = use.path or patch_path(as_str(tool_input.get("patchText")))
        use.text = use.text or as_str(state.get("title"))
        if name.lower() == "task":
            self.draft.dispatches[call_id] = _dispatch(state, tool_input)
        status = as_str(state.get("status"))
        if status in ("pending", "running"):
            return [use]
        if status not in ("completed", "error"):
            self.result.skipped[f"{FORMAT}:tool-status/{status or '(none)'}"] += 1
            return [use]
        return [use, _tool_result(name, call_id, state), *_attachments(state)]

    def _outcome(self, message: _Message, draft_message: DraftMessage | None, time_ms: int) -> None:
        """The reply's error (an aborted turn or an API error) and, for a summary, its compaction."""
        info = message.info
        seq = draft_message.seq if draft_message is not None else -1
        error = as_dict(info.get("error"))
        if message.role == "assistant" and info.get("summary") is True and not error:
            trigger = self.triggers.get(as_str(info.get("parentID")), "")
            self.draft.compactions.append(DraftCompaction(time_ms, seq, trigger))
            self.draft.record("compaction", time_ms, "context compacted", message_seq=seq)
        if not error:
            return
        name = as_str(error.get("name"))
        detail = as_str(as_dict(error.get("data")).get("message"))
        if name == ABORTED:
            text = f"turn aborted ({detail})" if detail else "turn aborted"
            self.draft.record("turn_aborted", time_ms, text, message_seq=seq)
        else:
            text = ": ".join(part for part in (name, detail) if part)
            text = f"API error: {text}" if text else "API error"
            self.draft.record("api_error", time_ms, text, failed=True, message_seq=seq)

    def _revert(self, messages: list[_Message]) -> None:
        """`info.revert` replaces its message and what follows (from its part, when it names one)."""
        message_id = as_str(self.revert.get("messageID"))
        part_id = as_str(self.revert.get("partID"))
        ids = [message.id for message in messages]
        if not message_id or message_id not in ids:
            return
        index = ids.index(message_id)
        keys = self.session_record.replaces_keys
        first = messages[index]
        if part_id:
            ids = [as_str(part.get("id")) for part in first.parts]
            start = ids.index(part_id) if part_id in ids else len(ids)
            keys.extend(f"part:{pid}" for pid in ids[start:])
        else:
            keys.append(f"message:{first.id}")
            keys.extend(f"part:{as_str(part.get('id'))}" for part in first.parts)
        for message in messages[index + 1 :]:
            keys.append(f"message:{message.id}")
            keys.extend(f"part:{as_str(part.get('id'))}" for part in message.parts)


def _sent(message: _Message) -> bool:
    """Whether OpenCode sends the message to the model: it has parts and, for a reply with an error,
    was aborted after producing more than reasoning."""
    if not message.parts or message.role not in ROLES:
        return False
    error = as_dict(message.info.get("error"))
    if message.role == "user" or not error:
        return True
    return as_str(error.get("name")) == ABORTED and any(
        kind not in ("step-start", "reasoning") for kind in message.part_types()
    )


def _part_sent(role: str, part: dict[str, Any]) -> bool:
    kind = as_str(part.get("type"))
    if kind not in SENT_PARTS.get(role, ()):
        return False
    if kind == "text":
        return part.get("ignored") is not True
    return kind != "file" or as_str(part.get("mime")) not in INJECTED_FILE_TYPES


def _synthetic(part: dict[str, Any]) -> bool:
    return as_str(part.get("type")) == "text" and part.get("synthetic") is True


def _typed(message: _Message) -> bool:
    """A prompt someone typed or attached to: a text part OpenCode did not inject, or a file."""
    return any(
        (kind == "text" and not _synthetic(part) and as_str(part.get("text"))) or kind in ("file", "subtask")
        for part, kind in zip(message.parts, message.part_types(), strict=True)
    )


def _part_time(part: dict[str, Any]) -> int:
    times = as_dict(part.get("time")) or as_dict(as_dict(part.get("state")).get("time"))
    return to_ms(times.get("start")) or to_ms(times.get("created"))


def _add_usage(draft_message: DraftMessage, message: _Message) -> None:
    steps = [
        as_dict(part.get("tokens"))
        for part, kind in zip(message.parts, message.part_types(), strict=True)
        if kind == "step-finish" and isinstance(part.get("tokens"), dict)
    ]
    for tokens in steps or [as_dict(message.info.get("tokens"))]:
        cache = as_dict(tokens.get("cache"))
        draft_message.input_tokens += as_count(tokens.get("input"))
        draft_message.output_tokens += as_count(tokens.get("output")) + as_count(tokens.get("reasoning"))
        draft_message.cache_read_tokens += as_count(cache.get("read"))
        draft_message.cache_write_tokens += as_count(cache.get("write"))
    draft_message.cost_usd = as_cost(message.info.get("cost"))  # the whole reply's (its steps' costs summed)


def _tool_result(name: str, call_id: str, state: dict[str, Any]) -> DraftBlock:
    metadata = as_dict(state.get("metadata"))
    exit_code = metadata.get("exit")
    exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
    if as_str(state.get("status")) == "error":
        text = "\n".join(text for text in (as_str(metadata.get("output")), as_str(state.get("error"))) if text)
        failed = True
    else:
        text = as_str(state.get("output"))
        failed = bool(exit_code)
    return DraftBlock(
        "tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed, exit_code=exit_code
    )


def _attachments(state: dict[str, Any]) -> list[DraftBlock]:
    return [_file_block(as_dict(item)) for item in as_list(state.get("attachments")) if isinstance(item, dict)]


def _file_block(part: dict[str, Any]) -> DraftBlock:
    """An image by its MIME type, any other file by its name: the data itself is never kept."""
    mime = as_str(part.get("mime"))
    if mime.startswith("image/"):
        return DraftBlock("image", media_type=mime)
    url = as_str(part.get("url"))
    name = (
        as_str(part.get("filename"))
        or as_str(as_dict(part.get("source")).get("path"))
        or (url.removeprefix("file://") if not url.startswith("data:") else "")
    )
    text = f"file: {name or 'attachment'}" + (f" ({mime})" if mime else "")
    return DraftBlock("text", text=text)


def _subtask_blocks(part: dict[str, Any]) -> list[DraftBlock]:
    agent = as_str(part.get("agent"))
    header = " ".join(text for text in (f"@{agent}" if agent else "", as_str(part.get("description"))) if text)
    text = "\n\n".join(text for text in (header, as_str(part.get("prompt"))) if text)
    return [DraftBlock("text", text=text)] if text else []


def _dispatch(state: dict[str, Any], tool_input: dict[str, Any]) -> DraftDispatch:
    metadata = as_dict(state.get("metadata"))
    times = as_dict(state.get("time"))
    start, end = to_ms(times.get("start")), to_ms(times.get("end"))
    return DraftDispatch(
        child_native_id=as_str(metadata.get("sessionId")),
        agent=as_str(tool_input.get("subagent_type")),
        status=as_str(state.get("status")),
        duration_ms=end - start if end > start else 0,
        tool_uses=len(as_list(metadata.get("summary"))),
        model=as_str(as_dict(metadata.get("model")).get("modelID")),
    )
