"""Cursor conversations saved as Markdown (origin cursor-session): SpecStory history files and Cursor's
"Export Chat". The real files of ../shared/real-logs/cursor are counted with grep (the command beside each
number); fixtures of our own cover what they lack: the early-2025 and Oct-2025 SpecStory layouts, the
CLI's layout (another agent, a subagent's sidechain, printed inputs and errors), locale dates, a cut
file, unknown headings and tags."""

from __future__ import annotations

from collections import Counter

import pytest

from quarry.ingest.detect import text_format
from quarry.ingest.parse import ParseResult, parse_bytes, parse_file
from quarry.v1 import units_pb2
from tests.ingest.support import categories, failed_actions, roles
from tests.shared_paths import REAL_LOGS, needs_shared

CURSOR = REAL_LOGS / "cursor"
HISTORY = "edobry__minsky__.specstory__history__"


def real(name: str) -> ParseResult:
    result = parse_file(CURSOR / name)
    assert result.format == "cursor" and not result.issues
    return result


def text_of(session: units_pb2.Session) -> str:
    return "\n".join(block.text for message in session.messages for block in message.blocks)


def tools(session: units_pb2.Session) -> dict[str, int]:
    return dict(Counter(action.tool for action in session.actions))


# ------------------------------------------------------------------ the real files


@needs_shared
def test_the_oldest_specstory_file_a_codebase_search_then_an_empty_section() -> None:
    result = real(f"{HISTORY}2025-04-27_20-11-enhancing-session-commands-for-directory-management.md")
    (session,) = result.sessions
    # no session comment: the id is a hash of the title line
    assert session.id == f"cursor-session:{session.native_id}" and len(session.native_id) == 32
    # grep -m1 '^# '  -> "# Enhancing Session Commands for Directory Management (2025-04-27 16:11:20)"
    assert session.title == "Enhancing Session Commands for Directory Management"
    assert session.created_ms == 1745770280000  # 2025-04-27T16:11:20Z: the header's stamp, zone-less, read as UTC
    # grep -c '^_\*\*User\*\*_$'  -> 2 ; grep -c '^_\*\*Assistant\*\*_$'  -> 2
    assert roles(session) == {"user": 2, "assistant": 2}
    # grep -c '<summary>Searched codebase'  -> 1
    assert tools(session) == {"codebase_search": 1} and failed_actions(session) == 0
    assert "src/commands/session/cd.ts" in session.actions[0].output
    assert "direnv" in text_of(session)  # only in this file (grep -l direnv)
    assert not result.skipped_record_types


@needs_shared
def test_a_listed_directory_a_cancelled_call_and_a_diff_edit() -> None:
    result = real(f"{HISTORY}2025-04-29_17-36-bug-fixing-rule-create-failing-tests-first.md")
    (session,) = result.sessions
    # grep -c '^_\*\*User\*\*_$' -> 1 ; grep -c '^_\*\*Assistant\*\*_$' -> 1
    assert roles(session) == {"user": 1, "assistant": 1}
    # grep -c '<summary>Listed directory' -> 1 ; grep -c '^Cancelled$' -> 1 ; grep -c '^```diff' -> 1
    assert tools(session) == {"list_dir": 1, "unknown": 1, "edit_file": 1}
    assert categories(session) == {"search": 1, "other": 1, "file_edit": 1}
    assert failed_actions(session) == 1  # the cancelled call
    listed, cancelled, edit = session.actions
    assert '"relative_workspace_path":".cursor/rules"' in listed.input_json and "bun_over_node.mdc" in listed.output
    assert cancelled.failed and cancelled.output == "Cancelled"
    assert edit.output.startswith("- \n+ # Test-Driven Bug Fixing") and not edit.path  # the old diff names no file
    assert "calculateTotal" in text_of(session)


