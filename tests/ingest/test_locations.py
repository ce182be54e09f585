"""Where each agent writes its logs, per platform: a fake home laid out as Linux, macOS and Windows lay
it out (the paths written by hand here, from each tool's source and documentation), every file found;
the tools' environment overrides move the places as they move the tools; `quarry ingest
--list-sources` shows each place looked in and what is there."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from quarry.cli.main import app
from quarry.core.errors import QuarryError
from quarry.ingest.discover import iter_source_files, standard_locations
from quarry.ingest.locations import LINUX, MACOS, TOOLS, WINDOWS, look
from quarry.ingest.parse import iter_parse
from quarry.v1 import errors_pb2
from tests.shared_paths import REAL_LOGS, needs_shared

SQLITE = b"SQLite format 3\x00" + bytes(84)
CLINE, ROO = "globalStorage/saoudrizwan.claude-dev/tasks/t1", "globalStorage/rooveterinaryinc.roo-cline/tasks/t1"

# Below the home folder, every platform alike.
DOT_FOLDERS = [
    ".claude/projects/-home-me-app/0286dfe3.jsonl",
    ".claude/projects/-home-me-app/0286dfe3/subagents/agent-a1.jsonl",
    ".codex/sessions/2026/03/30/rollout-2026-03-30T19-05-55-019d.jsonl",
    ".codex/archived_sessions/rollout-2026-03-23T01-39-29-019d.jsonl",
    ".gemini/tmp/5f46f6ff/chats/session-2026-01-02.json",
    ".qwen/projects/-home-me-app/chats/4afe6662.jsonl",
    ".qwen/tmp/5f46f6ff/logs.json",
    ".cursor/chats/887904812217/dd3957b4/store.db",
    ".cline/data/tasks/1769064454592/api_conversation_history.json",
    ".local/share/opencode/opencode.db",
    ".local/share/opencode/storage/session/global/ses_1.json",
    ".continue/sessions/4574729b.json",
    ".kimi/sessions/697a0ebe/0be84c98/context.jsonl",
    ".kimi/sessions/697a0ebe/0be84c98/context_sub_8.jsonl",
    ".copilot/session-state/27d7ef99.jsonl",
    ".copilot/session-state/b87feda8/events.jsonl",
    ".cursor/projects/home-me-app/agent-transcripts/0be84c98/0be84c98.jsonl",
]
LINUX_FILES = [
    *DOT_FOLDERS,
    ".config/Cursor/User/globalStorage/state.vscdb",
    ".config/Cursor/User/workspaceStorage/9f1c/state.vscdb",
    ".config/Code/User/workspaceStorage/a1b2/chatSessions/3f0e.json",
    ".config/Code - Insiders/User/globalStorage/emptyWindowChatSessions/77aa.json",
    f".config/Code/User/{CLINE}/api_conversation_history.json",
    f".config/VSCodium/User/{CLINE}/ui_messages.json",
    f".config/Windsurf/User/{ROO}/api_conversation_history.json",
    f".vscode-server/data/User/{CLINE}/api_conversation_history.json",
    f".cursor-server/data/User/{ROO}/api_conversation_history.json",
    ".local/share/goose/sessions/sessions.db",
    ".local/share/zed/threads/threads.db",
    ".local/share/kiro-cli/data.sqlite3",
    ".local/share/amazon-q/data.sqlite3",
]
MACOS_FILES = [
    *DOT_FOLDERS,
    "Library/Application Support/Cursor/User/globalStorage/state.vscdb",
    "Library/Application Support/Cursor/User/workspaceStorage/9f1c/state.vscdb",
    "Library/Application Support/Code/User/workspaceStorage/a1b2/chatSessions/3f0e.json",
    "Library/Application Support/VSCodium/User/globalStorage/emptyWindowChatSessions/77aa.json",
    f"Library/Application Support/Code - Insiders/User/{CLINE}/api_conversation_history.json",
    f"Library/Application Support/Cursor/User/{ROO}/api_conversation_history.json",
    f".windsurf-server/data/User/{CLINE}/api_conversation_history.json",
    ".local/share/goose/sessions/sessions.db",
    "Library/Application Support/Zed/threads/threads.db",
    "Library/Application Support/kiro-cli/data.sqlite3",
]
WINDOWS_FILES = [
    *DOT_FOLDERS,
    "AppData/Roaming/Cursor/User/globalStorage/state.vscdb",
    "AppData/Roaming/Cursor/User/workspaceStorage/9f1c/state.vscdb",
    "AppData/Roaming/Code/User/workspaceStorage/a1b2/chatSessions/3f0e.json",
    "AppData/Roaming/Code/User/globalStorage/emptyWindowChatSessions/77aa.json",
    f"AppData/Roaming/Code/User/{CLINE}/api_conversation_history.json",
    f"AppData/Roaming/Windsurf/User/{ROO}/api_conversation_history.json",
    "AppData/Roaming/Block/goose/data/sessions/sessions.db",
    "AppData/Local/Zed/threads/threads.db",
    "AppData/Local/kiro-cli/data.sqlite3",
]
# Where no tool writes on that platform: never looked in.
ELSEWHERE = {
    LINUX: ["Library/Application Support/Code/User/workspaceStorage/a1b2/chatSessions/x.json"],
    MACOS: [".config/Cursor/User/globalStorage/state.vscdb", f"AppData/Roaming/Code/User/{CLINE}/x.json"],
    WINDOWS: [".local/share/goose/sessions/sessions.db", f".vscode-server/data/User/{CLINE}/x.json"],
}
# Beside the session files, as the tools leave them: not session logs.
NOISE = [".copilot/session-state/b87feda8/workspace.yaml", ".qwen/tmp/5f46f6ff/shell-1.output"]


def _clear_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """No variable of this machine that moves a tool's folder (the test sets the ones it means)."""
    for tool in TOOLS:
        for place in tool.places:
            for root in place.roots:
                if root.startswith("$"):
                    monkeypatch.delenv(root[1:].split("/")[0], raising=False)


