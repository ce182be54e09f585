"""Scripts as Claude Code 2.1 writes its transcripts: `projects/<cwd slug>/<session id>.jsonl`, and each
subagent run beside it in `<session id>/subagents/agent-<agent id>.jsonl`.

Every model response is split over one line per content block sharing `message.id`, each tool result is
a `user` row with the runtime's `toolUseResult`, a turn ends with `system/turn_duration`, a title is an
`ai-title` record, and a compaction is the `/compact` command row, the `compact_boundary` (which breaks
the uuid chain) and the `isCompactSummary` row, as Claude Code records them."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quarry.cli.sample_archive.script import Compaction, Prompt, Response, Script, Tool

VERSION = "2.1.92"
_TOOL_NAMES = {"bash": "Bash", "read": "Read", "edit": "Edit", "write": "Write", "grep": "Grep", "agent": "Agent"}


def write_session(script: Script, projects: Path) -> list[Path]:
    """Write the session and its subagent runs under `projects`; returns the files written."""
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", script.repo.cwd)
    main = folder / f"{script.session_id}.jsonl"
    paths = [_write(main, _Transcript(script).records())]
    for child in script.children():
        path = folder / script.session_id / "subagents" / f"agent-{child.agent_id}.jsonl"
        paths.append(_write(path, _Transcript(child).records()))
    return paths


def _write(path: Path, records: Iterator[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class _Transcript:
    """The records of one file, in order, each chained to the one before by `parentUuid`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.parent: str | None = None
        self.count = 0
        self.sidechain = bool(script.agent_id)

    def _uuid(self) -> str:
        self.count += 1
        seed = f"{self.script.session_id}/{self.script.agent_id}/{self.count}".encode()
        return str(uuid.UUID(bytes=hashlib.sha256(seed).digest()[:16], version=4))

    def _row(self, kind: str, time_ms: int, body: dict[str, Any], *, chain: bool = True) -> dict[str, Any]:
        """A conversation record: the envelope every user, assistant and system row carries, then `body`."""
        uid = self._uuid()
        record: dict[str, Any] = {"parentUuid": self.parent if chain else None, "isSidechain": self.sidechain}
        if self.sidechain:
            record["agentId"] = self.script.agent_id
        record.update(
            {
                "userType": "external",
                "entrypoint": "cli",
                "cwd": self.script.repo.cwd,
                "sessionId": self.script.session_id,
                "version": VERSION,
                "gitBranch": self.script.branch,
                "type": kind,
                **body,
                "uuid": uid,
                "timestamp": iso(time_ms),
            }
        )
        self.parent = uid
        return record

    def records(self) -> Iterator[dict[str, Any]]:
        titled = self.sidechain
        turn_start = 0
        events = self.script.events
        for index, event in enumerate(events):
            if isinstance(event, Prompt):
                turn_start = event.time_ms
                yield from self._prompt(event)
            elif isinstance(event, Compaction):
                yield from self._compaction(event)
            else:
                yield from self._response(event)
                if not titled:
                    titled = True
                    yield {"type": "ai-title", "sessionId": self.script.session_id, "aiTitle": self.script.title}
                following = events[index + 1] if index + 1 < len(events) else None
                if not self.sidechain and not isinstance(following, Response):
                    end = event.end_ms
                    body = {"subtype": "turn_duration", "durationMs": end - turn_start, "isMeta": False}
                    yield self._row("system", end + 40, body)

    def _prompt(self, prompt: Prompt) -> Iterator[dict[str, Any]]:
        if not prompt.command:
            yield self._row("user", prompt.time_ms, {"message": {"role": "user", "content": prompt.text}})
            return
        name = prompt.command.lstrip("/")
        text = f"<command-name>{prompt.command}</command-name>\n<command-message>{name}</command-message>\n"
        text += f"<command-args>{prompt.text}</command-args>"
        yield self._row("user", prompt.time_ms, {"message": {"role": "user", "content": text}})

    def _compaction(self, compaction: Compaction) -> Iterator[dict[str, Any]]:
        logical_parent = self.parent
        boundary = {
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "level": "info",
            "logicalParentUuid": logical_parent,
            "compactMetadata": {"trigger": compaction.trigger, "preTokens": compaction.pre_tokens},
        }
        yield self._row("system", compaction.time_ms, boundary, chain=False)
        summary = (
            "This session is being continued from a previous conversation that ran out of context. "
            f"The conversation is summarized below:\n{compaction.summary}"
        )
        body = {"message": {"role": "user", "content": summary}, "isCompactSummary": True}
        yield self._row("user", compaction.time_ms, {**body, "isVisibleInTranscriptOnly": True})
        if compaction.trigger == "manual":
            stdout = "<local-command-stdout>Compacted. ctrl+o to see full summary</local-command-stdout>"
            yield self._row("user", compaction.time_ms + 30, {"message": {"role": "user", "content": stdout}})

    def _response(self, response: Response) -> Iterator[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if response.thinking:
            signature = hashlib.sha256(response.thinking.encode()).hexdigest()
            blocks.append({"type": "thinking", "thinking": response.thinking, "signature": signature})
        if response.text:
            blocks.append({"type": "text", "text": response.text})
        ids = [self._tool_use_id(response, n) for n in range(len(response.tools))]
        blocks += [
            {"type": "tool_use", "id": ids[n], "name": _TOOL_NAMES[tool.kind], "input": self._input(tool)}
            for n, tool in enumerate(response.tools)
        ]
        message_id = "msg_01" + hashlib.sha256(ids[0].encode() if ids else str(response.time_ms).encode()).hexdigest()
        request_id = "req_011" + message_id[6:27]
        usage = {
            "input_tokens": response.usage.input_tokens,
            "cache_creation_input_tokens": response.usage.cache_write_tokens,
            "cache_read_input_tokens": response.usage.cache_read_tokens,
            "output_tokens": response.usage.output_tokens,
            "service_tier": "standard",
        }
        sources: dict[str, str] = {}
        for n, block in enumerate(blocks):
            last = n == len(blocks) - 1
            message = {
                "model": response.model,
                "id": message_id[:30],
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": ("tool_use" if response.tools else "end_turn") if last else None,
                "stop_sequence": None,
                "usage": usage,
            }
            yield self._row("assistant", response.time_ms + n * 350, {"message": message, "requestId": request_id})
            if block["type"] == "tool_use":
                sources[block["id"]] = self.parent or ""
        for tool_use_id, tool in zip(ids, response.tools, strict=True):
            yield self._result(tool_use_id, tool, sources[tool_use_id])

    def _tool_use_id(self, response: Response, n: int) -> str:
        seed = f"{self.script.session_id}/{self.script.agent_id}/{response.time_ms}/{n}".encode()
        return "toolu_01" + hashlib.sha256(seed).hexdigest()[:22]

    def _input(self, tool: Tool) -> dict[str, Any]:
        args, repo = tool.args, self.script.repo
        if tool.kind == "bash":
            shown = {"command": args["command"]}
            return {**shown, "description": args["description"]} if args.get("description") else shown
        if tool.kind == "read":
            offset = int(args.get("offset", "1"))
            shown = {"file_path": repo.path(args["path"])}
            return shown if offset == 1 else {**shown, "offset": offset, "limit": len(tool.output.splitlines())}
        if tool.kind == "edit":
            return {"file_path": repo.path(args["path"]), "old_string": args["old"], "new_string": args["new"]}
        if tool.kind == "write":
            return {"file_path": repo.path(args["path"]), "content": args["content"]}
        if tool.kind == "grep":
            return {"pattern": args["pattern"], "path": repo.path(args["path"]), "output_mode": "content", "-n": True}
        return dict(args)  # agent: description, prompt, subagent_type

    def _result(self, tool_use_id: str, tool: Tool, source: str) -> dict[str, Any]:
        content, runtime = self._result_content(tool)
        block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if tool.failed:
            block["is_error"] = True
        body = {
            "message": {"role": "user", "content": [block]},
            "toolUseResult": runtime,
            "sourceToolAssistantUUID": source,
        }
        return self._row("user", tool.result_ms, body)

    def _result_content(self, tool: Tool) -> tuple[Any, Any]:
        """What the model reads (the tool_result's content) and what the runtime recorded (`toolUseResult`)."""
        args, output = tool.args, tool.output
        if tool.kind == "bash":
            if tool.failed:
                text = f"Exit code {tool.exit_code}\n{output}" if tool.exit_code else output
                return text, f"Error: {text}"
            return output, {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        if tool.kind == "read":
            start = int(args.get("offset", "1"))
            lines = output.splitlines()
            numbered = "\n".join(f"{start + n}\t{line}" for n, line in enumerate(lines))
            file = {"filePath": self.script.repo.path(args["path"]), "content": output, "numLines": len(lines)}
            return numbered, {"type": "text", "file": {**file, "startLine": start}}
        if tool.kind in ("edit", "write") and tool.failed:
            return f"<tool_use_error>{output}</tool_use_error>", f"Error: {output}"
        if tool.kind == "edit":
            path = self.script.repo.path(args["path"])
            runtime = {"filePath": path, "oldString": args["old"], "newString": args["new"], "replaceAll": False}
            return f"The file {path} has been updated successfully.", runtime
        if tool.kind == "write":
            path = self.script.repo.path(args["path"])
            return f"File created successfully at: {path}", {"type": "create", "filePath": path}
        if tool.kind == "grep":
            files = sorted({line.split(":", 1)[0] for line in output.splitlines() if ":" in line})
            return output, {"mode": "content", "numFiles": len(files), "filenames": files, "content": output}
        return self._agent_result(tool)

    def _agent_result(self, tool: Tool) -> tuple[Any, Any]:
        child = tool.child
        assert child is not None  # an agent call always carries its run
        responses = [e for e in child.events if isinstance(e, Response)]
        notice = f"agentId: {child.agent_id} (use SendMessage with to: '{child.agent_id}' to continue this agent)"
        content = [{"type": "text", "text": tool.output}, {"type": "text", "text": notice}]
        runtime = {
            "status": "completed",
            "prompt": tool.args["prompt"],
            "agentId": child.agent_id,
            "agentType": child.agent_type,
            "content": content[:1],
            "totalDurationMs": tool.result_ms - tool.call_ms,
            "totalTokens": sum(r.usage.context + r.usage.output_tokens for r in responses[-1:]),
            "totalToolUseCount": sum(len(r.tools) for r in responses),
        }
        return content, runtime
