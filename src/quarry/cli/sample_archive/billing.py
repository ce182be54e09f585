"""Sessions in `billing`, the worker that sends invoices and charges cards through a payment provider: an
SQLite outbox that says `database is locked`, the same error from parallel tests, retries with backoff and
jitter, a failing due-date test, and a pull request review."""

from __future__ import annotations

from quarry.cli.sample_archive.outputs import Failure, pytest_run, ripgrep, unified_diff
from quarry.cli.sample_archive.repos import BILLING
from quarry.cli.sample_archive.script import Builder, Scenario

LOCKED = "sqlite3.OperationalError: database is locked"
CLAIM_OLD = '''def claim_batch(conn: sqlite3.Connection, limit: int = 50) -> list[Message]:
    """Mark up to `limit` pending messages as sending and return them."""
    with conn:
        rows = conn.execute(
            "SELECT id, topic, body FROM outbox WHERE state = 'pending' ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        conn.executemany("UPDATE outbox SET state = 'sending' WHERE id = ?", [(r[0],) for r in rows])
    return [Message(*r) for r in rows]'''
CLAIM_NEW = '''def claim_batch(conn: sqlite3.Connection, limit: int = 50) -> list[Message]:
    """Mark up to `limit` pending messages as sending and return them.

    BEGIN IMMEDIATE takes the write lock before the SELECT: in a deferred transaction the read lock
    cannot be upgraded while another relay writes, and SQLite answers SQLITE_BUSY at once, whatever
    the busy timeout."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(
            "SELECT id, topic, body FROM outbox WHERE state = 'pending' ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        conn.executemany("UPDATE outbox SET state = 'sending' WHERE id = ?", [(r[0],) for r in rows])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return [Message(*r) for r in rows]'''
CONNECT_OLD = """def connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path)"""
CONNECT_NEW = """def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)  # transactions are explicit (claim_batch)
    conn.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
    conn.execute("PRAGMA busy_timeout = 5000")  # wait up to 5 s for another relay's write
    return conn"""


def outbox_locked(b: Builder) -> None:
    b.prompt(
        b.rng.choice(
            (
                "Since we started a second outbox relay the relays crash every few minutes with "
                f"`{LOCKED}`. Can you sort out the SQLite locking?",
                f"billing's outbox relay dies with `{LOCKED}` now that two relays run. Fix the SQLite locking "
                "so both can run.",
            )
        )
    )
    b.read("billing/outbox.py", CONNECT_OLD + "\n\n\n" + CLAIM_OLD, offset=12)
    b.bash(
        "grep -n 'database is locked' -B4 logs/relay-2.log | tail -8",
        "The relay's traceback",
        '  File "/home/sam/code/billing/billing/outbox.py", line 27, in claim_batch\n'
        "    conn.executemany(\"UPDATE outbox SET state = 'sending' WHERE id = ?\", [(r[0],) for r in rows])\n"
        f"{LOCKED}",
        seconds=0.3,
    )
    b.think(
        "The error comes from the UPDATE inside a transaction that began with a SELECT. Python's sqlite3 "
        "already waits 5 s by default, so this is not a plain timeout: a deferred transaction holds a SHARED "
        "lock after the SELECT, and upgrading it while the other relay holds RESERVED is a deadlock SQLite "
        "refuses at once with SQLITE_BUSY, without calling the busy handler. BEGIN IMMEDIATE avoids the "
        "upgrade; WAL keeps readers from blocking the writer."
    )
    b.edit("billing/outbox.py", CONNECT_OLD, CONNECT_NEW)
    b.edit("billing/outbox.py", CLAIM_OLD, CLAIM_NEW)
    b.write(
        "tests/test_outbox_concurrency.py",
        '"""Two relays claiming from one outbox never fail with \'database is locked\' and never claim a '
        'message twice."""\n\nfrom concurrent.futures import ProcessPoolExecutor\n\n'
        "from billing.outbox import claim_batch, connect, enqueue\n\n\n"
        "def _drain(path):\n    conn = connect(path)\n    claimed = []\n"
        "    while batch := claim_batch(conn, limit=7):\n        claimed += [m.id for m in batch]\n"
        "    return claimed\n\n\n"
        "def test_two_relays_share_the_outbox(tmp_path):\n"
        '    path = str(tmp_path / "outbox.db")\n    conn = connect(path)\n'
        '    for n in range(500):\n        enqueue(conn, "invoice.sent", {"n": n})\n'
        "    with ProcessPoolExecutor(2) as pool:\n        a, b = pool.map(_drain, [path, path])\n"
        "    assert sorted(a + b) == list(range(1, 501))\n",
    )
    b.bash(
        "pytest -q tests/test_outbox_concurrency.py --count 20",
        "Repeat the concurrency test",
        pytest_run(20, seconds=14.8),
        seconds=16,
    )
    b.passes(
        pytest_run(64, seconds=6.31),
        8,
        "Fixed. The relays weren't waiting too little: SQLite refused them on purpose. `claim_batch` ran a "
        "deferred transaction, SELECT then UPDATE. After the SELECT each relay holds a read lock; when both try "
        "to upgrade to a write lock, one of them would wait for the other forever, so SQLite answers "
        "`database is locked` immediately, without honouring the busy timeout.\n\n"
        "- `claim_batch` starts with `BEGIN IMMEDIATE`, taking the write lock before it reads, so the second "
        "relay waits at the BEGIN instead of deadlocking.\n"
        "- `connect()` sets `journal_mode = WAL` (readers, like the dashboard, no longer block the relays) and "
        "`busy_timeout = 5000`.\n\n"
        "`tests/test_outbox_concurrency.py` drains 500 messages with two processes; 20 repetitions pass with no "
        "lock error and no message claimed twice.",
    )