@needs_shared
def test_terminal_commands_reads_searches_a_rule_and_an_edit() -> None:
    result = real(f"{HISTORY}2025-04-29_20-13-session-start-error-for-task-008.md")
    (session,) = result.sessions
    # grep -c '^_\*\*User\*\*_$' -> 5 ; grep -c '^_\*\*Assistant\*\*_$' -> 5, the last one empty (an intermediate save)
    assert roles(session) == {"user": 5, "assistant": 4}
    assert result.skipped_record_types == {"cursor:empty-turn": 1}
    # grep -c '^```bash' -> 16 (the indented ones are inside the rule's text) ; grep -c '^Read file:' -> 3 ;
    # grep -c '<summary>Searched codebase' -> 3 ; grep -c '^### Rule:' -> 1 ; the two '^```diff' fences are one bubble
    assert tools(session) == {
        "run_terminal_cmd": 16,
        "read_file": 3,
        "codebase_search": 3,
        "fetch_rules": 1,
        "edit_file": 1,
    }
    assert failed_actions(session) == 0  # no exit status is printed
    shells = [action for action in session.actions if action.category == "shell"]
    assert shells[0].command == "minsky tasks list --json | jq" and '"id": "#001"' in shells[0].output
    assert shells[1].input_json == '{"command":"minsky tasks get \'#008\' --json | jq"}'
    # grep '^Read file:' -> src/commands/session/start.ts, src/commands/session/startSession.ts, src/domain/git.ts
    assert [file.path for file in session.files] == [
        "src/commands/session/start.ts",
        "src/commands/session/startSession.ts",
        "src/domain/git.ts",
    ]
    rule = next(action for action in session.actions if action.tool == "fetch_rules")
    # the rule's text holds fences of its own, so the closing fence glued to its last line stays
    assert rule.output.startswith("**REQUIRED workflow") and rule.output.endswith("present the output directly.```")
    assert "linkslate" in text_of(session)  # in the terminal output only


@needs_shared
def test_a_session_comment_names_the_composer_and_an_empty_reply_is_skipped() -> None:
    result = real("hpm27__agente-bsc-rag__.specstory__history__2025-10-15_00-14Z-executar-benchmark-da-fase-2a.md")
    (session,) = result.sessions
    # grep -o 'cursor Session [^ ]*'  -> cursor Session 3fe6cb3b-5d72-4932-9196-bf140c40fabc
    assert session.id == "cursor-session:3fe6cb3b-5d72-4932-9196-bf140c40fabc"
    assert session.title == "Executar benchmark da fase 2A"
    # grep '^_\*\*' -> _**User**_ and _**Assistant (default)**_ with nothing under it
    assert roles(session) == {"user": 1} and result.skipped_record_types == {"cursor:empty-turn": 1}
    assert session.created_ms == 1760487240000  # 2025-10-15 00:14Z
    assert "RAGAS" in text_of(session)
    assert [(event.type, event.surface) for event in session.log_events] == [
        ("cursor:header", "log-only"),
        ("cursor:turn/user", "current"),
        ("cursor:turn/assistant", "log-only"),
    ]


@needs_shared
def test_the_newest_specstory_file_with_tool_use_wrappers() -> None:
    result = real(
        "onotakuy__work20260103_01__.specstory__history__2026-01-03_12-46Z-2dから3dマップwebアプリの要件定義.md"
    )
    (session,) = result.sessions
    assert session.id == "cursor-session:3069ab07-0672-4d4b-9fd9-177cac79a704"
    assert session.title == "2Dから3DマップWebアプリの要件定義"
    # grep -c '^_\*\*User (' -> 4 ; grep -c '^_\*\*Agent (model default, mode ' -> 4
    assert roles(session) == {"user": 4, "assistant": 4}
    assert {m.model for m in session.messages if m.role == "assistant"} == {"default"}
    assert [m.time_ms for m in session.messages if m.role == "user"] == [1767444360000] * 4  # 2026-01-03 12:46Z
    # grep -c '<tool-use' -> 64 ; grep -o 'data-tool-name="[^"]*"' | sort | uniq -c -> write 22, search_replace 16,
    # read_file 14, read_lints 5, todo_write 3, list_dir 2, glob_file_search 2
    assert tools(session) == {
        "write": 22,
        "search_replace": 16,
        "read_file": 14,
        "read_lints": 5,
        "todo_write": 3,
        "list_dir": 2,
        "glob_file_search": 2,
    }
    assert categories(session) == {"file_write": 22, "file_edit": 16, "file_read": 14, "other": 8, "search": 4}
    assert failed_actions(session) == 0
    # grep -o 'Edit file: [^<]*\|Read file: [^<]*' | sort -u | wc -l -> 22 files
    assert len(session.files) == 22
    map2d = next(f for f in session.files if f.path.endswith("components/Map2D.tsx"))
    # grep -c 'Edit file: .*components/Map2D.tsx' -> 9 (2 write, 7 search_replace) ; grep -c 'Read file: .*Map2D' -> 3
    assert dict(map2d.categories) == {"file_write": 2, "file_edit": 7, "file_read": 3}
    edit = next(a for a in session.actions if a.tool == "search_replace")
    assert "**Chunk 1**" in edit.output
    assert "globalignore" in text_of(session)  # a tool's error, rendered as a bubble of text


