"""The derived units of one session: files, runs, observed events, context snapshots, delegations.

`add_units` computes them from the canonical session (messages, blocks, actions) and the runtime
facts its parser recorded in the draft (events, compactions, what the source says about each
subagent dispatch), the same way for every origin. Ids come from `quarry.core.refs` and depend only
on order within the session, so a re-parse gives the same ids and a longer copy of an append-only
log keeps the ids of the units both contain.

- files: one row per normalized path the session's actions name (`normalize_path`), counting
  actions per category and failed actions, with the block refs and times of the first and last
  tool_use on the path.
- delegations: every subagent action (Task / Agent, category `subagent`) in dispatch order, from 1:
  the complete instruction (`input.prompt`), description, agent (`input.subagent_type`, else the
  type the runtime reports), a 280-character preview and the SHA-256 of the complete (uncapped)
  result text, and the child session when the source links it (resolved) or not (unresolved). The
  child excerpt (its final assistant text) is filled only when the parser saw the child in the same
  file (Claude Code's old sidechain layout); a child stored in its own file is joined to its
  delegation by the index partition that stores both, not here.
- runs: the main run of the session and one subagent run per delegation (same n).
  The main run's status comes from the last turn signal the runtime wrote: turn_started with no
  end -> running; turn_completed / turn_aborted / api_error with no model reply after it ->
  completed / interrupted / failed. Without such a signal (or with replies after it: not every
  source version closes every turn) a session whose last message is a model reply with no pending
  tool call is completed, anything else unknown. total_tokens of a main run is the sum of every
  message's input, output and cache tokens (what the session processed); a subagent run reports
  what the runtime recorded for it.
- events, in stream order: session_started; then per message, tool_finished (and
  subagent_finished, for a dispatch result) for each of its tool results, then the events the
  parser recorded at that message, in recording order. delivery_state: failed when the event
  reports a failure; acted_on when it delivered something to the model (a tool or subagent result,
  a command, a compaction) and a model reply follows; else recorded.
- snapshots: session_start (subagent_start for a child session) at the first prompt (the first
  authored user message, else the first user message: a child's instruction), then one per
  compaction at its summary message.
"""

from __future__ import annotations

import hashlib
import ntpath
import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from quarry.core import refs
from quarry.ingest.prompts import first_prompt, prompt_text
from quarry.ingest.sources import (
    SYNTHETIC_MODELS,
    DraftBlock,
    DraftDispatch,
    DraftEvent,
    DraftMessage,
    DraftSession,
    as_dict,
    as_str,
)
from quarry.v1 import units_pb2

PREVIEW_CHARS = 280
_ENDINGS = {
    "turn_started": "running",
    "turn_completed": "completed",
    "turn_aborted": "interrupted",
    "api_error": "failed",
}
_DELIVERED = frozenset({"tool_finished", "subagent_finished", "command", "compaction"})
# Status words runtimes write for a subagent dispatch -> run status (Claude Code's toolUseResult.status:
# completed, or async_launched for a background agent; the others are what a parser records itself).
_DISPATCH_STATUSES = {
    "completed": "completed",
    "failed": "failed",
    "error": "failed",
    "interrupted": "interrupted",
    "killed": "interrupted",
    "async_launched": "running",
    "running": "running",
}
_WINDOWS_PATH = re.compile(r"\A(?:[A-Za-z]:[\\/]|\\\\)")


class ToolResult(NamedTuple):
    """A tool_result block: where it is in the draft and the block as the parser read it (its complete,
    uncapped text)."""

    message_seq: int
    index: int
    block: DraftBlock


@dataclass(frozen=True, slots=True)
class _Dispatch:
    """One delegation being derived: its action and input, the source's facts and its result."""

    n: int
    action: units_pb2.Action
    tool_input: dict[str, Any]
    facts: DraftDispatch
    result: ToolResult | None
    run_status: str
    delegation: units_pb2.Delegation


def add_units(
    session: units_pb2.Session,
    draft: DraftSession,
    tool_results: list[ToolResult],
    results: dict[str, ToolResult],
) -> None:
    """Fill session.files/runs/events/snapshots/delegations from the built session, its draft, its
    tool results in order and the ones its actions were paired with (`paired_results`)."""
    last_reply = _last_reply_seq(draft.messages)
    _add_files(session)
    dispatches = _add_delegations(session, draft, results)
    _add_runs(session, draft, dispatches, last_reply)
    _add_events(session, draft, tool_results, dispatches, last_reply)
    _add_snapshots(session, draft)