def xdist_locked(b: Builder) -> None:
    b.prompt(
        f"pytest -n 4 fails randomly with `{LOCKED}`, single-process runs are fine. I'd like the suite to run "
        "in parallel."
    )
    b.think("Looking at how tests get their database\nParallel workers probably share one SQLite file.")
    b.grep(
        "outbox.db",
        "tests",
        ripgrep(
            (
                ("tests/conftest.py", 9, 'OUTBOX_PATH = Path(__file__).parent / "outbox.db"'),
                ("tests/conftest.py", 15, "    conn = connect(str(OUTBOX_PATH))"),
            )
        ),
    )
    b.read(
        "tests/conftest.py",
        'OUTBOX_PATH = Path(__file__).parent / "outbox.db"\n\n\n@pytest.fixture\ndef outbox():\n'
        "    OUTBOX_PATH.unlink(missing_ok=True)\n    conn = connect(str(OUTBOX_PATH))\n    yield conn\n"
        "    conn.close()",
        offset=9,
    )
    b.say(
        "Every xdist worker uses the same `tests/outbox.db`, and each test deletes it and recreates it while "
        "the other workers write to it. I'll give each test its own file under `tmp_path`."
    )
    b.edit(
        "tests/conftest.py",
        "@pytest.fixture\ndef outbox():\n    OUTBOX_PATH.unlink(missing_ok=True)\n    conn = connect(str(OUTBOX_PATH))",
        '@pytest.fixture\ndef outbox(tmp_path):\n    conn = connect(str(tmp_path / "outbox.db"))',
    )
    b.edit("tests/conftest.py", 'OUTBOX_PATH = Path(__file__).parent / "outbox.db"\n\n\n', "")
    b.bash(
        "pytest -q -n 4",
        "Run the suite on 4 workers",
        "4 workers [64 items]\n" + pytest_run(64, seconds=2.94),
        seconds=5,
    )
    b.bash(
        "for i in 1 2 3 4 5; do pytest -q -n 4 | tail -1; done",
        "Run it five more times",
        "\n".join(f"64 passed in {s}s" for s in ("2.91", "3.02", "2.88", "2.97", "2.90")),
        seconds=16,
    )
    b.say(
        "The tests shared one outbox file: with four workers, one test's `unlink` pulled the database from under "
        "another's write, and concurrent writers hit the lock. The `outbox` fixture now opens a database under "
        "each test's `tmp_path`. `pytest -n 4` passed six runs in a row, in about 3 s instead of 8."
    )


RETRY = '''"""Retries for calls to the payment provider: exponential backoff with full jitter, Retry-After honoured."""

import random
import time
from collections.abc import Callable

RETRYABLE = frozenset({429, 500, 502, 503, 504})


def with_retries(call: Callable[[], Response], *, attempts: int = 5, base: float = 0.5, cap: float = 20.0,
                 sleep: Callable[[float], None] = time.sleep) -> Response:
    for attempt in range(1, attempts + 1):
        response = call()
        if response.status_code not in RETRYABLE or attempt == attempts:
            return response
        retry_after = response.headers.get("Retry-After")
        delay = float(retry_after) if retry_after else random.uniform(0, min(cap, base * 2 ** attempt))
        sleep(delay)
    raise AssertionError("unreachable")
'''


