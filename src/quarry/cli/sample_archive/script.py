"""A session as a scenario tells it, before any log format: prompts, the model's responses with their tool
calls and results, compactions, and subagent runs as scripts of their own.

`Script` is what the scenarios build (through `Builder`) and what each format's writer renders. The
builder keeps the clock (every step takes a plausible time) and the context size, from which each
response's token usage follows: a writer never invents a number.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from quarry.cli.sample_archive.repos import Repo

CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one model response used: its uncached input, what it read from and wrote to the prompt
    cache, and its output."""

    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int

    @property
    def context(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(slots=True)
class Tool:
    """One tool call and its result. `kind` is what it does (bash, read, edit, write, grep, agent); each
    writer names it as its agent does. A read's `output` is the file's lines from `args['offset']` on."""

    kind: str
    args: dict[str, str]
    output: str
    call_ms: int
    result_ms: int
    exit_code: int | None = None
    failed: bool = False
    child: Script | None = None  # an agent call's subagent run


@dataclass(slots=True)
class Prompt:
    """What the user typed; `command` names a slash command (`/compact`) when it was one."""

    time_ms: int
    text: str
    command: str = ""


@dataclass(slots=True)
class Response:
    """One model response: its reasoning, its text, then the tool calls it made."""

    time_ms: int
    model: str
    thinking: str = ""
    text: str = ""
    tools: list[Tool] = field(default_factory=list)
    usage: Usage = Usage(0, 0, 0, 0)
    end_ms: int = 0  # when it was done: its text written and the last of its tool results back


@dataclass(slots=True)
class Compaction:
    """The context replaced by a summary: `trigger` is manual (the user ran /compact) or auto."""

    time_ms: int
    trigger: str
    pre_tokens: int
    summary: str


Event = Prompt | Response | Compaction


@dataclass(frozen=True, slots=True)
class Scenario:
    """A session the archive tells: its title, where it runs, and `play`, which builds its events. One
    that delegates to subagents can only be written as Claude Code."""

    title: str
    repo: Repo
    branch: str
    play: Callable[[Builder], None]
    delegates: bool = False


@dataclass(slots=True)
class Script:
    """One session: its native id, where it ran, its events in order, and, for a subagent run, the agent
    type and the id the runtime gave it."""

    session_id: str
    title: str
    repo: Repo
    branch: str
    events: list[Event] = field(default_factory=list)
    agent_type: str = ""
    agent_id: str = ""

    @property
    def start_ms(self) -> int:
        return self.events[0].time_ms if self.events else 0

    def children(self) -> list[Script]:
        return [t.child for e in self.events if isinstance(e, Response) for t in e.tools if t.child is not None]


class Builder:
    """Builds a script step by step: `prompt`, then `say`/`think` and tool calls, each advancing the clock.

    Consecutive text and calls form one response; a call's result closes it (the next step starts the
    next response), as a model that waits for its tools does."""

    def __init__(self, rng: random.Random, script: Script, model: str, start_ms: int, baseline_tokens: int) -> None:
        self.rng = rng
        self.script = script
        self.model = model
        self.now = start_ms
        self.context = baseline_tokens  # what the model sees: system prompt, tools, conversation so far
        self.cached = 0  # how much of it the prompt cache holds
        self._open: Response | None = None
        self._asked = 0  # the context when the open response was asked for

    # ------------------------------------------------------------------ the user

    def prompt(self, text: str, *, command: str = "", pause: tuple[int, int] = (25, 240)) -> Builder:
        self._close()
        self.now += self.rng.randint(*pause) * 1000 if self.script.events else 0
        self.script.events.append(Prompt(self.now, text, command))
        self.context += _tokens(text)
        return self

    # ------------------------------------------------------------------ the model

    def think(self, text: str) -> Builder:
        response = self._response(after_tools=True)
        response.thinking = f"{response.thinking}\n\n{text}" if response.thinking else text
        self.now += self.rng.randint(2, 9) * 1000
        return self

    def say(self, text: str) -> Builder:
        response = self._response(after_tools=True)
        response.text = f"{response.text}\n\n{text}" if response.text else text
        self.now += max(2, len(text) // 60) * 1000
        return self

    def call(
        self,
        kind: str,
        args: dict[str, str],
        output: str,
        *,
        seconds: float = 1.0,
        exit_code: int | None = None,
        parallel: bool = False,
    ) -> Tool:
        """A tool call and its result, `seconds` later; failed when it exited nonzero or the tool refused it
        (`exit_code` -1: an error without an exit status). A call waits for the results of the calls before
        it (a new response) unless it is `parallel` with them."""
        response = self._response(after_tools=not parallel)
        self.now += self.rng.randint(1, 4) * 1000
        call_ms = self.now
        self.now += int(seconds * 1000) + self.rng.randint(50, 900)
        failed = exit_code is not None and exit_code != 0
        tool = Tool(kind, args, output, call_ms, self.now, exit_code if exit_code != -1 else None, failed)
        response.tools.append(tool)
        self.context += _tokens(output) + _tokens(str(args)) + 20
        return tool

    def bash(self, command: str, description: str, output: str, *, exit_code: int = 0, seconds: float = 2.0) -> Tool:
        return self.call(
            "bash", {"command": command, "description": description}, output, exit_code=exit_code, seconds=seconds
        )

    def read(self, path: str, text: str, *, offset: int = 1, parallel: bool = False) -> Tool:
        """A read of `path` from line `offset` on: `text` is those lines as the file holds them."""
        return self.call("read", {"path": path, "offset": str(offset)}, text, seconds=0.1, parallel=parallel)

    def edit(self, path: str, old: str, new: str, *, refused: str = "") -> Tool:
        """A replacement of `old` by `new` in `path`; `refused` is the tool's error when `old` is not there."""
        args = {"path": path, "old": old, "new": new}
        return self.call("edit", args, refused, seconds=0.2, exit_code=-1 if refused else None)

    def write(self, path: str, content: str) -> Tool:
        return self.call("write", {"path": path, "content": content}, "", seconds=0.2)

    def grep(self, pattern: str, path: str, output: str) -> Tool:
        return self.call("grep", {"pattern": pattern, "path": path}, output, seconds=0.4)

    def passes(self, output: str, seconds: float, summary: str) -> None:
        """The end of a task: the repository's test suite, green, then the model's account of what it did."""
        self.bash(self.script.repo.test_command, "Run the tests", output, seconds=seconds)
        self.say(summary)

    def delegate(
        self, agent_type: str, description: str, instruction: str, run: Callable[[Builder], str], *, model: str
    ) -> Tool:
        """A subagent run: the call that dispatches it, the child session `run` builds (it returns the
        child's final answer, which is also the call's result), and the result once the child is done."""
        response = self._response(after_tools=True)
        self.now += self.rng.randint(1, 4) * 1000
        call_ms = self.now
        child = Script(
            self.script.session_id,
            description,
            self.script.repo,
            self.script.branch,
            agent_type=agent_type,
            agent_id="a" + "".join(self.rng.choice("0123456789abcdef") for _ in range(16)),
        )
        sub = Builder(self.rng, child, model, call_ms + self.rng.randint(200, 900), baseline_tokens=6_000)
        sub.prompt(instruction)
        sub.say(run(sub))
        sub.finish()
        self.now = sub.now + self.rng.randint(300, 1500)
        args = {"description": description, "prompt": instruction, "subagent_type": agent_type}
        answer = child.events[-1].text if isinstance(child.events[-1], Response) else ""
        tool = Tool("agent", args, answer, call_ms, self.now, child=child)
        response.tools.append(tool)
        self.context += _tokens(answer) + _tokens(instruction) + 20
        return tool

    def compact(self, summary: str, *, trigger: str) -> Builder:
        """The context replaced by `summary` (Claude Code's /compact or its automatic compaction, Codex's
        compaction): the context starts again from the baseline and the summary."""
        self._close()
        self.now += self.rng.randint(20, 60) * 1000
        self.script.events.append(Compaction(self.now, trigger, self.context, summary))
        self.context = self.context // 9 + _tokens(summary)
        self.cached = 0
        return self

    def finish(self) -> Script:
        self._close()
        return self.script

    # ------------------------------------------------------------------ responses and their usage

    def _response(self, *, after_tools: bool) -> Response:
        """The response being written; a new one when none is, or when this step follows its tool calls
        (`after_tools`: it was written once their results were in)."""
        if self._open is not None and after_tools and self._open.tools:
            self._close()
        if self._open is None:
            self.now += self.rng.randint(1_500, 6_000)  # the model's time to first token
            self._open = Response(self.now, self.model)
            self._asked = self.context
            self.script.events.append(self._open)
        return self._open

    def _close(self) -> None:
        """Settle the open response's usage: it read the context as it was when it was asked for (the part
        the previous request cached from the cache, the rest written to it) and wrote its own output."""
        response = self._open
        if response is None:
            return
        self._open = None
        response.end_ms = max(response.end_ms, self.now)
        written = (
            _tokens(response.text) + _tokens(response.thinking) + sum(_tokens(str(t.args)) for t in response.tools)
        )
        fresh = self.rng.randint(1, 9)
        read = min(self.cached, self._asked)
        response.usage = Usage(fresh, read, max(0, self._asked - read - fresh), written + self.rng.randint(8, 60))
        self.cached = self._asked
        self.context += written


def _tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1
