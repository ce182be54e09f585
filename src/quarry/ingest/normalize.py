"""From drafts to the canonical model: ids, words, counts, actions, titles, content hash.

Every origin goes through `build_session`, so the same rules apply to all of them:
- ids come from `quarry.core.refs` (message `<session>:m<seq>`, block `<message>:<index>`, action
  `<session>:action:<seq>`); seqs follow source order, so a re-parse or a longer copy of an
  append-only file gives the same ids to the messages both contain.
- words are the words of dialogue blocks (text, code, thinking): whitespace words, Chinese and Japanese
  runs counted by their words (quarry.core.cjk).
- session counts describe the conversation: messages on the `log-only` surface (a ChatGPT branch
  that is not the current one) are kept in `messages` but not counted.
- tool_result text is capped at 64 KiB of UTF-8; so is the action output taken from it.
- one action per tool_use, in the order the calls arrived, paired with the tool_result that
  names the same tool_use id; the action failed when that result is an error (parsers mark a
  result as an error for an error flag or a nonzero exit code).
- the session model is the one most assistant messages used (`<synthetic>` replies excluded).
- the derived units (files, runs, events, snapshots, delegations) come from `quarry.ingest.derive`.
- `content_hash` is the sha256 of the deterministic serialization with `content_hash` empty.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from quarry.core import refs, vocab
from quarry.core.cjk import count_words
from quarry.ingest import events
from quarry.ingest.derive import ToolResult, add_units, normalize_path, paired_results
from quarry.ingest.followup import followup
from quarry.ingest.prompts import first_prompt, prompt_text
from quarry.ingest.sources import SYNTHETIC_MODELS, DraftBlock, DraftMessage, DraftSession
from quarry.ingest.sources.tool_calls import action_category
from quarry.v1 import units_pb2

OUTPUT_CAP_BYTES = 64 * 1024
TITLE_CHARS = 120
_DIALOGUE = frozenset(vocab.DIALOGUE_BLOCK_TYPES)
_SPACES = re.compile(r"\s+")


def cap_output(text: str) -> str:
    """Tool output kept for search and display, cut to 64 KiB of UTF-8 on a character boundary."""
    if len(text) * 4 <= OUTPUT_CAP_BYTES:
        return text
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= OUTPUT_CAP_BYTES:
        return text
    return encoded[:OUTPUT_CAP_BYTES].decode("utf-8", errors="ignore")


def trim_title(text: str) -> str:
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= TITLE_CHARS:
        return text
    return text[: TITLE_CHARS - 1].rstrip() + "…"


def build_session(draft: DraftSession) -> units_pb2.Session:
    session_id = f"{draft.origin}:{draft.native_id}"
    records = events.ordered(draft)
    folded = events.fold(records)
    events.apply_surfaces(records, folded)
    session = units_pb2.Session(
        id=session_id,
        origin=draft.origin,
        native_id=draft.native_id,
        title=trim_title(draft.title or _title_from_messages(draft.messages)),
        repo=draft.repo,
        cwd=draft.cwd,
        branch=draft.branch,
        parent_session_id=draft.parent_session_id,
        source_path=draft.source_path,
        agent=draft.agent,
    )
    counts = session.counts
    models: Counter[str] = Counter()
    span = draft.span
    tool_results: list[ToolResult] = []
    for seq, message in enumerate(draft.messages):
        words = _add_message(session, session_id, seq, message, tool_results)
        span.observe(message.time_ms)
        if message.surface == "log-only":
            continue
        _count(counts, message, words)
        if message.role == "assistant" and message.model not in SYNTHETIC_MODELS:
            models[message.model] += 1
    session.created_ms = span.first_ms
    session.updated_ms = span.last_ms
    session.duration_ms = span.last_ms - span.first_ms
    if models:
        session.model = models.most_common(1)[0][0]
    results = paired_results(tool_results)
    _add_actions(session, session_id, draft, results)
    add_units(session, draft, tool_results, results)
    events.add_events(session, records, folded, draft.header_title_kind)
    seal_content_hash(session)
    return session


# Where a session was read and who wrote it are not its content: a copy of one log pushed by two
# teammates into one scope is one unchanged session, not two versions taking turns.
_NOT_CONTENT = ("content_hash", "scope", "host", "pusher")


def seal_content_hash(session: units_pb2.Session) -> None:
    """Set `content_hash`: the sha256 of the session's deterministic serialization without its hash, scope,
    host and pusher (the scope is in its ids: quarry.core.session_ids)."""
    kept = [(name, getattr(session, name)) for name in _NOT_CONTENT]
    for name, _ in kept:
        session.ClearField(name)
    digest = hashlib.sha256(session.SerializeToString(deterministic=True)).hexdigest()
    for name, value in kept[1:]:
        setattr(session, name, value)
    session.content_hash = digest


def _title_from_messages(messages: list[DraftMessage]) -> str:
    prompt = first_prompt(messages)
    return prompt_text(prompt) if prompt is not None else ""


def _add_message(
    session: units_pb2.Session,
    session_id: str,
    seq: int,
    message: DraftMessage,
    tool_results: list[ToolResult],
) -> int:
    message_id = refs.message_id(session_id, seq)
    # Only fields that differ from the proto default are passed: building protos dominates the cost.
    proto = session.messages.add(
        id=message_id, session_id=session_id, seq=seq, role=message.role, surface=message.surface
    )
    if message.authored:
        proto.authored = True
    if message.time_ms:
        proto.time_ms = message.time_ms
    if message.model:
        proto.model = message.model
    if message.input_tokens or message.output_tokens or message.cache_read_tokens or message.cache_write_tokens:
        proto.input_tokens = message.input_tokens
        proto.output_tokens = message.output_tokens
        proto.cache_read_tokens = message.cache_read_tokens
        proto.cache_write_tokens = message.cache_write_tokens
    if message.duration_ms:
        proto.duration_ms = message.duration_ms
    if message.cost_usd > 0:
        proto.cost_usd = message.cost_usd
    words = 0
    blocks = proto.blocks
    for index, block in enumerate(message.blocks):
        kind = block.type
        text = block.text
        if kind in _DIALOGUE:
            words += count_words(text)
            pb = blocks.add(id=refs.block_id(message_id, index), index=index, type=kind, text=text)
            if block.language:
                pb.language = block.language
            continue
        if kind == "tool_result":
            text = cap_output(text)
            tool_results.append(ToolResult(seq, index, block))
        blocks.add(
            id=refs.block_id(message_id, index),
            index=index,
            type=kind,
            text=text,
            tool_name=block.tool_name,
            tool_use_id=block.tool_use_id,
            tool_input_json=block.tool_input_json,
            path=block.path,
            is_error=block.is_error,
            media_type=block.media_type,
        )
    proto.words = words
    return words


def _count(counts: units_pb2.SessionCounts, message: DraftMessage, words: int) -> None:
    counts.messages += 1
    counts.words += words
    role = message.role
    if role == "user":
        counts.user_messages += 1
        counts.user_words += words
        if message.authored:
            counts.authored_user_messages += 1
            counts.authored_user_words += words
        if message.paste:
            counts.paste_messages += 1
    elif role == "assistant":
        counts.assistant_messages += 1
        counts.assistant_words += words
    elif role == "system":
        counts.system_messages += 1
    elif role == "tool":
        counts.tool_messages += 1
    kinds = {block.type for block in message.blocks}
    if "tool_use" in kinds:
        counts.tool_use_messages += 1
    if "thinking" in kinds:
        counts.thinking_messages += 1


def _add_actions(
    session: units_pb2.Session, session_id: str, draft: DraftSession, results: dict[str, ToolResult]
) -> None:
    for seq, (message_seq, block_index) in enumerate(draft.tool_uses):
        message = draft.messages[message_seq]
        block = message.blocks[block_index]
        result = results.get(block.tool_use_id) if block.tool_use_id else None
        output, failed = (cap_output(result.block.text), result.block.is_error) if result else ("", False)
        message_id = refs.message_id(session_id, message_seq)
        action = session.actions.add(
            id=refs.action_id(session_id, seq),
            session_id=session_id,
            message_id=message_id,
            block_id=refs.block_id(message_id, block_index),
            seq=seq,
            category=action_category(block.tool_name),
            tool=block.tool_name.lower(),
            command=block.command,
            path=normalize_path(block.path, session.cwd) if block.path else "",
            output=output,
            failed=failed,
            input_json=block.tool_input_json,
            time_ms=message.time_ms,
        )
        exit_code = exit_status(result.block) if result else None
        if exit_code is not None:
            action.exit_code = exit_code
        if failed:
            where = (result.message_seq, result.index) if result else (message_seq, block_index)
            action.followup = followup(draft.messages, *where)


# How a tool result states its exit status in its first lines: Claude Code's `Exit code 1` (`Error: Exit code
# 1`), Gemini CLI's `Exit Code: 1`, Codex's `Process exited with code 1`.
_EXIT_STATUS = re.compile(
    r"^(?:Error: )?(?:Exit code|Exit Code:|Process exited with code)\s+(-?\d{1,6})\b", re.MULTILINE
)
_EXIT_STATUS_CHARS = 600


def exit_status(block: DraftBlock) -> int | None:
    """The exit status a tool result records: the parser's, else the one its text states first."""
    if block.exit_code is not None:
        return block.exit_code
    match = _EXIT_STATUS.search(block.text, 0, _EXIT_STATUS_CHARS)
    return int(match.group(1)) if match else None