def paired_results(tool_results: list[ToolResult]) -> dict[str, ToolResult]:
    """The result each tool_use id is paired with: the first tool_result naming it."""
    paired: dict[str, ToolResult] = {}
    for result in tool_results:
        tool_use_id = result.block.tool_use_id
        if tool_use_id and tool_use_id not in paired:
            paired[tool_use_id] = result
    return paired


def normalize_path(path: str, root: str) -> str:
    """`path` with `.`/`..` and doubled separators resolved, Windows separators as `/`, and relative
    to `root` (the session's working directory) when it lies under it (`.` for the root itself)."""
    return _relative(_normalized(path), _normalized(root) if root else "")


def _relative(path: str, root: str) -> str:
    """A normalized path relative to a normalized root, when it lies under it."""
    if not root or root == "/":
        return path
    fold = _WINDOWS_PATH.match(root) is not None  # Windows paths compare case-insensitively
    here, base = (path.casefold(), root.casefold()) if fold else (path, root)
    if here == base:
        return "."
    prefix = base.rstrip("/") + "/"
    return path[len(prefix) :] if here.startswith(prefix) else path


def _normalized(path: str) -> str:
    if _WINDOWS_PATH.match(path):
        return ntpath.normpath(path).replace("\\", "/")
    return posixpath.normpath(path)


def _last_reply_seq(messages: list[DraftMessage]) -> int:
    """Seq of the last reply the model wrote (not a runtime-written `<synthetic>` one), -1 if none."""
    for message in reversed(messages):
        if message.role == "assistant" and message.authored and message.surface != "log-only":
            return message.seq
    return -1


@dataclass(slots=True)
class _Touches:
    """The actions on one path, gathered before its FileTouch row is written."""

    first: units_pb2.Action
    last: units_pb2.Action
    categories: Counter[str]
    failed: int = 0


def _add_files(session: units_pb2.Session) -> None:
    touched: dict[str, _Touches] = {}
    root = _normalized(session.cwd) if session.cwd else ""
    for action in session.actions:
        if not action.path:
            continue
        path = _relative(_normalized(action.path), root)
        touches = touched.get(path)
        if touches is None:
            touches = touched[path] = _Touches(action, action, Counter())
        touches.last = action
        touches.categories[action.category] += 1
        touches.failed += action.failed
    for path, touches in touched.items():
        row = session.files.add(
            id=refs.file_id(session.id, path),
            session_id=session.id,
            path=path,
            actions=touches.categories.total(),
            failed=touches.failed,
            first_ref=refs.ref("block", touches.first.block_id),
            last_ref=refs.ref("block", touches.last.block_id),
            first_time_ms=touches.first.time_ms,
            last_time_ms=touches.last.time_ms,
        )
        row.categories.update(touches.categories)


def _add_delegations(
    session: units_pb2.Session, draft: DraftSession, results: dict[str, ToolResult]
) -> list[_Dispatch]:
    dispatches: list[_Dispatch] = []
    for action in session.actions:
        if action.category != "subagent":
            continue
        n = len(dispatches) + 1
        message_seq, block_index = draft.tool_uses[action.seq]
        use = draft.messages[message_seq].blocks[block_index]
        tool_input = _json_object(use.tool_input_json)
        facts = draft.dispatches.get(use.tool_use_id) or DraftDispatch()
        result = results.get(use.tool_use_id)
        run_status = _subagent_status(result, facts)
        child_id = f"{session.origin}:{facts.child_native_id}" if facts.child_native_id else ""
        delegation = session.delegations.add(
            id=refs.delegation_id(session.id, n),
            session_id=session.id,
            child_session_id=child_id,
            mapping_state="resolved" if child_id else "unresolved",
            tool=use.tool_name,
            agent=_first_str(tool_input, _AGENT_KEYS) or facts.agent,
            description=as_str(tool_input.get("description")),
            instruction=_first_str(tool_input, _INSTRUCTION_KEYS),
            tool_use_ref=refs.ref("block", action.block_id),
            result_state=_result_state(result, run_status),
            time_ms=action.time_ms,
            child_model=facts.model or as_str(tool_input.get("model")),
        )
        delegation.is_error = delegation.result_state == "failed"
        if result is not None:
            delegation.result_preview = result.block.text[:PREVIEW_CHARS]
            delegation.result_sha256 = _sha256(result.block.text)
        if facts.child_excerpt:
            delegation.child_excerpt_preview = facts.child_excerpt[:PREVIEW_CHARS]
            delegation.child_excerpt_sha256 = _sha256(facts.child_excerpt)
        dispatches.append(_Dispatch(n, action, tool_input, facts, result, run_status, delegation))
    return dispatches


