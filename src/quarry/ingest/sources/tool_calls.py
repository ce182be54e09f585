"""What a tool call's input says, read the same way for every origin: the action category of a tool's
name, the command, the file path and a one-line summary of its input, the files an apply_patch body
touches, and the tool_use block of a call.

The parsers build tool_use blocks with these (`tool_use_block`); `quarry.ingest.normalize` files each
call's action under its category (`action_category`)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from quarry.ingest.sources import DraftBlock, json_text

SUMMARY_CHARS = 300

_CATEGORY_BY_TOOL = {
    **dict.fromkeys(
        (
            "edit",
            "multiedit",
            "apply_patch",
            "notebookedit",
            "replace",
            "edit_file",
            "str_replace_editor",
            "str_replace",
            "patch",  # OpenCode's older name of apply_patch
            "search_replace",  # Cursor
            "edit_file_v2",
            "delete_file",
            "strreplace",
            "multistrreplace",
            "reapply",
            "edit_notebook",
            "replace_string_in_file",  # Copilot Chat
            "multi_replace_string_in_file",
            "insert_edit_into_file",
            "edit_notebook_file",
            "replace_in_file",  # Cline, Roo Code
            "apply_diff",
            "insert_content",
            "search_and_replace",
            "applypatch",  # Cursor Agent CLI
        ),
        "file_edit",
    ),
    **dict.fromkeys(("write", "write_file", "create_file", "file_create", "write_to_file"), "file_write"),
    **dict.fromkeys(
        ("read", "read_file", "read_file_v2", "read_many_files", "notebookread", "view_image", "view"), "file_read"
    ),
    **dict.fromkeys(
        (
            "bash",
            "bashoutput",
            "killshell",
            "shell",
            "local_shell",
            "exec_command",
            "write_stdin",
            "run_shell_command",
            "container.exec",
            "python",
            "bash_tool",
            "run_terminal_cmd",  # Cursor
            "run_terminal_command",
            "run_terminal_command_v2",
            "shell_command",
            "run_in_terminal",  # Copilot Chat
            "get_terminal_output",
            "job_output",  # Crush
            "job_kill",
            "execute_command",  # Cline, Roo Code
        ),
        "shell",
    ),
    **dict.fromkeys(
        (
            "grep",
            "glob",
            "ls",
            "list",  # OpenCode
            "codesearch",
            "search_file_content",
            "list_directory",
            "file_search",
            "grep_search",
            "list_dir",  # Cursor
            "glob_file_search",
            "codebase_search",
            "ripgrep",
            "semantic_search",  # Copilot Chat
            "search_workspace_symbols",
            "list_code_usages",
            "sourcegraph",  # Crush
            "list_files",  # Cline, Roo Code
            "search_files",
            "list_code_definition_names",
        ),
        "search",
    ),
    **dict.fromkeys(
        (
            "webfetch",
            "websearch",
            "web_fetch",
            "web_search",
            "google_web_search",
            "web.run",
            "browser",
            "fetch_webpage",
            "fetch",  # Crush
            "download",
            "agentic_fetch",
            "browser_action",  # Cline, Roo Code
        ),
        "web",
    ),
    **dict.fromkeys(("task", "agent", "runsubagent", "new_task", "subagent"), "subagent"),  # subagent: Cursor
}
# The own tool names of Kimi CLI, GitHub Copilot CLI and Continue.
_CATEGORY_BY_TOOL |= {"readfile": "file_read", "writefile": "file_write", "create_new_file": "file_write"}
_CATEGORY_BY_TOOL |= dict.fromkeys(("strreplacefile", "edit_existing_file", "single_find_and_replace"), "file_edit")
_CATEGORY_BY_TOOL |= dict.fromkeys(("powershell", "read_powershell"), "shell") | {"file_glob_search": "search"}
_CATEGORY_BY_TOOL |= dict.fromkeys(("search_web", "fetch_url_content", "searchweb", "fetchurl"), "web")
_CATEGORY_BY_TOOL |= {"terminal": "shell", "find_path": "search"}  # Zed
_CATEGORY_BY_TOOL |= {"execute_bash": "shell", "execute_cmd": "shell", "fs_read": "file_read"}  # Kiro CLI
_CATEGORY_BY_TOOL |= {"fs_write": "file_edit"}  # Kiro CLI: create, str_replace, insert or append
_PATH_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filePath",
    "absolute_path",
    "absolutePath",
    "target_file",
    "filename",
)
_COMMAND_KEYS = ("command", "cmd")
_TARGET_KEYS = ("pattern", "query", "url")
_PROSE_KEYS = ("description", "prompt", "code", "explanation")
_SHELL_WRAPPERS = frozenset({"-c", "-lc", "-ic"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool_use input says in a few words."""

    summary: str
    path: str
    command: str


def action_category(tool_name: str) -> str:
    return _CATEGORY_BY_TOOL.get(tool_name.lower(), "other")


def patch_path(text: str) -> str:
    """The first file an apply_patch body touches."""
    match = _PATCH_FILE.search(text) if "*** " in text else None
    return match.group(1) if match else ""


def patch_paths(text: str) -> list[str]:
    """Every file an apply_patch body touches, in order."""
    return _PATCH_FILE.findall(text) if "*** " in text else []


def describe_tool_input(value: Any) -> ToolCall:
    """The command, the file path and a one-line summary of a tool call's input."""
    if isinstance(value, str):
        path = patch_path(value)
        return ToolCall(_clip(path or value), path, "")
    if not isinstance(value, dict):
        return ToolCall("", "", "")
    command = ""
    for key in _COMMAND_KEYS:
        if key in value:
            command = _command_text(value[key])
            if command:
                break
    path = _first_text(value, _PATH_KEYS)
    if not path:
        paths = value.get("paths")
        if isinstance(paths, list) and paths and isinstance(paths[0], str):
            path = paths[0]
    if not path:
        body = value.get("input")
        path = patch_path(body if isinstance(body, str) else command)
    summary = command or _first_text(value, _TARGET_KEYS) or path or _first_text(value, _PROSE_KEYS)
    return ToolCall(_clip(summary), path, command)


def tool_use_block(name: str, tool_use_id: str, tool_input: Any) -> DraftBlock:
    """The tool_use block of a call whose input is a JSON value (described by describe_tool_input)."""
    call = describe_tool_input(tool_input)
    return DraftBlock(
        "tool_use",
        text=call.summary,
        tool_name=name,
        tool_use_id=tool_use_id,
        tool_input_json=json_text(tool_input if tool_input is not None else {}),
        path=call.path,
        command=call.command,
    )


def _first_text(value: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        text = value.get(key)
        if text and isinstance(text, str):
            return text
    return ""


def _command_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        if len(value) == 3 and value[1] in _SHELL_WRAPPERS:
            return value[2]
        return shlex.join(value)
    return ""


def _clip(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