def retry_backoff(b: Builder) -> None:
    b.prompt(
        "Calls to the payment provider fail hard on a 429 or a 503. Add retries with exponential backoff and "
        "jitter, honour Retry-After, and give up after 5 attempts. Only for idempotent calls."
    )
    b.read(
        "billing/provider/client.py",
        "    def get_charge(self, charge_id: str) -> Charge:\n"
        '        response = self.http.get(f"/v1/charges/{charge_id}")\n        response.raise_for_status()\n'
        "        return Charge.model_validate(response.json())\n\n"
        "    def create_charge(self, request: ChargeRequest, idempotency_key: str) -> Charge:\n"
        '        response = self.http.post("/v1/charges", json=request.model_dump(),\n'
        '                                  headers={"Idempotency-Key": idempotency_key})',
        offset=30,
    )
    b.say(
        "GETs are idempotent, and `create_charge` sends an Idempotency-Key, so the provider deduplicates a "
        "retried POST: both can retry. I'll put the policy in its own module with an injectable sleep."
    )
    b.write("billing/provider/retry.py", RETRY)
    b.write(
        "tests/test_retry.py",
        "def test_gives_up_after_five_attempts():\n    calls, sleeps = [], []\n"
        "    response = with_retries(lambda: calls.append(1) or FakeResponse(503), sleep=sleeps.append)\n"
        "    assert response.status_code == 503\n    assert len(calls) == 5 and len(sleeps) == 4\n\n\n"
        "def test_retry_after_is_honoured():\n    sleeps = []\n"
        '    replies = iter([FakeResponse(429, {"Retry-After": "3"}), FakeResponse(200)])\n'
        "    assert with_retries(lambda: next(replies), sleep=sleeps.append).status_code == 200\n"
        "    assert sleeps == [3.0]\n\n\n"
        "def test_backoff_grows_and_stays_under_the_cap():\n    random.seed(7)\n    sleeps = []\n"
        "    with_retries(lambda: FakeResponse(503), attempts=8, sleep=sleeps.append)\n"
        "    assert all(0 <= s <= 20.0 for s in sleeps)\n",
    )
    b.bash("pytest -q tests/test_retry.py", "Run the retry tests", pytest_run(3, seconds=0.09), seconds=1)
    b.edit(
        "billing/provider/client.py",
        '        response = self.http.get(f"/v1/charges/{charge_id}")',
        '        response = with_retries(lambda: self.http.get(f"/v1/charges/{charge_id}"))',
    )
    b.edit(
        "billing/provider/client.py",
        '        response = self.http.post("/v1/charges", json=request.model_dump(),\n'
        '                                  headers={"Idempotency-Key": idempotency_key})',
        "        response = with_retries(\n"
        '            lambda: self.http.post("/v1/charges", json=request.model_dump(),\n'
        '                                   headers={"Idempotency-Key": idempotency_key})\n        )',
    )
    b.passes(
        pytest_run(67, seconds=6.48),
        8,
        "Added `billing/provider/retry.py`: `with_retries` retries 429 and 5xx up to 5 attempts. The wait is "
        "the server's `Retry-After` when it sends one, else full jitter: a uniform draw in [0, min(20 s, "
        "0.5 s × 2^attempt)], so a burst of failing workers doesn't retry in lockstep. `get_charge` and "
        "`create_charge` use it (the latter is safe to retry because of its Idempotency-Key; I did not wrap "
        "`refund`, which has no key). Three tests with a fake sleep; the suite passes (67).",
    )


DUE_DATE_FAILURE = Failure(
    "tests/test_invoices.py::test_due_date_skips_weekend",
    "    def test_due_date_skips_weekend():\n"
    "        invoice = Invoice(issued_on=date(2026, 1, 2), terms_days=30)  # due Sunday 2026-02-01\n"
    ">       assert invoice.due_on == date(2026, 2, 2)\n"
    "E       AssertionError: assert datetime.date(2026, 2, 1) == datetime.date(2026, 2, 2)\n"
    "E        +  where datetime.date(2026, 2, 1) = Invoice(issued_on=datetime.date(2026, 1, 2), "
    "terms_days=30).due_on\n\ntests/test_invoices.py:41: AssertionError",
    "AssertionError: assert datetime.date(2026, 2, 1) == datetime.date(2026, 2, 2)",
)


