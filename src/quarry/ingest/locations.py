"""Where each agent writes its logs, on Linux, macOS and Windows: one declarative table.

A `Place` is a root and a glob pattern below it. The root is a list of alternatives, the first one
that is set wins, exactly as the tool itself decides: `$CODEX_HOME` when the variable is set, else
`~/.codex`. A root starts with `~` (the home folder: `%USERPROFILE%` on Windows), `$NAME` (an
environment variable, skipped when unset or empty), `%NAME%` (a Windows folder variable, with its
usual default under the home folder when unset) or `.` (the project folder `quarry ingest` runs in).

Each row was checked against the tool's own source or documentation:

- Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `projects/`.
- Codex: `$CODEX_HOME` or `~/.codex`, `sessions/` and `archived_sessions/` (where an archived thread's
  rollout is moved).
- Gemini CLI: `$GEMINI_CLI_HOME` replaces the home folder (`packages/core/src/utils/paths.ts`), `.gemini/tmp/`.
- Qwen Code: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen`: `projects/*/chats/` and the prompt
  log `tmp/*/logs.json`.
- VS Code and its forks keep an extension's data in the user-data folder: `$VSCODE_APPDATA/<product>`,
  else `%APPDATA%` (Windows), `~/Library/Application Support` (macOS), `$XDG_CONFIG_HOME` or
  `~/.config` (Linux) (`src/vs/platform/environment/node/userDataPath.ts`), then `<product>/User`.
  Extensions that run beside the code (Cline, Roo Code) write on the remote machine under
  `~/.<server>/data/User` (Remote-SSH, WSL, dev containers). Cline 4.x's CLI: `$CLINE_DATA_DIR`,
  else `$CLINE_DIR/data`, else `~/.cline/data`, `tasks/`.
- VS Code's Copilot Chat store: `workspaceStorage/*/chatSessions/` and
  `globalStorage/emptyWindowChatSessions/` of the user-data folder.
- Cursor: `globalStorage/state.vscdb` and `workspaceStorage/*/state.vscdb` of its user-data folder;
  the Cursor Agent CLI: `~/.cursor/chats/*/*/store.db`; Cursor's agent transcripts (editor and CLI):
  `~/.cursor/projects/*/agent-transcripts/` (`%USERPROFILE%\\.cursor` on Windows).
- OpenCode uses xdg-basedir on every platform (Windows too): `$XDG_DATA_HOME` or `~/.local/share`,
  `opencode/opencode.db` (1.2 and later) and the older `opencode/storage/`.
- Goose (etcetera's app strategy): `$GOOSE_PATH_ROOT/data`, else `$XDG_DATA_HOME/goose` or
  `~/.local/share/goose` (Linux, macOS), `%APPDATA%/Block/goose/data` (Windows); `sessions/`.
- Continue: `$CONTINUE_GLOBAL_DIR` or `~/.continue`, `sessions/`. Kimi CLI: `$KIMI_SHARE_DIR` or
  `~/.kimi`, `sessions/`. GitHub Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, `session-state/` (a
  `<id>.jsonl` per session in older versions, `<id>/events.jsonl` in newer ones).
- Zed (crates/paths/src/paths.rs, `data_dir`): `$FLATPAK_XDG_DATA_HOME`, else `$XDG_DATA_HOME` or
  `~/.local/share`, then `zed` (Linux); `~/Library/Application Support/Zed` (macOS); `%LOCALAPPDATA%/Zed`
  (Windows); `threads/threads.db`.
- Kiro CLI and the Amazon Q Developer CLI (`dirs::data_local_dir()`, crates/chat-cli/src/util/paths.rs):
  `$XDG_DATA_HOME` or `~/.local/share` (Linux), `~/Library/Application Support` (macOS), `%LOCALAPPDATA%`
  (Windows), then `kiro-cli/data.sqlite3` or `amazon-q/data.sqlite3`.
- In a project folder: SpecStory's `.specstory/history/`, Aider's `.aider.chat.history.md`, Crush's
  `.crush/crush.db`, OpenCode (Go)'s `.opencode/opencode.db`.

Exports a user downloads (ChatGPT, Claude.ai, Grok, Google AI Studio's Drive files, Copilot Chat's "Export Chat")
have no standard place.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

LINUX, MACOS, WINDOWS = "linux", "macos", "windows"
PLATFORMS = (LINUX, MACOS, WINDOWS)
UNIX = (LINUX, MACOS)
PROJECT = "."  # a root: the project folder
# A Windows folder variable's value when it is unset, below the home folder.
_WINDOWS_DEFAULTS = {"APPDATA": "~/AppData/Roaming", "LOCALAPPDATA": "~/AppData/Local"}


@dataclass(frozen=True, slots=True)
class Place:
    """Where one tool writes on `platforms`: the first root of `roots` that is set, then `pattern`
    (a glob, or "" for the root itself) below it."""

    roots: tuple[str, ...]
    pattern: str = ""
    platforms: tuple[str, ...] = PLATFORMS


@dataclass(frozen=True, slots=True)
class Tool:
    """An agent and every place it writes its logs."""

    name: str
    places: tuple[Place, ...]


def _home(*relative: str, override: str = "") -> tuple[Place, ...]:
    """Places under a tool's own folder: `override` (an environment variable) when set, else `~/…`."""
    folder, *patterns = relative
    roots = (f"${override}", f"~/{folder}") if override else (f"~/{folder}",)
    return tuple(Place(roots, pattern) for pattern in patterns)


