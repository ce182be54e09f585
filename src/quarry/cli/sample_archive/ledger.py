"""Sessions in `ledger`, a double-entry bookkeeping service (FastAPI, SQLAlchemy 2, PostgreSQL, alembic):
a connection pool that times out, a flaky test that turns out to be a deadlock, and a new `--since` flag
on the export command. The multi-currency migration, long enough to be compacted, is in
`ledger_migration`."""

from __future__ import annotations

from quarry.cli.sample_archive.outputs import Failure, pytest_run, ripgrep
from quarry.cli.sample_archive.repos import LEDGER
from quarry.cli.sample_archive.script import Builder, Scenario

HAIKU = "claude-haiku-4-5"

SESSION_PY = '''"""Database engine and the request-scoped session."""

from collections.abc import Iterator

from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

from ledger.settings import settings

engine = create_engine(
    settings.database_url,
    pool_size=settings.db_pool_size,
    max_overflow=settings.db_max_overflow,
    pool_timeout=30,
)
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)


def get_session() -> Iterator[Session]:
    """FastAPI dependency: one session per request, committed when the handler returns."""
    session = SessionLocal()
    yield session
    session.commit()
    session.close()
'''
OLD_GET_SESSION = """    session = SessionLocal()
    yield session
    session.commit()
    session.close()"""
NEW_GET_SESSION = """    session = SessionLocal()
    try:
        yield session
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()"""
POOL_TEST = '''"""A request that fails must give its connection back to the pool."""

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from ledger.api.app import create_app
from ledger.db import session as db


@pytest.fixture
def small_pool(monkeypatch, database_url):
    engine = create_engine(database_url, pool_size=2, max_overflow=0, pool_timeout=1)
    monkeypatch.setattr(db, "SessionLocal", sessionmaker(bind=engine, expire_on_commit=False))
    yield engine
    engine.dispose()


def test_failed_requests_give_their_connection_back(small_pool):
    client = TestClient(create_app(), raise_server_exceptions=False)
    for _ in range(5):
        response = client.post("/entries", json={"account": "9999", "amount": "10.00"})
        assert response.status_code == 404
    assert small_pool.pool.checkedout() == 0
'''
POOL_TIMEOUT = (
    "sqlalchemy.exc.TimeoutError: QueuePool limit of size 2 overflow 0 reached, connection timed out, "
    "timeout 1.00 (Background on this error at: https://sqlalche.me/e/20/3o7r)"
)


def _pool_callers(b: Builder) -> str:
    """The Explore subagent: where sessions and connections are opened, and which are released."""
    b.say("I'll search for every place a session or connection is opened.")
    b.grep(
        r"SessionLocal\(|engine\.connect\(|engine\.begin\(",
        "src/ledger",
        ripgrep(
            (
                ("src/ledger/db/session.py", 21, "    session = SessionLocal()"),
                ("src/ledger/reports/export.py", 31, "    with engine.connect() as conn:"),
                ("src/ledger/jobs/reconcile.py", 44, "    with SessionLocal() as session, session.begin():"),
                ("src/ledger/api/health.py", 12, "    with engine.connect() as conn:"),
            )
        ),
    )
    b.read("src/ledger/db/session.py", SESSION_PY)
    return (
        "Four places open a session or a connection:\n\n"
        "1. `src/ledger/db/session.py:21` `get_session()` (the FastAPI dependency every route uses): **not "
        "released on the error path.** `session.commit()` and `session.close()` come after the `yield` with no "
        "`try/finally`, so when a handler raises (404, 409, validation errors raised inside the handler), the "
        "exception is thrown at the `yield` and the session is never closed; its connection goes back to the "
        "pool only when the garbage collector reaches it.\n"
        "2. `src/ledger/reports/export.py:31`: `with engine.connect()`, released on every path.\n"
        "3. `src/ledger/jobs/reconcile.py:44`: `with SessionLocal() as session, session.begin()`, released.\n"
        "4. `src/ledger/api/health.py:12`: `with engine.connect()`, released."
    )


