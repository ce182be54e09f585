"""GitHub Copilot Chat exports (VS Code "Chat: Export Chat…", one JSON object; the chatSessions store's
`<id>.json` has the same shape).

{requesterUsername?, responderUsername, initialLocation, requests[]} (the store adds version, sessionId,
creationDate, lastMessageDate, customTitle): the file is one session `copilot-chat-export:<id>`, the id
being the store's `sessionId`, else the `result.metadata.sessionId` Copilot wrote on its requests, else a
short sha256 of the first request's id, timestamp and text (an export names no id of its own). A
`customTitle` is the title; otherwise normalize takes the first prompt.

Each request is one turn:
- the user message: `message.text` (or its parts' text; a plain string in old exports) and, in one
  more text block, its `variableData.variables` (attached files, selections, prompt files) referenced by
  name and path, never inlined; image variables are image blocks.
- a request whose `result.metadata.renderedGlobalContext` differs from the last one seen becomes a
  non-authored system message before its prompt (the environment and workspace the model was given); its
  workspace folder is the session's cwd (else the first terminal call's cwd), and the repo its basename.
- the assistant message: the `response` parts in order. Markdown parts (no `kind`, or markdownContent /
  markdownVuln) and `inlineReference`s (their name) run together into one text (fences become code
  blocks); a part that is only a fence line next to an edit is the frame VS Code draws around that
  edit, not text. Each `thinking` part with text is a thinking block (a reasoning summary); the empty
  ones that carry its encrypted id or the `vscodeReasoningDone` marker are counted in `skipped`.
  `confirmation`, `elicitationSerialized` and `warning` parts keep their text. Tool invocations
  (`toolInvocationSerialized`) are tool calls; a `textEditGroup` (or textEdit / notebookEditGroup) on a
  file that no earlier call of the response names is an `edit_file` call on that file (an Edit-mode
  answer's applied edit); one a call names is that call's effect, not another call. The request's
  `contentReferences` and `codeCitations` follow as text blocks. `usage` parts give token counts, else
  `result.metadata` {promptTokens, outputTokens}, which VS Code writes on each request. Structural
  parts (undoStop, codeblockUri, mcpServersStarting, prepareToolInvocation, progress parts…) and
  parts of kinds not known here are counted in `skipped` as `copilot-chat:part/<kind>`.
- the model is `modelId`; for the `auto` router, the model `result.details` names ("Grok Code Fast 1 •
  1x"). The reply's time is the request's `timestamp` plus `result.timings.firstProgress`, its duration
  `totalElapsed`.
- tool calls: what the model called is in `result.metadata.toolCallRounds[].toolCalls[]` {name,
  arguments, id} with what it was told in `toolCallResults[id]` (text, or prompt-tsx trees whose text
  nodes are read). An invocation part is paired with its round call by id (`<toolCallId>__vscode-<n>`),
  else with the next unpaired round call of the same tool (its contributed id, `copilot_readFile`, maps
  to the model's `read_file`) on the same path. A paired call is named as the model named it and takes
  its arguments and result; an unpaired invocation is named by that map (else by its tool id) and takes
  the path its message links and its recorded input (resultDetails.input, a terminal's command line).
  Round calls no invocation shows come before the next paired call (at the end, if none follows). The
  result is the round result, else the invocation's `resultDetails` output, else the terminal output or
  a subagent's result; it failed when it says "ERROR while calling tool", the user cancelled or skipped
  it, the user denied the confirmation (`isConfirmed` type 0 or 5, `false` before VS Code 1.104),
  `resultDetails.isError`, or the terminal exit code is not 0 (the exit code is kept). An invocation
  with no recorded result (a request cancelled while it streamed) has no tool_result.
- turn events: turn_started at the prompt (agent id and mode); at the end turn_aborted when the
  response was cancelled (`modelState` 2, `isCanceled`, `errorDetails.code` "canceled"), api_error
  for any other `errorDetails` or a failed state (3), else turn_completed once the request has a
  result or a completed state.

Raw log events (docs/sessions.md#events): per request, the rendered context (when it becomes a system message), the
`message`, the `variableData`, every response part (a round call no part shows where its blocks go),
the `contentReferences` and `codeCitations` when there are any, and the `result`, in that order. What
is sent to the model again (the prompt, its attachments, the context, the reply's text, thinking and
tool calls) are surface nodes; structural parts, edit groups that belong to a call and the result are
log-only. Parts cite their request (`request:<requestId>`); a call is keyed `call:<id>` and the edit
group it made cites it. Exports keep no edited or regenerated turns, so every node is current.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from quarry.ingest.reader import issue
from quarry.ingest.sources import (
    DraftBlock,
    DraftDispatch,
    DraftMessage,
    DraftRecord,
    DraftSession,
    SourceResult,
    as_count,
    as_dict,
    as_list,
    as_str,
    json_or_none,
    json_text,
    to_ms,
)
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import describe_tool_input, tool_use_block
from quarry.ingest.sources.vscode import uri_path

FORMAT = "copilot-chat"
ORIGIN = "copilot-chat-export"

# The contributed ids VS Code shows (`toolId`) -> the names the model calls (Copilot Chat's toolNames.ts).
MODEL_TOOL_NAMES = {
    "copilot_applyPatch": "apply_patch",
    "copilot_searchCodebase": "semantic_search",
    "copilot_searchWorkspaceSymbols": "search_workspace_symbols",
    "copilot_listCodeUsages": "list_code_usages",
    "copilot_updateUserPreferences": "update_user_preferences",
    "copilot_getVSCodeAPI": "get_vscode_api",
    "copilot_testFailure": "test_failure",
    "copilot_findFiles": "file_search",
    "copilot_findTextInFiles": "grep_search",
    "copilot_readFile": "read_file",
    "copilot_listDirectory": "list_dir",
    "copilot_getErrors": "get_errors",
    "copilot_getDocInfo": "get_doc_info",
    "copilot_getChangedFiles": "get_changed_files",
    "copilot_readProjectStructure": "read_project_structure",
    "copilot_getTerminalSelection": "get_terminal_selection",
    "copilot_getTerminalLastCommand": "get_terminal_last_command",
    "copilot_createNewWorkspace": "create_new_workspace",
    "copilot_createNewJupyterNotebook": "create_new_jupyter_notebook",
    "copilot_insertEdit": "insert_edit_into_file",
    "copilot_createFile": "create_file",
    "copilot_replaceString": "replace_string_in_file",
    "copilot_multiReplaceString": "multi_replace_string_in_file",
    "copilot_editNotebook": "edit_notebook_file",
    "copilot_runNotebookCell": "run_notebook_cell",
    "copilot_readNotebookCellOutput": "read_notebook_cell_output",
    "copilot_installExtension": "install_extension",
    "copilot_think": "think",
    "copilot_fetchWebPage": "fetch_webpage",
    "copilot_findTestFiles": "test_search",
    "copilot_getProjectSetupInfo": "get_project_setup_info",
    "copilot_getSearchResults": "get_search_view_results",
    "copilot_githubRepo": "github_repo",
    "copilot_createAndRunTask": "create_and_run_task",
    "copilot_openSimpleBrowser": "open_simple_browser",
    "copilot_createDirectory": "create_directory",
    "copilot_runVscodeCommand": "run_vscode_command",
}
EDIT_TOOL_NAME = "edit_file"  # a textEditGroup no call accounts for
MARKDOWN_KINDS = frozenset({"markdown", "markdownContent", "markdownVuln"})
NOTICE_KINDS = frozenset({"confirmation", "elicitationSerialized", "elicitation2", "warning"})
TOOL_KINDS = frozenset({"toolInvocationSerialized", "toolInvocation"})
EDIT_KINDS = frozenset({"textEditGroup", "textEdit", "notebookEditGroup"})
# Parts that draw an edit: a markdown part of a lone fence beside one is the frame around it.
EDIT_FRAME_KINDS = EDIT_KINDS | {"undoStop", "codeblockUri"}
DENIED, SKIPPED = 0, 5  # ToolConfirmKind of a serialized invocation's isConfirmed
CANCELLED_STATE, FAILED_STATE = 2, 3  # ResponseModelState
FAILED_RESULT_PREFIXES = ("ERROR while calling tool", "The user cancelled the tool call", "The user chose to skip")
ROUND_ID_SUFFIX = "__vscode-"
_FENCE_ONLY = re.compile(r"\s*(?:`{3,}|~{3,})[\w+.-]*\s*")
_LINK = re.compile(r"\[([^\]]*)\]\(([a-z][\w+.-]*:[^)\s]*)\)")
_WORKSPACE_FOLDER = re.compile(r"with the following folders:\s*\n\s*- (.+?)\s*$", re.MULTILINE)


def recognize(document: Any) -> str:
    """An object with a `requests` array that is an export (responderUsername / initialLocation), a
    chatSessions store file (version + sessionId), or whose first request has Copilot's fields."""
    if not isinstance(document, dict) or not isinstance(document.get("requests"), list):
        return ""
    if "responderUsername" in document or "initialLocation" in document:
        return FORMAT
    if "version" in document and "sessionId" in document:
        return FORMAT
    first = next((item for item in document["requests"] if isinstance(item, dict)), None)
    if first is not None and "message" in first and ("requestId" in first or "variableData" in first):
        return FORMAT
    return ""


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    if not isinstance(document, dict):
        result.issues.append(issue(path, 0, "invalid_record", "the export is not a JSON object"))
        return result
    try:
        draft = _Export(document, path, result).build()
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as error:
        result.issues.append(issue(path, 0, "invalid_record", f"the export is unusable: {error}"))
        return result
    if draft.messages:
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-session"] += 1
    return result


