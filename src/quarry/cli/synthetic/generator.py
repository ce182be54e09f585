"""The generator of synthetic coding-agent sessions: long-tailed session lengths, and each session
written as the Claude Code parser reads it back (quarry.cli.synthetic.claude_code), so the archive
built from it is what ingesting those files gives. Each session has a topic (a cluster of related
programming terms) its messages keep returning to, so two-term queries find sessions about it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from quarry.cli.synthetic.draws import Draws
from quarry.cli.synthetic.vocabulary import (
    ASSISTANT_OPENERS,
    COMMANDS,
    DIRS,
    ERRORS,
    FILES,
    LEXICON,
    MODELS,
    POLISH,
    RARE_NAMES,
    REPOS,
    THINKING_OPENERS,
    TITLES,
    TOOL_NAMES,
    TOPICS,
    USER_OPENERS,
    USERS,
    rare_name,
)
from quarry.ingest.normalize import build_session, count_words
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftSession
from quarry.ingest.sources.tool_calls import tool_use_block
from quarry.v1 import units_pb2

ORIGIN = "claude-code-session"
# Sessions start over ~18 months from here (UTC, epoch ms).
_EPOCH_MS = int(datetime(2024, 7, 1, tzinfo=UTC).timestamp() * 1000)
_SPAN_MS = 548 * 24 * 3600 * 1000


class _Call(NamedTuple):
    """A tool_use waiting for its tool_result."""

    tool_use_id: str
    tool: str
    input: dict[str, object]


class _SessionWriter:
    """Builds one session as the Claude Code parser reads it back from `session_records`: a draft in the
    parser's terms (tool results arrive as user rows, as Claude Code writes them), then the product's
    normalizer for ids, words, counts, actions and the content hash."""

    def __init__(self, d: Draws, size: int) -> None:
        self.d = d
        self.size = size
        topics = [d.pick(TOPICS)]
        if d.u() < 0.4:
            topics.append(d.pick(TOPICS))
        self.topic: list[str] = [w for t in topics for w in t]
        self.paths = [f"{d.pick(DIRS)}/{d.pick(FILES)}" for _ in range(1 + d.below(4))]
        self.time = _EPOCH_MS + int(d.u() * _SPAN_MS)
        self.model = next(m for until, m in MODELS if self.time < until)
        repo = d.pick(REPOS)
        self.cwd = f"/home/{d.pick(USERS)}/src/{repo}"
        kind = d.pick(("feature", "fix", "refactor", "chore"))
        second = self.topic[1 + d.below(len(self.topic) - 1)]
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=d.uuid4(),
            source_path="",
            title=d.pick(TITLES).format(t=self.topic[0], u=second, p=self.paths[0], r=repo),
            repo=repo,
            cwd=self.cwd,
            branch="main" if d.u() < 0.4 else f"{kind}/{d.pick(self.topic)}-{d.pick(self.topic)}",
        )

    # -- text --------------------------------------------------------------------------------------
    def _entity(self) -> str:
        d = self.d
        r = d.u()
        if r < 0.45:
            return f" in {d.pick(self.paths)}"
        if r < 0.7:
            return f" when running `{self._command()}`"
        if r < 0.85:
            return f" ({d.pick(self.topic)} {d.pick(self.topic)})"
        return " — " + self._error()

    def _error(self) -> str:
        return self.d.pick(ERRORS).format(t=self.d.pick(self.topic), p=self.d.pick(self.paths))

    def _sentence(self, opener: str) -> str:
        # The hottest function of the generator: draws are inlined (`int(u() * n)`) rather than
        # going through `below` / `pick`.
        d, u, topic = self.d, self.d.u, self.topic
        ws = d.words(4 + int(u() * 11))
        n = len(ws)
        t = len(topic)
        ws[int(u() * n)] = topic[int(u() * t)]
        r = u()
        if r < 0.5:
            ws[int(u() * n)] = topic[int(u() * t)]
        elif r > 0.85:
            ws[int(u() * n)] = rare_name(int(u() * RARE_NAMES))
        s = " ".join(ws)
        if opener:
            s = f"{opener} {s}"
        if u() < 0.3:
            s += self._entity()
        return s[0].upper() + s[1:] + "."

    def _prose(self, openers: Sequence[str], sentences: int) -> str:
        d = self.d
        parts = [self._sentence(d.pick(openers))]
        parts.extend(self._sentence("") for _ in range(sentences - 1))
        if d.u() < 0.012:
            parts.insert(d.below(len(parts) + 1), d.pick(POLISH))
        return " ".join(parts)

    def _code_fence(self) -> str:
        d = self.d
        fn = d.pick(LEXICON[-400:])
        arg, other = d.pick(self.topic), d.pick(self.topic)
        return (
            f"```python\ndef {fn}({arg}, retries=3):\n    for attempt in range(retries):\n"
            f"        if {arg}.{other}():\n            return {arg}\n    raise TimeoutError({arg!r})\n```"
        )

    def _command(self) -> str:
        d = self.d
        return d.pick(COMMANDS).format(
            d=d.pick(self.paths).rsplit("/", 1)[0], p=d.pick(self.paths), t=d.pick(self.topic)
        )

    # -- messages ----------------------------------------------------------------------------------
    def _message(self, role: str, authored: bool, gap_ms: int) -> DraftMessage:
        self.time += gap_ms
        self.draft.observe_time(self.time)
        return self.draft.add_message(DraftMessage(role=role, authored=authored, time_ms=self.time))

    def user(self) -> None:
        d = self.d
        m = self._message("user", True, 10_000 + d.below(600_000))
        text = self._prose(USER_OPENERS, 1 + d.below(3) + (d.u() < 0.15) * d.below(5))
        if d.u() < 0.03:  # a pasted traceback
            frames = "\n".join(
                f'  File "{d.pick(self.paths)}", line {1 + d.below(400)}, in {d.pick(LEXICON[-400:])}'
                for _ in range(2 + d.below(5))
            )
            text += f"\n\nTraceback (most recent call last):\n{frames}\n{self._error()}"
        self.draft.add_block(m, DraftBlock("text", text=text))
        if d.u() < 0.01:  # a pasted screenshot
            self.draft.add_block(m, DraftBlock("image", media_type="image/png"))
            m.paste = True

    def assistant(self, with_tool: bool) -> list[_Call]:
        """An assistant message; returns its tool calls."""
        d = self.d
        m = self._message("assistant", True, 1_500 + d.below(40_000))
        m.model = self.model
        words = 0
        if d.u() < 0.25:
            text = self._prose(THINKING_OPENERS, 2 + d.below(4))
            self.draft.add_block(m, DraftBlock("thinking", text=text))
            words += count_words(text)
        if not with_tool or d.u() < 0.55:
            text = self._prose(ASSISTANT_OPENERS, (1 + d.below(3)) if with_tool else (2 + d.below(5)))
            if not with_tool and d.u() < 0.06:
                text += "\n\n" + self._code_fence()
            self.draft.add_block(m, DraftBlock("text", text=text))
            words += count_words(text)
        calls = [self._tool_use(m) for _ in range(1 + (d.u() < 0.15))] if with_tool else []
        m.input_tokens = 1 + d.below(40)
        m.output_tokens = 20 + int(words * 1.4) + 60 * len(calls)
        m.cache_read_tokens = 8_000 + d.below(140_000)
        m.cache_write_tokens = d.below(4_000)
        return calls

    def _tool_input(self, tool: str) -> dict[str, object]:
        d = self.d
        file_path = f"{self.cwd}/{d.pick(self.paths)}"
        if tool == "Read":
            return {"file_path": file_path}
        if tool == "Edit":
            return {"file_path": file_path, "old_string": d.pick(self.topic), "new_string": d.pick(self.topic)}
        if tool == "Write":
            return {"file_path": file_path, "content": self._code_fence().split("\n", 1)[1][:-4]}
        if tool == "Bash":
            cmd = self._command()
            return {"command": cmd, "description": f"Run {cmd.split()[0]}"}
        if tool == "Grep":
            return {"pattern": d.pick(self.topic), "path": d.pick(self.paths).rsplit("/", 1)[0]}
        if tool == "Glob":
            return {"pattern": f"**/*.{d.pick(self.paths).rsplit('.', 1)[-1]}"}
        if tool == "WebFetch":
            return {"url": f"https://docs.example.com/{d.pick(self.topic)}", "prompt": "Summarize the relevant part"}
        if tool == "WebSearch":
            return {"query": f"{d.pick(self.topic)} {d.pick(self.topic)}"}
        if tool == "Task":
            return {
                "description": f"Investigate {d.pick(self.topic)}",
                "prompt": self._sentence("Find where"),
                "subagent_type": "general-purpose",
            }
        return {"todos": [{"content": self._sentence(""), "status": "pending"} for _ in range(2)]}  # TodoWrite

    def _tool_use(self, m: DraftMessage) -> _Call:
        tool = self.d.pick(TOOL_NAMES)
        inp = self._tool_input(tool)
        tool_use_id = "toolu_01" + self.d.token()
        self.draft.add_block(m, tool_use_block(tool, tool_use_id, inp))
        return _Call(tool_use_id, tool, inp)

    def _tool_output(self, tool: str, inp: dict[str, object], failed: bool) -> str:
        d = self.d
        if tool == "Bash":
            cmd = str(inp["command"])
            if cmd.startswith("pytest"):
                passed, nfail = 3 + d.below(200), (1 + d.below(3)) if failed else 0
                lines = [f"FAILED {d.pick(self.paths)}::test_{d.pick(self.topic)} - {self._error()}"] if nfail else []
                tail = f"{nfail} failed, " if nfail else ""
                return "\n".join([*lines, f"===== {tail}{passed} passed in {d.below(90)}.{d.below(99)}s ====="])
            if failed:
                return "Exit code 1\n" + self._error()
            return " ".join(d.words(6 + d.below(20)))
        if tool == "Read":
            return "\n".join(f"{i + 1:>6}\t{' '.join(d.words(3 + d.below(8)))}" for i in range(3 + d.below(12)))
        if tool == "Edit":
            return f"The file {inp['file_path']} has been updated."
        if tool == "Write":
            return f"File created successfully at: {inp['file_path']}"
        if tool in ("Grep", "Glob"):
            hits = sorted({d.pick(self.paths) for _ in range(1 + d.below(4))})
            return f"Found {len(hits)} files\n" + "\n".join(hits)
        if tool == "TodoWrite":
            return "Todos have been modified successfully."
        return self._prose(ASSISTANT_OPENERS, 1 + d.below(3))

    def tool_results(self, calls: list[_Call]) -> None:
        """The user row carrying the results of the previous assistant message's tool calls."""
        d = self.d
        m = self._message("user", False, 100 + d.below(12_000))
        for call in calls:
            failed = d.u() < (0.2 if call.tool == "Bash" else 0.03)
            self.draft.add_block(
                m,
                DraftBlock(
                    "tool_result",
                    text=self._tool_output(call.tool, call.input, failed),
                    tool_name=call.tool,
                    tool_use_id=call.tool_use_id,
                    is_error=failed,
                ),
            )

    # -- the session -------------------------------------------------------------------------------
    def build(self) -> units_pb2.Session:
        d, messages = self.d, self.draft.messages
        while len(messages) < self.size:
            self.user()
            for _ in range(d.below(5) if d.u() < 0.85 else 5 + d.below(8)):
                if len(messages) + 2 > self.size:
                    break
                self.tool_results(self.assistant(with_tool=True))
            if len(messages) < self.size:
                self.assistant(with_tool=False)
        return build_session(self.draft)