def _put(root: Path, relative: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(SQLITE if path.suffix in (".db", ".vscdb", ".sqlite3") else b'{"id": 1}\n')
    return path


def _found(**kwargs: object) -> set[Path]:
    return set(iter_source_files(path for place in look(**kwargs) for path in place.found))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("platform", "files", "home", "env"),
    [
        (LINUX, LINUX_FILES, "home/me", {}),
        (MACOS, MACOS_FILES, "Users/me", {}),
        (
            WINDOWS,
            WINDOWS_FILES,
            "Users/me",
            {
                "USERPROFILE": "Users/me",
                "APPDATA": "Users/me/AppData/Roaming",
                "LOCALAPPDATA": "Users/me/AppData/Local",
            },
        ),
    ],
)
def test_every_place_each_tool_writes_on_each_platform_is_found(
    tmp_path: Path, platform: str, files: list[str], home: str, env: dict[str, str]
) -> None:
    user = tmp_path / home
    expected = {_put(user, relative) for relative in files}
    for relative in [*ELSEWHERE[platform], *NOISE]:
        _put(user, relative)
    (user / NOISE[0]).write_text("id: b87feda8\nname: Initialize Project Setup\n")
    (user / NOISE[1]).write_text("total 0\n")
    environment = {name: str(tmp_path / value) for name, value in env.items()}
    assert _found(home=user, env=environment, platform=platform) == expected