@dataclass(slots=True)
class _RoundCall:
    """A tool call the model made, from result.metadata.toolCallRounds, with what it was told."""

    index: int
    call_id: str
    name: str
    arguments: Any
    raw: dict[str, Any]
    result: Any
    paired: bool = False
    shown: bool = False  # its blocks were added

    @property
    def path(self) -> str:
        arguments = as_dict(self.arguments)
        return describe_tool_input(arguments).path or as_str(arguments.get("dirPath"))


@dataclass(slots=True)
class _Call:
    """A tool call added to the reply: what an edit group on its file is matched against."""

    tool_use_id: str
    path: str
    input_json: str


@dataclass(slots=True)
class _Run:
    """Consecutive markdown parts and inline references, added as one text block."""

    record: DraftRecord
    texts: list[str] = field(default_factory=list)


class _Export:
    """The whole file: one session, read request by request."""

    def __init__(self, document: dict[str, Any], path: str, result: SourceResult) -> None:
        self.result = result
        self.requests = as_list(document.get("requests"))
        title = as_str(document.get("customTitle"))
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=_native_id(document, self.requests),
            source_path=path,
            title=title,
            header_title_kind="custom-title" if title else "",
        )
        self.draft.observe_time(to_ms(document.get("creationDate")))
        self.draft.observe_time(to_ms(document.get("lastMessageDate")))
        self.context = ""  # the last rendered global context made a system message

    def build(self) -> DraftSession:
        for request in self.requests:
            if isinstance(request, dict):
                _Turn(self, request).read()
            else:
                self.draft.begin(DraftRecord(0, f"{FORMAT}:request/(not an object)", request))
                self.result.skipped[f"{FORMAT}:request/(not an object)"] += 1
        self.draft.current = None
        return self.draft

    def set_cwd(self, cwd: str) -> None:
        if cwd and not self.draft.cwd:
            self.draft.cwd = cwd
            self.draft.repo = folder_name(cwd)