def generate_session(messages: int, seed: int = 7) -> units_pb2.Session:
    """One session of exactly `messages` messages (bench/web.py reads a 1,000-message one on the page)."""
    rng = np.random.default_rng(seed)
    return _SessionWriter(Draws(rng, batch=min(1 << 20, max(1 << 12, messages * 48))), messages).build()


def session_sizes(messages: int, rng: np.random.Generator) -> list[int]:
    """Long-tailed session lengths in [4, 60] (median 14) summing to exactly `messages`; only a total below 4
    gives a shorter session."""
    if messages < 1:
        return []
    draws = np.clip(np.rint(np.exp(rng.normal(np.log(14.0), 0.75, messages // 4 + 1))), 4, 60)
    sizes: list[int] = []
    total = 0
    for n in draws.astype(int).tolist():
        if total + n > messages:
            break
        sizes.append(n)
        total += n
    rest = messages - total
    if rest >= 4 or not sizes:
        sizes.append(rest)
        return sizes
    # Fewer than 4 left over: a last session of 4 borrowing from the one before, or, when that one is
    # too short to lend, one session holding both.
    need = 4 - rest
    if sizes[-1] - need >= 4:
        sizes[-1] -= need
        sizes.append(4)
    else:
        sizes[-1] += rest
    return sizes


def generate_sessions(messages: int, seed: int = 7) -> Iterator[units_pb2.Session]:
    """Sessions totalling exactly `messages` messages, the same for the same `messages` and `seed=`."""
    rng = np.random.default_rng(seed)
    # About 40 draws and 40 words per message: small archives should not pay for a million of each.
    draws = Draws(rng, batch=min(1 << 20, max(1 << 12, messages * 48)))
    for size in session_sizes(messages, rng):
        yield _SessionWriter(draws, size).build()