@needs_shared
def test_cursor_s_own_exports_one_message_per_heading_and_code_kept_as_code() -> None:
    result = real("semikolon__kimonokittens__transcripts__cursor_adjusting_rent_message_for_janua.md")
    (session,) = result.sessions
    assert session.title == "Adjusting Rent Message for January 2025"
    # grep -c '^\*\*User\*\*$' -> 4 ; grep -c '^\*\*Cursor\*\*$' -> 4
    assert roles(session) == {"user": 4, "assistant": 4} and not session.actions
    # grep -c '^```ruby' -> 3
    assert sum(b.type == "code" and b.language == "ruby" for m in session.messages for b in m.blocks) == 3
    assert session.created_ms == 1751564322000  # _Exported on 7/3/2025 at 19:38:42 GMT+2_ (month first)
    assert "kallhyra" in text_of(session)

    (other,) = real("semikolon__kimonokittens__transcripts__cursor_error_scenarios_brainstorming_an.md").sessions
    # grep -c '^\*\*User\*\*$' -> 1 ; grep -c '^\*\*Cursor\*\*$' -> 1
    assert roles(other) == {"user": 1, "assistant": 1}
    (reply,) = (m for m in other.messages if m.role == "assistant")
    # grep -c '^---$' -> 7: one after the header, one before **Cursor**, 5 rules inside the reply
    assert reply.blocks[0].text.count("\n---\n") == 5 and "Swish" in reply.blocks[0].text
    assert other.id != session.id and other.runs[0].status == "completed"


@needs_shared
def test_every_real_file_parses_the_same_twice() -> None:
    for path in sorted(CURSOR.glob("*.md")):
        first, second = parse_file(path), parse_file(path)
        assert [s.content_hash for s in first.sessions] == [s.content_hash for s in second.sessions]


# ------------------------------------------------------------------ fixtures of our own


def parsed(text: str) -> ParseResult:
    result = parse_bytes(text.encode(), "history.md")
    assert result.format == "cursor"
    return result


OCTOBER_2025 = """<!-- Generated by SpecStory -->

<!-- cursor Session 11111111-2222-3333-4444-555555555555 (2025-10-01 23:30Z) -->

# Avatars stopped flying (2025-10-01 23:30Z)

_**User (2025-10-01 23:30Z)**_

the avatars stopped flying

---

_**Assistant (claude-4.5-sonnet-thinking)**_

<think><details><summary>Thought Process</summary>I should look at script.js first.</details></think>

---

Let me look at the code.

---

Tool use: **read_file**

Read file: /home/dev/wall/script.js

---

Tool use: **grep**

<details>
<summary>Grep for "avatarNode" in "/home/dev/wall/script.js" • 2 matches</summary>

| Content | Line |
|------|------|
| `avatarNode: null` | L109 |

</details>

---

Tool use: **run_terminal_cmd**

```bash
cd /home/dev/wall && npm test
```

```
FAIL avatar.test.js
Exit code: 1
```

---

Tool use: **search_replace**


<details><summary>Edit file: /home/dev/wall/script.js</summary>

**Chunk 1**
Lines added: 1, lines removed: 1

```diff
-     if (authorData.has(authorId)) {
+     if (avatarNode &amp;&amp; authorData.has(authorId)) {
```

</details>

---

Fixed: the avatars fly again.

---
"""