class _Turn:
    """One request: the prompt, the reply built from its response parts, the turn's events."""

    def __init__(self, export: _Export, request: dict[str, Any]) -> None:
        self.export = export
        self.draft = export.draft
        self.skipped = export.result.skipped
        self.request = request
        self.request_id = as_str(request.get("requestId"))
        self.result = as_dict(request.get("result"))
        self.metadata = as_dict(self.result.get("metadata"))
        self.time_ms = to_ms(request.get("timestamp"))
        self.reply: DraftMessage | None = None
        self.run: _Run | None = None
        self.calls: list[_Call] = []
        self.rounds = _round_calls(self.metadata)
        self.by_id: dict[str, list[_RoundCall]] = {}
        for call in self.rounds:
            self.by_id.setdefault(call.call_id.split(ROUND_ID_SUFFIX, 1)[0], []).append(call)
        # Round calls a part names by id wait for that part: no other part pairs with them by tool.
        shown = {as_str(as_dict(part).get("toolCallId")) for part in as_list(request.get("response"))}
        self.reserved = {call.index for key in shown if key for call in self.by_id.get(key, [])}

    def read(self) -> None:
        self.draft.observe_time(self.time_ms)
        self._context()
        self._prompt()
        agent = as_dict(self.request.get("agent"))
        mode = as_str(as_dict(self.request.get("modeInfo")).get("kind")) or next(
            (m for m in as_list(agent.get("modes")) if isinstance(m, str)), ""
        )
        says = ", ".join(part for part in (as_str(agent.get("id")), f"{mode} mode" if mode else "") if part)
        text = f"turn started ({says})" if says else "turn started"
        self.draft.record("turn_started", self.time_ms, text, object_ref=self.request_id)
        for index, part in enumerate(as_list(self.request.get("response"))):
            self._part(index, part)
        self._flush()
        for call in self.rounds:
            if not call.paired and not call.shown:
                self._round_call(call)
        self._references()
        self._metadata_tokens()
        self._finish()

    # ------------------------------------------------------------------ the prompt

    def _context(self) -> None:
        context = self.metadata.get("renderedGlobalContext")
        text = _rendered_text(context)
        if not text or text == self.export.context:
            return
        self.export.context = text
        folder = _WORKSPACE_FOLDER.search(text)
        if folder:
            self.export.set_cwd(folder.group(1))
        self.draft.begin(DraftRecord(0, f"{FORMAT}:context", context, time_ms=self.time_ms, node=True))
        message = self.draft.add_message(DraftMessage(role="system", authored=False, time_ms=self.time_ms))
        self.draft.add_block(message, DraftBlock("text", text=text))

    def _prompt(self) -> None:
        raw = self.request.get("message")
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:message", raw, time_ms=self.time_ms))
        if self.request_id:
            record.keys.append(f"request:{self.request_id}")
        text = _message_text(raw)
        attachments, images = _attachments(self.request.get("variableData"))
        if not text and not attachments and not images:
            self.skipped[f"{FORMAT}:empty-message"] += 1
            return
        record.node = True
        message = self.draft.add_message(DraftMessage(role="user", authored=True, time_ms=self.time_ms))
        if text:
            self.draft.add_block(message, DraftBlock("text", text=text))
        variables = self.request.get("variableData")
        if isinstance(variables, dict):
            record = self.draft.begin(DraftRecord(0, f"{FORMAT}:variables", variables, time_ms=self.time_ms))
            record.node = bool(attachments or images)
            if attachments:
                self.draft.add_block(message, DraftBlock("text", text="attachments: " + ", ".join(attachments)))
            for media_type in images:
                self.draft.add_block(message, DraftBlock("image", media_type=media_type))

    # ------------------------------------------------------------------ the reply

    def _part(self, index: int, part: Any) -> None:
        if not isinstance(part, dict):
            self._flush()
            self.draft.begin(DraftRecord(0, f"{FORMAT}:part/(not an object)", part))
            self.skipped[f"{FORMAT}:part/(not an object)"] += 1
            return
        kind = as_str(part.get("kind")) or ("markdown" if "value" in part else "(untyped)")
        record = DraftRecord(0, f"{FORMAT}:part/{kind}", part)
        if self.request_id:
            record.source_keys.append(f"request:{self.request_id}")
        if kind in MARKDOWN_KINDS:
            text = _markdown(part.get("content") if "content" in part else part)
            if _FENCE_ONLY.fullmatch(text) and self._beside_edit(index):
                self.draft.begin(record)
                self.skipped[f"{FORMAT}:part/edit-frame"] += 1
            else:
                self._text(record, text)
        elif kind == "inlineReference":
            self._text(record, _reference_name(part))
        elif kind == "thinking":
            self._flush()
            self.draft.begin(record)
            self._thinking(part, record)
        else:
            self._flush()
            self.draft.begin(record)
            if kind in TOOL_KINDS:
                self._invocation(part, record)
            elif kind in EDIT_KINDS:
                self._edit(part, record)
            elif kind in NOTICE_KINDS:
                self._notice(part, record)
            elif kind == "usage":
                self._usage(part)
            else:
                self.skipped[f"{FORMAT}:part/{kind}"] += 1

    def _beside_edit(self, index: int) -> bool:
        response = as_list(self.request.get("response"))
        around = (response[i] for i in (index - 1, index + 1) if 0 <= i < len(response))
        return any(as_str(as_dict(part).get("kind")) in EDIT_FRAME_KINDS for part in around)

    def _text(self, record: DraftRecord, text: str) -> None:
        """Add a markdown part or an inline reference to the text run it continues."""
        self.draft.begin(record)
        if self.run is None:
            self.run = _Run(record)
        if text:
            record.node = True
            self.run.texts.append(text)

    def _flush(self) -> None:
        run, self.run = self.run, None
        text = "".join(run.texts) if run is not None else ""
        if run is None or not text.strip():
            return
        current, self.draft.current = self.draft.current, run.record
        self.draft.add_block(self._reply(), DraftBlock("text", text=text))
        self.draft.current = current

    def _thinking(self, part: dict[str, Any], record: DraftRecord) -> None:
        """A reasoning summary; the parts that only carry its encrypted id or its end marker add nothing."""
        value = part.get("value")
        texts = [value] if isinstance(value, str) else [text for text in as_list(value) if isinstance(text, str)]
        text = "\n\n".join(text for text in texts if text)
        if text:
            self._add(record, [DraftBlock("thinking", text=text)])
        else:
            self.skipped[f"{FORMAT}:part/thinking-marker"] += 1

    def _reply(self) -> DraftMessage:
        if self.reply is None:
            timings = as_dict(self.result.get("timings"))
            first = as_count(timings.get("firstProgress"))
            self.reply = self.draft.add_message(
                DraftMessage(
                    role="assistant",
                    authored=True,
                    time_ms=self.time_ms + first if self.time_ms else 0,
                    model=_model(self.request, self.result),
                    duration_ms=as_count(timings.get("totalElapsed")),
                )
            )
        return self.reply

    def _add(self, record: DraftRecord, blocks: list[DraftBlock]) -> None:
        record.node = True
        message = self._reply()
        for block in blocks:
            self.draft.add_block(message, block)

    def _notice(self, part: dict[str, Any], record: DraftRecord) -> None:
        texts = [_markdown(part.get(key)) for key in ("title", "message", "content")]
        text = "\n".join(text for text in texts if text)
        if text:
            self._add(record, [DraftBlock("text", text=text)])
        else:
            self.skipped[f"{FORMAT}:part/{as_str(part.get('kind'))}"] += 1

    def _usage(self, part: dict[str, Any]) -> None:
        reply = self._reply()
        reply.input_tokens += as_count(part.get("promptTokens"))
        reply.output_tokens += as_count(part.get("completionTokens"))

    def _metadata_tokens(self) -> None:
        """The request's token counts in `result.metadata`, unless `usage` parts counted the reply."""
        prompt = as_count(self.metadata.get("promptTokens"))
        output = as_count(self.metadata.get("outputTokens"))
        reply = self.reply
        if reply is None or not (prompt or output) or reply.input_tokens or reply.output_tokens:
            return
        reply.input_tokens, reply.output_tokens = prompt, output

    # ------------------------------------------------------------------ tool calls

    def _invocation(self, part: dict[str, Any], record: DraftRecord) -> None:
        tool_id = as_str(part.get("toolId"))
        call_id = as_str(part.get("toolCallId"))
        details = as_dict(part.get("toolSpecificData"))
        message = _markdown(part.get("pastTenseMessage")) or _markdown(part.get("invocationMessage"))
        link = _linked_path(part.get("pastTenseMessage")) or _linked_path(part.get("invocationMessage"))
        paired = self._pair(call_id, tool_id, link)
        if paired is not None:
            self._show_rounds_before(paired.index)
            paired.shown = True
            name, tool_input = paired.name, paired.arguments
            path = paired.path or link
            record.keys.append(f"call:{paired.call_id}")
        else:
            name = MODEL_TOOL_NAMES.get(tool_id, tool_id)
            tool_input, path = _shown_input(part, details), link
        call_id = call_id or (paired.call_id if paired else "")
        if call_id:
            record.keys.append(f"call:{call_id}")
        use = tool_use_block(name, call_id, tool_input)
        use.path = use.path or path
        use.text = use.text or _unlinked(message) or name
        blocks = [use]
        outcome = _invocation_result(part, details, paired.result if paired else None)
        if outcome is not None:
            text, failed, exit_code = outcome
            blocks.append(
                DraftBlock(
                    "tool_result", text=text, tool_name=name, tool_use_id=call_id, is_error=failed, exit_code=exit_code
                )
            )
        self._tool_facts(details, call_id)
        self._add(record, blocks)
        self.calls.append(_Call(call_id, use.path, use.tool_input_json))

    def _tool_facts(self, details: dict[str, Any], call_id: str) -> None:
        """What a terminal call says about the workspace (its cwd, its time) and a subagent about itself."""
        kind = as_str(details.get("kind"))
        if kind == "terminal":
            self.export.set_cwd(uri_path(details.get("cwd")))
            self.draft.observe_time(to_ms(as_dict(details.get("terminalCommandState")).get("timestamp")))
        elif kind == "subagent" and call_id:
            self.draft.dispatches[call_id] = DraftDispatch(
                agent=as_str(details.get("agentName")), model=as_str(details.get("modelName"))
            )

    def _pair(self, call_id: str, tool_id: str, path: str) -> _RoundCall | None:
        """The round call an invocation part shows: by id, else the next unpaired call of its tool."""
        for call in self.by_id.get(call_id, []) if call_id else []:
            if not call.paired:
                call.paired = True
                return call
        name = MODEL_TOOL_NAMES.get(tool_id, tool_id)
        for call in self.rounds:
            if call.paired or call.index in self.reserved or not _same_tool(name, call.name):
                continue
            if path and call.path and path.casefold() != call.path.casefold():
                continue
            call.paired = True
            return call
        return None

    def _show_rounds_before(self, index: int) -> None:
        for call in self.rounds:
            if call.index < index and not call.paired and not call.shown and call.index not in self.reserved:
                self._round_call(call)

    def _round_call(self, call: _RoundCall) -> None:
        """A call the model made that no part shows (VS Code does not render every failed call)."""
        call.shown = True
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:round-call", call.raw, keys=[f"call:{call.call_id}"]))
        if self.request_id:
            record.source_keys.append(f"request:{self.request_id}")
        use = tool_use_block(call.name, call.call_id, call.arguments)
        use.path = use.path or call.path
        blocks = [use]
        if call.result is not None:
            text = _tool_result_text(call.result)
            blocks.append(
                DraftBlock(
                    "tool_result",
                    text=text,
                    tool_name=call.name,
                    tool_use_id=call.call_id,
                    is_error=text.startswith(FAILED_RESULT_PREFIXES),
                )
            )
        self._add(record, blocks)
        self.calls.append(_Call(call.call_id, use.path, use.tool_input_json))

    def _edit(self, part: dict[str, Any], record: DraftRecord) -> None:
        """An edit group: the effect of an earlier call on its file, else an edit_file call of its own."""
        path = uri_path(part.get("uri"))
        folded = path.casefold()
        owner = next(
            (call for call in self.calls if path and (call.path.casefold() == folded or path in call.input_json)),
            None,
        )
        if owner is not None:
            if owner.tool_use_id:
                record.source_keys.append(f"call:{owner.tool_use_id}")
            return
        edits = [
            edit for group in as_list(part.get("edits")) for edit in (group if isinstance(group, list) else [group])
        ]
        call_id = f"{self.request_id}:edit:{len(self.calls)}"
        record.keys.append(f"call:{call_id}")
        use = tool_use_block(EDIT_TOOL_NAME, call_id, {"filePath": path, "edits": edits})
        self._add(record, [use])
        self.calls.append(_Call(call_id, path, use.tool_input_json))

    # ------------------------------------------------------------------ the end of the turn

    def _references(self) -> None:
        """The files the reply used (contentReferences) and public code it matched (codeCitations)."""
        for key, label in (("contentReferences", "references"), ("codeCitations", "code citations")):
            values = as_list(self.request.get(key))
            if not values:
                continue
            record = self.draft.begin(DraftRecord(0, f"{FORMAT}:{key}", values))
            if key == "codeCitations":
                names = [f"{uri_path(as_dict(c).get('value'))} ({as_str(as_dict(c).get('license'))})" for c in values]
            else:
                names = [_reference_name(as_dict(ref), full=True) for ref in values]
            if any(names):
                self._add(record, [DraftBlock("text", text=f"{label}: " + ", ".join(n for n in names if n))])

    def _finish(self) -> None:
        state = as_dict(self.request.get("modelState"))
        value = state.get("value") if state else self.request.get("modelState")
        end = to_ms(state.get("completedAt"))
        if not end and self.time_ms:
            end = self.time_ms + as_count(as_dict(self.result.get("timings")).get("totalElapsed"))
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:result", self.request.get("result"), time_ms=end))
        if self.request_id:
            record.source_keys.append(f"request:{self.request_id}")
        self.draft.observe_time(end)
        error = as_dict(self.result.get("errorDetails"))
        message = as_str(error.get("message"))
        seq = self.reply.seq if self.reply is not None else -1
        if value == CANCELLED_STATE or self.request.get("isCanceled") is True or error.get("code") == "canceled":
            text = f"turn aborted ({message})" if message else "turn aborted"
            self.draft.record("turn_aborted", end, text, object_ref=self.request_id, message_seq=seq)
        elif error or value == FAILED_STATE:
            self.draft.record("api_error", end, f"API error: {message or 'failed'}", failed=True, message_seq=seq)
        elif self.result or value == 1:
            self.draft.record("turn_completed", end, "turn completed", object_ref=self.request_id, message_seq=seq)


