"""A seeded generator of realistic synthetic coding-agent sessions, and a writer of them as Claude Code logs.

`make run` uses it to give a machine without agent logs a sample archive; `bench/` uses it to build the
benchmark corpus. The same seed gives the same sessions, byte for byte.

Text is drawn from a fixed lexicon (common English, programming terms, identifiers, file names and a few
two-word collocations) with a Zipf-Mandelbrot distribution, so a few function words dominate and most
terms are rare; each session also has a topic (a cluster of related programming terms) that its
messages keep returning to, so two-term queries find sessions about that topic. Random choices come
from large numpy batches consumed through cursors, not from one generator call per word: 1M messages
take about a minute on one core.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from quarry.ingest.normalize import build_session, count_words, tool_use_block
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftSession
from quarry.v1 import units_pb2

_T = TypeVar("_T")

ORIGIN = "claude-code-session"
# Sessions start over ~18 months from here (UTC, epoch ms).
_EPOCH_MS = int(datetime(2024, 7, 1, tzinfo=UTC).timestamp() * 1000)
_SPAN_MS = 548 * 24 * 3600 * 1000

# --- the lexicon -------------------------------------------------------------------------------------

_FUNCTION_WORDS = """
the to a and of I it is in that for this we you with on be not can but if so as at
from are was have will or by an do should just then there now all need what when which also
would one they some use here my me our only like how more new any out up see about because
into than get its still make sure both these them other first could does has been way
"""

# Everyday English that coding conversations are full of.
_ENGLISH = """
change file test run error check fix add update work issue call value return look think want
problem case code line function method class module package version name type result output input
data list set map key time step part place point thing reason idea question answer example option
default support handle keep start stop try wait show tell find write read move copy remove delete
rename replace create build deploy release merge review comment commit push pull open close load save
send receive parse format print log trace debug fail pass break crash hang slow fast small large
simple clean correct wrong missing broken flaky stable safe quick better worse right left next last
same different whole single empty full local remote global public private internal external current
previous original final actual expected instead again already almost always never often usually maybe
probably actually really quite enough rather still yet though although unless until while during
after before between against without within across behind around above below under over through
user team project feature request bug ticket task plan goal note detail summary context reason
approach solution workaround behavior behaviour performance memory disk network machine server client
service system process job batch limit size count number total average percent second minute hour
day week month morning evening today tomorrow yesterday later soon earlier meeting deadline customer
production staging environment setup install upgrade downgrade revert rollback restart reboot
document documentation readme guide tutorial blog post discussion thread chat message email report
warning notice failure success progress status state mode level layer stage phase round pass cycle
agree disagree understand explain describe suggest prefer decide confirm verify ensure avoid allow
prevent require depend expect happen seem appear remember forget notice mention consider compare
measure improve reduce increase split combine group sort filter search match include exclude ignore
skip retry repeat continue finish complete begin end hold share reuse wrap unwrap extract inject
good great fine nice bad ugly weird strange odd obvious clear unclear easy hard tricky subtle
important minor major critical urgent optional manual automatic explicit implicit direct indirect
"""

# Topics: clusters of programming terms a session keeps returning to. Order matters: earlier topics and
# earlier terms inside a topic are more frequent.
_TOPICS = (
    "sqlite locking timeout retry database connection pool transaction busy wal journal vacuum",
    "pytest fixture assert mock coverage flaky parametrize conftest monkeypatch tmp_path marker",
    "refactor module interface dependency coupling extract rename abstraction layering boundary",
    "schema migration alembic column constraint foreign index backfill downgrade table",
    "tokenizer unicode diacritics folding stemming lowercase ngram analyzer stopwords normalize",
    "docker container image dockerfile compose volume registry entrypoint healthcheck",
    "kubernetes pod deployment helm ingress namespace configmap secret replica probe",
    "async await coroutine eventloop asyncio cancellation semaphore gather deadlock",
    "http request response header status endpoint route middleware cors redirect",
    "auth token jwt oauth login session cookie permission role scope expiry",
    "cache redis eviction ttl invalidation memoize hit miss warmup stale",
    "grpc protobuf stub servicer channel deadline metadata streaming interceptor",
    "logging logger metrics tracing opentelemetry span exporter collector dashboard",
    "typescript react component hook state props render useeffect webpack vite",
    "rust cargo borrow lifetime trait crate clippy unsafe ownership",
    "golang goroutine channel context mutex interface gofmt vet module",
    "git branch rebase merge conflict cherry stash bisect squash upstream",
    "ci pipeline workflow github actions runner artifact matrix cache lint",
    "performance profile benchmark latency throughput flamegraph allocation hotpath p95",
    "search index bm25 ranking query relevance snippet highlight facet partition",
    "embedding vector faiss cosine similarity nearest ann recall dimension",
    "config yaml toml env dotenv settings override default validation",
    "parser grammar lark ast lexer token syntax precedence operator",
    "queue worker celery kafka consumer producer offset backpressure retry",
    "file path glob symlink permission chmod directory tempfile encoding utf8",
    "json serialization orjson dataclass pydantic validation schema field",
)

# Two-word collocations, emitted as one lexicon entry so their words stay adjacent.
_COLLOCATIONS = """
database locked|connection pool|race condition|unit test|integration test|merge conflict|type error
null pointer|stack trace|memory leak|dead code|code review|pull request|feature flag|error message
exit code|test suite|edge case|happy path|hot reload|cold start|rate limit|retry policy|write lock
read replica|primary key|foreign key|query plan|full scan|event loop|thread pool|worker process
file descriptor|environment variable|virtual environment|lock file|build step|release branch
commit message|breaking change|backward compatibility|type hint|return value|default value
unused import|circular import|missing dependency|version bump|health check|load balancer|cache hit
cache miss|cold cache|slow query|long tail|connection reset|broken pipe|permission denied
disk full|memory pressure|stale read|index corruption|source map|dry run|smoke test|golden file
snapshot test|test fixture
"""

_ID_VERBS = "get set load save parse build make open close read write fetch send handle run check validate"
_ID_NOUNS = """
connection profile session config user token cache pool query result request response record row
table schema index partition batch item event message block action path file retry timeout lock
"""
_CAMEL = """
ConnectionPool RetryPolicy SessionStore QueryPlanner IndexWriter TokenCache UserProfile EventBus
SchemaMigrator ShardRouter BatchWriter LockManager TimeoutError OperationalError ValueError KeyError
TypeError AssertionError ConnectionResetError PermissionError ImportError RuntimeError
"""

_DIRS = (
    "db",
    "src/api",
    "src/core",
    "services/auth",
    "services/billing",
    "tests",
    "tests/unit",
    "tests/integration",
    "lib",
    "app/models",
    "pkg/server",
    "internal/store",
    "web/src/components",
    "scripts",
    "config",
    "cmd/cli",
)
_FILES = (
    "pool.py",
    "connection_profile.py",
    "migrations.py",
    "schema.sql",
    "retry.py",
    "settings.py",
    "models.py",
    "views.py",
    "test_pool.py",
    "test_retry.py",
    "conftest.py",
    "client.ts",
    "index.tsx",
    "server.go",
    "handler.rs",
    "main.go",
    "lib.rs",
    "Dockerfile",
    "Makefile",
    "pyproject.toml",
    "docker-compose.yml",
    "tokenizer.py",
    "cache.py",
    "auth.py",
)

_REPOS = (
    "billing-api",
    "auth-service",
    "web-dashboard",
    "data-pipeline",
    "infra",
    "mobile-app",
    "ml-training",
    "docs-site",
    "cli-tools",
    "search-service",
    "payments",
    "notifications",
    "analytics",
    "gateway",
    "scheduler",
    "inventory",
    "checkout",
    "admin-panel",
    "sdk-python",
    "sdk-go",
    "etl-jobs",
    "feature-store",
    "chat-bot",
    "log-shipper",
    "terraform-modules",
    "design-system",
    "monorepo",
    "crawler",
    "recommender",
    "media-service",
    "pricing",
    "identity",
)
_USERS = ("dev", "alex", "maria", "kuba", "sam", "priya")
_MODELS = (  # by period: the models a coding agent ran over these 18 months
    (int(datetime(2025, 5, 22, tzinfo=UTC).timestamp() * 1000), "claude-3-7-sonnet-20250219"),
    (int(datetime(2025, 9, 29, tzinfo=UTC).timestamp() * 1000), "claude-sonnet-4-20250514"),
    (1 << 62, "claude-sonnet-4-5-20250929"),
)

_USER_OPENERS = (
    "can you",
    "please",
    "why does",
    "I think",
    "let's",
    "could you check why",
    "we need to",
    "now",
    "ok,",
    "hmm,",
    "it looks like",
    "the",
    "fix",
    "",
)
_ASSISTANT_OPENERS = (
    "I'll",
    "Let me",
    "Now",
    "The",
    "I've",
    "Good,",
    "This",
    "Looking at",
    "The issue is that",
    "Next,",
    "Done:",
    "",
)
_THINKING_OPENERS = (
    "The user wants",
    "I need to",
    "Let me think about",
    "So the",
    "Looking at this,",
    "Hmm,",
    "First,",
    "",
)
_TITLES = (
    "Fix {t} {u} in {p}",
    "Add {t} support to {r}",
    "Refactor {t} module",
    "Investigate flaky {t} test",
    "Migrate {t} to {u}",
    "Speed up {t} {u}",
    "Debug {t} errors in {p}",
    "Clean up {t} handling",
)
_COMMANDS = (
    "pytest {d} -q",
    "pytest -x {d} -k {t}",
    "git status",
    "git diff {p}",
    "git log --oneline -5",
    "ruff check .",
    "make test",
    "npm run build",
    "cargo test",
    "go test ./...",
    "docker compose up -d",
    "sqlite3 data/app.db '.schema'",
    "ls -la {d}",
    "grep -rn '{t}' {d}",
    "python -m {t}",
    "uv pip install -e .",
)
_ERRORS = (
    "sqlite3.OperationalError: database is locked",
    "TimeoutError: timed out after 30s",
    "AssertionError: assert 3 == 4",
    "KeyError: 'session_id'",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "ModuleNotFoundError: No module named '{t}'",
    "TypeError: expected str, got NoneType",
    "PermissionError: [Errno 13] Permission denied: '{p}'",
)
# ~1% of messages carry Polish (diacritics, including ł which has no Unicode decomposition).
_POLISH = (
    "Zrobiłem migrację bazy, ale test nadal się wywala.",
    "Łatwo to naprawić, wystarczy zwiększyć timeout.",
    "Jutro jadę do Łodzi, dokończę refaktor później.",
    "Sprawdź proszę, czy błąd występuje też na gałęzi z Łódź.",
    "Zrobiłem to łatwo, ale blokada sqlite nadal się pojawia.",
    "Dlaczego ten test jest taki niestabilny? Zażółć gęślą jaźń.",
    "Poprawiłem ścieżkę do pliku, teraz działa szybciej.",
    "Możesz dodać ponowienie połączenia z bazą?",
)
_TOOLS = (  # (Claude Code tool, weight); the normalizer maps each to its action category
    ("Read", 25),
    ("Edit", 20),
    ("Bash", 25),
    ("Grep", 10),
    ("Glob", 5),
    ("Write", 5),
    ("TodoWrite", 5),
    ("WebFetch", 2),
    ("WebSearch", 1),
    ("Task", 2),
)


def _words(text: str) -> list[str]:
    return text.split()


def _build_lexicon() -> tuple[list[str], list[str], list[str]]:
    """The lexicon in frequency-rank order, the programming terms, and the collocations."""
    function = _words(_FUNCTION_WORDS)
    english = _words(_ENGLISH)
    topic_terms = list(dict.fromkeys(w for topic in _TOPICS for w in topic.split()))
    collocations = [c.strip() for c in _COLLOCATIONS.replace("\n", "|").split("|") if c.strip()]
    # Every third verb_noun pair: about 150 identifiers, enough for a tail without drowning the prose.
    identifiers = [f"{v}_{n}" for v, n in itertools.product(_ID_VERBS.split(), _words(_ID_NOUNS))][::3]
    camel = _words(_CAMEL)
    files = [f.rsplit(".", 1)[0] for f in _FILES]
    # Interleave the content vocabularies deterministically so programming terms, English content
    # words and collocations share the middle ranks, and identifiers form the long tail.
    middle: list[str] = []
    for group in itertools.zip_longest(english, topic_terms, collocations[: len(collocations) // 2]):
        middle.extend(w for w in group if w)
    tail: list[str] = []
    for group in itertools.zip_longest(collocations[len(collocations) // 2 :], camel, files, identifiers):
        tail.extend(w for w in group if w)
    ordered = list(dict.fromkeys([*function, *middle, *tail]))
    return ordered, topic_terms, collocations


LEXICON, PROGRAMMING_TERMS, COLLOCATIONS = _build_lexicon()
FUNCTION_WORDS = frozenset(_words(_FUNCTION_WORDS))
TOPICS: tuple[tuple[str, ...], ...] = tuple(tuple(t.split()) for t in _TOPICS)
ZIPF_EXPONENT = 1.05
ZIPF_OFFSET = 6.0


# Rare names (variables, hosts, people, projects): a 160,000-word space of four syllables, mixed into
# prose so the term dictionary has the long tail of a real archive (most appear a handful of times).
_SYLLABLES = ("ka", "ro", "mi", "zen", "tor", "vel", "dra", "qui", "lo", "sen")
_SYLLABLES += ("bar", "fi", "gon", "ul", "pex", "ny", "tra", "vo", "shi", "mar")
RARE_NAMES = len(_SYLLABLES) ** 4


def rare_name(n: int) -> str:
    """The n-th rare name, 0 <= n < RARE_NAMES."""
    k = len(_SYLLABLES)
    return _SYLLABLES[n % k] + _SYLLABLES[n // k % k] + _SYLLABLES[n // k**2 % k] + _SYLLABLES[n // k**3 % k]


def lexicon_probabilities() -> np.ndarray:
    """P(word) per lexicon rank for the background text (before topic words are mixed in)."""
    ranks = np.arange(len(LEXICON), dtype=np.float64)
    weights = 1.0 / np.power(ranks + ZIPF_OFFSET, ZIPF_EXPONENT)
    return weights / weights.sum()


class _Draws:
    """Random choices served from large numpy batches: one generator call per ~1M draws, not per word."""

    def __init__(self, rng: np.random.Generator, batch: int) -> None:
        self._rng = rng
        self._batch = batch
        self._cdf = np.cumsum(lexicon_probabilities())
        self._cdf[-1] = 1.0
        self._lexicon = np.array(LEXICON, dtype=object)
        # A C-level iterator over batches of uniforms: `u()` costs one `next`, not a Python frame.
        self.u: Callable[[], float] = itertools.chain.from_iterable(self._uniform_batches()).__next__
        self._w: list[str] = []
        self._wi = 0

    def _uniform_batches(self) -> Iterator[list[float]]:
        while True:
            yield self._rng.random(self._batch).tolist()

    def below(self, n: int) -> int:
        return int(self.u() * n)

    def pick(self, seq: Sequence[_T]) -> _T:
        return seq[int(self.u() * len(seq))]

    def words(self, n: int) -> list[str]:
        i = self._wi
        if i + n > len(self._w):
            ids = np.searchsorted(self._cdf, self._rng.random(self._batch))
            self._w = self._lexicon[ids].tolist()
            i = 0
        self._wi = i + n
        return self._w[i : i + n]

    def token(self) -> str:
        """An opaque 20-hex-digit token (tool-use ids and the like)."""
        return f"{int(self.u() * (1 << 40)):010x}{int(self.u() * (1 << 40)):010x}"

    def uuid4(self) -> str:
        h = f"{int(self.u() * (1 << 48)):012x}{int(self.u() * (1 << 48)):012x}{int(self.u() * (1 << 32)):08x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


class _Call(NamedTuple):
    """A tool_use waiting for its tool_result."""

    tool_use_id: str
    tool: str
    input: dict[str, object]


_TOOL_NAMES = [t for t, w in _TOOLS for _ in range(w)]


class _SessionWriter:
    """Builds one session as the Claude Code parser reads it back from `session_records`: a draft in the
    parser's terms (tool results arrive as user rows, as Claude Code writes them), then the product's
    normalizer for ids, words, counts, actions and the content hash."""

    def __init__(self, d: _Draws, size: int) -> None:
        self.d = d
        self.size = size
        topics = [d.pick(TOPICS)]
        if d.u() < 0.4:
            topics.append(d.pick(TOPICS))
        self.topic: list[str] = [w for t in topics for w in t]
        self.paths = [f"{d.pick(_DIRS)}/{d.pick(_FILES)}" for _ in range(1 + d.below(4))]
        self.time = _EPOCH_MS + int(d.u() * _SPAN_MS)
        self.model = next(m for until, m in _MODELS if self.time < until)
        repo = d.pick(_REPOS)
        self.cwd = f"/home/{d.pick(_USERS)}/src/{repo}"
        kind = d.pick(("feature", "fix", "refactor", "chore"))
        second = self.topic[1 + d.below(len(self.topic) - 1)]
        self.draft = DraftSession(
            origin=ORIGIN,
            native_id=d.uuid4(),
            source_path="",
            title=d.pick(_TITLES).format(t=self.topic[0], u=second, p=self.paths[0], r=repo),
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
        return self.d.pick(_ERRORS).format(t=self.d.pick(self.topic), p=self.d.pick(self.paths))

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
            parts.insert(d.below(len(parts) + 1), d.pick(_POLISH))
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
        return d.pick(_COMMANDS).format(
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
        text = self._prose(_USER_OPENERS, 1 + d.below(3) + (d.u() < 0.15) * d.below(5))
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
            text = self._prose(_THINKING_OPENERS, 2 + d.below(4))
            self.draft.add_block(m, DraftBlock("thinking", text=text))
            words += count_words(text)
        if not with_tool or d.u() < 0.55:
            text = self._prose(_ASSISTANT_OPENERS, (1 + d.below(3)) if with_tool else (2 + d.below(5)))
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
        tool = self.d.pick(_TOOL_NAMES)
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
        return self._prose(_ASSISTANT_OPENERS, 1 + d.below(3))

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
    """Sessions totalling exactly `messages` messages, the same for the same (messages, seed)."""
    rng = np.random.default_rng(seed)
    # About 40 draws and 40 words per message: small archives should not pay for a million of each.
    draws = _Draws(rng, batch=min(1 << 20, max(1 << 12, messages * 48)))
    for size in session_sizes(messages, rng):
        yield _SessionWriter(draws, size).build()


# --- Claude Code JSONL -------------------------------------------------------------------------------

_VERSION = "2.0.76"
# A 1x1 PNG: a pasted screenshot's bytes are beside the point, only that one was pasted.
_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _record_uuid(message_id: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(message_id.encode()).digest()[:16], version=4))


def _project_slug(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _content(message: units_pb2.Message) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for b in message.blocks:
        if b.type == "text":
            out.append({"type": "text", "text": b.text})
        elif b.type == "code":  # the parser splits fenced code out of text: write it back as a fence
            out.append({"type": "text", "text": f"```{b.language}\n{b.text}\n```"})
        elif b.type == "thinking":
            sig = hashlib.sha256(b.id.encode()).hexdigest()
            out.append({"type": "thinking", "thinking": b.text, "signature": sig})
        elif b.type == "tool_use":
            out.append(
                {
                    "type": "tool_use",
                    "id": b.tool_use_id,
                    "name": b.tool_name,
                    "input": json.loads(b.tool_input_json),
                }
            )
        elif b.type == "tool_result":
            block: dict[str, object] = {
                "tool_use_id": b.tool_use_id,
                "type": "tool_result",
                "content": b.text,
            }
            if b.is_error:
                block["is_error"] = True
            out.append(block)
        elif b.type == "image":
            out.append({"type": "image", "source": {"type": "base64", "media_type": b.media_type, "data": _PNG_BASE64}})
    return out


def session_records(session: units_pb2.Session) -> Iterator[dict[str, object]]:
    """The Claude Code JSONL records of one session: a summary line, then one line per message.

    Tool results are `user` records holding tool_result blocks, as Claude Code writes them. Each canonical
    message becomes one record carrying all its blocks (Claude Code 2.x splits an API response over
    several lines sharing `message.id`; both forms occur in real logs). The parser reads these records
    back into the same canonical session, except for `source_path`.
    """
    last = session.messages[-1].id if session.messages else ""
    yield {"type": "summary", "summary": session.title, "leafUuid": _record_uuid(last)}
    parent: str | None = None
    for m in session.messages:
        uid = _record_uuid(m.id)
        record: dict[str, object] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": session.cwd,
            "sessionId": session.native_id,
            "version": _VERSION,
            "gitBranch": session.branch,
            "type": "assistant" if m.role == "assistant" else "user",
        }
        if m.role == "assistant":
            record["message"] = {
                "model": m.model,
                "id": "msg_01" + hashlib.sha256(m.id.encode()).hexdigest()[:22],
                "type": "message",
                "role": "assistant",
                "content": _content(m),
                "stop_reason": "tool_use" if any(b.type == "tool_use" for b in m.blocks) else "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": m.input_tokens,
                    "cache_creation_input_tokens": m.cache_write_tokens,
                    "cache_read_input_tokens": m.cache_read_tokens,
                    "output_tokens": m.output_tokens,
                    "service_tier": "standard",
                },
            }
            record["requestId"] = "req_011" + hashlib.sha256(uid.encode()).hexdigest()[:21]
        elif m.role == "user" and len(m.blocks) == 1 and m.blocks[0].type == "text":
            record["message"] = {"role": "user", "content": m.blocks[0].text}
        else:
            record["message"] = {"role": "user", "content": _content(m)}
            if any(b.type == "image" for b in m.blocks):
                record["imagePasteIds"] = [1]
        record["uuid"] = uid
        record["timestamp"] = _iso(m.time_ms)
        parent = uid
        yield record


def write_claude_code_archive(sessions: Iterable[units_pb2.Session], out_dir: Path) -> list[Path]:
    """Writes each session as `<out_dir>/<project slug>/<session uuid>.jsonl`, as under ~/.claude/projects."""
    paths: list[Path] = []
    for session in sessions:
        folder = out_dir / _project_slug(session.cwd)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session.native_id}.jsonl"
        lines = (json.dumps(r, ensure_ascii=False) for r in session_records(session))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