def _subagent_status(result: ToolResult | None, facts: DraftDispatch) -> str:
    status = _DISPATCH_STATUSES.get(facts.status.lower(), "unknown") if facts.status else ""
    if result is None:
        return "running" if status == "running" else "unknown"
    if status in ("failed", "interrupted", "running"):
        return status
    if result.block.is_error:
        return "failed"
    return status or "completed"


def _result_state(result: ToolResult | None, run_status: str) -> str:
    if result is None:
        return "missing"
    return "failed" if result.block.is_error or run_status in ("failed", "interrupted") else "completed"


def _add_runs(session: units_pb2.Session, draft: DraftSession, dispatches: list[_Dispatch], last_reply: int) -> None:
    tokens = sum(
        m.input_tokens + m.output_tokens + m.cache_read_tokens + m.cache_write_tokens
        for m in draft.messages
        if m.surface != "log-only"
    )
    cost = sum(m.cost_usd for m in draft.messages)
    session.runs.add(
        id=refs.run_id(session.id),
        session_id=session.id,
        role="main",
        status=_main_status(draft, last_reply),
        started_ms=session.created_ms,
        ended_ms=session.updated_ms,
        duration_ms=session.duration_ms,
        tool_uses=len(session.actions),
        total_tokens=tokens,
        cost_usd=round(cost, 9),  # the sum without its float noise
        model=session.model,
        provider=provider(session.model, session.origin),
        branch=session.branch,
    )
    for item in dispatches:
        started = item.action.time_ms
        ended = draft.messages[item.result.message_seq].time_ms if item.result is not None else 0
        facts = item.facts
        duration = facts.duration_ms or (ended - started if started and ended >= started else 0)
        session.runs.add(
            id=refs.run_id(session.id, item.n),
            session_id=session.id,
            role="subagent",
            status=item.run_status,
            agent=item.delegation.agent,
            child_session_id=item.delegation.child_session_id,
            delegation_id=item.delegation.id,
            started_ms=started,
            ended_ms=ended,
            duration_ms=duration,
            tool_uses=facts.tool_uses,
            total_tokens=facts.total_tokens,
            model=item.delegation.child_model,
            provider=provider(item.delegation.child_model or session.model, session.origin),
            branch=session.branch,
        )