# ---------------------------------------------------------------------- reading values


def _native_id(document: dict[str, Any], requests: list[Any]) -> str:
    session_id = as_str(document.get("sessionId"))
    if session_id:
        return session_id
    for request in requests:
        recorded = as_str(as_dict(as_dict(as_dict(request).get("result")).get("metadata")).get("sessionId"))
        if recorded:
            return recorded
    first = next((request for request in requests if isinstance(request, dict)), {})
    seed = json_text([as_str(first.get("requestId")), first.get("timestamp"), _message_text(first.get("message"))])
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def _round_calls(metadata: dict[str, Any]) -> list[_RoundCall]:
    results = as_dict(metadata.get("toolCallResults"))
    calls: list[_RoundCall] = []
    for round_ in as_list(metadata.get("toolCallRounds")):
        for call in as_list(as_dict(round_).get("toolCalls")):
            call = as_dict(call)
            call_id = as_str(call.get("id"))
            arguments = call.get("arguments")
            if isinstance(arguments, str):
                arguments = json_or_none(arguments)
            calls.append(
                _RoundCall(len(calls), call_id, as_str(call.get("name")), arguments, call, results.get(call_id))
            )
    return calls


def _same_tool(shown: str, called: str) -> bool:
    """Whether a part's tool and a round call's name are one tool (names not in MODEL_TOOL_NAMES are
    compared squashed: `copilot_fooBar` and `foo_bar`)."""
    if shown == called:
        return True
    a, b = _squash(shown), _squash(called)
    return bool(a and b) and (a.startswith(b) or b.startswith(a))