def test_environment_overrides_move_each_tool_s_places_as_the_tool_moves_them(tmp_path: Path) -> None:
    """Set, a tool's variable replaces its default place (the tool writes nowhere else); unset or empty,
    the default holds."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    env = {
        "CLAUDE_CONFIG_DIR": "claude",
        "CODEX_HOME": "codex",
        "GEMINI_CLI_HOME": "gemini-home",
        "QWEN_HOME": "qwen",
        "XDG_CONFIG_HOME": "config",
        "XDG_DATA_HOME": "data",
        "GOOSE_PATH_ROOT": "goose",
        "CONTINUE_GLOBAL_DIR": "continue",
        "KIMI_SHARE_DIR": "kimi",
        "COPILOT_HOME": "copilot",
        "CLINE_DIR": "cline",
    }
    moved = [
        "claude/projects/-p/s.jsonl",
        "codex/sessions/2026/01/02/rollout-a.jsonl",
        "codex/archived_sessions/rollout-b.jsonl",
        "gemini-home/.gemini/tmp/ab/chats/session-1.json",
        "qwen/projects/-p/chats/u.jsonl",
        "qwen/tmp/ab/logs.json",
        "config/Cursor/User/globalStorage/state.vscdb",
        f"config/Code/User/{CLINE}/api_conversation_history.json",
        "config/Code/User/workspaceStorage/a1/chatSessions/c.json",
        "data/opencode/opencode.db",
        "data/zed/threads/threads.db",
        "data/kiro-cli/data.sqlite3",
        "data/amazon-q/data.sqlite3",
        "goose/data/sessions/sessions.db",
        "continue/sessions/s.json",
        "kimi/sessions/h/u/context.jsonl",
        "copilot/session-state/a.jsonl",
        "cline/data/tasks/t/api_conversation_history.json",
    ]
    expected = {_put(elsewhere, relative) for relative in moved}
    for relative in LINUX_FILES:  # the defaults: the tools write there no more
        _put(home, relative)
    unmoved = [  # no variable moves these: the remote servers' folders, the Cursor Agent CLI's, Cursor's transcripts
        f".vscode-server/data/User/{CLINE}/api_conversation_history.json",
        f".cursor-server/data/User/{ROO}/api_conversation_history.json",
        ".cursor/chats/887904812217/dd3957b4/store.db",
        ".cursor/projects/home-me-app/agent-transcripts/0be84c98/0be84c98.jsonl",
    ]
    still_default = {home / relative for relative in unmoved}
    found = _found(home=home, env={name: str(elsewhere / value) for name, value in env.items()}, platform=LINUX)
    assert found == expected | still_default
    assert _found(home=home, env=dict.fromkeys(env, ""), platform=LINUX) == {home / path for path in LINUX_FILES}


def test_the_first_override_wins_where_a_tool_reads_several(tmp_path: Path) -> None:
    """VS Code's VSCODE_APPDATA before %APPDATA%; Cline's CLINE_DATA_DIR before CLINE_DIR; Qwen Code's
    QWEN_RUNTIME_DIR before QWEN_HOME; Goose's GOOSE_PATH_ROOT on Windows too."""
    home = tmp_path / "Users" / "me"
    env = {
        "APPDATA": str(home / "AppData" / "Roaming"),
        "VSCODE_APPDATA": str(tmp_path / "portable"),
        "CLINE_DATA_DIR": str(tmp_path / "cline-data"),
        "CLINE_DIR": str(tmp_path / "cline"),
        "QWEN_RUNTIME_DIR": str(tmp_path / "qwen-runtime"),
        "QWEN_HOME": str(tmp_path / "qwen"),
        "GOOSE_PATH_ROOT": str(tmp_path / "goose"),
    }
    wins = [
        f"portable/Code/User/{CLINE}/api_conversation_history.json",
        "cline-data/tasks/t/api_conversation_history.json",
        "qwen-runtime/projects/-p/chats/u.jsonl",
        "goose/data/sessions/sessions.db",
    ]
    loses = [
        f"Users/me/AppData/Roaming/Code/User/{CLINE}/api_conversation_history.json",
        "cline/data/tasks/t/api_conversation_history.json",
        "qwen/projects/-p/chats/u.jsonl",
        "Users/me/AppData/Roaming/Block/goose/data/sessions/sessions.db",
    ]
    expected = {_put(tmp_path, relative) for relative in wins}
    for relative in loses:
        _put(tmp_path, relative)
    assert _found(home=home, env=env, platform=WINDOWS) == expected


