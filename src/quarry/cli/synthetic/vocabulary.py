"""The synthetic archive's vocabulary: the lexicon its text is drawn from (function words, everyday
English, programming topics, two-word collocations, identifiers, file names) in frequency-rank order,
rare names for the long tail, and the tables a session's scenery comes from (folders, repositories,
users, models, openers, titles, commands, errors, tools)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

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

DIRS = (
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
FILES = (
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

REPOS = (
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
USERS = ("dev", "alex", "maria", "kuba", "sam", "priya")
MODELS = (  # by period: the models a coding agent ran over these 18 months
    (int(datetime(2025, 5, 22, tzinfo=UTC).timestamp() * 1000), "claude-3-7-sonnet-20250219"),
    (int(datetime(2025, 9, 29, tzinfo=UTC).timestamp() * 1000), "claude-sonnet-4-20250514"),
    (1 << 62, "claude-sonnet-4-5-20250929"),
)

USER_OPENERS = (
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
ASSISTANT_OPENERS = (
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
THINKING_OPENERS = (
    "The user wants",
    "I need to",
    "Let me think about",
    "So the",
    "Looking at this,",
    "Hmm,",
    "First,",
    "",
)
TITLES = (
    "Fix {t} {u} in {p}",
    "Add {t} support to {r}",
    "Refactor {t} module",
    "Investigate flaky {t} test",
    "Migrate {t} to {u}",
    "Speed up {t} {u}",
    "Debug {t} errors in {p}",
    "Clean up {t} handling",
)
COMMANDS = (
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
ERRORS = (
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
POLISH = (
    "Zrobiłem migrację bazy, ale test nadal się wywala.",
    "Łatwo to naprawić, wystarczy zwiększyć timeout.",
    "Jutro jadę do Łodzi, dokończę refaktor później.",
    "Sprawdź proszę, czy błąd występuje też na gałęzi z Łódź.",
    "Zrobiłem to łatwo, ale blokada sqlite nadal się pojawia.",
    "Dlaczego ten test jest taki niestabilny? Zażółć gęślą jaźń.",
    "Poprawiłem ścieżkę do pliku, teraz działa szybciej.",
    "Możesz dodać ponowienie połączenia z bazą?",
)
TOOLS = (  # (Claude Code tool, weight); the normalizer maps each to its action category
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


TOOL_NAMES = [t for t, w in TOOLS for _ in range(w)]  # each tool as often as its weight


def _words(text: str) -> list[str]:
    return text.split()


def _build_lexicon() -> tuple[list[str], list[str]]:
    """The lexicon in frequency-rank order, and the collocations."""
    function = _words(_FUNCTION_WORDS)
    english = _words(_ENGLISH)
    topic_terms = list(dict.fromkeys(w for topic in _TOPICS for w in topic.split()))
    collocations = [c.strip() for c in _COLLOCATIONS.replace("\n", "|").split("|") if c.strip()]
    # Every third verb_noun pair: about 150 identifiers, enough for a tail without drowning the prose.
    identifiers = [f"{v}_{n}" for v, n in itertools.product(_ID_VERBS.split(), _words(_ID_NOUNS))][::3]
    camel = _words(_CAMEL)
    files = [f.rsplit(".", 1)[0] for f in FILES]
    # Interleave the content vocabularies deterministically so programming terms, English content
    # words and collocations share the middle ranks, and identifiers form the long tail.
    middle: list[str] = []
    for group in itertools.zip_longest(english, topic_terms, collocations[: len(collocations) // 2]):
        middle.extend(w for w in group if w)
    tail: list[str] = []
    for group in itertools.zip_longest(collocations[len(collocations) // 2 :], camel, files, identifiers):
        tail.extend(w for w in group if w)
    ordered = list(dict.fromkeys([*function, *middle, *tail]))
    return ordered, collocations


LEXICON, COLLOCATIONS = _build_lexicon()
FUNCTION_WORDS = frozenset(_words(_FUNCTION_WORDS))
TOPICS: tuple[tuple[str, ...], ...] = tuple(tuple(t.split()) for t in _TOPICS)


# Rare names (variables, hosts, people, projects): a 160,000-word space of four syllables, mixed into
# prose so the term dictionary has the long tail of a real archive (most appear a handful of times).
_SYLLABLES = ("ka", "ro", "mi", "zen", "tor", "vel", "dra", "qui", "lo", "sen")
_SYLLABLES += ("bar", "fi", "gon", "ul", "pex", "ny", "tra", "vo", "shi", "mar")
RARE_NAMES = len(_SYLLABLES) ** 4


def rare_name(n: int) -> str:
    """The n-th rare name, 0 <= n < RARE_NAMES."""
    k = len(_SYLLABLES)
    return _SYLLABLES[n % k] + _SYLLABLES[n // k % k] + _SYLLABLES[n // k**2 % k] + _SYLLABLES[n // k**3 % k]
