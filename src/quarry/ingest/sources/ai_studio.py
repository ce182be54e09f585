"""Google AI Studio's saved prompts: the files AI Studio keeps in the user's Drive folder "Google AI Studio"
(one JSON object per chat, named by the chat's title, without an extension), as Drive or Takeout downloads them.

Learnt from Polylogue (Sinity/polylogue at d250e578bf7353519f667a96fafd7ea7d43f8e0b:
polylogue/sources/parsers/drive.py, drive_support_text.py, drive_support_attachments.py,
polylogue/sources/providers/gemini_message.py, tests/data/gemini_chunked_prompt/*.json): `runSettings`
(the model, as `models/<name>`), `systemInstruction`, and `chunkedPrompt.chunks`, each chunk a turn piece
with a `role` ("user" or "model") and its `text` or `parts`, `tokenCount`, `isThought` (thinking),
`finishReason`, `errorMessage`, `executableCode` and `codeExecutionResult` (the code execution tool),
and attachments (`driveDocument`, `driveImage`, `driveVideo`, `driveAudio` by Drive id, `inlineImage`,
`inlineFile`, `youtubeVideo`); `pendingInputs` is the unsent input box.

A file is one session `ai-studio-export:<id>`. The file carries no id of its own (Drive's file id is
not in it): a chat's id is its `id` when present, else a hash of its file name and its first chunk, so
the same chat read again, or grown by more turns, is the same session. Its title is its file name (the
chat's name in AI Studio); times are the chunks' `createTime` where the file has them (AI Studio's own
files have none).

- consecutive chunks of one role are one message (a thought, code, its result and the answer are one
  reply); `model` is the assistant; `systemInstruction` is a system message (not the user's words).
- a reply's `tokenCount`s are its output tokens; its model is `runSettings.model` (without `models/`).
- `executableCode` is a `code_execution` call, `codeExecutionResult` its result (failed unless
  `OUTCOME_OK`); `errorMessage` is an API error event; a `finishReason` other than STOP is recorded in
  the raw event only.
- attachments: images (`driveImage`, `inlineImage`, inline image parts) are image blocks (referenced,
  never inlined); documents, audio, video and YouTube videos are named in a text block
  (`attached: Drive document <id>`), so a turn that only attached a file is kept.
- not read: `pendingInputs`, grounding (search sources), safety ratings, thought signatures; a chunk
  with nothing of these is counted as `ai-studio:empty-chunk`.
"""

from __future__ import annotations

import hashlib
import ntpath
from typing import Any

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

FORMAT = "ai-studio"
ORIGIN = "ai-studio-export"
ROLES = {"user": "user", "model": "assistant"}
OK_OUTCOME = "OUTCOME_OK"
NAMED_ATTACHMENTS = {
    "driveDocument": "Drive document",
    "driveVideo": "Drive video",
    "driveAudio": "Drive audio",
    "inlineFile": "file",
    "youtubeVideo": "YouTube video",
}


def recognize(document: Any) -> str:
    """An AI Studio chat: an object whose `chunkedPrompt` holds a `chunks` array."""
    return FORMAT if isinstance(as_dict(as_dict(document).get("chunkedPrompt")).get("chunks"), list) else ""


def _native_id(document: dict[str, Any], name: str, chunks: list[Any]) -> str:
    if as_str(document.get("id")):
        return document["id"]
    first = json_text(chunks[0]) if chunks else ""
    return hashlib.sha256(f"{name}\n{first}".encode()).hexdigest()[:32]


def _text(value: Any) -> str:
    """The text of a `systemInstruction`: a string, `{text}` or `{parts: [{text}]}`."""
    if isinstance(value, str):
        return value
    value = as_dict(value)
    return as_str(value.get("text")) or "\n".join(as_str(as_dict(p).get("text")) for p in as_list(value.get("parts")))


def _attachment(key: str, value: Any) -> DraftBlock:
    value = {"id": value} if isinstance(value, str) else as_dict(value)
    name = as_str(value.get("name")) or as_str(value.get("displayName")) or as_str(value.get("id"))
    mime = as_str(value.get("mimeType"))
    if key in ("driveImage", "inlineImage") or (key == "inlineFile" and mime.startswith("image/")):
        return DraftBlock("image", text=name, media_type=mime)
    return DraftBlock("text", text=f"attached: {NAMED_ATTACHMENTS[key]} {name or mime}".rstrip())