_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_CODE = ("Code", "Code - Insiders", "VSCodium")  # the editors GitHub Copilot Chat runs in
_SERVERS = (".vscode-server", ".vscode-server-insiders", ".vscodium-server", ".cursor-server", ".windsurf-server")


def _editors(products: Iterable[str], *patterns: str, remote: bool = False) -> tuple[Place, ...]:
    """`patterns` below the user-data folder of each editor in `products` on each platform, and below
    the remote servers' user-data folders when the extension runs beside the code (`remote`)."""
    places = []
    for product in products:
        user = f"{product}/User"
        for platform, default in (
            (LINUX, f"$XDG_CONFIG_HOME/{user}"),
            (MACOS, f"~/Library/Application Support/{user}"),
            (WINDOWS, f"%APPDATA%/{user}"),
        ):
            roots = (f"$VSCODE_APPDATA/{user}", default) + ((f"~/.config/{user}",) if platform == LINUX else ())
            places += [Place(roots, pattern, (platform,)) for pattern in patterns]
    if remote:
        places += [Place((f"~/{server}/data/User",), pattern, UNIX) for server in _SERVERS for pattern in patterns]
    return tuple(places)


_CLINE = "globalStorage/saoudrizwan.claude-dev/tasks"
_ROO_CODE = "globalStorage/rooveterinaryinc.roo-cline/tasks"
_QWEN = ("$QWEN_RUNTIME_DIR", "$QWEN_HOME", "~/.qwen")
_OPENCODE = ("$XDG_DATA_HOME/opencode", "~/.local/share/opencode")

TOOLS: tuple[Tool, ...] = (
    Tool("Claude Code", _home(".claude", "projects", override="CLAUDE_CONFIG_DIR")),
    Tool("Codex", _home(".codex", "sessions", "archived_sessions", override="CODEX_HOME")),
    Tool("Gemini CLI", (Place(("$GEMINI_CLI_HOME/.gemini", "~/.gemini"), "tmp"),)),
    Tool("Qwen Code", (Place(_QWEN, "projects"), Place(_QWEN, "tmp/*/logs.json"))),
    Tool("Cursor", _editors(["Cursor"], "globalStorage/state.vscdb", "workspaceStorage/*/state.vscdb")),
    Tool("Cursor Agent CLI", _home(".cursor", "chats/*/*/store.db")),
    Tool("Cursor agent transcripts", _home(".cursor", "projects/*/agent-transcripts")),
    Tool(
        "GitHub Copilot Chat",
        _editors(_CODE, "workspaceStorage/*/chatSessions", "globalStorage/emptyWindowChatSessions"),
    ),
    Tool(
        "Cline",
        (
            *_editors(_EDITORS, _CLINE, remote=True),
            Place(("$CLINE_DATA_DIR", "$CLINE_DIR/data", "~/.cline/data"), "tasks"),
        ),
    ),
    Tool("Roo Code", _editors(_EDITORS, _ROO_CODE, remote=True)),
    Tool("OpenCode", (Place(_OPENCODE, "opencode.db"), Place(_OPENCODE, "storage"))),
    Tool(
        "Goose",
        (
            Place(("$GOOSE_PATH_ROOT/data", "$XDG_DATA_HOME/goose", "~/.local/share/goose"), "sessions", UNIX),
            Place(("$GOOSE_PATH_ROOT/data", "%APPDATA%/Block/goose/data"), "sessions", (WINDOWS,)),
        ),
    ),
    Tool("Continue", _home(".continue", "sessions", override="CONTINUE_GLOBAL_DIR")),
    Tool("Kimi CLI", _home(".kimi", "sessions", override="KIMI_SHARE_DIR")),
    Tool(
        "GitHub Copilot CLI",
        _home(".copilot", "session-state/*.jsonl", "session-state/*/events.jsonl", override="COPILOT_HOME"),
    ),
    Tool(
        "Zed",
        (
            Place(
                ("$FLATPAK_XDG_DATA_HOME/zed", "$XDG_DATA_HOME/zed", "~/.local/share/zed"),
                "threads/threads.db",
                (LINUX,),
            ),
            Place(("~/Library/Application Support/Zed",), "threads/threads.db", (MACOS,)),
            Place(("%LOCALAPPDATA%/Zed",), "threads/threads.db", (WINDOWS,)),
        ),
    ),
    Tool(
        "Kiro CLI",
        tuple(
            Place(root, f"{app}/data.sqlite3", (platform,))
            for app in ("kiro-cli", "amazon-q")
            for platform, root in (
                (LINUX, ("$XDG_DATA_HOME", "~/.local/share")),
                (MACOS, ("~/Library/Application Support",)),
                (WINDOWS, ("%LOCALAPPDATA%",)),
            )
        ),
    ),
    Tool("SpecStory", (Place((PROJECT,), ".specstory/history"),)),
    Tool("Aider", (Place((PROJECT,), ".aider.chat.history.md"),)),
    Tool("Crush", (Place((PROJECT,), ".crush/crush.db"),)),
    Tool("OpenCode (Go)", (Place((PROJECT,), ".opencode/opencode.db"),)),
)
# The entries of a project folder its tools' places begin with (`.specstory`, `.aider.chat.history.md`, …):
# hidden by their names, yet walked like any other entry (discover.py).
PROJECT_ENTRIES = frozenset(
    place.pattern.split("/", 1)[0] for tool in TOOLS for place in tool.places if place.roots == (PROJECT,)
)