def test_the_october_2025_layout_tool_use_lines_thinking_and_an_exit_code() -> None:
    (session,) = parsed(OCTOBER_2025).sessions
    assert session.id == "cursor-session:11111111-2222-3333-4444-555555555555"
    assert session.title == "Avatars stopped flying" and session.model == "claude-4.5-sonnet-thinking"
    (_, reply) = session.messages
    assert [b.type for b in reply.blocks] == [
        "thinking", "text", "tool_use", "tool_result", "tool_use", "tool_result", "tool_use", "tool_result",
        "tool_use", "tool_result", "text",
    ]  # fmt: skip
    assert reply.blocks[0].text == "I should look at script.js first."
    read, grep, shell, edit = session.actions
    assert (read.category, read.path) == ("file_read", "/home/dev/wall/script.js")
    assert (grep.category, grep.input_json, "L109" in grep.output) == ("search", '{"pattern":"avatarNode"}', True)
    assert (shell.category, shell.command, shell.failed, shell.exit_code) == (
        "shell",
        "cd /home/dev/wall && npm test",
        True,
        1,
    )
    assert shell.output == "FAIL avatar.test.js\nExit code: 1"
    assert (edit.category, edit.path, edit.failed) == ("file_edit", "/home/dev/wall/script.js", False)
    assert "avatarNode && authorData" in edit.output  # HTML entities unescaped
    assert session.runs[0].status == "unknown"  # the last reply holds calls


EARLY_2025 = """## SpecStory

## Adding New Commands (2/15/2025, 5:08:51 PM)

_**User**_

add a view-latest command

---

_**Assistant**_

I'll search first.

---

_****_

<details>
            <summary>Grep search for "specstory" • **2** files</summary>

| File | Line | Match |
|------|------|-------|
| `zsh_include.sh` | L665 | `function specstory-save() {` |

</details>

---

_****_

Done.

---
"""


def test_the_early_2025_layout_a_locale_date_and_continued_replies() -> None:
    (session,) = parsed(EARLY_2025).sessions
    assert session.title == "Adding New Commands"
    assert session.created_ms == 1739639331000  # 2025-02-15 17:08:51 (PM, month first), read as UTC
    assert [m.role for m in session.messages] == ["user", "assistant", "assistant", "assistant"]
    (search,) = session.actions
    assert (search.tool, search.category, search.input_json) == ("grep_search", "search", '{"query":"specstory"}')


CLI_CLAUDE_CODE = """<!-- Generated by SpecStory, Markdown v2.1.0 -->

# 2025-11-13 21:12:14Z

<!-- Claude Code Session 7f0c1d2e-aaaa-bbbb-cccc-111122223333 (2025-11-13 21:12:14Z) -->

_**User (2025-11-13 21:12:14Z)**_
<!-- message-id: u-1 -->

run the tests and fix what fails

---

_**Agent (claude-sonnet-4-5 2025-11-13 21:12:20Z)**_

<think><details><summary>Thought Process</summary>
The tests come first.
</details></think>

_**Agent (claude-sonnet-4-5 2025-11-13 21:12:21Z)**_

<tool-use data-tool-type="shell" data-tool-name="Bash"><details>
<summary>Tool use: **Bash**</summary>
Run the suite

`pytest -q`

```text
Exit code 1
2 failed, 10 passed
```
</details></tool-use>

_**Agent (claude-sonnet-4-5 2025-11-13 21:12:25Z)**_

<tool-use data-tool-type="read" data-tool-name="Read"><details>
<summary>Tool use: **Read**</summary>
 `./tests/test_parse.py`
</details></tool-use>

_**Agent (claude-sonnet-4-5 2025-11-13 21:12:30Z)**_

<tool-use data-tool-type="task" data-tool-name="Task"><details>
<summary>Tool use: **Task**</summary>

**Input:**

- description: `inspect failures`
- prompt: `Find why test_parse fails`
- subagent_type: `Explore`

**Result:**

```
The fixture path is wrong.
```
</details></tool-use>

---

_**User - sidechain (2025-11-13 21:12:31Z)**_

Find why test_parse fails

---

_**Agent - sidechain (claude-haiku-4-5 2025-11-13 21:12:35Z)**_

The fixture path is wrong.

---

_**Agent (claude-sonnet-4-5 2025-11-13 21:13:00Z)**_

<tool-use data-tool-type="generic" data-tool-name="mcp_tracker_update"><details>
<summary>Tool use: **mcp_tracker_update**</summary>

**Input:**

- id: `T-9`

**Error:**

```
permission denied
```
</details></tool-use>

Fixed the fixture path.
"""