# Who serves a model, by its name's first word; else by the agent that wrote the log.
_MODEL_PROVIDERS = (
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("llama", "meta"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("deepseek", "deepseek"),
    ("qwen", "alibaba"),
    ("grok", "xai"),
)
_ORIGIN_PROVIDERS = {
    "claude-code-session": "anthropic",
    "codex-session": "openai",
    "chatgpt-export": "openai",
    "claude-ai-export": "anthropic",
    "gemini-cli-session": "google",
}


# Where a dispatch's input names its agent and holds its instruction: Claude Code's Task, Cline's new_task
# (`context`), Roo Code's new_task (`mode`, `message`).
_AGENT_KEYS = ("subagent_type", "mode")
_INSTRUCTION_KEYS = ("prompt", "message", "context")


def _first_str(values: dict[str, Any], keys: tuple[str, ...]) -> str:
    return next((text for key in keys if (text := as_str(values.get(key)))), "")


def provider(model: str, origin: str) -> str:
    """The provider of a run's model: from the model's name (`claude-…`: anthropic, `gpt-…`: openai), else
    the one the agent that wrote the log uses; "" when neither tells."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, who in _MODEL_PROVIDERS:
        if name.startswith(prefix):
            return who
    return _ORIGIN_PROVIDERS.get(origin, "")


def _main_status(draft: DraftSession, last_reply: int) -> str:
    signal = None
    for event in draft.events:
        if event.kind in _ENDINGS:
            signal = event
    if signal is not None:
        if signal.kind == "turn_started":
            return "running"
        if last_reply <= _anchor(signal):
            return _ENDINGS[signal.kind]
    current = [m for m in draft.messages if m.surface == "current"]  # a replaced branch is not how it ended
    last = current[-1] if current else None
    if last is not None and last.seq == _last_reply_seq(current) and all(b.type != "tool_use" for b in last.blocks):
        return "completed"
    return "unknown"


@dataclass(slots=True)
class _Event:
    """An event before its seq is known: `key` places it in the stream, `anchor` is the message it
    follows (for delivery_state)."""

    key: tuple[int, int, int]
    kind: str
    time_ms: int
    text: str
    source_ref: str
    object_ref: str
    failed: bool
    anchor: int


def _add_events(
    session: units_pb2.Session,
    draft: DraftSession,
    tool_results: list[ToolResult],
    dispatches: list[_Dispatch],
    last_reply: int,
) -> None:
    """The session's observed events, in stream order (the module's docstring says which and where)."""
    if not draft.messages:
        return
    events = [
        _session_started(session),
        *_result_events(session.id, draft, tool_results, dispatches),
        *_recorded_events(session.id, draft),
    ]
    events.sort(key=lambda event: event.key)
    for seq, event in enumerate(events):
        session.events.add(
            id=refs.event_id(session.id, seq),
            session_id=session.id,
            seq=seq,
            kind=event.kind,
            time_ms=event.time_ms,
            text=_clip(event.text),
            source_ref=event.source_ref,
            object_ref=event.object_ref,
            delivery_state=_delivery_state(event, last_reply),
        )


def _session_started(session: units_pb2.Session) -> _Event:
    """The first event: where and on which branch the session started, at its first message."""
    place = (f"in {session.cwd}" if session.cwd else "", f"on {session.branch}" if session.branch else "")
    return _Event(
        (-1, 0, 0),
        "session_started",
        session.created_ms,
        " ".join(part for part in ("session started", *place) if part),
        refs.ref("message", session.messages[0].id),
        refs.ref("session", session.id),
        False,
        -1,
    )


def _result_events(
    sid: str, draft: DraftSession, tool_results: list[ToolResult], dispatches: list[_Dispatch]
) -> list[_Event]:
    """Per tool result, in order: its tool_finished event, and subagent_finished when it is a dispatch's."""
    summaries: dict[str, str] = {}  # tool_use id -> what the call did, in a few words
    for message_seq, index in draft.tool_uses:
        use = draft.messages[message_seq].blocks[index]
        if use.tool_use_id:
            summaries[use.tool_use_id] = use.text
    by_result = {(item.result.message_seq, item.result.index): item for item in dispatches if item.result}
    events: list[_Event] = []
    for result in tool_results:
        block = result.block
        message = draft.messages[result.message_seq]
        block_ref = refs.ref("block", refs.block_id(refs.message_id(sid, message.seq), result.index))
        verb = "failed" if block.is_error else "finished"
        summary = summaries.get(block.tool_use_id, "")
        events.append(
            _Event(
                (message.seq, 0, 2 * result.index),
                "tool_finished",
                message.time_ms,
                f"{block.tool_name or 'tool'} {verb}" + (f": {summary}" if summary else ""),
                block_ref,
                block.tool_name,
                block.is_error,
                message.seq,
            )
        )
        item = by_result.get((result.message_seq, result.index))
        if item is not None:
            events.append(_subagent_finished(item, message, block_ref, 2 * result.index + 1))
    return events


def _subagent_finished(item: _Dispatch, message: DraftMessage, block_ref: str, order: int) -> _Event:
    """The event of a dispatch's result: the subagent, how its run ended and what it was asked."""
    delegation = item.delegation
    return _Event(
        (message.seq, 0, order),
        "subagent_finished",
        message.time_ms,
        " ".join(part for part in (delegation.agent, "subagent", item.run_status) if part)
        + (f": {delegation.description}" if delegation.description else ""),
        block_ref,
        refs.ref("session", delegation.child_session_id) if delegation.child_session_id else "",
        delegation.result_state == "failed",
        message.seq,
    )


