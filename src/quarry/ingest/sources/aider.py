"""Aider chat histories (`.aider.chat.history.md` in the project root, beside `.aider.input.history`).

The chat history is append-only Markdown. Every run of aider starts with a blank line and
`# aider chat started at YYYY-MM-DD HH:MM:SS` (local time, no zone: read as UTC like every zone-less
stamp): each run is a session `aider-session:<YYYYMMDD-HHMMSS>-<hash>`, the hash a short sha256 of
the header's stamp and the run's first line (a second run with the same id in one file gets `-2`).
Aider writes three kinds of lines, each ending in two spaces (a Markdown line break):
- `#### ` lines are what was typed at the prompt, one per line of the input: a prompt (authored user
  message), a slash command or `!cmd` (authored user message and a `command` event), `<blank>` (an
  empty input: a log-only event, no message). Aider also logs some inputs it made itself: the
  answer of a confirmation group (`…? (Y)es/(N)o… [Yes]: skip`, console output), the message of
  `/ask|/code|/architect|/context|/help <message>` again, and in architect mode the architect's reply
  again as the editor's input (both non-authored user messages);
- `> ` lines are aider's console output (banner, warnings, y/n questions with the answer typed,
  `Tokens: … Cost: …`, `Applied edit to <file>`, `Commit <sha> <message>`, errors). A run of them is
  one non-authored message, log-only (the model never sees it): `system`, or `tool` when it holds
  tool results. A multi-line console message has `> ` on its first line only: the lines after it
  (up to the one ending in two spaces, or every line directly under it) are kept in it. A `> `
  line without the break after a blank line is a Markdown quote of a reply;
- everything else is the assistant's reply (written when the reply is complete), verbatim Markdown:
  one assistant message per reply, its reasoning (`<thinking-content-…>`, `<think>`) thinking blocks.

Tool calls, on the reply that asked for them:
- file edits: SEARCH/REPLACE blocks (ORIGINAL/UPDATED in old versions; the file name on the line
  before the block, or inside its fence) are `edit` calls, whole-file listings (`whole` and
  `editor-whole` formats: the file name on the line before the fence) `write` calls, `*** Begin
  Patch` blocks `apply_patch` calls, fenced unified diffs (`udiff`) `edit` calls per file. The edit
  format comes from the banner (`Model: … with diff edit format`); replies in ask/architect/help
  mode edit nothing. `Applied edit to <file>` is their result (an `edit` call is made for a file a
  reply edited in a way not read here); `The LLM did not conform to the edit format` fails the
  edits it names (a SEARCH/REPLACE block by its file and the SEARCH text the error echoes: the other
  blocks were applied; all of the reply's edits when it names none); a declined creation or edit
  outside the chat, `Skipping edits to <file>` or a file aider could not write fails the edits of
  that file ("Add file to the chat?" only adds a file the reply mentions). A block naming no file
  (and no earlier block's) edits nothing, as aider refuses it: it stays text (`aider:unnamed-edit`);
- shell commands aider proposes (`> <command>` then `Run shell command? … : y`): `bash` calls whose
  result is what aider printed about them (not the output: aider does not log it); declined ones
  fail. `/run`, `/test` and `!` inputs are `bash` calls on the user's message, their result what
  aider printed next; `/test` whose output aider added to the chat exited nonzero, so it failed.

Models, tokens and cost are console lines: the main model (or the editor model, for the editor's
reply after a handoff) names the replies, `Tokens: 2.4k sent, 104 received.` (aider's rounded
figures; `cache write`/`cache hit` when reported) and `Cost: $X message` (its `cost_usd`) go on the
reply before it and are the text of a `turn_completed` event. `^C` while a prompt is waiting for its
reply is a `turn_aborted` event, a `litellm.…` error an `api_error`. `Cur working dir:` / `Git working
dir:` name the cwd and repo.

`.aider.input.history` (prompt_toolkit's history: `# <stamp with microseconds>` then one `+<line>`
per line of an input) is read beside the chat file (same name with `.aider.input.history` for
`.aider.chat.history.md`): an input typed during a run gives its exact time to the prompt it matches
(same text, in order). Alone, it is not recognized: any prompt_toolkit program writes that format.

Raw log events (docs/sessions.md#events): the header, every input, reply and run of console lines is an event
(`aider:header|prompt|command|echo|handoff|answer|blank-input|reply|console`) at its first line.
Inputs and replies are surface nodes; the header, answers and console output are log-only. A reply
gives its calls their keys; the console record holding a result cites its call.

Tolerance: a line aider does not write under an input is kept in it (`aider:stray-line`), a SEARCH
block or a listing never closed stays text (`aider:unclosed-edit`), reasoning never closed stays
thinking (`aider:unclosed-thinking`), a run with no line after its header is counted
(`aider:empty-session`); a file not ending in a newline was cut while aider wrote it (an issue; its
last input or console line is read as if ended).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from quarry.ingest.reader import issue
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftRecord, DraftSession, SourceResult, to_ms
from quarry.ingest.sources.paths import folder_name
from quarry.ingest.sources.tool_calls import patch_paths, tool_use_block

FORMAT = "aider"
ORIGIN = "aider-session"
CHAT_SUFFIX = ".aider.chat.history.md"
INPUT_SUFFIX = ".aider.input.history"

_HEADER = re.compile(r"# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_INPUT_STAMP = re.compile(r"# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)")
_BREAK = "  "  # what aider puts at the end of every input and console line
# A y/n question and the answer typed (aider logs the first letter; a group's preference in full).
_QUESTION = re.compile(r"(?P<question>.*\?) \(Y\)es/\(N\)o[^\[]*\[(?P<default>[^\]]*)\]: ?(?P<answer>\S*)\s*")
_MODEL = re.compile(r"(Main model|Model|Editor model): (\S+)(?: with (\S+) edit format)?")
_COST = re.compile(r"Cost: \$([0-9]+(?:\.[0-9]+)?) message")
_TOKENS = re.compile(
    r"Tokens: ([\d.,]+k?) sent(?:, ([\d.,]+k?) cache write)?(?:, ([\d.,]+k?) cache hit)?, ([\d.,]+k?) received\."
)
_APPLIED = re.compile(r"(?:Applied edit to|Did not apply edit to) (.+?)(?: \(--dry-run\))?")
_CWD = re.compile(r"(Cur working dir|Git working dir): (.+)|Git repository created in (.+)")
# What aider prints about a proposed shell command it runs (the command's output goes to the terminal only).
_SHELL_FOLLOW = re.compile(
    r"Running |Add command output to the chat\?|Added \d+ lines? of output to the chat|Error running command"
)
_FAILED_PATH = re.compile(r"failed to exactly match lines in (.+)$", re.MULTILINE)
# One block of aider's "SEARCH/REPLACE block failed to match" error: its file and the SEARCH text it echoes.
_FAILED_BLOCK = re.compile(
    r"failed to exactly match lines in (.+)\n<{5,9} SEARCH\n(.*?)^={5,9}$", re.MULTILINE | re.DOTALL
)
_UNWRITABLE = re.compile(r"Unable to write file (.+?) after \d+ attempts:.*")
# What aider prints when it does not apply a file's edits (a permission declined, a gitignored or uncreatable file).
_SKIPPED = re.compile(
    r"Skipping edits to (.+?)(?: that matches gitignore spec\.)?|Unable to create (.+?), skipping edits\."
)
# The questions whose "no" refuses a reply's edits of a file (not "Add file to the chat?": that one adds a file
# the reply mentions, after its edits were applied).
_EDIT_PERMISSION = ("Create new file?", "Allow edits to file that has not been added to the chat?", "Allow creation of")
_SEARCH = re.compile(r"\s*<{5,9} (?:SEARCH|ORIGINAL)>?\s*")
_DIVIDER = re.compile(r"\s*={5,9}\s*")
_REPLACE = re.compile(r"\s*>{5,9} (?:REPLACE|UPDATED)\s*")
_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})(.*)")
_REASONING = re.compile(r"\s*<(thinking-content-[0-9a-f]+|think|thinking|reasoning)>(.*)")
_NO_EDITS = frozenset({"ask", "architect", "help", "context"})
_WHOLE = frozenset({"whole", "editor-whole"})
_UDIFF = frozenset({"udiff", "udiff-simple", "editor-udiff"})
# Commands whose message aider logs again as the input of a one-turn coder of that edit format
# ("" for /code: the main coder's own format).
_MODE_COMMANDS = {"/ask": "ask", "/code": "", "/architect": "architect", "/context": "context", "/help": "help"}
_SHELL_COMMANDS = frozenset({"/run", "/test", "!"})
_Lines = list[tuple[int, str]]  # (1-based line number, text)
_Inputs = list[tuple[int, str]]  # (epoch ms, normalized text) of the input history's entries


def recognize(text: str) -> str:
    """The format name when `text` (possibly only the first 4096 characters of the file) is this format, else ""."""
    first = text.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    return FORMAT if _HEADER.fullmatch(first.rstrip()) else ""


def parse(text: str, path: str) -> SourceResult:
    result = SourceResult()
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if text and not text.endswith("\n"):
        reason = "the last line has no newline: aider ends every write with one, so the file was cut while written"
        result.issues.append(issue(path, len(lines), "truncated_line", reason))
        if lines[-1].startswith(("#### ", "> ")):  # read the cut input or console line as aider would have ended it
            lines[-1] = lines[-1].rstrip() + _BREAK
    runs = _runs(lines)
    inputs = _sibling_inputs(path)
    ids: Counter[str] = Counter()
    for index, run in enumerate(runs):
        end = next((later.start_ms for later in runs[index + 1 :] if later.start_ms), 0)
        typed = [(ms, entry) for ms, entry in inputs if 0 < run.start_ms <= ms and (not end or ms < end)]
        draft = _session(run, path, typed, result)
        if draft is None:
            result.skipped[f"{FORMAT}:empty-session"] += 1
            continue
        ids[draft.native_id] += 1
        if ids[draft.native_id] > 1:
            draft.native_id += f"-{ids[draft.native_id]}"
        result.sessions.append(draft)
    return result


def _session(run: _Run, path: str, inputs: _Inputs, result: SourceResult) -> DraftSession | None:
    """The draft of one run, given the inputs typed during it; None for a run without messages."""
    if not any(line.strip() for _, line in run.body):
        return None
    draft = DraftSession(origin=ORIGIN, native_id=_native_id(run.stamp, run.body), source_path=path)
    if run.line:
        draft.records.append(DraftRecord(run.line, f"{FORMAT}:header", run.header, time_ms=run.start_ms))
        draft.observe_time(run.start_ms)
    session = _Session(draft, result, inputs)
    for chunk in _chunks(run.body, result.skipped):
        session.feed(chunk)
    draft.current = None
    return draft if draft.messages else None


# ------------------------------------------------------------------ lines into runs and chunks


@dataclass(slots=True)
class _Chunk:
    """Lines of one kind: an input (`user`: its lines without `#### `), a run of console messages
    (`console`: each message's text, continuation lines included) or a reply (`reply`: raw lines)."""

    kind: str
    line: int
    lines: _Lines = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


@dataclass(slots=True)
class _Run:
    """One run of aider: its header (stamp, line number, text; none for lines before any header) and body."""

    stamp: str
    line: int
    header: str
    body: _Lines = field(default_factory=list)
    start_ms: int = 0


def _runs(lines: list[str]) -> list[_Run]:
    runs: list[_Run] = []
    for number, line in enumerate(lines, 1):
        header = _HEADER.fullmatch(line.rstrip())
        if header is not None:
            runs.append(_Run(header.group(1), number, line, start_ms=to_ms(header.group(1))))
        elif runs:
            runs[-1].body.append((number, line))
        elif line.strip():  # lines before the first header (aider never writes them): a run without a stamp
            runs.append(_Run("", 0, "", [(number, line)]))
    return runs


def _chunks(body: _Lines, skipped: Counter[str]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    previous = "blank"  # the kind of the line before: blank | user | console | text
    open_message = False  # the last console message goes on: its first line did not end in two spaces
    for number, line in body:
        last = chunks[-1] if chunks else None
        is_input = line.startswith("#### ") and line.endswith(_BREAK)  # aider's inputs end an open message too
        if open_message and last is not None and not is_input:
            _extend(last, line)
            open_message = not line.endswith(_BREAK)
        elif is_input:
            open_message = False
            if previous == "user" and last is not None:
                last.lines.append((number, line[5:-2]))
            else:
                chunks.append(_Chunk("user", number, [(number, line[5:-2])]))
            previous = "user"
        elif _is_console(line, previous, last):
            text = line[2:] if line.startswith("> ") else ""
            if last is not None and last.kind == "console":
                last.lines.append((number, text.removesuffix(_BREAK)))
            else:
                chunks.append(_Chunk("console", number, [(number, text.removesuffix(_BREAK))]))
            open_message = not line.endswith(_BREAK)
            previous = "console"
        elif not line.strip():
            if last is not None and last.kind == "reply":
                last.lines.append((number, line))
            previous = "blank"
        elif previous == "console" and last is not None:  # under a console message whose first line ended in spaces
            _extend(last, line)
        elif previous == "user" and last is not None:  # aider writes every line of an input with `#### `
            skipped[f"{FORMAT}:stray-line"] += 1
            last.lines.append((number, line))
        else:
            if last is not None and last.kind == "reply":
                last.lines.append((number, line))
            else:
                chunks.append(_Chunk("reply", number, [(number, line)]))
            previous = "text"
    return chunks


def _is_console(line: str, previous: str, last: _Chunk | None) -> bool:
    """A `> ` line is aider's when it ends in aider's line break, or when it opens a multi-line console
    message: right under an input or console line, or first in the run. Elsewhere (a reply starts after
    a blank line) it is a Markdown quote of the reply."""
    if not (line.startswith("> ") or line.rstrip() == ">"):
        return False
    return line.endswith(_BREAK) or previous in ("user", "console") or last is None


def _extend(chunk: _Chunk, line: str) -> None:
    number, text = chunk.lines[-1]
    chunk.lines[-1] = (number, f"{text}\n{line.removesuffix(_BREAK)}")


# ------------------------------------------------------------------ one run


@dataclass(slots=True)
class _Call:
    """A tool call waiting for its result, and the files it edits."""

    block: DraftBlock
    paths: list[str]
    search: str = ""  # a SEARCH/REPLACE block's SEARCH text (normalized): aider's error names a failed block by it
    test: bool = False  # /test: aider adds its output to the chat only when it exits nonzero
    settled: bool = False


_Found = tuple[int, int, list[_Call]] | None  # an edit: (its first line, the line after it, its calls)


class _Session:
    """One run's chunks, in order, into its draft (module docstring)."""

    def __init__(self, draft: DraftSession, result: SourceResult, inputs: _Inputs) -> None:
        self.draft = draft
        self.result = result
        self.inputs = inputs  # the inputs typed during this run
        self.next_input = 0
        self.model = ""
        self.editor_model = ""
        self.edit_format = ""  # the main coder's, from the banner ("" unknown)
        self.code_format = ""  # the last editing format the banner named (what /code <message> uses)
        self.editor_format = ""
        self.turn_format: str | None = None  # a one-turn coder's (/ask <message>, the editor after a handoff)
        self.turn_model = ""
        self.echo = ""  # the message of a mode command, which aider logs again as an input
        self.echo_format = ""
        self.turn_open = False  # a prompt went to the model and no usage line closed it yet
        self.last_reply: DraftMessage | None = None
        self.reply_text = ""  # its text without reasoning: an architect's reply comes back as the editor's input
        self.calls: list[_Call] = []  # the last reply's edits
        self.awaiting: _Call | None = None  # a /run, /test or ! call: the console lines that follow are its result
        self.shell: DraftBlock | None = None  # a running command's result: the lines about it that follow join it
        self.subject = ""  # the last console message: what a question after it asks about
        self.filename = ""  # the last SEARCH/REPLACE block's file: a block without a name edits it again

    def feed(self, chunk: _Chunk) -> None:
        if chunk.kind == "user":
            self._input(chunk)
        elif chunk.kind == "console":
            self._console(chunk)
        else:
            self._reply(chunk)

    # -------------------------------------------------------------- inputs

    def _input(self, chunk: _Chunk) -> None:
        text = chunk.text()
        stripped = text.strip()
        if len(chunk.lines) == 1 and _QUESTION.fullmatch(stripped):  # the question is still being answered
            self._console(chunk, "answer")
            return
        self.awaiting, self.subject = None, ""
        if stripped == "<blank>":
            self.draft.begin(DraftRecord(chunk.line, f"{FORMAT}:blank-input", text))
            return
        key = _normalized(text)
        if self.echo and key == self.echo:
            kind = "echo"
        elif self._format() == "architect" and self.reply_text and key == self.reply_text:
            kind = "handoff"
        elif stripped.startswith(("/", "!")):
            kind = "command"
        else:
            kind = "prompt"
        authored = kind in ("prompt", "command")
        time_ms = self._input_time(key) if authored else 0
        self.draft.begin(DraftRecord(chunk.line, f"{FORMAT}:{kind}", text, time_ms=time_ms, node=True))
        message = self.draft.add_message(DraftMessage("user", authored=authored, time_ms=time_ms))
        self.draft.add_block(message, DraftBlock("text", text=text))
        self.draft.observe_time(time_ms)
        if kind == "command":
            self._command(message, stripped, chunk.line)
            return
        if not self.draft.title:
            self.draft.title = stripped
        self._start_turn(kind)

    def _start_turn(self, kind: str) -> None:
        if kind == "prompt":
            self.turn_format, self.turn_model = None, ""
        elif kind == "echo":
            self.turn_format, self.turn_model = self.echo_format, ""
        else:  # handoff: the editor coder answers with its own model and format
            self.turn_format, self.turn_model = self.editor_format, self.editor_model
        self.echo = ""
        self.turn_open = True
        self.last_reply, self.reply_text, self.calls = None, "", []

    def _command(self, message: DraftMessage, text: str, line: int) -> None:
        name = "!" if text.startswith("!") else text.split(maxsplit=1)[0]
        args = text[len(name) :].strip()
        self.draft.record("command", message.time_ms, text.split("\n", 1)[0], object_ref=name, message_seq=message.seq)
        if name in _SHELL_COMMANDS and args:
            block = tool_use_block("bash", f"run-L{line}", {"command": args})
            self._add_call(message, block)
            self.awaiting = _Call(block, [], test=name == "/test")
        elif name in _MODE_COMMANDS and args:
            self.echo = _normalized(args)
            self.echo_format = _MODE_COMMANDS[name] or self.code_format

    def _input_time(self, key: str) -> int:
        """The time of the next input of the history with this text (inputs are matched in order)."""
        for index in range(self.next_input, len(self.inputs)):
            time_ms, entry = self.inputs[index]
            if entry == key:
                self.next_input = index + 1
                return time_ms
        return 0

    def _format(self) -> str:
        return self.turn_format if self.turn_format is not None else self.edit_format

    # -------------------------------------------------------------- replies

    def _reply(self, chunk: _Chunk) -> None:
        lines = chunk.lines
        while lines and not lines[-1][1].strip():
            lines = lines[:-1]
        record = self.draft.begin(DraftRecord(chunk.line, f"{FORMAT}:reply", chunk.text().rstrip(), node=True))
        message = self.draft.add_message(DraftMessage("assistant", authored=True, model=self.turn_model or self.model))
        self.calls, self.filename, self.subject = [], "", ""
        plain: list[str] = []
        for kind, part in _reasoning_split(lines, self.result.skipped):
            if kind == "thinking":
                thought = "\n".join(line for _, line in part).strip()
                if thought:
                    self.draft.add_block(message, DraftBlock("thinking", text=thought))
                continue
            plain.extend(line for _, line in part)
            for block in self._edits(part):
                self.draft.add_block(message, block)
                if block.type == "tool_use":
                    record.keys.append(f"call:{block.tool_use_id}")
        self.last_reply = message
        self.reply_text = _normalized("\n".join(plain))

    def _edits(self, part: _Lines) -> list[DraftBlock]:
        """The reply's text blocks and, where it edits a file, the edit calls in their place."""
        blocks: list[DraftBlock] = []
        start = index = 0
        editing = self._format() not in _NO_EDITS
        while index < len(part):
            found = self._edit_at(part, start, index) if editing else None
            if found is None:
                index += 1
                continue
            first, end, calls = found
            blocks.extend(_text_blocks(part[start:first]))
            blocks.extend(call.block for call in calls)
            self.calls.extend(calls)
            start = index = end
        blocks.extend(_text_blocks(part[start:]))
        return blocks

    def _edit_at(self, part: _Lines, start: int, index: int) -> _Found:
        """(first line, line after, calls) of an edit starting at `index`, None when none does."""
        line = part[index][1]
        if _SEARCH.fullmatch(line):
            return self._search_replace(part, start, index)
        if line.strip() == "*** Begin Patch":
            return self._patch(part, start, index)
        fence = _FENCE.fullmatch(line)
        if fence is None:
            return None
        if self._format() in _WHOLE:
            return self._listing(part, start, index, fence.group(1))
        if self._format() in _UDIFF and fence.group(2).strip() == "diff":
            return self._udiff(part, index, fence.group(1))
        return None

    def _search_replace(self, part: _Lines, start: int, index: int) -> _Found:
        divider = replace = None
        for at in range(index + 1, len(part)):
            line = part[at][1]
            if _SEARCH.fullmatch(line):
                break
            if divider is None and _DIVIDER.fullmatch(line):
                divider = at
            elif divider is not None and _REPLACE.fullmatch(line):
                replace = at
                break
        if divider is None or replace is None:
            self.result.skipped[f"{FORMAT}:unclosed-edit"] += 1
            return None
        name, first = _filename(part, start, index)
        self.filename = name = name or self.filename
        if not name:  # aider refuses a block naming no file ("Bad/missing filename"): it edits nothing
            self.result.skipped[f"{FORMAT}:unnamed-edit"] += 1
            return None
        end = replace + 1
        if end < len(part) and _bare_fence(part[end][1]):
            end += 1
        tool_input = {
            "path": name,
            "search": _joined(part[index + 1 : divider]),
            "replace": _joined(part[divider + 1 : replace]),
        }
        call = _edit("edit", f"edit-L{part[index][0]}", tool_input, [name])
        call.search = _normalized(tool_input["search"])
        return first, end, [call]

    def _listing(self, part: _Lines, start: int, index: int, fence: str) -> _Found:
        """A whole-file listing: the file name on the line before the fence."""
        name = _strip_filename(part[index - 1][1]) if index > start else ""
        if not _is_path(name) or ("." not in name and "/" not in name):
            return None
        close = _closing(part, index, fence)
        if close is None:
            self.result.skipped[f"{FORMAT}:unclosed-edit"] += 1
            return None
        if any(_SEARCH.fullmatch(line) for _, line in part[index + 1 : close]):
            return None  # SEARCH/REPLACE blocks inside: read as those
        tool_input = {"path": name, "content": _joined(part[index + 1 : close])}
        return index - 1, close + 1, [_edit("write", f"write-L{part[index][0]}", tool_input, [name])]

    def _patch(self, part: _Lines, start: int, index: int) -> _Found:
        end_marker = next((at for at in range(index + 1, len(part)) if part[at][1].strip() == "*** End Patch"), None)
        if end_marker is None:
            self.result.skipped[f"{FORMAT}:unclosed-edit"] += 1
            return None
        first = index - 1 if index > start and _FENCE.fullmatch(part[index - 1][1]) else index
        end = end_marker + 1
        if end < len(part) and _bare_fence(part[end][1]):
            end += 1
        body = _joined(part[index : end_marker + 1])
        return (
            first,
            end,
            [_edit("apply_patch", f"patch-L{part[index][0]}", {"input": body}, patch_paths(body))],
        )

    def _udiff(self, part: _Lines, index: int, fence: str) -> _Found:
        """A fenced unified diff: one edit per file it changes (a `--- ` line, then `+++ <file>`)."""
        close = _closing(part, index, fence)
        body = part[index + 1 : close if close is not None else len(part)]
        heads = [
            at for at in range(len(body) - 1) if body[at][1].startswith("--- ") and body[at + 1][1].startswith("+++ ")
        ]
        if close is None or not heads:
            return None
        calls = []
        for n, head in enumerate(heads):
            old, new = body[head][1][4:].strip(), body[head + 1][1][4:].strip()
            path = new[2:] if new.startswith("b/") and old.startswith("a/") else new
            group = body[head : heads[n + 1] if n + 1 < len(heads) else len(body)]
            calls.append(_edit("edit", f"diff-L{body[head][0]}", {"path": path, "diff": _joined(group)}, [path]))
        return index, close + 1, calls

    # -------------------------------------------------------------- console output

    def _console(self, chunk: _Chunk, kind: str = "console") -> None:
        """A run of console messages: one log-only message; what its lines say about calls, models,
        usage and errors. An answer aider logged as an input is only kept."""
        text = chunk.text()
        self.draft.begin(DraftRecord(chunk.line, f"{FORMAT}:{kind}", text))
        if not text.strip():
            return
        message = self.draft.add_message(DraftMessage("system", authored=False))
        self.draft.add_block(message, DraftBlock("text", text=text))
        if kind == "console" and self.awaiting is not None:  # what aider printed after a command the user ran
            call, self.awaiting = self.awaiting, None
            said = [item.split("\n", 1)[0] for _, item in chunk.lines]
            failed = any(line.startswith("Error running command") for line in said) or (
                call.test and any(line.startswith("Added ") for line in said)
            )
            self._settle(call, text, failed, message)
        elif kind == "console":
            conform = -1
            for index, (number, item) in enumerate(chunk.lines):
                if conform < 0 and item.startswith("The LLM did not conform to the edit format"):
                    conform = index
                self._item(number, item, message)
                self.subject = item
            if conform >= 0:
                self._format_error("\n".join(item for _, item in chunk.lines[conform:]), message)
        self.shell = None
        if any(block.type == "tool_result" for block in message.blocks):
            message.role = "tool"

    def _item(self, number: int, item: str, message: DraftMessage) -> None:
        line = item.split("\n", 1)[0].strip()
        if self._shell_output(line, item):
            return
        if (tokens := _TOKENS.match(line)) is not None:
            self._usage(tokens, item, message)
        elif (model := _MODEL.match(line)) is not None:
            self._model(*model.groups())
        elif (applied := _APPLIED.fullmatch(line)) is not None:
            self._applied(applied.group(1), number, item, message)
        elif (unwritable := _UNWRITABLE.fullmatch(line)) is not None:
            self._fail_edits(unwritable.group(1), item, message)
        elif (skipped := _SKIPPED.fullmatch(line)) is not None:
            self._skip_edits((skipped.group(1) or skipped.group(2)).strip(), number, item, message)
        elif (question := _QUESTION.fullmatch(line)) is not None:
            self._question(question, number, item, message)
        elif (cwd := _CWD.fullmatch(line)) is not None:
            self._place(cwd.group(1) or "", (cwd.group(2) or cwd.group(3)).strip())
        elif line.startswith("^C"):
            if self.turn_open:
                self.turn_open = False
                self.draft.record("turn_aborted", 0, line, message_seq=message.seq)
        elif line.startswith(("litellm.", "Empty response received from LLM")):
            self.draft.record("api_error", 0, item, failed=True, message_seq=message.seq)

    def _shell_output(self, line: str, item: str) -> bool:
        """Lines about a proposed command that runs join its result."""
        if self.shell is None or not _SHELL_FOLLOW.match(line):
            self.shell = None
            return False
        self.shell.text += "\n" + item
        self.shell.is_error = self.shell.is_error or line.startswith("Error running command")
        return True

    def _usage(self, tokens: re.Match[str], item: str, message: DraftMessage) -> None:
        reply = self.last_reply
        if reply is not None and not (reply.input_tokens or reply.output_tokens):
            sent, write, hit, received = (_count(group) for group in tokens.groups())
            reply.input_tokens = max(0, sent - write)
            reply.cache_write_tokens, reply.cache_read_tokens, reply.output_tokens = write, hit, received
            if (cost := _COST.search(item)) is not None:
                reply.cost_usd = float(cost.group(1))
        self.turn_open = False
        self.draft.record("turn_completed", 0, item.replace("\n", " "), message_seq=message.seq)

    def _model(self, role: str, name: str, edit_format: str | None) -> None:
        if role == "Editor model":
            self.editor_model, self.editor_format = name, edit_format or ""
            return
        self.model, self.edit_format = name, edit_format or ""
        if edit_format and edit_format not in _NO_EDITS:
            self.code_format = edit_format

    def _place(self, kind: str, path: str) -> None:
        """The cwd (`Cur working dir`, else the repository's root) and the repository's folder name."""
        name = folder_name(path)
        if kind == "Cur working dir":
            self.draft.cwd = path
            self.draft.repo = self.draft.repo or name
        else:
            self.draft.cwd = self.draft.cwd or path
            self.draft.repo = name

    def _applied(self, path: str, number: int, item: str, message: DraftMessage) -> None:
        calls = [c for c in self.calls if not c.settled and any(_same_path(p, path) for p in c.paths)]
        if not calls:  # a block whose file name was not read: the next one without a name
            calls = [c for c in self.calls if not c.settled and not c.paths][:1]
            for call in calls:
                call.block.path = path
                call.paths = [path]
        if not calls:  # the reply edited it in a way not read here
            block = tool_use_block("edit", f"applied-L{number}", {"path": path})
            self._add_call(self.last_reply or message, block)
            calls = [_Call(block, [path])]
        for call in calls:
            self._settle(call, item, False, message)

    def _question(self, question: re.Match[str], number: int, item: str, message: DraftMessage) -> None:
        answer = question.group("answer") or question.group("default")
        agreed = answer[:1].lower() in ("y", "a")
        if question.group("question").startswith("Run shell command"):
            command = "\n".join(line.strip() for line in self.subject.split("\n") if line.strip())
            block = tool_use_block("bash", f"shell-L{number}", {"command": command})
            self._add_call(self.last_reply or message, block)
            call = _Call(block, [])
            result = self._settle(call, item if agreed else f"declined: {item}", not agreed, message)
            self.shell = result if agreed else None
        elif not agreed and self.subject.strip() and question.group("question").startswith(_EDIT_PERMISSION):
            self._fail_edits(self.subject.strip(), f"declined: {item}", message)

    def _fail_edits(self, path: str, item: str, message: DraftMessage) -> None:
        for call in self.calls:
            if not call.settled and any(_same_path(p, path) for p in call.paths):
                self._settle(call, item, True, message)

    def _skip_edits(self, path: str, number: int, item: str, message: DraftMessage) -> None:
        """Aider did not apply the edits of `path`: they failed (an edit is made for a file the reply
        edited in a way not read here, as for `Applied edit to`)."""
        if any(_same_path(p, path) for c in self.calls for p in c.paths):  # declined just before: failed already
            self._fail_edits(path, item, message)
            return
        block = tool_use_block("edit", f"skipped-L{number}", {"path": path})
        self._add_call(self.last_reply or message, block)
        self._settle(_Call(block, [path]), item, True, message)

    def _format_error(self, detail: str, message: DraftMessage) -> None:
        """The reply's edits named as failed by aider's edit-format error (all of them when it names none).
        A failed SEARCH/REPLACE block is named by its file and the SEARCH text it echoes, so the file's other
        blocks were applied; a named file whose failed block is not recognized fails all its edits."""
        unsettled = [call for call in self.calls if not call.settled]
        blamed: list[_Call] = []
        named = [path.strip() for path in _FAILED_PATH.findall(detail)]
        for path, search in _FAILED_BLOCK.findall(detail):
            path, search = path.strip(), _normalized(search)
            match = [c for c in unsettled if c.search == search and any(_same_path(p, path) for p in c.paths)]
            if match:
                blamed.append(match[0])
                named.remove(path)
        applied = next((line for line in detail.split("\n") if "applied successfully" in line), "")
        for call in unsettled:
            if (not named and not blamed) or call in blamed or any(_same_path(p, n) for p in call.paths for n in named):
                self._settle(call, detail, True, message)
            elif applied:
                self._settle(call, applied.strip(), False, message)

    def _add_call(self, message: DraftMessage, block: DraftBlock) -> None:
        self.draft.add_block(message, block)
        if self.draft.current is not None:
            self.draft.current.keys.append(f"call:{block.tool_use_id}")

    def _settle(self, call: _Call, text: str, failed: bool, message: DraftMessage) -> DraftBlock:
        call.settled = True
        block = call.block
        result = DraftBlock(
            "tool_result", text=text, tool_name=block.tool_name, tool_use_id=block.tool_use_id, is_error=failed
        )
        self.draft.add_block(message, result)
        if self.draft.current is not None:
            self.draft.current.source_keys.append(f"call:{block.tool_use_id}")
        return result


# ------------------------------------------------------------------ helpers


def _reasoning_split(lines: _Lines, skipped: Counter[str]) -> list[tuple[str, _Lines]]:
    """("thinking" | "text", lines) parts of a reply in order: reasoning sits between `<tag>` and `</tag>`."""
    parts: list[tuple[str, _Lines]] = []
    text: _Lines = []
    index = 0
    while index < len(lines):
        number, line = lines[index]
        index += 1
        opening = _REASONING.match(line)
        if opening is None:
            text.append((number, line))
            continue
        if text:
            parts.append(("text", text))
            text = []
        closing = f"</{opening.group(1)}>"
        thought: _Lines = []
        rest = opening.group(2)
        while closing not in rest:
            thought.append((number, rest))
            if index == len(lines):
                skipped[f"{FORMAT}:unclosed-thinking"] += 1
                rest = closing
                break
            number, rest = lines[index]
            index += 1
        before, after = rest.split(closing, 1)
        thought.append((number, before))
        parts.append(("thinking", thought))
        if after.strip():
            text.append((number, after))
    if text:
        parts.append(("text", text))
    return parts


def _filename(part: _Lines, start: int, index: int) -> tuple[str, int]:
    """The file a SEARCH block at `index` edits and where the block starts, as aider finds it: the
    nearest name among the three lines before, looking past fence lines only (`name` then a fence
    opening, or a fence opening then `name` in the diff-fenced format)."""
    first = index
    at = index - 1
    while at >= max(start, index - 3):
        line = part[at][1]
        name = _strip_filename(line)
        if _FENCE.fullmatch(line) is None:
            if not _is_path(name):
                break
            opened_before = at == index - 1 and at > start and _FENCE.fullmatch(part[at - 1][1]) is not None
            return name, at - 1 if opened_before else at
        first = at
        if _is_path(name) and ("." in name or "/" in name):  # ```path/to/file.py
            return name, first
        at -= 1
    return "", first


def _strip_filename(line: str) -> str:
    name = line.strip()
    fence = _FENCE.fullmatch(name)
    if fence is not None:
        return fence.group(2).strip()
    return "" if name == "..." else name.rstrip(":").lstrip("#").strip().strip("`").strip("*")


def _is_path(name: str) -> bool:
    return 0 < len(name) <= 250 and not any(c.isspace() for c in name) and any(c.isalnum() for c in name)


def _bare_fence(line: str) -> bool:
    fence = _FENCE.fullmatch(line)
    return fence is not None and not fence.group(2).strip()


def _closing(part: _Lines, index: int, fence: str) -> int | None:
    """The line that closes a fence opened at `index`: the same character, at least as many."""
    for at in range(index + 1, len(part)):
        stripped = part[at][1].strip()
        if len(stripped) >= len(fence) and stripped == fence[0] * len(stripped):
            return at
    return None


def _edit(name: str, tool_use_id: str, tool_input: dict[str, str], paths: list[str]) -> _Call:
    return _Call(tool_use_block(name, tool_use_id, tool_input), [path for path in paths if path])


def _text_blocks(lines: _Lines) -> list[DraftBlock]:
    text = _joined(lines).strip("\n")
    return [DraftBlock("text", text=text)] if text.strip() else []


def _joined(lines: _Lines) -> str:
    return "\n".join(line for _, line in lines)


def _same_path(a: str, b: str) -> bool:
    a, b = posixpath.normpath(a.replace("\\", "/")), posixpath.normpath(b.replace("\\", "/"))
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _count(value: str | None) -> int:
    """Aider's rounded token figure (`2.4k`, `30k`, `104`) as a number."""
    if not value:
        return 0
    value = value.replace(",", "")
    try:
        return round(float(value[:-1]) * 1000) if value.endswith("k") else int(float(value))
    except ValueError:
        return 0


def _normalized(text: str) -> str:
    """Text compared across the two files: each line without trailing spaces, no blank lines around."""
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _native_id(stamp: str, body: _Lines) -> str:
    first = next((line.strip() for _, line in body if line.strip()), "")
    digest = hashlib.sha256(f"{stamp}\n{first}".encode()).hexdigest()[:12]
    if not stamp:
        return f"unstamped-{digest}"
    digits = re.sub(r"\D", "", stamp)
    return f"{digits[:8]}-{digits[8:]}-{digest}"


def _sibling_inputs(path: str) -> _Inputs:
    """(time, normalized text) of every input of the input history beside a chat history."""
    if not path.endswith(CHAT_SUFFIX):
        return []
    try:
        data = Path(path[: -len(CHAT_SUFFIX)] + INPUT_SUFFIX).read_bytes()
    except OSError:
        return []
    return _input_history(data.decode("utf-8", errors="replace"))


def _input_history(text: str) -> _Inputs:
    """The entries of a prompt_toolkit history file, in file order."""
    entries: _Inputs = []
    time_ms = 0
    lines: list[str] | None = None
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        stamp = _INPUT_STAMP.fullmatch(line.rstrip())
        if stamp is not None:
            if lines is not None:
                entries.append((time_ms, _normalized("\n".join(lines))))
            time_ms, lines = to_ms(stamp.group(1)), []
        elif lines is not None and line.startswith("+"):
            lines.append(line[1:])
    if lines is not None:
        entries.append((time_ms, _normalized("\n".join(lines))))
    return entries