def test_ingest_with_no_path_reads_the_places_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`standard_locations()` (what the ingest node reads for `quarry ingest` with no path) follows this
    machine's home and environment: Codex's archived rollouts, Cline under the VS Code server and in
    Cline's own folder, OpenCode's database, Goose under GOOSE_PATH_ROOT."""
    _clear_overrides(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path / "goose-root"))
    for relative in (
        ".codex/archived_sessions/rollout-a.jsonl",
        f".vscode-server/data/User/{CLINE}/api_conversation_history.json",
        ".cline/data/tasks/t/api_conversation_history.json",
        ".local/share/opencode/opencode.db",
        "goose-root/data/sessions/sessions.db",
    ):
        _put(tmp_path, relative)
    assert standard_locations() == [
        tmp_path / ".codex" / "archived_sessions",
        tmp_path / ".vscode-server" / "data" / "User" / CLINE.rsplit("/", 1)[0],
        tmp_path / ".cline" / "data" / "tasks",
        tmp_path / ".local" / "share" / "opencode" / "opencode.db",
        tmp_path / "goose-root" / "data" / "sessions",
    ]


@needs_shared
def test_real_logs_laid_out_as_on_windows_are_read(tmp_path: Path) -> None:
    """Three of the five real files the issue tried came from Windows users: laid out under %USERPROFILE%
    and %APPDATA% as the tools write them there, each is found and read as its format."""
    home = tmp_path / "Users" / "me"
    roaming = home / "AppData" / "Roaming"

    def put(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)

    archived = sorted((REAL_LOGS / "codex_archived").glob("*.jsonl"))
    for rollout in archived:
        put(rollout, home / ".codex" / "archived_sessions" / rollout.name.split("__")[-1])
    put(
        next((REAL_LOGS / "claude_code").glob("Xu-Wentao__dotfile__814710e0*.jsonl")),
        home / ".claude/projects/-p/a.jsonl",
    )
    for part in ("api_conversation_history", "ui_messages", "task_metadata"):
        for source in (REAL_LOGS / "cline").glob(f"gmfstu*__{part}.json"):
            put(source, roaming / "Code/User" / CLINE / f"{part}.json")
    put(next((REAL_LOGS / "goose").glob("*sessions.db")), roaming / "Block/goose/data/sessions/sessions.db")
    put(next((REAL_LOGS / "cursor").glob("slevin48*.vscdb")), roaming / "Cursor/User/globalStorage/state.vscdb")
    places = [
        path for place in look(home=home, env={"APPDATA": str(roaming)}, platform=WINDOWS) for path in place.found
    ]
    results = list(iter_parse(places))
    by_format = {}
    for result in results:
        if result.sessions:
            by_format.setdefault(result.format, set()).add(Path(result.path).name)
    codex_files = {rollout.name.split("__")[-1] for rollout in archived}
    assert by_format.pop("codex") == codex_files
    assert set(by_format) == {"claude-code", "cline", "goose", "cursor"}


def test_list_sources_shows_each_place_and_what_is_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user whose Codex logs are missing sees where Quarry looked, that CODEX_HOME moved it, and what
    each place holds; in every --format; no cluster is needed."""
    home, project = tmp_path / "home", tmp_path / "project"
    _clear_overrides(monkeypatch)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    _put(home, ".claude/projects/-p/a.jsonl")
    _put(home, ".claude/projects/-p/b.jsonl")
    (home / ".claude/projects/-p/notes.txt").write_text("not a log\n")
    _put(tmp_path / "codex", "sessions/2026/01/02/rollout-a.jsonl")
    _put(project, ".aider.chat.history.md").write_text("# aider chat started at 2026-01-02 10:00:00\n\n#### hi\n")
    monkeypatch.chdir(project)
    runner = CliRunner()
    plain = runner.invoke(app, ["--home", str(tmp_path / "q"), "ingest", "--list-sources"])
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.splitlines()
    claude_line = ["2", "files", str(home / ".claude/projects"), "(1", "passed", "over)"]
    assert lines[lines.index("Claude Code") + 1].split() == claude_line
    codex = lines.index("Codex")
    assert lines[codex + 1].split() == ["1", "file", str(tmp_path / "codex/sessions"), "(set", "by", "$CODEX_HOME)"]
    assert lines[codex + 2].split()[:3] == ["not", "there", str(tmp_path / "codex/archived_sessions")]
    assert lines[lines.index("Aider") + 1].split() == ["1", "file", str(project / ".aider.chat.history.md")]

    rows = orjson.loads(runner.invoke(app, ["--format", "json", "ingest", "--list-sources"]).stdout)["places"]
    claude = next(row for row in rows if row["tool"] == "Claude Code")
    assert claude == {
        "tool": "Claude Code",
        "place": str(home / ".claude/projects"),
        "via": "~/.claude",
        "in_project": False,
        "files": 2,
        "skipped": 1,
        "paths": [str(home / ".claude/projects")],
    }
    ndjson = runner.invoke(app, ["--format", "ndjson", "ingest", "--list-sources"]).stdout.splitlines()
    assert [orjson.loads(line) for line in ndjson] == rows
    csv = runner.invoke(app, ["--format", "csv", "ingest", "--list-sources"]).stdout.splitlines()
    assert csv[0] == "tool,place,via,in_project,files,skipped,paths"
    assert f"Codex,{tmp_path / 'codex/sessions'},$CODEX_HOME,false,1,0,{tmp_path / 'codex/sessions'}" in csv
    refused = runner.invoke(app, ["ingest", "--list-sources", str(project)])
    error = refused.exception
    assert isinstance(error, QuarryError) and error.code == errors_pb2.INVALID_REQUEST
    assert error.parameter == "paths" and "takes no path" in str(error)
