"""A Claude Code session whose every text is an attack on a page that shows it: script tags, an image
whose onerror runs script, javascript: links, and tool output that looks like HTML. Rendered anywhere
(reader, search hits, units console, export), it must stay text: the tests look for `window.pwned` and
for alerts, which any of these would set or open if it ran."""

from __future__ import annotations

import json
from pathlib import Path

SESSION_ID = "hostile-0001"
SCRIPT = "<script>window.pwned = 'script'; alert('script')</script>"
IMAGE = "<img src=x onerror=\"window.pwned='img'; alert('img')\">"
LINK = "[click me](javascript:window.pwned='link') <a href=\"javascript:window.pwned='a'\">open</a>"
TOOL_OUTPUT = "<b>bold</b><iframe src=\"javascript:window.pwned='iframe'\"></iframe><svg onload=\"window.pwned='svg'\">"
MARKER = "xsscanary"  # a word every hostile message holds, so a search finds them all


def write_hostile_session(folder: Path) -> Path:
    """The session as `folder/hostile.jsonl`: a prompt, a reply, a Bash call whose output is HTML."""
    base = {"cwd": "/home/dev/projects/site", "sessionId": SESSION_ID, "version": "2.1.92", "gitBranch": "main"}
    records = [
        {"type": "user", "uuid": "h1", "parentUuid": None, "timestamp": "2026-03-02T09:00:00.000Z",
         "message": {"role": "user", "content": f"{MARKER} render this title {SCRIPT} and {IMAGE}"}},
        {"type": "assistant", "uuid": "h2", "parentUuid": "h1", "timestamp": "2026-03-02T09:00:05.000Z",
         "message": {"model": "claude-sonnet-4-6", "id": "msg_h2", "type": "message", "role": "assistant",
                     "content": [{"type": "text", "text": f"{MARKER} here is the link {LINK}"},
                                 {"type": "tool_use", "id": "toolu_h", "name": "Bash",
                                  "input": {"command": f"echo '{SCRIPT}'", "description": IMAGE}}],
                     "usage": {"input_tokens": 12, "output_tokens": 30}}},
        {"type": "user", "uuid": "h3", "parentUuid": "h2", "timestamp": "2026-03-02T09:00:06.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_h",
                                                   "content": f"{MARKER} {TOOL_OUTPUT}", "is_error": True}]}},
    ]  # fmt: skip
    path = folder / "hostile.jsonl"
    path.write_text("".join(json.dumps({**base, **record}) + "\n" for record in records))
    return path