def chunk_blocks(chunk: dict[str, Any], call_id: str) -> list[DraftBlock]:
    """A chunk's blocks, in the order AI Studio shows them."""
    blocks: list[DraftBlock] = []
    thought = chunk.get("isThought") is True
    parts = [as_dict(part) for part in as_list(chunk.get("parts"))]
    if as_str(chunk.get("text")).strip():
        blocks.append(DraftBlock("thinking" if thought else "text", text=chunk["text"]))
    elif parts:
        for part in parts:
            if as_str(part.get("text")).strip():
                kind = "thinking" if thought or part.get("thought") is True else "text"
                blocks.append(DraftBlock(kind, text=part["text"]))
    for part in parts:
        if isinstance(part.get("inlineData"), dict):
            blocks.append(DraftBlock("image", media_type=as_str(part["inlineData"].get("mimeType"))))
    blocks += [_attachment(key, chunk[key]) for key in ("driveImage", "inlineImage") if chunk.get(key)]
    blocks += [_attachment(key, chunk[key]) for key in NAMED_ATTACHMENTS if chunk.get(key)]
    code = as_dict(chunk.get("executableCode"))
    if as_str(code.get("code")):
        language = as_str(code.get("language")).lower()
        blocks.append(
            DraftBlock(
                "tool_use",
                text=code["code"],
                language=language,
                tool_name="code_execution",
                tool_use_id=call_id,
                tool_input_json=json_text(code),
            )
        )
    outcome = as_dict(chunk.get("codeExecutionResult"))
    if outcome:
        status = as_str(outcome.get("outcome"))
        text = as_str(outcome.get("output")) or status
        failed = status != OK_OUTCOME
        blocks.append(DraftBlock("tool_result", text=text, tool_name="code_execution", is_error=failed))
    return blocks


class _Chat:
    def __init__(self, document: dict[str, Any], path: str, result: SourceResult) -> None:
        self.result = result
        self.chunks = as_list(as_dict(document.get("chunkedPrompt")).get("chunks"))
        name = ntpath.basename(path.rsplit("!", 1)[-1])
        self.model = as_str(as_dict(document.get("runSettings")).get("model")).removeprefix("models/")
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=_native_id(document, name, self.chunks),
            source_path=path,
            title=as_str(document.get("title")) or as_str(document.get("displayName")) or name,
            header_title_kind="export",
        )
        for stamp in (document.get("createTime"), document.get("updateTime")):
            self.draft.observe_time(to_ms(stamp))
        self.message: DraftMessage | None = None
        self.calls: list[str] = []  # code execution calls not yet answered
        instruction = _text(document.get("systemInstruction"))
        if instruction.strip():
            self.draft.begin(DraftRecord(0, f"{FORMAT}:system-instruction", document["systemInstruction"], node=True))
            system = self.draft.add_message(DraftMessage(role="system", authored=False))
            self.draft.add_block(system, DraftBlock("text", text=instruction))

    def build(self) -> DraftSession:
        for index, chunk in enumerate(self.chunks):
            self._chunk(index, as_dict(chunk), chunk)
        self.draft.current = None
        return self.draft

    def _chunk(self, index: int, chunk: dict[str, Any], raw: Any) -> None:
        role = ROLES.get(as_str(chunk.get("role")), "")
        time_ms = to_ms(chunk.get("createTime"))
        self.draft.observe_time(time_ms)
        record = self.draft.begin(DraftRecord(0, f"{FORMAT}:chunk/{role or 'unknown'}", raw, time_ms=time_ms))
        record.node = True
        call_id = f"chunk-{index}"
        blocks = chunk_blocks(chunk, call_id) if role else []
        error = as_str(chunk.get("errorMessage"))
        if not blocks and not error:
            self.result.skipped[f"{FORMAT}:empty-chunk"] += 1
            return
        if blocks:
            self._add(role, time_ms, blocks, chunk)
        if error:
            seq = self.message.seq if self.message is not None else -1
            self.draft.record("api_error", time_ms, error, failed=True, message_seq=seq)

    def _add(self, role: str, time_ms: int, blocks: list[DraftBlock], chunk: dict[str, Any]) -> None:
        message = self.message
        if message is None or message.role != role:
            model = self.model if role == "assistant" else ""
            message = self.draft.add_message(DraftMessage(role=role, authored=True, time_ms=time_ms, model=model))
            self.message = message
        elif self.draft.current is not None:
            self.draft.current.message = message
        if role == "assistant":
            message.output_tokens += as_count(chunk.get("tokenCount"))
        for block in blocks:
            if block.type == "tool_use":
                self.calls.append(block.tool_use_id)
            elif block.type == "tool_result" and self.calls:
                block.tool_use_id = self.calls.pop(0)
            self.draft.add_block(message, block)


def parse(document: Any, path: str) -> SourceResult:
    result = SourceResult()
    if not isinstance(document, dict):
        result.issues.append(issue(path, 0, "invalid_record", "the chat is not an object"))
        return result
    draft = _Chat(document, path, result).build()
    if draft.messages and any(m.role != "system" for m in draft.messages):
        result.sessions.append(draft)
    else:
        result.skipped[f"{FORMAT}:empty-chat"] += 1
    return result
