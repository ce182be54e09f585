"""The command that resumes a session in the agent that wrote it, where the agent has one.

Each command is the agent's own, as its CLI documentation gives it:
- Claude Code: `claude --resume <session id>`
- Codex CLI: `codex resume <session id>`
- Gemini CLI: `gemini --resume <session uuid>` (session management)
- OpenCode: `opencode --session <session id>`
- goose: `goose session --resume --session-id <session id>`

Claude Code and Gemini CLI look a session up among the sessions of the current project, so the command
first changes to the session's recorded working directory. A child session (a subagent's) is resumed
through its parent, so it has no command of its own. Every word is shell-quoted: a session id or a path
that holds `;` or `$(…)` stays one argument.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from quarry.core.session_ids import split_scope
from quarry.v1 import units_pb2

COMMANDS = {
    "claude-code-session": ("claude", "--resume"),
    "codex-session": ("codex", "resume"),
    "gemini-cli-session": ("gemini", "--resume"),
    "opencode-session": ("opencode", "--session"),
    "goose-session": ("goose", "session", "--resume", "--session-id"),
}


def resume_command(session: units_pb2.Session, clean: Callable[[str], str]) -> str:
    """The shell command that resumes `session` in its agent; "" where the agent has none (or for a child).
    `clean` is applied to the working directory (an export's redaction writes a home directory as `~`)."""
    words = COMMANDS.get(session.origin)
    if words is None or session.parent_session_id:
        return ""
    native = session.native_id or split_scope(session.id)[1].partition(":")[2]
    if not native:
        return ""
    command = " ".join(shlex.quote(word) for word in (*words, native))
    cwd = clean(session.cwd)
    if not cwd:
        return command
    home, _, rest = cwd.partition("/")
    where = shlex.quote(cwd) if home != "~" else f"~/{shlex.quote(rest)}" if rest else "~"
    return f"cd {where} && {command}"
