"""Closed vocabularies of the archive model. Unknown values fail at the boundary."""

from __future__ import annotations

ORIGINS = ("claude-code-session", "codex-session", "chatgpt-export", "gemini-cli-session")
ROLES = ("user", "assistant", "system", "tool")
SURFACES = ("current", "shadowed", "log-only")
BLOCK_TYPES = ("text", "code", "thinking", "tool_use", "tool_result", "image")
ACTION_CATEGORIES = (
    "file_edit",
    "file_write",
    "file_read",
    "shell",
    "search",
    "web",
    "subagent",
    "other",
)
# Block types whose text is dialogue (prose the user or the model wrote), as opposed to tool traffic.
DIALOGUE_BLOCK_TYPES = ("text", "code", "thinking")