def _squash(name: str) -> str:
    return name.lower().removeprefix("copilot_").replace("_", "")


def _shown_input(part: dict[str, Any], details: dict[str, Any]) -> Any:
    """The input of an invocation no round call explains: its resultDetails input, a terminal's command
    line, a subagent's prompt, or the raw input it carries."""
    recorded = as_dict(part.get("resultDetails")).get("input")
    if isinstance(recorded, str) and recorded:
        parsed = json_or_none(recorded)
        return parsed if parsed is not None else {"input": recorded}
    kind = as_str(details.get("kind"))
    if kind == "terminal":
        line = as_dict(details.get("commandLine"))
        command = (
            as_str(line.get("userEdited"))
            or as_str(line.get("toolEdited"))
            or as_str(line.get("original"))
            or as_str(details.get("command"))
        )
        return {"command": command.strip()} if command else {}
    if kind == "subagent":
        return {
            key: details[key] for key in ("description", "prompt", "agentName") if isinstance(details.get(key), str)
        }
    if kind == "input":
        return details.get("rawInput")
    return {}


def _invocation_result(
    part: dict[str, Any], details: dict[str, Any], recorded: Any
) -> tuple[str, bool, int | None] | None:
    """(text, failed, exit code) of an invocation's result, or None when nothing records one."""
    text = _tool_result_text(recorded) if recorded is not None else ""
    result_details = part.get("resultDetails")
    failed = isinstance(result_details, dict) and result_details.get("isError") is True
    if not text and isinstance(result_details, dict):
        text = _details_output(result_details.get("output"))
    exit_code = None
    kind = as_str(details.get("kind"))
    if kind == "terminal":
        code = as_dict(details.get("terminalCommandState")).get("exitCode")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        text = text or as_str(as_dict(details.get("terminalCommandOutput")).get("text"))
    elif kind == "subagent":
        text = text or as_str(details.get("result"))
    confirmed = part.get("isConfirmed")
    refused = confirmed is False or (isinstance(confirmed, dict) and confirmed.get("type") in (DENIED, SKIPPED))
    if refused and not text:
        text = "skipped by the user" if as_dict(confirmed).get("type") == SKIPPED else "denied by the user"
    failed = failed or refused or bool(exit_code) or text.startswith(FAILED_RESULT_PREFIXES)
    if not text and not failed and exit_code is None:
        return None
    return text, failed, exit_code