def _recorded_events(sid: str, draft: DraftSession) -> list[_Event]:
    """The events the parser recorded, each after the message it was recorded at, in recording order."""
    events: list[_Event] = []
    for order, event in enumerate(draft.events):
        anchor = _anchor(event)
        source = refs.ref("message", refs.message_id(sid, event.message_seq)) if event.message_seq >= 0 else ""
        events.append(
            _Event(
                (anchor, 1, order),
                event.kind,
                event.time_ms,
                event.text,
                source,
                event.object_ref,
                event.failed,
                anchor,
            )
        )
    return events


def _delivery_state(event: _Event, last_reply: int) -> str:
    """failed when the event reports a failure; acted_on when it delivered something to the model and a
    model reply follows; else recorded."""
    if event.failed:
        return "failed"
    if event.kind in _DELIVERED and last_reply > event.anchor:
        return "acted_on"
    return "recorded"


def _anchor(event: DraftEvent) -> int:
    return event.message_seq if event.message_seq >= 0 else event.after_seq


def _add_snapshots(session: units_pb2.Session, draft: DraftSession) -> None:
    if not draft.messages:
        return
    start = _start_message(draft.messages)
    boundary = "subagent_start" if session.parent_session_id else "session_start"
    first = _add_snapshot(session, draft, boundary, start, session.created_ms or start.time_ms)
    first.inheritance = _inheritance(session)
    for compaction in draft.compactions:
        message = draft.messages[compaction.message_seq] if compaction.message_seq >= 0 else None
        snapshot = _add_snapshot(session, draft, "compaction", message, compaction.time_ms)
        snapshot.trigger = compaction.trigger
        snapshot.tokens_before = compaction.tokens_before
        snapshot.inheritance = "summary"


# Sessions with a parent that continue its conversation (a branch) rather than start from an instruction.
_BRANCHING_ORIGINS = ("chatgpt-export",)


def _inheritance(session: units_pb2.Session) -> str:
    """How a session's first context was formed: fresh, or with a parent: its instruction only (a
    subagent), or the parent's conversation up to the fork (a branch)."""
    if not session.parent_session_id:
        return "fresh"
    return "inherited" if session.origin in _BRANCHING_ORIGINS else "prompt"


def _add_snapshot(
    session: units_pb2.Session,
    draft: DraftSession,
    boundary: str,
    message: DraftMessage | None,
    time_ms: int,
) -> units_pb2.ContextSnapshot:
    seq = len(session.snapshots)
    at = message.seq if message is not None else len(draft.messages)
    return session.snapshots.add(
        id=refs.snapshot_id(session.id, seq),
        session_id=session.id,
        seq=seq,
        boundary=boundary,
        time_ms=time_ms,
        message_ref=refs.ref("message", refs.message_id(session.id, message.seq)) if message is not None else "",
        preview=_preview(message) if message is not None else "",
        cwd=session.cwd,
        branch=session.branch,
        model=_model_before(draft.messages, at) or session.model,
    )


def _start_message(messages: list[DraftMessage]) -> DraftMessage:
    """The first prompt; without one, the first user message; without one, the first message."""
    users = (m for m in messages if m.role == "user" and m.surface != "log-only")
    return first_prompt(messages) or next(users, messages[0])


def _model_before(messages: list[DraftMessage], seq: int) -> str:
    """The model of the last model reply before message `seq`, else of the first one after it."""
    before = [m.model for m in messages[:seq] if m.role == "assistant" and m.model not in SYNTHETIC_MODELS]
    if before:
        return before[-1]
    return next((m.model for m in messages[seq:] if m.role == "assistant" and m.model not in SYNTHETIC_MODELS), "")


def _preview(message: DraftMessage) -> str:
    """A message's prompt text, else all its text (a compaction summary is one wrapper-free block)."""
    text = prompt_text(message) or "\n".join(b.text for b in message.blocks if b.type in ("text", "code"))
    return text[:PREVIEW_CHARS]


def _json_object(text: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        return as_dict(orjson.loads(text))
    except orjson.JSONDecodeError:
        return {}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _clip(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
