"""Closed vocabularies of the archive model. Unknown values fail at the boundary."""

from __future__ import annotations

import re

# The origins Quarry reads (what ingest writes). Queries, ids and refs take any well-formed origin
# name: another agent's origin (`windsurf-session`) is valid, matches nothing, and the empty result says so.
ORIGINS = (
    "claude-code-session",
    "codex-session",
    "chatgpt-export",
    "gemini-cli-session",
    "claude-ai-export",
    "cursor-session",
    "copilot-chat-export",
    "opencode-session",
    "crush-session",
    "aider-session",
    "goose-session",
    "cline-task",
    "roo-code-task",
    "cursor-cli-session",
    "continue-session",
    "copilot-cli-session",
    "kimi-cli-session",
    "qwen-code-session",
    "grok-export",
    "ai-studio-export",
    "zed-session",
    "kiro-cli-session",
    "cursor-agent-transcript",
)
ORIGIN_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
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

# Derived units (quarry.ingest.derive); the field comments of proto/quarry/v1/units.proto define them.
RUN_ROLES = ("main", "subagent")
RUN_STATUSES = ("completed", "failed", "interrupted", "running", "unknown")
EVENT_KINDS = (
    "session_started",
    "turn_started",
    "turn_completed",
    "turn_aborted",
    "tool_finished",
    "subagent_finished",
    "compaction",
    "api_error",
    "command",
)
DELIVERY_STATES = ("recorded", "acted_on", "failed")
# A failed action's next turn (quarry.ingest.followup, where the rule is).
FOLLOWUP_CLASSES = ("acknowledged", "silent_proceed", "wordless_continuation", "ambiguous")
SNAPSHOT_BOUNDARIES = ("session_start", "subagent_start", "compaction")
SNAPSHOT_INHERITANCE = ("fresh", "prompt", "inherited", "summary")  # ContextSnapshot.inheritance
MAPPING_STATES = ("resolved", "unresolved")
RESULT_STATES = ("completed", "failed", "missing")

# Assertions and their candidate judgment (docs/query-language.md#assertion-fields).
ASSERTION_KINDS = ("decision", "caveat", "summary", "tag", "note", "todo")
ASSERTION_STATUSES = ("active", "candidate", "accepted", "rejected", "deferred", "superseded", "deleted", "inactive")
ASSERTION_AUTHORS = ("user", "agent", "transform", "detector")

# The nine unit sources of the query language, keyed by the singular name `exists <unit>(…)` uses.
UNIT_SOURCES = {
    "message": "messages",
    "action": "actions",
    "block": "blocks",
    "file": "files",
    "assertion": "assertions",
    "run": "runs",
    "observed-event": "observed-events",
    "context-snapshot": "context-snapshots",
    "delegation": "delegations",
}


def well_formed_origin(name: str) -> bool:
    """Whether `name` is spelled as an origin is: lower-case words joined by `-` (`codex-session`)."""
    return ORIGIN_NAME.fullmatch(name) is not None