def test_a_cli_file_of_another_agent_its_sidechain_and_printed_inputs_and_errors() -> None:
    result = parsed(CLI_CLAUDE_CODE)
    main, child = result.sessions
    # another agent's session: its id says so, it never poses as a Cursor composer
    assert main.id == "cursor-session:claude-code:7f0c1d2e-aaaa-bbbb-cccc-111122223333"
    assert main.title == "run the tests and fix what fails"  # the CLI's title is only a time: the first prompt
    assert main.model == "claude-sonnet-4-5"
    assert [m.role for m in main.messages] == ["user", "assistant", "assistant", "assistant", "assistant", "assistant"]
    bash, read, task, tracker = main.actions
    assert (bash.category, bash.command, bash.failed, bash.exit_code) == ("shell", "pytest -q", True, 1)
    assert (read.category, read.path) == ("file_read", "tests/test_parse.py")
    assert (task.category, task.failed) == ("subagent", False) and task.output == "The fixture path is wrong."
    assert (tracker.failed, tracker.output, tracker.input_json) == (True, "permission denied", '{"id":"T-9"}')
    (delegation,) = main.delegations
    assert delegation.instruction == "Find why test_parse fails" and delegation.agent == "Explore"
    assert delegation.child_session_id == child.id == f"{main.id}/sidechain-1"
    assert child.parent_session_id == main.id
    assert [(m.role, m.authored, m.model) for m in child.messages] == [
        ("user", False, ""),
        ("assistant", True, "claude-haiku-4-5"),
    ]
    assert main.messages[0].time_ms == 1763068334000  # 2025-11-13 21:12:14Z
    keyed = next(e for e in main.log_events if e.type == "cursor:turn/user")
    assert "message-id" not in main.messages[0].blocks[0].text and keyed.line == 7


EXTENSION_CATCH_ALL = """<!-- Generated by SpecStory, Markdown v2.1.0 -->

<!-- cursor Session 99999999-0000-0000-0000-000000000000 (2025-12-10 08:00Z) -->

# Catch-all tools (2025-12-10 08:00Z)

_**User (2025-12-10 08:00Z)**_

delete the old build

---

_**Agent (model gpt-5, mode Agent)**_

<tool-use data-tool-type="unknown" data-tool-name="delete_file">
<details>
<summary>Tool use: **delete_file**</summary>


Parameters:

```json
{
  "target_file": "build/old.js"
}
```
User decision: **rejected**

Status: **completed**

</details>
</tool-use>

---

<tool-use data-tool-type="shell" data-tool-name="run_terminal_cmd">
<details><summary>Tool use: **run_terminal_cmd** • Run command: rm -rf build &amp;&amp; ls</summary>

```bash
rm -rf build && ls
```

```
src
```
</details>
</tool-use>

---
"""


def test_the_extension_s_catch_all_rendering_and_a_rejected_call() -> None:
    (session,) = parsed(EXTENSION_CATCH_ALL).sessions
    deleted, removed = session.actions
    assert (deleted.tool, deleted.path, deleted.failed) == ("delete_file", "build/old.js", True)
    assert (removed.category, removed.command, removed.failed, removed.output) == (
        "shell",
        "rm -rf build && ls",
        False,
        "src",
    )
    assert session.messages[1].model == "gpt-5"