def pool_timeout(b: Builder) -> None:
    b.prompt(
        b.rng.choice(
            (
                "Since yesterday's deploy /entries requests hang for 30 s and then fail with a 500. The logs say "
                "`QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00`. Why does "
                "the connection pool time out? It only happens under load.",
                "Production is throwing `sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 "
                "reached, connection timed out, timeout 30.00` on /entries when traffic picks up. Why does the "
                "connection pool time out? Postgres itself looks idle.",
            )
        )
    )
    b.think(
        "A QueuePool timeout while Postgres is idle means connections are checked out and never returned, "
        "not that the database is slow. Either a session is not closed on some path, or the pool is too small "
        "for the concurrency. Map every place that opens one before reading code."
    )
    b.say(
        "The pool is running dry while the database is idle, so something holds connections. I'll have a "
        "subagent map every place that opens a session."
    )
    b.delegate(
        "Explore",
        "Find where sessions are opened",
        "Find every place in src/ledger that opens a database session or connection (SessionLocal(), "
        "engine.connect(), engine.begin()) and report, for each, whether it is released on every path, "
        "exceptions included. Don't change anything.",
        _pool_callers,
        model=HAIKU,
    )
    b.say("The dependency is the leak. I'll reproduce it with a tiny pool before fixing it.")
    b.write("tests/test_pool.py", POOL_TEST)
    failure = Failure(
        "tests/test_pool.py::test_failed_requests_give_their_connection_back",
        "small_pool = Engine(postgresql+psycopg://ledger:***@localhost:5432/ledger_test)\n\n"
        "    def test_failed_requests_give_their_connection_back(small_pool):\n"
        "        client = TestClient(create_app(), raise_server_exceptions=False)\n"
        "        for _ in range(5):\n"
        '>           response = client.post("/entries", json={"account": "9999", "amount": "10.00"})\n\n'
        "tests/test_pool.py:23: \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n"
        f"E           {POOL_TIMEOUT}\n\n"
        ".venv/lib/python3.12/site-packages/sqlalchemy/pool/impl.py:167: TimeoutError",
        POOL_TIMEOUT.split(" (Background")[0],
    )
    b.bash(
        "pytest -q tests/test_pool.py",
        "Reproduce the leak",
        pytest_run(0, (failure,), seconds=3.21),
        exit_code=1,
        seconds=4,
    )
    b.say("Reproduced: after two failed requests the third waits for a connection that never comes back.")
    b.edit("src/ledger/db/session.py", OLD_GET_SESSION, NEW_GET_SESSION)
    b.bash("pytest -q tests/test_pool.py", "Run the pool test", pytest_run(1, seconds=0.84), seconds=2)
    b.passes(
        pytest_run(86, seconds=9.12),
        11,
        "Found it. `get_session()` committed and closed the session after the `yield` without a `try/finally`. "
        "When a handler raises (an unknown account's 404, a 409 on a duplicate posting), FastAPI throws the "
        "exception into the dependency at the `yield`, so `commit()` and `close()` never ran and the connection "
        "stayed checked out until garbage collection. Under load the failed requests pile up faster than the "
        "collector frees them, all 15 connections (pool 5 + overflow 10) are taken, and every new request waits "
        "`pool_timeout` = 30 s before the connection pool times out.\n\n"
        "The fix rolls back on error and always closes the session (`src/ledger/db/session.py`). "
        "`tests/test_pool.py` reproduces it with a pool of 2: it timed out before the fix and passes now, "
        "and the suite is green (86 passed).",
    )
    _pool_timeout_setting(b)


