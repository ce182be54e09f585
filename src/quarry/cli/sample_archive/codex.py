"""Scripts as the Codex CLI writes its rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one
`{timestamp, type, payload}` envelope a line.

A rollout opens with `session_meta` and the injected environment context; each turn is a
`turn_context`, `task_started`, the prompt (as a response item and again as a `user_message` event), the
model's reasoning, messages and calls (`shell` with its JSON-encoded output and exit code, `apply_patch`
as a custom tool call), a `token_count` after each response, and `task_complete`. A compaction is the
`compacted` record and its `context_compacted` event. Codex runs no subagents: a script that delegates
is written for Claude Code only."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quarry.cli.sample_archive.claude_code import iso
from quarry.cli.sample_archive.script import Compaction, Prompt, Response, Script, Tool

CLI_VERSION = "0.63.0"
CONTEXT_WINDOW = 272_000


def write_session(script: Script, sessions: Path) -> list[Path]:
    """Write the rollout under `sessions`; returns the file written."""
    start = datetime.fromtimestamp(script.start_ms / 1000, tz=UTC)
    name = f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{script.session_id}.jsonl"
    path = sessions / start.strftime("%Y/%m/%d") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in _Rollout(script).records()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [path]


class _Rollout:
    def __init__(self, script: Script) -> None:
        if script.children():
            raise ValueError(f"{script.title!r} runs subagents: Codex rollouts cannot hold them")
        self.script = script
        self.turn = 0
        self.totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        self.last_text = ""

    @staticmethod
    def _line(time_ms: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": iso(time_ms), "type": kind, "payload": payload}

    def records(self) -> Iterator[dict[str, Any]]:
        script, start = self.script, self.script.start_ms
        meta = {
            "id": script.session_id,
            "timestamp": iso(start),
            "cwd": script.repo.cwd,
            "originator": "codex_cli_rs",
            "cli_version": CLI_VERSION,
            "instructions": None,
            "source": "cli",
            "model_provider": "openai",
            "git": {"commit_hash": _commit(script), "branch": script.branch, "repository_url": script.repo.remote},
        }
        yield self._line(start, "session_meta", meta)
        context = (
            f"<environment_context>\n  <cwd>{script.repo.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
            "  <shell>zsh</shell>\n</environment_context>"
        )
        yield self._line(start, "response_item", _message("user", "input_text", context))
        events = script.events
        for index, event in enumerate(events):
            if isinstance(event, Prompt):
                yield from self._prompt(event)
            elif isinstance(event, Compaction):
                yield self._line(event.time_ms, "compacted", {"message": event.summary})
                yield self._line(event.time_ms, "event_msg", {"type": "context_compacted"})
            else:
                yield from self._response(event)
                if index + 1 == len(events) or isinstance(events[index + 1], Prompt):
                    done = {"type": "task_complete", "turn_id": str(self.turn), "last_agent_message": self.last_text}
                    yield self._line(event.end_ms + 200, "event_msg", done)

    def _prompt(self, prompt: Prompt) -> Iterator[dict[str, Any]]:
        if prompt.command:  # a slash command (/compact) is the CLI's, not a message
            return
        self.turn += 1
        model = next((e.model for e in self.script.events if isinstance(e, Response)), "")
        turn_context = {
            "cwd": self.script.repo.cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"mode": "workspace-write", "network_access": False},
            "model": model,
            "effort": "medium",
            "summary": "auto",
        }
        at = prompt.time_ms
        yield self._line(at, "turn_context", turn_context)
        started = {"type": "task_started", "turn_id": str(self.turn), "model_context_window": CONTEXT_WINDOW}
        yield self._line(at, "event_msg", started)
        yield self._line(at, "response_item", _message("user", "input_text", prompt.text))
        yield self._line(at, "event_msg", {"type": "user_message", "message": prompt.text, "images": []})

    def _response(self, response: Response) -> Iterator[dict[str, Any]]:
        at = response.time_ms
        if response.thinking:
            title, _, rest = response.thinking.partition("\n")
            summary = f"**{title.strip().rstrip('.')}**" + (f"\n\n{rest.strip()}" if rest.strip() else "")
            encrypted = "gAAAAABo" + hashlib.sha256(summary.encode()).hexdigest() * 3
            reasoning = {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}],
                "content": None,
                "encrypted_content": encrypted,
            }
            yield self._line(at, "response_item", reasoning)
            yield self._line(at, "event_msg", {"type": "agent_reasoning", "text": summary})
        if response.text:
            self.last_text = response.text
            yield self._line(at + 300, "event_msg", {"type": "agent_message", "message": response.text})
            yield self._line(at + 300, "response_item", _message("assistant", "output_text", response.text))
        for n, tool in enumerate(response.tools):
            call_id = "call_" + hashlib.sha256(f"{self.script.session_id}/{at}/{n}".encode()).hexdigest()[:24]
            yield self._line(tool.call_ms, "response_item", self._call(tool, call_id))
            yield self._line(tool.result_ms, "response_item", self._output(tool, call_id))
        yield self._line(response.end_ms, "event_msg", self._token_count(response))

    def _call(self, tool: Tool, call_id: str) -> dict[str, Any]:
        if tool.kind in ("edit", "write"):
            return {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call_id,
                "name": "apply_patch",
                "input": _patch(tool),
            }
        arguments = {"command": ["bash", "-lc", _command(tool)], "workdir": self.script.repo.cwd, "timeout_ms": 120000}
        return {"type": "function_call", "name": "shell", "arguments": json.dumps(arguments), "call_id": call_id}

    def _output(self, tool: Tool, call_id: str) -> dict[str, Any]:
        seconds = round((tool.result_ms - tool.call_ms) / 1000, 1)
        if tool.kind in ("edit", "write"):
            path = tool.args["path"]
            if tool.failed:
                text, code = f"Failed to find expected lines in {path}:\n{tool.args.get('old', '')}", 1
            else:
                text, code = f"Success. Updated the following files:\n{'M' if tool.kind == 'edit' else 'A'} {path}\n", 0
            output = json.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": seconds}})
            return {"type": "custom_tool_call_output", "call_id": call_id, "output": output}
        code = tool.exit_code if tool.exit_code is not None else (1 if tool.failed else 0)
        output = json.dumps({"output": tool.output, "metadata": {"exit_code": code, "duration_seconds": seconds}})
        return {"type": "function_call_output", "call_id": call_id, "output": output}

    def _token_count(self, response: Response) -> dict[str, Any]:
        usage = response.usage
        last = {
            "input_tokens": usage.context,
            "cached_input_tokens": usage.cache_read_tokens,
            "output_tokens": usage.output_tokens,
            "reasoning_output_tokens": len(response.thinking) // 4,
            "total_tokens": usage.context + usage.output_tokens,
        }
        for key in self.totals:
            self.totals[key] += last[key]
        total = {**self.totals, "reasoning_output_tokens": 0}
        info = {"total_token_usage": total, "last_token_usage": last, "model_context_window": CONTEXT_WINDOW}
        return {"type": "token_count", "info": info, "rate_limits": None}


def _message(role: str, part: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _command(tool: Tool) -> str:
    """The shell command Codex runs for a tool the script names by what it does."""
    args = tool.args
    if tool.kind == "read":
        first = int(args.get("offset", "1"))
        return f"sed -n '{first},{first + max(len(tool.output.splitlines()), 1) - 1}p' {args['path']}"
    if tool.kind == "grep":
        return f"rg -n {shlex.quote(args['pattern'])} {args['path']}"
    return args["command"]


def _patch(tool: Tool) -> str:
    args = tool.args
    if tool.kind == "write":
        body = "\n".join(f"+{line}" for line in args["content"].splitlines())
        return f"*** Begin Patch\n*** Add File: {args['path']}\n{body}\n*** End Patch\n"
    old = "\n".join(f"-{line}" for line in args["old"].splitlines())
    new = "\n".join(f"+{line}" for line in args["new"].splitlines())
    return f"*** Begin Patch\n*** Update File: {args['path']}\n@@\n{old}\n{new}\n*** End Patch\n"


def _commit(script: Script) -> str:
    return hashlib.sha1(f"{script.repo.name}/{script.branch}/{script.start_ms // 86_400_000}".encode()).hexdigest()