EXPORT = """# Quick spec dockerize
_Exported on {date} from Cursor (2.6.20)_

---

**User**

containerize the app

---

**Cursor**

Here is a plan.

---

**Summary**

```dockerfile
FROM python:3.12
```
"""


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        ("20/03/2026 at 18:25:57 GMT", 1774031157000),  # day first: 20 cannot be a month
        ("2025/10/25 at GMT-6 23:57:22", 1761458242000),  # year first, the zone before the time
        ("19/10/2025 at 9:33:08 WEST", 1760862788000),  # Western European Summer Time, UTC+1
        ("3/26/2026 at 17:10:41 GMT+5:30", 1774525241000),
        ("12/29/2025 at 08:35:38 PST", 1767026138000),
        ("sometime last week", 0),  # unreadable: no time, the session is still read
    ],
)
def test_an_export_s_locale_dates_and_its_bold_lines_that_are_not_headings(date: str, expected: int) -> None:
    (session,) = parsed(EXPORT.format(date=date)).sessions
    assert session.created_ms == expected
    assert [m.role for m in session.messages] == ["user", "assistant"]
    reply = session.messages[1]
    assert [(b.type, b.text) for b in reply.blocks] == [
        ("text", "Here is a plan.\n\n---\n\n**Summary**"),
        ("code", "FROM python:3.12"),
    ]


def test_an_export_s_id_is_stable_and_tells_exports_apart() -> None:
    first = parsed(EXPORT.format(date="20/03/2026 at 18:25:57 GMT")).sessions[0]
    again = parsed(EXPORT.format(date="20/03/2026 at 18:25:57 GMT")).sessions[0]
    later = parsed(EXPORT.format(date="21/03/2026 at 18:25:57 GMT")).sessions[0]
    assert first.id == again.id != later.id and first.content_hash == again.content_hash


def test_a_grown_history_file_keeps_its_id_and_its_first_messages() -> None:
    start = EARLY_2025.split("_****_\n\nDone.")[0]
    short, grown = parsed(start).sessions[0], parsed(EARLY_2025).sessions[0]
    assert short.id == grown.id
    assert [m.id for m in short.messages] == [m.id for m in grown.messages[: len(short.messages)]]


def test_a_cut_file_keeps_what_it_holds_and_is_an_issue() -> None:
    cut = EXTENSION_CATCH_ALL.split("```\nsrc")[0]
    result = parsed(cut)
    (session,) = result.sessions
    assert [i.code for i in result.issues] == ["truncated_line"]
    assert "<tool-use> block" in result.issues[0].reason
    _, removed = session.actions
    assert removed.command == "rm -rf build && ls" and not removed.output


def test_unknown_headings_header_lines_and_stray_tags_stay_text_and_are_counted() -> None:
    text = OCTOBER_2025.replace("# Avatars", "<!-- exported by a new SpecStory build -->\n\n# Avatars").replace(
        "Let me look at the code.", "Let me look at the code.\n\n_**System**_\n\nA note.\n\n</tool-use>"
    )
    result = parsed(text)
    (session,) = result.sessions
    assert result.skipped_record_types == {"cursor:header-line": 1, "cursor:role/System": 1, "cursor:stray-tag": 1}
    reply = session.messages[1]
    assert reply.blocks[1].text == "Let me look at the code.\n\n_**System**_\n\nA note.\n\n</tool-use>"
    header = session.log_events[0]
    assert header.type == "cursor:header" and "exported by a new SpecStory build" in header.text
    assert len(session.actions) == 4


@pytest.mark.parametrize(
    "text",
    [
        "# aider chat started at 2025-01-01 10:00:00\n\n#### hello\n",
        "# My notes\n\nSome text about Cursor.\n\n---\n\n**User**\n",
        "## SpecStory\n\nA page about the extension.\n",
        "<!-- a comment -->\n# Title\n_**User**_\n",
    ],
)
def test_other_markdown_is_not_recognized(text: str) -> None:
    assert text_format(text) != "cursor"


def test_crlf_files_read_the_same() -> None:
    crlf = parsed(OCTOBER_2025.replace("\n", "\r\n")).sessions[0]
    lf = parsed(OCTOBER_2025).sessions[0]
    assert [(m.role, [b.text for b in m.blocks]) for m in crlf.messages] == [
        (m.role, [b.text for b in m.blocks]) for m in lf.messages
    ]