@dataclass(frozen=True, slots=True)
class Looked:
    """One place looked in on this machine: `where` (its root resolved, the pattern below it), the
    root it came from (`via`: the environment variable that moved it, or the default), and the paths
    that exist there."""

    tool: str
    where: Path
    via: str
    found: tuple[Path, ...]
    in_project: bool


def current_platform(name: str | None = None) -> str:
    """LINUX, MACOS or WINDOWS for a `sys.platform` value (default: this machine's)."""
    name = sys.platform if name is None else name
    return WINDOWS if name == "win32" else MACOS if name == "darwin" else LINUX


def look(
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    project: Path | None = None,
) -> list[Looked]:
    """Every place of `TOOLS` for `platform` (default: this machine's), resolved with `home` and `env`
    (default: the process's), each with what exists there. Project places only when `project` is given."""
    home = Path.home() if home is None else home
    env = os.environ if env is None else env
    platform = platform or current_platform()
    looked = []
    for tool in TOOLS:
        for place in tool.places:
            if platform not in place.platforms or (place.roots == (PROJECT,) and project is None):
                continue
            via, root = _root(place.roots, home, env, project)
            if root is None:
                continue
            where = root / place.pattern if place.pattern else root
            looked.append(Looked(tool.name, where, via, _matches(root, place.pattern), place.roots == (PROJECT,)))
    return looked


def _root(roots: tuple[str, ...], home: Path, env: Mapping[str, str], project: Path | None) -> tuple[str, Path | None]:
    """The first of `roots` that is set, and the template it came from."""
    for template in roots:
        head, _, rest = template.partition("/")
        if head == PROJECT:
            base = project
        elif head == "~":
            base = home
        elif head.startswith("$"):
            value = env.get(head[1:], "")
            base = Path(value).expanduser() if value else None
        elif head.startswith("%") and head.endswith("%"):
            default = _WINDOWS_DEFAULTS.get(head[1:-1])
            value = env.get(head[1:-1]) or (default and default.replace("~", str(home), 1))
            base = Path(value) if value else None
        else:
            raise ValueError(f"a location root starts with ~, $NAME, %NAME% or .: {template!r}")
        if base is not None:
            return template, base / rest if rest else base
    return "", None


def _matches(root: Path, pattern: str) -> tuple[Path, ...]:
    """The paths `pattern` names below `root` that exist (the root itself for "")."""
    if not pattern:
        return (root,) if root.exists() else ()
    if not any(mark in pattern for mark in "*?["):
        return (root / pattern,) if (root / pattern).exists() else ()
    if not root.is_dir():
        return ()
    return tuple(sorted(root.glob(pattern)))