def _tool_result_text(result: Any) -> str:
    """What the model was told: the text of a LanguageModelToolResult's parts (text values, prompt-tsx)."""
    texts: list[str] = []
    for item in as_list(as_dict(result).get("content")) if isinstance(result, dict) else [result]:
        value = as_dict(item).get("value") if isinstance(item, dict) else item
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict) and "node" in value:
            texts.append(_tsx_text(value["node"]))
    return "\n".join(text for text in texts if text)


def _tsx_text(node: Any) -> str:
    """The text nodes of a prompt-tsx tree in order; a node marked lineBreakBefore starts a line."""
    out: list[str] = []
    stack = [node]
    while stack:
        item = as_dict(stack.pop())
        text = item.get("text")
        if isinstance(text, str):
            if item.get("lineBreakBefore") is True and out and not out[-1].endswith("\n"):
                out.append("\n")
            out.append(text)
        stack.extend(reversed(as_list(item.get("children"))))
    return "".join(out)


def _details_output(output: Any) -> str:
    if isinstance(output, str):
        return output
    texts = []
    for item in as_list(output):
        item = as_dict(item)
        if item.get("type") == "ref":
            texts.append(uri_path(item.get("uri")))
        elif item.get("isText") is True and isinstance(item.get("value"), str):
            texts.append(item["value"])
    return "\n".join(text for text in texts if text)