def _pool_timeout_setting(b: Builder) -> None:
    """The follow-up: whether a bigger pool would help (no), and a shorter wait for a connection."""
    b.prompt("Should we also raise pool_size? We run 4 uvicorn workers behind the load balancer.")
    b.say(
        "I wouldn't. Each worker process has its own pool, so today the ceiling is 4 × (5 + 10) = 60 connections "
        "against Postgres' `max_connections = 100`, and the leak, not the size, is what exhausted it. Raising it "
        "would only hide the next leak longer.\n\n"
        "What I would change is `pool_timeout`: 30 s means a request hangs for half a minute before failing. "
        "10 s fails fast and still rides out a burst. Want me to make it a setting (`LEDGER_DB_POOL_TIMEOUT`, "
        "default 10)?"
    )
    b.prompt("yes do it")
    b.edit("src/ledger/db/session.py", "    pool_timeout=30,", "    pool_timeout=settings.db_pool_timeout,")
    b.edit(
        "src/ledger/settings.py",
        "    db_max_overflow: int = 10",
        "    db_max_overflow: int = 10\n    db_pool_timeout: float = 10.0  # seconds to wait for a pooled connection",
    )
    b.passes(
        pytest_run(86, seconds=9.30), 11, "Done: `pool_timeout` now comes from `LEDGER_DB_POOL_TIMEOUT` (default 10 s)."
    )


POSTINGS_TEST = """def test_concurrent_postings_keep_balance(accounts):
    cash, revenue = accounts("1000", "4000")
    transfers = [(cash, revenue, "5.00"), (revenue, cash, "5.00")] * 4
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda t: post_transfer(*t), transfers))
    assert cash.balance() + revenue.balance() == Decimal("0.00")
"""
POST_TRANSFER_OLD = """    source = session.get(Account, source_id, with_for_update=True)
    target = session.get(Account, target_id, with_for_update=True)"""
POST_TRANSFER_NEW = """    # Lock both rows in one statement, in id order: two opposite transfers must not
    # each hold one lock while waiting for the other (a deadlock).
    rows = session.scalars(
        select(Account).where(Account.id.in_((source_id, target_id))).order_by(Account.id).with_for_update()
    )
    by_id = {account.id: account for account in rows}
    source, target = by_id[source_id], by_id[target_id]"""


