"""Cline and Roo Code task folders (the VS Code extensions' `globalStorage/<extension>/tasks/<taskId>/`).

A task folder holds `api_conversation_history.json` (the Anthropic-style messages sent to the model: a
JSON array of {role, content[], ts?}), `ui_messages.json` (the chat panel's records {ts, type: say |
ask, say/ask, text, …}), `task_metadata.json` (files in context, model usage, the extension version)
and, in newer Roo Code, `history_item.json` (the task's history entry). Copies flatten the folder into
`<prefix>__api_conversation_history.json` and so on; a sibling is the same folder's file, or the file
whose name has the same prefix with the other suffix.

The session is the task: `cline-task:<taskId>` or `roo-code-task:<taskId>`, made from the history
file; the UI messages, task metadata and history item beside it only add what the history lacks.
A ui_messages.json, task_metadata.json or history_item.json parsed itself makes no session when a
history is beside it (counted as `<format>:ui-messages`, `:task-metadata`, `:history-item`): the
folder is one session, read once from its history. A ui_messages.json with no readable history beside
it is a session of its own, read from the UI transcript: each `api_req_started` carries the request
text (the user message of that turn: task, tool results, feedback) and the records after it (reasoning,
text, tool / command / MCP / browser asks, completion) are the reply.

Task id (native id): the history item's `id` when Roo wrote one; else the last UUID or epoch-ms number
in the folder name (a file named exactly `api_conversation_history.json`) or in the flattened prefix
(`…__exported_task_1769064454592__…` -> `1769064454592`); else a short sha256 of the task prompt. The
history and UI files carry no task id of their own: Cline's id is the task's start time, but its first
UI record is stamped some milliseconds later, and Roo's UUID appears in neither.

Cline or Roo Code, by content: Roo Code's environment details carry `# Current Cost`, a mode `<slug>`
or `# Current Workspace Directory`, its history may hold condense / truncation fields, its UI records
`isProtected` / `isAnswered` / `apiProtocol` and say kinds only Roo writes (subtask_result,
checkpoint_saved, …), its file context entries `roo_read_date`; anything else is Cline (Roo Code
forked Cline, so an old history without marks reads as Cline).

- roles: user and assistant; a standalone `{type: reasoning}` item (Roo) is an assistant's thinking.
- user messages: the human's words sit in wrappers the extension writes (`<task>`, `<feedback>`,
  `<answer>`, `<user_message>`): their inner text is the prompt and makes the message authored. The
  template around them (resumption notices), `<environment_details>` and reminders (the to-do list's)
  are injected text: not the human's words, not the title and not searchable text; they stay in the
  message's raw event (docs/sessions.md#events) and name the cwd and, in Roo Code, the model.
- tool results are user text blocks `[<tool> for '<arg>'] Result:` (Roo Code splits the header from
  the body: the following blocks continue it), `Tool [x] was not executed …` (failed), or native
  `tool_result` blocks. Each is paired with the earliest unanswered call of the same tool in the last
  assistant message (a second result of an answered call, Roo's `new_task` acknowledgement, names it
  again). A result is failed for a tool error, a denial, a missing parameter, an `<error>`, a JSON
  `{status: error | denied}` or a nonzero `Exit code: N` (Roo Code's command header: the exit code;
  Cline's `Command executed.` records none). The human's words a result carries (an answer, feedback)
  are read only from the extension's templates, never from a file's content that holds such tags.
- assistant messages: text, thinking (`thinking`, Roo's `reasoning` block, else the UI's `reasoning`
  records of that reply: Roo Code keeps reasoning there only, Cline for an interrupted reply), native
  `tool_use` blocks, and the XML tool calls older versions
  write inside the text (`<read_file><path>…</path></read_file>`, any known tool name or one a result
  names), `<thinking>` sections. Paths come from `path`, `absolutePath` or a nested `<path>`.
- tokens: each `api_req_started` (tokensIn, tokensOut, cacheReads, cacheWrites) goes to the reply of
  its request; without one, the message's `metrics.tokens` (prompt, completion, cached); so do the
  requests' `cost`s (the reply's `cost_usd`). Model: `modelInfo.modelId`, else the UI record's, else
  the environment's `<model>`, else task_metadata's `model_usage` at that time.
- times: the message's `ts`; else (Cline before per-message ts) the UI: a message's time is the last UI
  record written before it (`conversationHistoryIndex` links them; without it, times, else order).
- events: an `attempt_completion` call is turn_completed; `[Response interrupted by user]` turn_aborted;
  `[Response interrupted by API Error]`, UI `api_req_failed` / `error` records and failed streams
  api_error; a Roo `isSummary` message a compaction.
- lineage: a Roo history item's `parentTaskId` is the parent session; its `childIds` name the tasks its
  `new_task` calls started, in order, when they are as many.
- tolerance: unknown content blocks, roles and UI kinds are counted (`<format>:content/<type>`,
  `:message/<role>`, `:ui/<kind>`); a cut or unreadable file beside the history is an issue of that
  file and the session is read without it; a cut history is no JSON (an unknown file), so the
  ui_messages.json beside it is then the task.

Raw log events (docs/sessions.md#events): every history message is a surface node (`<format>:message/<role>`), keyed
`message:<index>` and its calls `call:<id>` (results cite them). Roo's condense summary and truncation
marker replace the messages that point at them (`condenseParent`, `truncationParent`); a Cline
`conversationHistoryDeletedRange` replaces the dropped messages. The metadata, the history item and
every UI record are log-only events (`<format>:task-metadata`, `:history-item`, `:ui/<say|ask>/<kind>`),
placed after the history message they follow. In a UI-only session, a request and the first record of
each reply are the nodes that carry the messages.
"""

from __future__ import annotations

import bisect
import hashlib
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
    json_or_none,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import tool_use_block