def _rendered_text(parts: Any) -> str:
    """The text of a rendered prompt (a list of {type: 1, text} parts; cache markers have none)."""
    return "\n".join(text for part in as_list(parts) if (text := as_str(as_dict(part).get("text")).strip()))


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    message = as_dict(message)
    text = as_str(message.get("text"))
    return text or "".join(as_str(as_dict(part).get("text")) for part in as_list(message.get("parts")))


def _attachments(variable_data: Any) -> tuple[list[str], list[str]]:
    """(references to the attached variables, media types of attached images)."""
    names: list[str] = []
    images: list[str] = []
    for variable in as_list(as_dict(variable_data).get("variables")):
        variable = as_dict(variable)
        if variable.get("kind") == "image" or variable.get("isImage") is True:
            images.append(as_str(variable.get("mimeType")) or as_str(as_dict(variable.get("value")).get("mimeType")))
            continue
        name = as_str(variable.get("name")) or as_str(variable.get("id"))
        value = as_dict(variable.get("value"))  # a URI, {uri, range}; a string value is text, never inlined
        where = uri_path(value.get("uri")) or uri_path(value)
        if name or where:
            names.append(f"{name} ({where})" if name and where and where not in name else name or where)
    return names, images


def _markdown(value: Any) -> str:
    """The text of a string or an IMarkdownString {value}."""
    return value if isinstance(value, str) else as_str(as_dict(value).get("value"))