def flaky_postings(b: Builder) -> None:
    b.prompt(
        "test_concurrent_postings_keep_balance is flaky on CI: it fails maybe one run in ten with a timeout, "
        "and passes locally every time. Can you dig into it?"
    )
    b.say("I'll try to make it fail locally by repeating it.")
    failure = Failure(
        "tests/test_postings.py::test_concurrent_postings_keep_balance[18-30]",
        "    def test_concurrent_postings_keep_balance(accounts):\n"
        '        cash, revenue = accounts("1000", "4000")\n'
        '        transfers = [(cash, revenue, "5.00"), (revenue, cash, "5.00")] * 4\n'
        "        with ThreadPoolExecutor(max_workers=8) as pool:\n"
        ">           list(pool.map(lambda t: post_transfer(*t), transfers))\n"
        "E           Failed: Timeout (>10.0s) from pytest-timeout.\n\n"
        "tests/test_postings.py:58: Failed",
        "Failed: Timeout (>10.0s) from pytest-timeout.",
    )
    b.bash(
        "pytest -q tests/test_postings.py::test_concurrent_postings_keep_balance --count 30 -x",
        "Repeat the flaky test",
        pytest_run(17, (failure,), seconds=41.37),
        exit_code=1,
        seconds=42,
    )
    b.read("tests/test_postings.py", POSTINGS_TEST, offset=53)
    b.read(
        "src/ledger/postings.py",
        "@retry(on=DeadlockDetected, attempts=5, backoff=0.5)\ndef post_transfer(source_id, target_id, amount):\n"
        '    """Move `amount` from one account to another in one transaction."""\n'
        "    with SessionLocal() as session, session.begin():\n"
        f"{POST_TRANSFER_OLD}\n"
        "        source.post(-Decimal(amount))\n        target.post(Decimal(amount))",
        offset=18,
        parallel=True,
    )
    b.bash(
        "docker compose logs db --since 10m | grep -i -A2 deadlock | tail -6",
        "Look for deadlocks in the Postgres log",
        "db-1  | ERROR:  deadlock detected\n"
        "db-1  | DETAIL:  Process 4121 waits for ShareLock on transaction 88213; blocked by process 4119.\n"
        "db-1  | \tProcess 4119 waits for ShareLock on transaction 88214; blocked by process 4121.\n"
        "db-1  | HINT:  See server log for query details.\n"
        'db-1  | CONTEXT:  while locking tuple (0,7) in relation "accounts"',
        seconds=1,
    )
    b.think(
        "Opposite transfers lock the two accounts in opposite orders: cash then revenue, revenue then cash. "
        "Postgres breaks the deadlock after deadlock_timeout (1 s), the retry decorator sleeps while still "
        "holding its connection, and with 8 threads and only 5 connections to share the others queue "
        "behind it. Usually it resolves within 10 s; sometimes the retries chain and pytest-timeout fires."
    )
    b.edit("src/ledger/postings.py", POST_TRANSFER_OLD, POST_TRANSFER_NEW)
    b.bash(
        "pytest -q tests/test_postings.py::test_concurrent_postings_keep_balance --count 200",
        "Repeat the test 200 times",
        pytest_run(200, seconds=58.10),
        seconds=59,
    )
    b.say(
        "The flaky failures were a deadlock, not a slow test. Two opposite transfers (cash → revenue and "
        "revenue → cash) locked the same two rows in opposite order; Postgres detected the deadlock after 1 s "
        "and aborted one, and `@retry` slept and tried again while holding its connection. With 8 threads "
        "sharing a connection pool of 5, the waiting threads queued behind it, and on an unlucky schedule the "
        "retries added up past the 10 s timeout. CI hits it more often because its runners have two cores.\n\n"
        "`post_transfer` now locks both accounts in one `SELECT … ORDER BY id FOR UPDATE`, so every transfer "
        "takes the locks in the same order and cannot deadlock. 200 repetitions pass (they failed by the 18th "
        "before). I left `@retry` in place for serialization failures, but it should never see a deadlock now."
    )


CLI_OLD = """    export = sub.add_parser("export", help="write entries as CSV")
    export.add_argument("--out", type=Path, default=Path("-"), help="file to write (default: stdout)")"""
CLI_NEW = """    export = sub.add_parser("export", help="write entries as CSV")
    export.add_argument("--out", type=Path, default=Path("-"), help="file to write (default: stdout)")
    export.add_argument("--since", type=_date, help="only entries posted on or after this date (YYYY-MM-DD)")"""
DATE_FIRST = """

def _date(text: str) -> date:
    return date.fromisoformat(text)
"""
DATE_FIXED = """

def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--since takes a date as YYYY-MM-DD, got {text!r}") from None
"""
EXPORT_TESTS = """from ledger.cli import main


def test_since_keeps_entries_on_or_after_the_date(ledger_with_entries, capsys):
    main(["export", "--since", "2024-03-01"])
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == ["2024-03-01", "2024-03-15"]


def test_without_since_everything_is_exported(ledger_with_entries, capsys):
    main(["export"])
    assert len(capsys.readouterr().out.splitlines()) == 5


def test_a_bad_date_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--since", "2024-13-01"])
    assert exit_info.value.code == 2
    assert "--since takes a date as YYYY-MM-DD, got '2024-13-01'" in capsys.readouterr().err
"""


