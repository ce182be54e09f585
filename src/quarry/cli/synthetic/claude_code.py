"""The synthetic sessions as Claude Code writes its logs: JSON Lines records under a folder per project,
as under ~/.claude/projects, which the Claude Code parser reads back into the same sessions."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from quarry.v1 import units_pb2

_VERSION = "2.0.76"
# A 1x1 PNG: a pasted screenshot's bytes are beside the point, only that one was pasted.
_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _record_uuid(message_id: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(message_id.encode()).digest()[:16], version=4))


def _project_slug(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _content(message: units_pb2.Message) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for b in message.blocks:
        if b.type == "text":
            out.append({"type": "text", "text": b.text})
        elif b.type == "code":  # the parser splits fenced code out of text: write it back as a fence
            out.append({"type": "text", "text": f"```{b.language}\n{b.text}\n```"})
        elif b.type == "thinking":
            sig = hashlib.sha256(b.id.encode()).hexdigest()
            out.append({"type": "thinking", "thinking": b.text, "signature": sig})
        elif b.type == "tool_use":
            out.append(
                {
                    "type": "tool_use",
                    "id": b.tool_use_id,
                    "name": b.tool_name,
                    "input": json.loads(b.tool_input_json),
                }
            )
        elif b.type == "tool_result":
            block: dict[str, object] = {
                "tool_use_id": b.tool_use_id,
                "type": "tool_result",
                "content": b.text,
            }
            if b.is_error:
                block["is_error"] = True
            out.append(block)
        elif b.type == "image":
            out.append({"type": "image", "source": {"type": "base64", "media_type": b.media_type, "data": _PNG_BASE64}})
    return out


def session_records(session: units_pb2.Session) -> Iterator[dict[str, object]]:
    """The Claude Code JSONL records of one session: a summary line, then one line per message.

    Tool results are `user` records holding tool_result blocks, as Claude Code writes them. Each canonical
    message becomes one record carrying all its blocks (Claude Code 2.x splits an API response over
    several lines sharing `message.id`; both forms occur in real logs). The parser reads these records
    back into the same canonical session, except for `source_path`.
    """
    last = session.messages[-1].id if session.messages else ""
    yield {"type": "summary", "summary": session.title, "leafUuid": _record_uuid(last)}
    parent: str | None = None
    for m in session.messages:
        uid = _record_uuid(m.id)
        record: dict[str, object] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": session.cwd,
            "sessionId": session.native_id,
            "version": _VERSION,
            "gitBranch": session.branch,
            "type": "assistant" if m.role == "assistant" else "user",
        }
        if m.role == "assistant":
            record["message"] = {
                "model": m.model,
                "id": "msg_01" + hashlib.sha256(m.id.encode()).hexdigest()[:22],
                "type": "message",
                "role": "assistant",
                "content": _content(m),
                "stop_reason": "tool_use" if any(b.type == "tool_use" for b in m.blocks) else "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": m.input_tokens,
                    "cache_creation_input_tokens": m.cache_write_tokens,
                    "cache_read_input_tokens": m.cache_read_tokens,
                    "output_tokens": m.output_tokens,
                    "service_tier": "standard",
                },
            }
            record["requestId"] = "req_011" + hashlib.sha256(uid.encode()).hexdigest()[:21]
        elif m.role == "user" and len(m.blocks) == 1 and m.blocks[0].type == "text":
            record["message"] = {"role": "user", "content": m.blocks[0].text}
        else:
            record["message"] = {"role": "user", "content": _content(m)}
            if any(b.type == "image" for b in m.blocks):
                record["imagePasteIds"] = [1]
        record["uuid"] = uid
        record["timestamp"] = _iso(m.time_ms)
        parent = uid
        yield record


def write_claude_code_archive(sessions: Iterable[units_pb2.Session], out_dir: Path) -> list[Path]:
    """Writes each session as `<out_dir>/<project slug>/<session uuid>.jsonl`, as under ~/.claude/projects."""
    paths: list[Path] = []
    for session in sessions:
        folder = out_dir / _project_slug(session.cwd)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session.native_id}.jsonl"
        lines = (json.dumps(r, ensure_ascii=False) for r in session_records(session))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