def _unlinked(text: str) -> str:
    """A message with its `[label](uri)` links written as the label, or the uri's path when it has none."""
    return _LINK.sub(lambda match: match.group(1) or uri_path(match.group(2)), text)


def _linked_path(message: Any) -> str:
    """The first file a tool invocation's message links."""
    uris = as_dict(as_dict(message).get("uris"))
    for uri in uris.values():
        path = uri_path(uri)
        if path:
            return path
    match = _LINK.search(_markdown(message))
    return uri_path(match.group(2)) if match else ""


def _reference_name(part: dict[str, Any], *, full: bool = False) -> str:
    """An inline or content reference (a URI, a Location, a symbol, a variable): its name, else its
    file (the base name unless `full`)."""
    target = part["inlineReference"] if "inlineReference" in part else part.get("reference")
    where = as_dict(target)
    inner = where.get("uri") or as_dict(where.get("location")).get("uri") or where.get("value")
    path = uri_path(inner) if inner else uri_path(target)
    name = as_str(part.get("name")) or as_str(where.get("name")) or as_str(where.get("variableName"))
    if full:
        return path or name
    return name or folder_name(path)


def _model(request: dict[str, Any], result: dict[str, Any]) -> str:
    """`modelId`; for the auto router, the model `result.details` names before its multiplier."""
    model_id = as_str(request.get("modelId"))
    named = as_str(result.get("details")).split(" • ", 1)[0].strip()
    if named and (not model_id or model_id.rsplit("/", 1)[-1] == "auto"):
        return named
    return model_id
