"""Aider chat histories (`.aider.chat.history.md`, origin aider-session): the four real histories of
../shared/real-logs/aider counted with grep (the command beside each number, run in that folder), and
fixtures of our own for what they lack: failed and declined edits, shell commands run, other edit
formats, one-turn coders, errors and interruptions, a cut file, lines aider does not write."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from quarry.ingest.parse import parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

AIDER = REAL_LOGS / "aider"
LUVATRIX = AIDER / "0202alcc__luvatrix__.aider.chat.history.md"
METADATA = AIDER / "AbdulAlkawasmeh__metadata-aider__.aider.chat.history.md"
CRA_JS = AIDER / "AdrianGhazvini__cra-js__.aider.chat.history.md"
ZEN = AIDER / "BeehiveInnovations__zen-mcp-server__.aider.chat.history.md"


def local(stamp: str) -> int:
    """Epoch ms of a zone-less stamp as the parser reads it (UTC)."""
    return int(datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp() * 1000)


def text_of(session: units_pb2.Session) -> str:
    return "\n".join(b.text for m in session.messages for b in m.blocks)


# ------------------------------------------------------------------ the real histories


@needs_shared
def test_metadata_aider_diff_edits_shell_suggestions_and_usage() -> None:
    result = parse_file(METADATA)
    assert result.format == "aider" and not result.issues and not result.skipped_record_types
    # grep -c '^# aider chat started at'  -> 1
    (session,) = result.sessions
    assert session.id.startswith("aider-session:20251203-144345-")
    # awk '/^#### /{if(!p)n++;p=1;next}{p=0}END{print n}'  -> 12 inputs, none a command or an answer;
    # grep -c '^> Tokens:'  -> 12 replies (each followed by its usage line)
    assert roles(session) == {"user": 12, "assistant": 12}
    assert session.counts.authored_user_messages == 12
    # awk '/^>( |$)/{if(!p)n++;p=1;next}{p=0}END{print n}'  -> 14 runs of console lines (log-only): the banner,
    # the file-not-found warnings before one reply, and the 12 after the replies, which settle their calls
    assert roles(session, surface="log-only") == {"system": 2, "tool": 12}
    # grep -c '^<<<<<<< SEARCH'  -> 24 edits (grep -c '^> Applied edit to' -> 18: one line per file and reply);
    # grep -c '^> Run shell command'  -> 3, all answered n (grep -c 'Run shell command.*: n  $')
    assert categories(session) == {"file_edit": 24, "shell": 3}
    assert failed_actions(session) == 3
    assert all(a.output.startswith("Applied edit to ") for a in session.actions if a.category == "file_edit")
    assert [a.command for a in session.actions if a.category == "shell"] == [
        "mkdir data",
        "mkdir results",
        "mkdir frontend",
    ]
    # grep '^> Applied edit to' | sort -u | wc -l  -> 10 files
    assert len(session.files) == 10
    # grep '^> Model:'  -> openrouter/openai/gpt-4o-mini with diff edit format
    assert session.model == "openrouter/openai/gpt-4o-mini"
    assert (session.cwd, session.repo) == ("/Users/abdulalkawasmeh/metadata-aider", "metadata-aider")
    first = next(m for m in session.messages if m.role == "assistant")
    # grep -m1 '^> Tokens:'  -> 2.4k sent, 104 received
    assert (first.input_tokens, first.output_tokens) == (2400, 104)
    # grep '^> Tokens:' | grep -o '[0-9.k]* sent' | …  -> 2.4k+2.7k+3.2k+3.9k+4.5k+5.6k+6.4k+8.0k+8.5k+9.0k+9.4k+10k
    assert sum(m.input_tokens for m in session.messages) == 73_600
    assert Counter(e.kind for e in session.events)["turn_completed"] == 12
    assert session.title.startswith("Please create an .aidar.json file")
    assert session.runs[0].status == "completed"


@needs_shared
def test_metadata_aider_prompts_take_their_times_from_the_input_history() -> None:
    session = parse_file(METADATA).sessions[0]
    prompts = [m for m in session.messages if m.role == "user"]
    # grep -A1 '^# 2025' …aider.input.history: the first prompt at 14:46:02.414589, the last at 21:28:43.197159
    # (entries 1, 2, 4, … are the y/n answers, not prompts)
    assert prompts[0].time_ms == local("2025-12-03 14:46:02.414589")
    assert prompts[-1].time_ms == local("2025-12-03 21:28:43.197159")
    assert all(m.time_ms for m in prompts)
    assert (session.created_ms, session.updated_ms) == (local("2025-12-03 14:43:45"), prompts[-1].time_ms)


@needs_shared
def test_luvatrix_architect_handoffs_whole_file_writes_reasoning_and_answers() -> None:
    result = parse_file(LUVATRIX)
    assert result.format == "aider" and not result.issues and not result.skipped_record_types
    (session,) = result.sessions
    # 17 input blocks (awk above), 11 of them answers aider logged for a confirmation group
    # (grep -cE '^#### .*\? \(Y\)es/\(N\)o.*\]: '); the rest: 3 prompts, /architect, and the architect's
    # replies handed to the editor again (lines 485-688 and 2419-2494 repeat the reply above them)
    # grep -c '^> Tokens:'  -> 7 replies
    assert roles(session) == {"user": 6, "assistant": 7}
    users = [m for m in session.messages if m.role == "user"]
    assert [m.authored for m in users] == [True, True, True, False, True, False]
    assert Counter(e.type for e in session.log_events)["aider:answer"] == 11
    assert [e.text for e in session.events if e.kind == "command"] == ["/architect"]
    # grep -B1 -E '^```[a-z]+$' | grep -E '^[A-Za-z_./]+/[A-Za-z_.]+$'  -> 3 whole-file listings (editor-whole);
    # grep -c '^> Applied edit to'  -> 2 (the first listing was never applied: aider asked to add a file instead)
    assert categories(session) == {"file_write": 3}
    assert [bool(a.output) for a in session.actions] == [False, True, True]
    assert {f.path for f in session.files} == {
        "luvatrix_core/platform/ios/scene_target.py",
        "ios/Luvatrix/AppDelegate.swift",
    }
    # grep -c '^<thinking-content'  -> 7 reasoning blocks, one per reply
    assert sum(b.type == "thinking" for m in session.messages for b in m.blocks) == 7
    assert {m.model for m in session.messages if m.role == "assistant"} == {"openai/Qwen3.5-9B-Q8_0"}
    # grep '^> Tokens:'  -> 1.9k 30k 29k 44k 33k 28k 33k sent; 638 2.4k 15k 936 997 5.3k 5.1k received
    assert [(m.input_tokens, m.output_tokens) for m in session.messages if m.role == "assistant"] == [
        (1900, 638),
        (30_000, 2400),
        (29_000, 15_000),
        (44_000, 936),
        (33_000, 997),
        (28_000, 5300),
        (33_000, 5100),
    ]
    # the input history: "Hello! …" typed at 13:57:36.798335
    assert users[0].time_ms == local("2026-05-02 13:57:36.798335")
    assert session.title == 'Hello! Can you tell me what files are in this directory?"'


@needs_shared
def test_cra_js_oldest_format_runs_without_replies() -> None:
    result = parse_file(CRA_JS)
    assert result.format == "aider" and not result.issues and not result.skipped_record_types
    # grep -c '^# aider chat started at'  -> 4 runs; only the last has inputs (2 prompts and `#### <blank>`)
    assert len(result.sessions) == 4
    assert [roles(s, surface=None) for s in result.sessions] == [
        {"system": 1},
        {"system": 1},
        {"system": 1},
        {"system": 4, "user": 2},
    ]
    last = result.sessions[-1]
    assert Counter(e.type for e in last.log_events)["aider:blank-input"] == 1
    # grep '^> Model:'  -> "Model: gpt-4" (no edit format yet); no assistant reply: no model
    assert last.model == "" and not last.actions
    assert [m.time_ms for m in last.messages if m.role == "user"] == [
        local("2023-07-06 21:33:12.630711"),
        local("2023-07-06 21:42:39.608007"),
    ]
    assert len({s.id for s in result.sessions}) == 4


@needs_shared
def test_zen_mcp_server_commands_only_runs() -> None:
    result = parse_file(ZEN)
    assert result.format == "aider" and not result.issues and not result.skipped_record_types
    # grep -c '^# aider chat started at'  -> 4; awk (slash inputs)  -> 8 inputs, all commands, in runs 2 and 4
    assert [roles(s) for s in result.sessions] == [{}, {"user": 1}, {}, {"user": 7}]
    assert sum(Counter(e.kind for e in s.events)["command"] for s in result.sessions) == 8
    fourth = result.sessions[3]
    # the same /copy-context input three times in the chat, once in the input history (17:08:56.611150)
    times = [m.time_ms for m in fourth.messages if m.role == "user"]
    assert times[3] == local("2025-10-23 17:08:56.611150") and times[4:6] == [0, 0]
    assert times[6] == local("2025-10-23 18:18:23.173170")
    assert not any(s.actions for s in result.sessions)
    # ^C at the prompt (no request waiting): no aborted turn
    assert not any(e.kind == "turn_aborted" for s in result.sessions for e in s.events)


@needs_shared
@pytest.mark.parametrize(
    ("path", "word"),
    [(METADATA, "aidar"), (LUVATRIX, "CADisplayLink"), (CRA_JS, "hapeening"), (ZEN, "dragonfsky")],
)
def test_a_word_only_one_real_history_holds_is_kept(path: Path, word: str) -> None:
    # grep -rl <word> ../shared/real-logs  -> only this history (and its input history)
    sessions = parse_file(path).sessions
    assert any(word in text_of(s) for s in sessions)


@needs_shared
def test_the_input_history_alone_is_not_recognized() -> None:
    # prompt_toolkit writes that format for any program: read only beside its chat history
    result = parse_file(AIDER / "BeehiveInnovations__zen-mcp-server__.aider.input.history")
    assert result.format == "unknown" and not result.sessions


# ------------------------------------------------------------------ fixtures of our own

HEADER = "\n# aider chat started at 2026-03-01 10:00:00\n\n"
BANNER = "> Aider v0.86.1  \n> Main model: anthropic/claude-sonnet-4 with diff edit format  \n> Git repo: .git  \n"


def history(*parts: str, header: str = HEADER, banner: str = BANNER) -> bytes:
    return (header + banner + "".join(parts)).encode()


def prompt(*lines: str) -> str:
    return "\n" + "".join(f"#### {line}  \n" for line in lines)


def reply(text: str) -> str:
    return "\n" + text.strip() + "\n\n"


def console(*lines: str) -> str:
    return "".join(f"> {line}  \n" for line in lines)


EDIT = "app.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"


def test_a_failed_search_block_fails_its_edit_and_the_other_was_applied() -> None:
    other = EDIT.replace("app.py", "lib.py")
    error = (
        "> # 1 SEARCH/REPLACE block failed to match!\n\n"
        "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in app.py\n"
        "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n\n"
        "# The other 1 SEARCH/REPLACE block were applied successfully.\nDon't re-send them.  \n"
    )
    data = history(
        prompt("bump x"),
        reply(f"Here:\n\n{EDIT}\n{other}"),
        console("Tokens: 1.2k sent, 80 received. Cost: $0.01 message, $0.01 session.")
        + console(
            "The LLM did not conform to the edit format.", "https://aider.chat/docs/troubleshooting/edit-errors.html"
        )
        + error,
        reply("Sorry, the SEARCH block did not match; here is the fix:\n\n" + EDIT.replace("x = 1", "x = 1 ")),
        console("Applied edit to app.py"),
    )
    result = parse_bytes(data, "h.md")
    assert not result.issues and not result.skipped_record_types
    session = result.sessions[0]
    first, second, retry = session.actions
    assert (first.path, first.failed, first.followup) == ("app.py", True, "acknowledged")
    assert "failed to exactly match lines in app.py" in first.output
    assert (second.path, second.failed, second.output) == (
        "lib.py",
        False,
        "# The other 1 SEARCH/REPLACE block were applied successfully.",
    )
    assert (retry.failed, retry.output) == (False, "Applied edit to app.py")
    # the error's echo of the block stays console output: it is not an edit of the reply
    assert roles(session) == {"user": 1, "assistant": 2}


def test_declined_creation_unwritable_file_and_an_edit_read_only_from_applied() -> None:
    created = EDIT.replace("app.py", "new.py").replace("x = 1\n", "")
    locked = EDIT.replace("app.py", "conf/locked.py")
    denied = "Unable to write file /srv/conf/locked.py after 5 attempts: [Errno 13] Permission denied"
    data = history(
        prompt("add new.py, fix locked.py and util.py"),
        reply(f"{created}\n{locked}\nutil.py is rewritten in a way this parser does not read."),
        console(
            "Tokens: 500 sent, 20 received.",
            "new.py",
            "Create new file? (Y)es/(N)o [Yes]: n",
            denied,
            "Applied edit to util.py",
        ),
    )
    session = parse_bytes(data, "h.md").sessions[0]
    declined, unwritable, applied = session.actions
    assert (declined.path, declined.failed) == ("new.py", True)
    assert declined.output.startswith("declined: Create new file?")
    assert (unwritable.path, unwritable.failed, unwritable.output) == ("conf/locked.py", True, denied)
    assert (applied.category, applied.path, applied.failed, applied.input_json) == (
        "file_edit",
        "util.py",
        False,
        '{"path":"util.py"}',
    )
    # the edit aider reports belongs to the reply that asked for it
    reply_message = next(m for m in session.messages if m.role == "assistant")
    ids = [b.tool_use_id for b in reply_message.blocks if b.type == "tool_use"]
    assert ids == ["edit-L12", "edit-L20", "applied-L33"]


def test_shell_commands_run_suggested_declined_and_typed() -> None:
    data = history(
        prompt("install deps"),
        reply("Run:\n\n```bash\npip install -e .\npytest -q\n```"),
        console("Tokens: 900 sent, 30 received.")
        + "> pip install -e .\npytest -q  \n"
        + console(
            "Run shell commands? (Y)es/(N)o/(D)on't ask again [Yes]: y",
            "Running pip install -e .",
            "Running pytest -q",
            "Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y",
            "Added 12 lines of output to the chat.",
            "rm -rf build",
            "Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]: n",
        ),
        prompt("/run make lint"),
        console("Add 0.3k tokens of command output to the chat? (Y)es/(N)o [Yes]: n"),
        prompt("/test pytest -q"),
        console("Added 40 lines of output to the chat."),
        prompt("!ls"),
        console(
            "Add 0.0k tokens of command output to the chat? (Y)es/(N)o [Yes]: y", "Added 2 lines of output to the chat."
        ),
    )
    session = parse_bytes(data, "h.md").sessions[0]
    rows = [(a.category, a.command, a.failed) for a in session.actions]
    assert rows == [
        ("shell", "pip install -e .\npytest -q", False),
        ("shell", "rm -rf build", True),
        ("shell", "make lint", False),
        ("shell", "pytest -q", True),  # /test output is added to the chat only when it exits nonzero
        ("shell", "ls", False),
    ]
    assert session.actions[0].output.splitlines()[1:3] == ["Running pip install -e .", "Running pytest -q"]
    # the typed ones are calls of the user's message, and command events
    assert [session.messages[int(a.message_id.rsplit(":m", 1)[1])].role for a in session.actions] == [
        "assistant",
        "assistant",
        "user",
        "user",
        "user",
    ]
    assert [(e.text, e.source_ref != "") for e in session.events if e.kind == "command"] == [
        ("/run make lint", True),
        ("/test pytest -q", True),
        ("!ls", True),
    ]


def test_whole_udiff_and_patch_edit_formats() -> None:
    whole = history(
        prompt("write it"),
        reply("src/app.py\n```python\nprint('hi')\n```\n\nThen run:\n```bash\npython src/app.py\n```"),
        console("Applied edit to src/app.py"),
        banner=BANNER.replace("diff edit format", "whole edit format"),
    )
    (write,) = parse_bytes(whole, "h.md").sessions[0].actions
    assert (write.category, write.path, write.output) == ("file_write", "src/app.py", "Applied edit to src/app.py")
    udiff = history(
        prompt("change both"),
        reply("```diff\n--- a.py\n+++ a.py\n@@ ... @@\n-x\n+y\n--- b.py\n+++ b.py\n@@ ... @@\n-1\n+2\n```"),
        console("Applied edit to a.py", "Applied edit to b.py"),
        banner=BANNER.replace("diff edit format", "udiff edit format"),
    )
    assert [(a.path, a.failed, bool(a.output)) for a in parse_bytes(udiff, "h.md").sessions[0].actions] == [
        ("a.py", False, True),
        ("b.py", False, True),
    ]
    patch = history(
        prompt("patch"),
        reply("*** Begin Patch\n*** Update File: c.py\n@@\n-a\n+b\n*** End Patch"),
        console("Applied edit to c.py"),
        banner=BANNER.replace("diff edit format", "patch edit format"),
    )
    (applied,) = parse_bytes(patch, "h.md").sessions[0].actions
    assert (applied.tool, applied.category, applied.path, applied.failed) == ("apply_patch", "file_edit", "c.py", False)


def test_ask_replies_edit_nothing_and_the_message_aider_logs_again_is_not_authored() -> None:
    data = history(
        prompt("/ask how does x work?"),
        prompt("how does x work?"),
        reply("Like this:\n\n" + EDIT),
        console("Tokens: 1k sent, 10 received."),
    )
    session = parse_bytes(data, "h.md").sessions[0]
    assert not session.actions
    assert [(m.blocks[0].text, m.authored) for m in session.messages if m.role == "user"] == [
        ("/ask how does x work?", True),
        ("how does x work?", False),
    ]
    assert session.title == "how does x work?"
    assert [e.type for e in session.log_events][2:4] == ["aider:command", "aider:echo"]


def test_an_architect_reply_handed_to_the_editor_is_its_input_and_the_editor_edits() -> None:
    banner = (
        "> Main model: openai/o3 with architect edit format  \n"
        "> Editor model: anthropic/claude-sonnet-4 with editor-diff edit format  \n"
    )
    plan = "Change x to 2 in app.py.\nKeep the rest."
    data = history(
        prompt("make x 2"),
        reply(f"<think>\nsmall change\n</think>\n\n{plan}"),
        console("Tokens: 2k sent, 50 received."),
        prompt(*plan.split("\n")),
        reply(EDIT),
        console("Tokens: 1k sent, 30 received.", "Applied edit to app.py"),
        banner=banner,
    )
    session = parse_bytes(data, "h.md").sessions[0]
    assert [(m.role, m.authored, m.model) for m in session.messages if m.surface == "current"] == [
        ("user", True, ""),
        ("assistant", True, "openai/o3"),
        ("user", False, ""),
        ("assistant", True, "anthropic/claude-sonnet-4"),
    ]
    assert session.messages[2].blocks[0] == units_pb2.Block(
        id=session.messages[2].blocks[0].id, type="thinking", text="small change"
    )
    (edit,) = session.actions
    assert (edit.path, edit.failed) == ("app.py", False)
    assert session.model in ("openai/o3", "anthropic/claude-sonnet-4")


def test_api_errors_interruptions_and_usage_with_cache_figures() -> None:
    data = history(
        prompt("first"),
        console(
            "litellm.APIConnectionError: Connection refused",
            "Retrying in 0.2 seconds...",
            "Tokens: 12k sent, 3.4k cache write, 8.1k cache hit, 1.1k received.",
        )
        + "Cost: \\$0.05 message, \\$0.05 session.  \n",
        prompt("second"),
        console("", "", "^C again to exit"),
        reply("a partial answ"),
    )
    session = parse_bytes(data, "h.md").sessions[0]
    events = [(e.kind, e.delivery_state) for e in session.events if e.kind != "session_started"]
    assert events == [("api_error", "failed"), ("turn_completed", "recorded"), ("turn_aborted", "recorded")]
    completed = next(e for e in session.events if e.kind == "turn_completed")
    assert completed.text.endswith("Cost: \\$0.05 message, \\$0.05 session.")
    # the usage line came before any reply of the run: no message holds it; the partial reply after ^C is kept
    assert [m.blocks[0].text for m in session.messages if m.role == "assistant"] == ["a partial answ"]
    usage = parse_bytes(
        history(prompt("q"), reply("a"), console("Tokens: 12k sent, 3.4k cache write, 8.1k cache hit, 1.1k received.")),
        "h.md",
    ).sessions[0]
    answer = next(m for m in usage.messages if m.role == "assistant")
    assert (answer.input_tokens, answer.cache_write_tokens, answer.cache_read_tokens, answer.output_tokens) == (
        8600,
        3400,
        8100,
        1100,
    )


def test_lines_aider_does_not_write_are_kept_and_counted() -> None:
    data = history(
        prompt("look at this"),
        "a line someone typed into the file\n",
        reply("> a quote in the reply\nstill the reply\n\n#### a heading of the reply\n\n<think>\nnever closed"),
        console("Applied edit to a.py"),
        reply("b.py\n```python\n<<<<<<< SEARCH\nx\n=======\n"),
    )
    result = parse_bytes(data, "h.md")
    session = result.sessions[0]
    assert result.skipped_record_types == {
        "aider:stray-line": 1,
        "aider:unclosed-thinking": 1,
        "aider:unclosed-edit": 1,
    }
    _, user, answer, _, last = session.messages
    assert user.blocks[0].text == "look at this\na line someone typed into the file"
    assert [b.type for b in answer.blocks] == ["text", "thinking", "tool_use"]
    assert answer.blocks[0].text == "> a quote in the reply\nstill the reply\n\n#### a heading of the reply"
    assert "<<<<<<< SEARCH" in last.blocks[-1].text  # the block never closed stays text


def test_a_cut_history_keeps_what_it_holds_and_says_it_was_cut() -> None:
    data = history(prompt("go"), reply("first answer"), console("Tokens: 1k sent, 5 received."), prompt("next"))
    cut = data[: data.rindex(b"next") + 2]
    result = parse_bytes(cut, "h.md")
    assert [(i.code, i.line) for i in result.issues] == [("truncated_line", cut.count(b"\n") + 1)]
    session = result.sessions[0]
    # the cut input is read as aider would have ended it
    assert [m.blocks[0].text for m in session.messages if m.surface == "current"] == ["go", "first answer", "ne"]


def test_runs_ids_duplicates_crlf_and_determinism(tmp_path: Path) -> None:
    run = HEADER + BANNER + prompt("hello") + reply("hi")
    data = (run + run + "\n# aider chat started at 2026-03-01 11:00:00\n\n" + run.split("\n\n", 1)[1]).encode()
    result = parse_bytes(data, "h.md")
    ids = [s.id for s in result.sessions]
    assert len(ids) == 3 and ids[1] == ids[0] + "-2" and ids[2].startswith("aider-session:20260301-110000-")
    again = parse_bytes(data, "h.md")
    assert [s.content_hash for s in again.sessions] == [s.content_hash for s in result.sessions]
    windows = parse_bytes(data.replace(b"\n", b"\r\n"), "h.md")
    assert not windows.issues and [roles(s) for s in windows.sessions] == [roles(s) for s in result.sessions]
    # an empty run (a header and nothing else) is counted, not a session
    empty = parse_bytes((HEADER + "\n" + HEADER + BANNER).encode(), "h.md")
    assert len(empty.sessions) == 1 and empty.skipped_record_types == {"aider:empty-session": 1}


def test_the_input_history_beside_the_chat_history_times_its_prompts(tmp_path: Path) -> None:
    chat = tmp_path / ".aider.chat.history.md"
    chat.write_bytes(history(prompt("fix it", "", "please"), reply("ok"), prompt("thanks")))
    (tmp_path / ".aider.input.history").write_text(
        "\n# 2026-03-01 09:59:00.000000\n+fix it\n"  # before the run: another run's input
        "\n# 2026-03-01 10:00:05.250000\n+Y\n"
        "\n# 2026-03-01 10:00:07.500000\n+fix it\n+\n+please\n"
        "\n# 2026-03-01 10:03:00.000000\n+thanks\n"
    )
    session = parse_file(chat).sessions[0]
    assert [m.time_ms for m in session.messages if m.role == "user"] == [
        local("2026-03-01 10:00:07.500"),
        local("2026-03-01 10:03:00"),
    ]
    assert session.updated_ms == local("2026-03-01 10:03:00")
    alone = tmp_path / "copy" / ".aider.chat.history.md"
    alone.parent.mkdir()
    alone.write_bytes(chat.read_bytes())
    copy = parse_file(alone).sessions[0]
    assert copy.id == session.id and [m.time_ms for m in copy.messages if m.role == "user"] == [0, 0]


def test_the_banner_names_cwd_repo_and_a_model_switch_names_later_replies() -> None:
    banner = BANNER + console("Cur working dir: /home/u/proj/sub", "Git working dir: /home/u/proj")
    data = history(
        prompt("one"),
        reply("a"),
        prompt("/model openai/gpt-4.1"),
        console("Aider v0.86.1", "Main model: openai/gpt-4.1 with diff edit format"),
        prompt("two"),
        reply("b"),
        banner=banner,
    )
    session = parse_bytes(data, "h.md").sessions[0]
    assert (session.cwd, session.repo) == ("/home/u/proj/sub", "proj")
    assert [m.model for m in session.messages if m.role == "assistant"] == [
        "anthropic/claude-sonnet-4",
        "openai/gpt-4.1",
    ]


@needs_shared
def test_each_reply_carries_the_cost_aider_printed_after_it() -> None:
    (session,) = parse_file(METADATA).sessions
    costs = [m.cost_usd for m in session.messages if m.role == "assistant"]
    # grep '^> Tokens:' | sed -E 's/.*Cost: \$([0-9.]+) message.*/\1/'  -> 0.00042, 0.00053, … (12 replies)
    assert costs[:2] == [0.00042, 0.00053] and len(costs) == 12
    # … | paste -sd+ | bc  -> .01346, the main run's cost
    assert round(session.runs[0].cost_usd, 6) == 0.01346
    # grep -c 'Cost:' on the other three histories  -> 0: no cost recorded
    assert not any(
        m.cost_usd for path in (LUVATRIX, CRA_JS, ZEN) for s in parse_file(path).sessions for m in s.messages
    )