def export_since(b: Builder) -> None:
    b.prompt(
        b.rng.choice(
            (
                "Add a --since option to `ledger export` (a date, YYYY-MM-DD) so we can export only entries on or "
                "after it. Bad dates should get a clear error, not a traceback.",
                "ledger export dumps every entry since 2019. Give it a --since YYYY-MM-DD flag; a malformed date "
                "should be a clean usage error.",
            )
        )
    )
    b.think("Locating the export command\nThe CLI is argparse in src/ledger/cli.py; the query is in reports.")
    b.grep('add_parser\\("export"', "src/ledger", ripgrep((("src/ledger/cli.py", 48, CLI_OLD.splitlines()[0]),)))
    b.read("src/ledger/cli.py", CLI_OLD + "\n\n    args = parser.parse_args(argv)", offset=48)
    b.edit("src/ledger/cli.py", CLI_OLD, CLI_NEW)
    b.edit("src/ledger/cli.py", "\n\ndef main(argv=None):", DATE_FIRST + "\n\ndef main(argv=None):")
    b.edit(
        "src/ledger/reports/export.py",
        "def export_entries(out):\n    query = select(Entry).order_by(Entry.posted_at)",
        "def export_entries(out, since: date | None = None):\n    query = select(Entry).order_by(Entry.posted_at)\n"
        "    if since is not None:\n        query = query.where(Entry.posted_at >= since)",
    )
    b.write("tests/test_cli_export.py", EXPORT_TESTS)
    failure = Failure(
        "tests/test_cli_export.py::test_a_bad_date_is_a_usage_error",
        "capsys = <_pytest.capture.CaptureFixture object at 0x7f3a1c2b9d50>\n\n"
        "    def test_a_bad_date_is_a_usage_error(capsys):\n"
        "        with pytest.raises(SystemExit) as exit_info:\n"
        '            main(["export", "--since", "2024-13-01"])\n'
        "        assert exit_info.value.code == 2\n"
        ">       assert \"--since takes a date as YYYY-MM-DD, got '2024-13-01'\" in capsys.readouterr().err\n"
        "E       assert \"--since takes a date as YYYY-MM-DD, got '2024-13-01'\" in "
        '"usage: ledger export [-h] [--out OUT] [--since SINCE]\\nledger export: error: argument --since: '
        "invalid _date value: '2024-13-01'\\n\"\n\n"
        "tests/test_cli_export.py:19: AssertionError",
        "assert \"--since takes a date as YYYY-MM-DD, got '2024-13-01'\" in ...",
    )
    b.bash("pytest -q tests/test_cli_export.py", "", pytest_run(2, (failure,), seconds=0.61), exit_code=1)
    b.say(
        "argparse only shows a type function's own message for `ArgumentTypeError`; a plain `ValueError` "
        'becomes "invalid _date value". Raising the right error:'
    )
    b.edit("src/ledger/cli.py", DATE_FIRST, DATE_FIXED)
    b.bash("pytest -q tests/test_cli_export.py", "", pytest_run(3, seconds=0.58))
    b.bash(
        "ledger export --since 2024-13-01",
        "",
        "usage: ledger export [-h] [--out OUT] [--since SINCE]\n"
        "ledger export: error: argument --since: --since takes a date as YYYY-MM-DD, got '2024-13-01'",
        exit_code=2,
        seconds=0.5,
    )
    b.passes(
        pytest_run(89, seconds=9.47),
        11,
        "`ledger export --since 2024-03-01` now exports only entries posted on or after that day. A malformed "
        "date is a usage error (exit 2) that says what was wrong:\n\n"
        "```\nledger export: error: argument --since: --since takes a date as YYYY-MM-DD, got '2024-13-01'\n```\n\n"
        "Changes: `src/ledger/cli.py` (the option and its parser), `src/ledger/reports/export.py` (the filter), "
        "and three tests in `tests/test_cli_export.py`. The full suite passes (89).",
    )


SCENARIOS = (
    Scenario(
        "Requests time out waiting for a pooled connection", LEDGER, "fix/pool-timeout", pool_timeout, delegates=True
    ),
    Scenario("Flaky concurrent postings test", LEDGER, "main", flaky_postings),
    Scenario("Add --since to ledger export", LEDGER, "feat/export-since", export_since),
)