def due_date(b: Builder) -> None:
    b.prompt("tests/test_invoices.py::test_due_date_skips_weekend fails on main, can you fix it?")
    b.bash("pytest -q tests/test_invoices.py", "", pytest_run(11, (DUE_DATE_FAILURE,), seconds=0.42), exit_code=1)
    b.read(
        "billing/invoices.py",
        "    @property\n    def due_on(self) -> date:\n        due = self.issued_on + timedelta(days=self.terms_days)\n"
        "        if due.weekday() == 5:  # Saturday -> Monday\n            due += timedelta(days=2)\n"
        "        return due",
        offset=52,
    )
    b.say("`due_on` moves a Saturday to Monday but forgets Sunday. Using a loop over weekend days:")
    b.edit(
        "billing/invoices.py",
        "        if due.weekday() == 5:  # Saturday -> Monday\n            due += timedelta(days=2)",
        "        while due.weekday() >= 5:  # Saturday or Sunday -> the next Monday\n"
        "            due += timedelta(days=1)",
    )
    b.bash("pytest -q tests/test_invoices.py", "", pytest_run(12, seconds=0.40))
    b.say(
        "Fixed in `billing/invoices.py`: a due date on Saturday *or* Sunday now moves to the following Monday "
        "(the old code only handled Saturday, and 2026-02-01 is a Sunday). `tests/test_invoices.py` passes."
    )


PR_DIFF = unified_diff(
    "billing/charges.py",
    (
        (
            58,
            "    charge = provider.create_charge(request, idempotency_key=invoice.charge_key)",
            "    charge = with_retries(lambda: provider.create_charge(request, idempotency_key=str(uuid4())))",
        ),
    ),
)


def _review_callers(b: Builder) -> str:
    matches = (
        ("billing/models.py", 77, "    charge_key: str = Field(default_factory=lambda: str(uuid4()))"),
        ("billing/charges.py", 58, "    charge = provider.create_charge(request, idempotency_key=invoice.charge_key)"),
    )
    b.grep("charge_key", "billing", ripgrep(matches))
    return (
        "`invoice.charge_key` is created once per invoice (`billing/models.py:77`) and stored, so every attempt to "
        "charge an invoice, including a retry after a crash, reuses it and the provider deduplicates the "
        "charge. `billing/charges.py:58` is its only use; the PR replaces it there with a fresh `uuid4()` per "
        "call."
    )


def review_pr(b: Builder) -> None:
    b.prompt("Review PR #88 (retry provider calls on 5xx) please. Leave comments on GitHub if you find anything.")
    b.bash(
        "gh pr view 88",
        "PR description",
        "title:\tRetry provider calls on 5xx\nstate:\tOPEN\nauthor:\tjdiaz\nlabels:\tpayments\n--\n"
        "Wraps create_charge in with_retries so a 503 from the provider no longer fails the invoice run.",
    )
    b.bash("gh pr diff 88", "The diff", PR_DIFF, seconds=1)
    b.delegate(
        "Explore",
        "Trace the idempotency key",
        "In billing/, where does invoice.charge_key come from, and where is it used? Is it stable across "
        "retries and restarts? Report only, no changes.",
        _review_callers,
        model="claude-haiku-4-5",
    )
    body = (
        "Retrying is right, but this drops the invoice's idempotency key: with a fresh uuid4() per attempt, a 503 "
        "after the provider already charged is retried as a new charge (a double charge). Please keep "
        "idempotency_key=invoice.charge_key inside the lambda, and add a test that two attempts send the same key."
    )
    b.bash(
        f"gh pr review 88 --request-changes -b {body!r}",
        "Request changes",
        "- Requested changes to pull request northwind-labs/billing#88",
        seconds=1.2,
    )
    b.say(
        "I requested changes on #88. The retry itself is right, but the PR also swaps the idempotency key "
        "`invoice.charge_key` for `str(uuid4())` on every call. That key is what lets the provider deduplicate: "
        "with a fresh key per attempt, a 503 that actually succeeded upstream (a timeout after the charge was "
        "made) would be retried as a *new* charge, and the customer is charged twice. Keeping "
        "`idempotency_key=invoice.charge_key` inside the lambda fixes it; I suggested a test that asserts two "
        "attempts send the same key."
    )


SCENARIOS = (
    Scenario("Outbox relays fail with database is locked", BILLING, "fix/outbox-locking", outbox_locked),
    Scenario("Parallel tests share one SQLite file", BILLING, "main", xdist_locked),
    Scenario("Retry provider calls with backoff and jitter", BILLING, "feat/provider-retries", retry_backoff),
    Scenario("Due dates landing on a Sunday", BILLING, "main", due_date),
    Scenario("Review PR #88: retry provider calls", BILLING, "main", review_pr, delegates=True),
)