CLINE = "cline"
ROO_CODE = "roo-code"
FORMATS = (CLINE, ROO_CODE)
ORIGINS = {CLINE: "cline-task", ROO_CODE: "roo-code-task"}

HISTORY = "history"
UI = "ui-messages"
METADATA = "task-metadata"
HISTORY_ITEM = "history-item"
FILE_NAMES = {
    HISTORY: "api_conversation_history.json",
    UI: "ui_messages.json",
    METADATA: "task_metadata.json",
    HISTORY_ITEM: "history_item.json",
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Tool names of both extensions, for XML calls written inside assistant text.
KNOWN_TOOLS = _words(
    "access_mcp_resource act_mode_respond apply_diff apply_patch ask_followup_question attempt_completion "
    "browser_action codebase_search condense edit_file execute_command fetch_instructions "
    "generate_explanation generate_image insert_content list_code_definition_names list_files "
    "load_mcp_documentation new_rule new_task plan_mode_respond read_file replace_in_file report_bug "
    "run_slash_command search_and_replace search_files search_replace summarize_task switch_mode "
    "update_todo_list use_mcp_tool use_skill use_subagents web_fetch web_search write_to_file"
)
# UI `tool` record names -> the API tool they show (others: camelCase -> snake_case).
UI_TOOLS = {
    "editedExistingFile": "replace_in_file",
    "newFileCreated": "write_to_file",
    "appliedDiff": "apply_diff",
    "listFilesTopLevel": "list_files",
    "listFilesRecursive": "list_files",
    "finishTask": "attempt_completion",
}
UI_KINDS = _words(
    "act_mode_respond api_req_deleted api_req_failed api_req_finished api_req_rate_limit_wait "
    "api_req_retried api_req_retry_delayed api_req_started auto_approval_max_req_reached browser_action "
    "browser_action_launch browser_action_result checkpoint_created checkpoint_saved clineignore_error "
    "codebase_search_result command command_output command_permission_denied completion_result compaction "
    "condense condense_context condense_context_error conditional_rules_applied deleted_api_reqs "
    "diff_error error error_retry followup generate_explanation hook_output_stream hook_status image info "
    "load_mcp_documentation mcp_notification mcp_server_request_started mcp_server_response "
    "mistake_limit_reached new_task plan_completion_result plan_mode_respond reasoning report_bug "
    "resume_completed_task resume_task rooignore_error shell_integration_warning "
    "shell_integration_warning_with_suggestion sliding_window_truncation subagent subagent_usage "
    "subtask_result summarize_task task task_progress text too_many_tools_warning tool use_mcp_server "
    "use_subagents user_edit_todos user_feedback user_feedback_diff"
)
ROO_UI_KINDS = _words(
    "subtask_result checkpoint_saved api_req_deleted api_req_retry_delayed api_req_rate_limit_wait "
    "condense_context condense_context_error sliding_window_truncation codebase_search_result "
    "user_edit_todos rooignore_error too_many_tools_warning auto_approval_max_req_reached"
)
ROO_UI_KEYS = ("isProtected", "isAnswered", "apiProtocol", "contextCondense", "contextTruncation")
ROO_HISTORY_KEYS = ("isSummary", "condenseId", "condenseParent", "truncationId", "truncationParent")
ERROR_UI_KINDS = frozenset({"api_req_failed", "error", "mistake_limit_reached", "condense_context_error"})
# UI records that are the reply of a request in a UI-only session (the rest repeat the next request).
REPLY_UI_KINDS = _words(
    "reasoning text completion_result followup tool command use_mcp_server browser_action_launch "
    "browser_action plan_mode_respond act_mode_respond new_task"
)
THINKING_TYPES = frozenset({"thinking", "reasoning", "redacted_thinking"})
# Roo Code keeps the param values of these tools verbatim, up to the last closing tag before the tool's end.
VERBATIM_PARAMS = frozenset({"content", "diff", "args", "result"})

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_EPOCH_ID = re.compile(r"(?<!\d)\d{10,16}(?!\d)")
_RESULT_HEADER = re.compile(r"\A\s*\[([A-Za-z_][\w-]*)\b(.*?)\] Result:[ \t]*\n?", re.DOTALL)
_NOT_EXECUTED = re.compile(
    r"\A\s*(?:Tool \[([\w-]+)\] was not executed|Skipping tool \[([\w-]+)[^\]\n]*\]"
    r"|Tool was interrupted and not executed)"
)
_HUMAN = re.compile(r"<(task|feedback|answer|user_message)>\n?(.*?)\n?</\1>", re.DOTALL)
_ENVIRONMENT = "<environment_details>"
_CWD = re.compile(r"^# Current (?:Working|Workspace) Directory \((.+?)\) Files", re.MULTILINE)
_RESUMED_CWD = re.compile(r"The current working directory is now '([^'\n]+)'")
_MODEL = re.compile(r"<model>([^<\n]+)</model>")
_ROO_ENVIRONMENT = re.compile(r"^# Current Cost$|<slug>[^<\n]*</slug>|^# Current Workspace Directory \(", re.MULTILINE)
_EXIT_CODE = re.compile(r"\bExit code: (-?\d{1,6})\b|\[Command completed with exit code (-?\d{1,6})\]")
_INTERRUPTED = re.compile(r"\[Response interrupted by (user|API Error)[^\]\n]*\]")
_NESTED_PATH = re.compile(r"<path>\s*([^<\n]+?)\s*</path>")
_PARAM = re.compile(r"<([a-z][a-z0-9_]*)>")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_FAILURE_OPENERS = (
    "The tool execution failed",
    "The user denied this operation",
    "Missing value for required parameter",
    "[ERROR]",
    "Error:",
    "Unknown tool",
)
_ANSWER_OPENERS = ("<answer>", "<feedback>", "<user_message>", "The user ")
_HEAD_CHARS = 600
_SUMMARY_CHARS = 300


def recognize(document: Any) -> str:
    """The format name when the parsed JSON `document` is one of a task folder's files, else ""."""
    kind = _file_kind(document)
    if kind == HISTORY:
        return _history_format(document)
    if kind == UI:
        return _ui_format(document)
    if kind == METADATA:
        entries = [as_dict(entry) for entry in as_list(document.get("files_in_context"))]
        return ROO_CODE if any("roo_read_date" in entry for entry in entries) else CLINE
    return ROO_CODE if kind == HISTORY_ITEM else ""


def _file_kind(document: Any) -> str:
    if isinstance(document, list):
        first = document[0] if document and isinstance(document[0], dict) else None
        if first is None:
            return ""
        if first.get("role") == "user" and _opens_task(first.get("content")):
            return HISTORY
        if first.get("type") in ("say", "ask") and isinstance(first.get(first["type"]), str) and to_ms(first.get("ts")):
            return UI
        return ""
    if not isinstance(document, dict):
        return ""
    if isinstance(document.get("files_in_context"), list) and (
        "model_usage" in document or "environment_history" in document
    ):
        return METADATA
    if isinstance(document.get("id"), str) and isinstance(document.get("task"), str) and "tokensIn" in document:
        return HISTORY_ITEM
    return ""


def _opens_task(content: Any) -> bool:
    """A task's first message: its text opens with the task, a resumption, or the environment details."""
    texts = [content] if isinstance(content, str) else [as_str(as_dict(item).get("text")) for item in as_list(content)]
    return any("<task>" in text or _ENVIRONMENT in text or "[TASK RESUMPTION]" in text for text in texts[:6])


def _history_format(messages: list[Any]) -> str:
    first = as_dict(messages[0]).get("content")
    texts = [first] if isinstance(first, str) else [as_str(as_dict(item).get("text")) for item in as_list(first)]
    if any(_ENVIRONMENT in text and _ROO_ENVIRONMENT.search(text) for text in texts):
        return ROO_CODE
    if any(isinstance(message, dict) and any(key in message for key in ROO_HISTORY_KEYS) for message in messages):
        return ROO_CODE
    return CLINE


def _ui_format(records: list[Any]) -> str:
    for record in records:
        record = as_dict(record)
        if "modelInfo" in record or "lastCheckpointHash" in record:
            return CLINE
        if any(key in record for key in ROO_UI_KEYS) or _ui_kind(record) in ROO_UI_KINDS:
            return ROO_CODE
    return CLINE


def _ui_kind(record: dict[str, Any]) -> str:
    return as_str(record.get(as_str(record.get("type")))) or "(untyped)"


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    fmt = recognize(document) or CLINE
    kind = _file_kind(document)
    if kind == HISTORY:
        draft = _Task(fmt, path, result).from_history(document)
    elif kind == UI and _readable_history(path) is None:
        draft = _Task(fmt, path, result).from_ui(document)
    else:
        result.skipped[f"{fmt}:{kind or 'unknown-file'}"] += 1
        return result
    if draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{fmt}:empty-task"] += 1
    return result


# ------------------------------------------------------------------ the files beside


def _sibling(path: str, kind: str) -> Path | None:
    """The file of `kind` beside `path`: same folder and name, or the same prefix with the other suffix."""
    name = Path(path).name
    for own in FILE_NAMES.values():
        if name.endswith(own):
            return Path(path).with_name(name[: -len(own)] + FILE_NAMES[kind])
    return None


def _read_json(file: Path) -> Any:
    """The parsed file; raises OSError or orjson.JSONDecodeError."""
    return orjson.loads(strip_bom(file.read_bytes()))


def _readable_history(path: str) -> Path | None:
    """The history beside a UI file, when it is one this module reads (else the UI file is the session)."""
    file = _sibling(path, HISTORY)
    if file is None or not file.is_file():
        return None
    try:
        return file if _file_kind(_read_json(file)) == HISTORY else None
    except (OSError, orjson.JSONDecodeError):
        return None


def _load_sibling(path: str, kind: str, result: SourceResult) -> Any:
    """The parsed sibling of `kind` if it is there and of that kind; unreadable or wrong ones are issues."""
    file = _sibling(path, kind)
    if file is None or not file.is_file():
        return None
    try:
        value = _read_json(file)
    except OSError as error:
        result.issues.append(issue(str(file), 0, "unreadable", error.strerror or str(error)))
        return None
    except orjson.JSONDecodeError as error:
        result.issues.append(issue(str(file), 0, "malformed_json", f"not JSON: {error}"))
        return None
    if _file_kind(value) != kind:
        result.issues.append(issue(str(file), 0, "invalid_record", f"not a {FILE_NAMES[kind]} of a task"))
        return None
    return value


def _task_id(path: str, item: dict[str, Any], prompt: str) -> str:
    """The task id: the history item's, else the one the folder or the flattened prefix names, else a
    digest of the task prompt (module docstring)."""
    if as_str(item.get("id")):
        return item["id"]
    file = Path(path)
    for own in FILE_NAMES.values():
        if file.name == own:
            found = _id_in(file.parent.name)
        elif file.name.endswith(own):
            found = _id_in(file.name[: -len(own)])
        else:
            continue
        if found:
            return found
    return "sha-" + hashlib.sha256(prompt.encode()).hexdigest()[:16]


def _id_in(name: str) -> str:
    """The last UUID (Roo Code) or else epoch-ms number (Cline) in a folder name or file prefix."""
    found = _UUID.findall(name) or _EPOCH_ID.findall(name)
    return found[-1] if found else ""


# ------------------------------------------------------------------ the task


@dataclass(slots=True)
class _Turn:
    """What the UI says about the history message at one index."""

    time_ms: int = 0
    model: str = ""
    usage: list[int] | None = None  # input, output, cache read, cache write
    cost_usd: float = 0.0  # the requests' costs the UI recorded
    thinking: list[tuple[DraftRecord, str]] = field(default_factory=list)


@dataclass(slots=True)
class _UiRecord:
    data: dict[str, Any]
    record: DraftRecord
    anchor: int = -1  # the history message it follows (-1: before the first)
    consumed: bool = False  # begun with a history message (its reasoning is that message's thinking)


class _Task:
    def __init__(self, fmt: str, path: str, result: SourceResult) -> None:
        self.fmt = fmt
        self.path = path
        self.result = result
        self.draft = DraftSession(origin=ORIGINS[fmt], native_id="", source_path=path)
        self.metadata = as_dict(_load_sibling(path, METADATA, result))
        self.item = as_dict(_load_sibling(path, HISTORY_ITEM, result))
        self.tools = set(KNOWN_TOOLS)
        self.tool_pattern = re.compile("")
        self.pending: list[DraftBlock] = []  # calls of the last assistant message not answered yet
        self.last_calls: list[DraftBlock] = []
        self.environment_model = ""
        self.turns: dict[int, _Turn] = {}
        self.condensed: dict[str, list[str]] = {}  # condenseId / truncationId -> keys of the messages it hides
        self.history_size = 0  # the history's messages a UI record's deleted range can name

    # ---------------------------------------------------------------- entry points

    def from_history(self, messages: list[Any]) -> DraftSession:
        self._start(messages)
        self.history_size = len(messages)
        ui_data = _load_sibling(self.path, UI, self.result)
        ui = [self._ui_record(as_dict(data)) for data in as_list(ui_data)]
        self._anchor(ui, messages)
        following: dict[int, list[_UiRecord]] = {}
        for entry in ui:
            if not entry.consumed:
                following.setdefault(entry.anchor, []).append(entry)
        for entry in following.get(-1, []):
            self._log(entry)
        for index, message in enumerate(messages):
            self._history_message(index, message)
            for entry in following.get(index, []):
                self._log(entry)
        return self._finish()

    def from_ui(self, records: list[Any]) -> DraftSession:
        """A session from the UI transcript alone (module docstring)."""
        ui = [self._ui_record(as_dict(data)) for data in records]
        messages, owners, self.turns = _ui_conversation(ui)
        self._start(messages)
        index_of = {id(owner): n for n, owner in enumerate(owners)}
        for entry in ui:
            index = index_of.get(id(entry))
            if index is None:
                self._log(entry)
                continue
            entry.record.node = True
            self._message(index, messages[index], entry.record)
            self._ui_event(entry)
        return self._finish()

    # ---------------------------------------------------------------- shared

    def _start(self, messages: list[Any]) -> None:
        prompt = next((text for text in _user_texts(messages[:1]) if text), "")
        human = _HUMAN.search(prompt)
        self.draft.native_id = _task_id(self.path, self.item, human.group(2) if human else prompt)
        parent = as_str(self.item.get("parentTaskId"))
        if parent:
            self.draft.parent_session_id = f"{self.draft.origin}:{parent}"
        self._set_cwd(as_str(self.item.get("workspace")))
        for text in _user_texts(messages):
            header = _RESULT_HEADER.match(text)
            if header:
                self.tools.add(header.group(1))
        names = "|".join(sorted(re.escape(name) for name in self.tools))
        self.tool_pattern = re.compile(rf"<(thinking|{names})>")
        for index, message in enumerate(messages):
            message = as_dict(message)
            for key, owner in (("condenseParent", "condense"), ("truncationParent", "truncation")):
                if as_str(message.get(key)):
                    self.condensed.setdefault(f"{owner}:{message[key]}", []).append(f"message:{index}")
        for name, value in (("task-metadata", self.metadata), ("history-item", self.item)):
            if value:
                record = DraftRecord(0, f"{self.fmt}:{name}", value, time_ms=to_ms(value.get("ts")))
                self.draft.records.append(record)
                self.draft.observe_time(record.time_ms)
                for usage in as_list(value.get("model_usage")):
                    self.draft.observe_time(to_ms(as_dict(usage).get("ts")))

    def _finish(self) -> DraftSession:
        self.draft.current = None
        children = [as_str(child) for child in as_list(self.item.get("childIds"))]
        calls = [
            self.draft.messages[seq].blocks[index]
            for seq, index in self.draft.tool_uses
            if self.draft.messages[seq].blocks[index].tool_name == "new_task"
        ]
        if children and len(children) == len(calls):
            for call, child in zip(calls, children, strict=True):
                mode = as_str(as_dict(json_or_none(call.tool_input_json)).get("mode"))
                self.draft.dispatches[call.tool_use_id] = DraftDispatch(child_native_id=child, agent=mode)
        return self.draft

    def _set_cwd(self, cwd: str) -> None:
        if cwd and not self.draft.cwd:
            self.draft.cwd = cwd
            self.draft.repo = folder_name(cwd)

    # ---------------------------------------------------------------- UI records

    def _ui_record(self, data: dict[str, Any]) -> _UiRecord:
        kind = _ui_kind(data)
        if kind not in UI_KINDS:
            self.result.skipped[f"{self.fmt}:ui/{kind}"] += 1
        record = DraftRecord(0, f"{self.fmt}:ui/{as_str(data.get('type')) or '(untyped)'}/{kind}", data)
        record.time_ms = to_ms(data.get("ts"))
        deleted = as_list(data.get("conversationHistoryDeletedRange"))
        if len(deleted) == 2 and all(isinstance(end, int) and not isinstance(end, bool) for end in deleted):
            start, end = max(deleted[0], 0), min(deleted[1], self.history_size - 1)
            record.replaces_keys.extend(f"message:{n}" for n in range(start, end + 1))
        return _UiRecord(data, record)

    def _anchor(self, ui: list[_UiRecord], messages: list[Any]) -> None:
        """Place each UI record after the history message it follows, and give each message what the UI
        says about it (module docstring: times, tokens, model, Roo's reasoning)."""
        roles = [as_str(as_dict(message).get("role")) for message in messages]
        replies = [n for n, role in enumerate(roles) if role == "assistant"]
        thinks = {
            n
            for n in replies
            if any(
                as_str(item.get("type")) in THINKING_TYPES
                for item in _content_items(as_dict(messages[n]).get("content"))
            )
        }
        stamps = [to_ms(as_dict(message).get("ts")) for message in messages]
        timed = all(stamps) and stamps == sorted(stamps)
        requests = 0
        for entry in ui:
            index = entry.data.get("conversationHistoryIndex")
            kind = _ui_kind(entry.data)
            if kind == "api_req_started":
                requests += 1
            if isinstance(index, int) and not isinstance(index, bool):
                entry.anchor = min(max(index, -1), len(messages) - 1)
            elif timed:
                entry.anchor = bisect.bisect_right(stamps, entry.record.time_ms) - 1
            elif requests:
                entry.anchor = (replies[requests - 1] if requests <= len(replies) else len(messages)) - 1
        for entry in ui:
            turn = self.turns.setdefault(entry.anchor + 1, _Turn())
            turn.time_ms = max(turn.time_ms, entry.record.time_ms)
            position = bisect.bisect_right(replies, entry.anchor)
            if position == len(replies):
                continue
            reply = replies[position]
            answer = self.turns.setdefault(reply, _Turn())
            usage = _usage(entry.data)
            if usage is not None:
                answer.usage = [a + b for a, b in zip(answer.usage or [0, 0, 0, 0], usage, strict=True)]
            answer.cost_usd += _cost(entry.data)
            answer.model = answer.model or as_str(as_dict(entry.data.get("modelInfo")).get("modelId"))
            text = as_str(entry.data.get("text"))
            if _ui_kind(entry.data) == "reasoning" and text and reply == entry.anchor + 1 and reply not in thinks:
                answer.thinking.append((entry.record, text))
                entry.consumed = True  # begun with its reply, as the record of its thinking block

    def _log(self, entry: _UiRecord) -> None:
        """A UI record as a log-only event, and the runtime event it reports."""
        self.draft.begin(entry.record)
        self._ui_event(entry)

    def _ui_event(self, entry: _UiRecord) -> None:
        data = entry.data
        time_ms = entry.record.time_ms
        self.draft.observe_time(time_ms)
        kind = _ui_kind(data)
        if kind in ERROR_UI_KINDS:
            text = as_str(data.get("text"))
            self.draft.record("api_error", time_ms, f"{kind}: {text}" if text else kind, failed=True)
        elif kind == "api_req_started":
            info = as_dict(json_or_none(as_str(data.get("text"))))
            failure = as_str(info.get("streamingFailedMessage"))
            if failure or info.get("cancelReason") == "streaming_failed":
                self.draft.record("api_error", time_ms, f"API error: {failure or 'streaming failed'}", failed=True)
            elif info.get("cancelReason") == "user_cancelled":
                self.draft.record("turn_aborted", time_ms, "turn aborted (user_cancelled)")

    # ---------------------------------------------------------------- history messages

    def _history_message(self, index: int, message: Any) -> None:
        data = as_dict(message)
        role = as_str(data.get("role")) or as_str(data.get("type")) or "(none)"
        record = DraftRecord(0, f"{self.fmt}:message/{role}", message, node=True)
        self._message(index, data, record)

    def _message(self, index: int, data: dict[str, Any], record: DraftRecord) -> None:
        turn = self.turns.get(index) or _Turn()
        time_ms = to_ms(data.get("ts")) or turn.time_ms
        record.time_ms = record.time_ms or time_ms
        record.keys.append(f"message:{index}")
        for owner, key in (("condense", "condenseId"), ("truncation", "truncationId")):
            if as_str(data.get(key)):
                record.replaces_keys.extend(self.condensed.get(f"{owner}:{data[key]}", []))
        self.draft.begin(record)
        self.draft.observe_time(time_ms)
        role = as_str(data.get("role"))
        if role == "user":
            self._user(data, time_ms)
        elif role == "assistant" or data.get("type") == "reasoning":
            self._assistant(index, data, time_ms, turn)
        else:
            record.node = False
            self.result.skipped[f"{self.fmt}:message/{role or as_str(data.get('type')) or '(none)'}"] += 1
            return
        if data.get("isSummary") is True:
            seq = len(self.draft.messages) - 1
            self.draft.messages[seq].authored = False
            self.draft.compactions.append(DraftCompaction(time_ms, seq))
            self.draft.record("compaction", time_ms, "context condensed", message_seq=seq)

    def _user(self, data: dict[str, Any], time_ms: int) -> None:
        message = self.draft.add_message(DraftMessage(role="user", authored=False, time_ms=time_ms))
        result: DraftBlock | None = None
        for item in _content_items(data.get("content")):
            kind = as_str(item.get("type"))
            if kind == "text":
                result = self._user_text(message, as_str(item.get("text")), result)
            elif kind == "image":
                self.draft.add_block(message, _image(item))
            elif kind == "tool_result":
                self._close(result)
                result = None
                self._native_result(message, item)
            else:
                self.result.skipped[f"{self.fmt}:content/{kind or '(untyped)'}"] += 1
        self._close(result)

    def _user_text(self, message: DraftMessage, text: str, result: DraftBlock | None) -> DraftBlock | None:
        """One user text block; returns the tool result its following blocks continue (Roo Code)."""
        header = _RESULT_HEADER.match(text)
        skipped = None if header else _NOT_EXECUTED.match(text)
        if header or skipped or text.lstrip().startswith(_ENVIRONMENT):
            self._close(result)
            result = None
        if header:
            body = text[header.end() :]
            result = self._result(message, header.group(1), body, "")
            self._answer(message, body)
            return result
        if skipped:
            name = skipped.group(1) or skipped.group(2) or ""
            block = self._result(message, name, text, "")
            block.is_error = True
            return None
        if text.lstrip().startswith(_ENVIRONMENT):
            self._environment(text)
            return None
        if result is not None:
            result.text = f"{result.text}\n\n{text}" if result.text else text
            self._answer(message, text)
            return result
        if not self._human(message, text, keep_rest=True) and text:
            self._environment(text)
        return None

    def _human(self, message: DraftMessage, text: str, keep_rest: bool) -> bool:
        """The human's words in `text` (inside the extension's wrappers) as prompt text blocks; with
        `keep_rest`, the template around them too, in order. Whether there were any."""
        parts = [match for match in _HUMAN.finditer(text) if match.group(2).strip()]
        if not parts:
            return False
        position = 0
        for match in parts:
            if keep_rest and text[position : match.start()].strip():
                self._environment(text[position : match.start()].strip())
            self.draft.add_block(message, DraftBlock("text", text=match.group(2)))
            position = match.end()
        if keep_rest and text[position:].strip():
            self._environment(text[position:].strip())
        # A child task's first prompt is its parent agent's instruction, not something a human typed.
        message.authored = message.authored or not (self.draft.parent_session_id and message.seq == 0)
        return True

    def _answer(self, message: DraftMessage, text: str) -> None:
        """The human's words a tool result carries (an answer, feedback on a completion or a denial): only
        in the extension's own templates, so a file that happens to hold such tags is not read as one."""
        head = text.lstrip()
        if head.startswith(_ANSWER_OPENERS):
            self._human(message, text, keep_rest=False)
        elif head.startswith("{"):
            feedback = as_str(as_dict(json_or_none(head)).get("feedback"))
            if feedback.strip():
                self.draft.add_block(message, DraftBlock("text", text=feedback))
                message.authored = True

    def _environment(self, text: str) -> None:
        """Text the extension wrote into a user message (environment details, resumption notices, to-do
        reminders): the same boilerplate in every turn, never the human's words. It is read for the cwd
        and model it names and stays in the message's raw event, not in its text: counted as the human's
        words, a title or a search hit in every task, it would drown what the human wrote."""
        cwd = _CWD.search(text) or _RESUMED_CWD.search(text)
        if cwd:
            self._set_cwd(cwd.group(1))
        model = _MODEL.search(text) if _ENVIRONMENT in text else None
        if model:
            self.environment_model = model.group(1).strip()

    def _result(self, message: DraftMessage, name: str, text: str, tool_use_id: str) -> DraftBlock:
        call = self._take_call(name, tool_use_id)
        block = DraftBlock(
            "tool_result",
            text=text,
            tool_name=call.tool_name if call else name,
            tool_use_id=call.tool_use_id if call else tool_use_id,
        )
        if block.tool_use_id and self.draft.current is not None:
            self.draft.current.source_keys.append(f"call:{block.tool_use_id}")
        self.draft.add_block(message, block)
        return block

    def _take_call(self, name: str, tool_use_id: str) -> DraftBlock | None:
        """The call a result answers: by id; else the earliest unanswered call of that tool; else the
        last call of that tool (a second result of it); else the earliest unanswered call."""
        if tool_use_id:
            for n, call in enumerate(self.pending):
                if call.tool_use_id == tool_use_id:
                    return self.pending.pop(n)
            return next((call for call in self.last_calls if call.tool_use_id == tool_use_id), None)
        for n, call in enumerate(self.pending):
            if call.tool_name == name:
                return self.pending.pop(n)
        named = [call for call in self.last_calls if call.tool_name == name]
        if named:
            return named[-1]
        return self.pending.pop(0) if self.pending else None

    def _native_result(self, message: DraftMessage, item: dict[str, Any]) -> None:
        content = item.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else _content_items(content)
        text = "\n\n".join(as_str(part.get("text")) for part in parts if part.get("type") == "text")
        header = _RESULT_HEADER.match(text)
        block = self._result(
            message,
            header.group(1) if header else "",
            text[header.end() :] if header else text,
            as_str(item.get("tool_use_id")),
        )
        block.is_error = item.get("is_error") is True
        self._close(block)
        self._answer(message, block.text)
        for part in parts:
            if part.get("type") == "image":
                self.draft.add_block(message, _image(part))

    def _close(self, block: DraftBlock | None) -> None:
        """A result's exit code and failure, once its body is complete."""
        if block is None:
            return
        head = block.text.lstrip()[:_HEAD_CHARS]
        match = _EXIT_CODE.search(head) or _EXIT_CODE.search(block.text[-200:])
        if match and block.tool_name == "execute_command":
            block.exit_code = int(match.group(1) or match.group(2))
        block.is_error = block.is_error or bool(block.exit_code) or _failed(head)

    def _assistant(self, index: int, data: dict[str, Any], time_ms: int, turn: _Turn) -> None:
        info = as_dict(data.get("modelInfo"))
        model = as_str(info.get("modelId")) or turn.model or self.environment_model or self._usage_model(time_ms)
        message = DraftMessage(role="assistant", authored=True, time_ms=time_ms, model=model)
        usage = turn.usage or _metrics(data)
        message.input_tokens, message.output_tokens, message.cache_read_tokens, message.cache_write_tokens = usage
        message.cost_usd = turn.cost_usd
        own = self.draft.current
        self.draft.add_message(message)
        items = _content_items(data.get("content")) if "role" in data else [data]
        for record, text in turn.thinking:  # Roo Code's reasoning, kept in the UI only
            self.draft.begin(record)
            self.draft.observe_time(record.time_ms)
            self.draft.add_block(message, DraftBlock("thinking", text=text))
        self.draft.current = own
        calls: list[DraftBlock] = []
        for position, item in enumerate(items):
            kind = as_str(item.get("type"))
            if kind == "text":
                self._assistant_text(message, as_str(item.get("text")), f"{index}", calls)
            elif kind in THINKING_TYPES:
                self.draft.add_block(message, DraftBlock("thinking", text=_thinking_text(item)))
            elif kind == "tool_use":
                tool_input = item.get("input")
                call_id = as_str(item.get("id")) or as_str(item.get("call_id")) or f"{index}:{position}"
                calls.append(self._call(message, as_str(item.get("name")), call_id, tool_input))
            elif kind == "image":
                self.draft.add_block(message, _image(item))
            else:
                self.result.skipped[f"{self.fmt}:content/{kind or '(untyped)'}"] += 1
        self.pending = list(calls)
        self.last_calls = calls
        self._turn_events(message, calls)

    def _usage_model(self, time_ms: int) -> str:
        """The model task_metadata says was in use at `time_ms` (the first one before any)."""
        usages = [as_dict(usage) for usage in as_list(self.metadata.get("model_usage"))]
        usages = [usage for usage in usages if as_str(usage.get("model_id"))]
        model = as_str(usages[0].get("model_id")) if usages else ""
        for usage in usages:
            if time_ms and 0 < to_ms(usage.get("ts")) <= time_ms:
                model = usage["model_id"]
        return model

    def _assistant_text(self, message: DraftMessage, text: str, prefix: str, calls: list[DraftBlock]) -> None:
        """Text with the XML tool calls and `<thinking>` sections older versions write inside it."""
        position = 0
        while True:
            opening = self.tool_pattern.search(text, position) if "<" in text else None
            prose = text[position : opening.start() if opening else len(text)]
            if prose.strip():
                self.draft.add_block(message, DraftBlock("text", text=prose.strip("\n")))
            if opening is None:
                return
            name = opening.group(1)
            if name == "thinking":
                end = text.find("</thinking>", opening.end())
                body = text[opening.end() : end if end >= 0 else len(text)]
                self.draft.add_block(message, DraftBlock("thinking", text=body.strip()))
                position = end + len("</thinking>") if end >= 0 else len(text)
                continue
            params, position = _xml_params(text, opening.end(), name)
            calls.append(self._call(message, name, f"{prefix}:x{len(calls)}", params))

    def _call(self, message: DraftMessage, name: str, call_id: str, tool_input: Any) -> DraftBlock:
        tool_input = tool_input if isinstance(tool_input, dict) else {"input": tool_input}
        block = tool_use_block(name, call_id, tool_input)
        if not block.path:
            block.path = as_str(tool_input.get("absolutePath")) or _nested_path(tool_input)
        server = as_str(tool_input.get("server_name")) or as_str(tool_input.get("serverName"))
        if server:
            target = as_str(tool_input.get("tool_name")) or as_str(tool_input.get("toolName"))
            block.text = "/".join(part for part in (server, target or as_str(tool_input.get("uri"))) if part)
        elif not block.text:  # a question, a completion, a todo list: its first text says what it is
            first = next((value for value in tool_input.values() if isinstance(value, str) and value.strip()), "")
            block.text = first if len(first) <= _SUMMARY_CHARS else first[: _SUMMARY_CHARS - 1] + "…"
        if self.draft.current is not None:
            self.draft.current.keys.append(f"call:{call_id}")
        self.draft.add_block(message, block)
        return block

    def _turn_events(self, message: DraftMessage, calls: list[DraftBlock]) -> None:
        for block in message.blocks:
            interrupted = _INTERRUPTED.search(block.text) if block.type == "text" else None
            if interrupted and interrupted.group(1) == "user":
                self.draft.record("turn_aborted", message.time_ms, interrupted.group(), message_seq=message.seq)
            elif interrupted:
                self.draft.record(
                    "api_error", message.time_ms, interrupted.group(), failed=True, message_seq=message.seq
                )
        for call in calls:
            if call.tool_name == "attempt_completion":
                answer = as_str(as_dict(json_or_none(call.tool_input_json)).get("result"))
                text = f"turn completed: {answer}" if answer else "turn completed"
                self.draft.record("turn_completed", message.time_ms, text, message_seq=message.seq)


# ------------------------------------------------------------------ content helpers


def _content_items(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [item if isinstance(item, dict) else {"type": "(not an object)"} for item in as_list(content)]


def _user_texts(messages: list[Any]) -> list[str]:
    return [
        as_str(item.get("text"))
        for message in messages
        if as_dict(message).get("role") == "user"
        for item in _content_items(as_dict(message).get("content"))
        if item.get("type") == "text"
    ]


def _image(item: dict[str, Any]) -> DraftBlock:
    source = as_dict(item.get("source"))
    return DraftBlock("image", media_type=as_str(source.get("media_type")) or as_str(item.get("media_type")))


def _thinking_text(item: dict[str, Any]) -> str:
    text = as_str(item.get("thinking")) or as_str(item.get("text"))
    if text:
        return text
    return "\n".join(
        as_str(as_dict(part).get("text")) for part in as_list(item.get("summary")) if as_str(as_dict(part).get("text"))
    )


def _xml_params(text: str, start: int, name: str) -> tuple[dict[str, str], int]:
    """The params of an XML tool call opened at `start` and where the call ends (the end of the text
    when it is cut). A verbatim param (file content, a diff) runs to its last closing tag before the
    tool's closing tag, so content holding the tag itself is kept whole."""
    closing = f"</{name}>"
    params: dict[str, str] = {}
    position = start
    while True:
        opening = _PARAM.search(text, position)
        end = text.find(closing, position)
        if opening is None or (0 <= end < opening.start()):
            return params, end + len(closing) if end >= 0 else len(text)
        param = opening.group(1)
        param_end = text.find(f"</{param}>", opening.end())
        if param_end < 0:
            params[param] = text[opening.end() :].strip()
            return params, len(text)
        if param in VERBATIM_PARAMS:
            tool_end = text.find(closing, param_end)
            if tool_end >= 0:
                param_end = max(param_end, text.rfind(f"</{param}>", param_end, tool_end))
        value = text[opening.end() : param_end]
        params[param] = value.removeprefix("\n").removesuffix("\n") if param in VERBATIM_PARAMS else value.strip()
        position = param_end + len(param) + 3


def _nested_path(tool_input: dict[str, Any]) -> str:
    """The first `<path>` of a Roo Code multi-file `args` param."""
    args = tool_input.get("args")
    match = _NESTED_PATH.search(args) if isinstance(args, str) else None
    return match.group(1) if match else ""


def _failed(head: str) -> bool:
    if head.startswith(_FAILURE_OPENERS) or "Command execution was not successful" in head:
        return True
    if head.startswith(("<error>", "<files>", "<file>")) and "<error>" in head:
        return True
    if "ignore file settings" in head or "blocked by .rooignore" in head:
        return True
    if head.startswith("{"):
        decoded = json_or_none(head) if head.endswith("}") else None
        return isinstance(decoded, dict) and decoded.get("status") in ("error", "denied")
    return False


def _usage(data: dict[str, Any]) -> list[int] | None:
    """Tokens of an `api_req_started` record: input, output, cache read, cache write."""
    if _ui_kind(data) != "api_req_started":
        return None
    info = as_dict(json_or_none(as_str(data.get("text"))))
    keys = ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")
    if not any(key in info for key in keys):
        return None
    return [as_count(info.get(key)) for key in keys]


def _cost(data: dict[str, Any]) -> float:
    """The cost in US dollars an `api_req_started` record gives its request (0 when it gives none)."""
    if _ui_kind(data) != "api_req_started":
        return 0.0
    return as_cost(as_dict(json_or_none(as_str(data.get("text")))).get("cost"))


def _metrics(data: dict[str, Any]) -> list[int]:
    tokens = as_dict(as_dict(data.get("metrics")).get("tokens"))
    return [as_count(tokens.get("prompt")), as_count(tokens.get("completion")), as_count(tokens.get("cached")), 0]


# ------------------------------------------------------------------ a UI-only session


def _ui_conversation(ui: list[_UiRecord]) -> tuple[list[dict[str, Any]], list[_UiRecord], dict[int, _Turn]]:
    """The task's messages rebuilt from its UI records, each with the record that carries it and its
    time and tokens: a request's text is the user message of its turn, the reply records after it the
    assistant's (the tokens of the request)."""
    messages: list[dict[str, Any]] = []
    owners: list[_UiRecord] = []
    turns: dict[int, _Turn] = {}
    requests = any(_ui_kind(entry.data) == "api_req_started" for entry in ui)
    reply: dict[str, Any] | None = None
    usage: list[int] | None = None
    cost = 0.0
    for position, entry in enumerate(ui):
        data = entry.data
        kind = _ui_kind(data)
        if kind == "api_req_started":
            request = as_str(as_dict(json_or_none(as_str(data.get("text")))).get("request"))
            reply = None
            usage = _usage(data)
            cost = _cost(data)
            if request:
                turns[len(messages)] = _Turn(time_ms=entry.record.time_ms)
                messages.append({"role": "user", "content": _request_blocks(request)})
                owners.append(entry)
        elif kind in ("task", "text") and not requests and not messages:
            turns[0] = _Turn(time_ms=entry.record.time_ms)
            task = {"type": "text", "text": f"<task>\n{as_str(data.get('text'))}\n</task>"}
            messages.append({"role": "user", "content": [task]})
            owners.append(entry)
        elif kind in REPLY_UI_KINDS and (messages or not requests):
            item = _reply_item(data, position)
            if item is None:
                continue
            if reply is None:
                turns[len(messages)] = _Turn(time_ms=entry.record.time_ms, usage=usage, cost_usd=cost)
                reply = {"role": "assistant", "content": []}
                messages.append(reply)
                owners.append(entry)
            reply["content"].append(item)
            turn = turns[len(messages) - 1]
            turn.model = turn.model or as_str(as_dict(data.get("modelInfo")).get("modelId"))
    return messages, owners, turns


_REQUEST_SPLIT = re.compile(
    r"\n\n(?=\[[A-Za-z_][\w-]*\b[^\n]*?\] Result:|Tool \[[\w-]+\] was not executed|<environment_details>)"
)


def _request_blocks(request: str) -> list[dict[str, Any]]:
    """A request's text (the user content joined by blank lines) split back into its blocks."""
    request = request.removesuffix("\n\nLoading...")
    return [{"type": "text", "text": part} for part in _REQUEST_SPLIT.split(request) if part]


def _reply_item(data: dict[str, Any], position: int) -> dict[str, Any] | None:
    """The content block a reply record shows (None for an empty one)."""
    kind = _ui_kind(data)
    text = as_str(data.get("text"))
    if kind == "reasoning":
        return {"type": "thinking", "thinking": text} if text else None
    if kind == "text":
        return {"type": "text", "text": text} if text else None
    decoded = json_or_none(text) if text.startswith("{") else None
    info = decoded if isinstance(decoded, dict) else {}
    if kind == "tool":
        tool = as_str(info.get("tool"))
        name = UI_TOOLS.get(tool) or _CAMEL.sub("_", tool).lower() or "tool"
        if tool == "editedExistingFile" and "SEARCH" not in as_str(info.get("content"))[:200]:
            name = "write_to_file"  # Cline shows a whole-file rewrite of an existing file the same way
        return _ui_call(position, name, info)
    if kind == "command":
        return _ui_call(position, "execute_command", {"command": text})
    if kind == "use_mcp_server":
        return _ui_call(position, as_str(info.get("type")) or "use_mcp_tool", info)
    if kind == "browser_action_launch":
        return _ui_call(position, "browser_action", {"action": "launch", "url": text})
    if kind == "completion_result":
        return _ui_call(position, "attempt_completion", {"result": text}) if text else None
    name = {"followup": "ask_followup_question", "browser_action": "browser_action"}.get(kind, kind)
    return _ui_call(position, name, info or {"text": text})


def _ui_call(position: int, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"ui:{position}", "name": name, "input": tool_input}
