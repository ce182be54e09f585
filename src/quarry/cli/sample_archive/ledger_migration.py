"""The longest sample session: multi-currency entries in `ledger`, from the alembic migration to the API and
the docs, over five prompts, with the user compacting the context half-way (`/compact`)."""

from __future__ import annotations

from quarry.cli.sample_archive.outputs import Failure, pytest_run, ripgrep
from quarry.cli.sample_archive.repos import LEDGER
from quarry.cli.sample_archive.script import Builder, Scenario

REVISION = "c7d2e91f0a3b"
ENTRY_MODEL = """class Entry(Base):
    __tablename__ = "entries"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    memo: Mapped[str | None]
    posted_at: Mapped[datetime] = mapped_column(index=True)
"""
MIGRATION = f'''"""add currency to entries

Revision ID: {REVISION}
Revises: 9f31d6a2c4e8
Create Date: 2026-01-14 10:42:07.193528
"""

import sqlalchemy as sa
from alembic import op

revision = "{REVISION}"
down_revision = "9f31d6a2c4e8"


def upgrade() -> None:
    # Nullable first so the backfill can run on a large table without a default rewrite.
    op.add_column("entries", sa.Column("currency", sa.String(3), nullable=True))
    op.execute("UPDATE entries SET currency = 'EUR' WHERE currency IS NULL")
    op.alter_column("entries", "currency", nullable=False, server_default="EUR")
    op.create_check_constraint("ck_entries_currency_iso", "entries", "currency ~ '^[A-Z]{{3}}$'")
    op.create_index("ix_entries_account_currency", "entries", ["account_id", "currency"])


def downgrade() -> None:
    op.drop_index("ix_entries_account_currency", table_name="entries")
    op.drop_constraint("ck_entries_currency_iso", "entries")
    op.drop_column("entries", "currency")
'''
CONFTEST_OLD = '''@pytest.fixture(scope="session")
def database_url():
    """A fresh database per run, cloned from the template `make test-db` builds."""
    with admin_connection() as conn:
        conn.execute(f"CREATE DATABASE {TEST_DB} TEMPLATE ledger_template")'''
CONFTEST_NEW = '''@pytest.fixture(scope="session")
def database_url():
    """A fresh database per run, cloned from the template and brought to the latest migration, so a
    template built before a new revision cannot hide it."""
    with admin_connection() as conn:
        conn.execute(f"CREATE DATABASE {TEST_DB} TEMPLATE ledger_template")
    command.upgrade(alembic_config(TEST_URL), "head")'''
UNDEFINED = "sqlalchemy.exc.ProgrammingError: (psycopg.errors.UndefinedColumn) column entries.currency does not exist"
SUMMARY = """Analysis:
The user asked for multi-currency support in ledger, in steps.

1. Model and migration (done):
   - `Entry.currency` (String(3), server default 'EUR') in `src/ledger/models.py`.
   - Alembic revision c7d2e91f0a3b `add currency to entries`: adds the column nullable, backfills 'EUR', sets
     NOT NULL, adds the check constraint `ck_entries_currency_iso` and the index `ix_entries_account_currency`.
   - Tests failed with `column entries.currency does not exist` because the test database is cloned from a
     template built by `make test-db`; `tests/conftest.py` now runs `alembic upgrade head` on the clone.
2. Balances per currency (done):
   - `Account.balance()` returns `dict[str, Decimal]`; `GET /accounts/{id}/balance` returns
     `{"balances": {"EUR": "120.00", ...}}` (schema `BalanceOut` in `src/ledger/api/schemas.py`).
   - `tests/test_entries.py`: the balance test compares with the dict; a new test covers two currencies.
     Suite: 88 passed.

Pending:
- Validate `currency` on POST /entries against the supported codes (EUR, USD, GBP, PLN), 422 naming the code.
- Document the change in docs/api.md and CHANGELOG.md."""


def _model_and_migration(b: Builder) -> None:
    b.prompt(
        "We need multi-currency support in ledger. Entries get a currency column (ISO 4217, three letters), "
        "existing rows default to EUR, and balances are per currency. Start with the model and an alembic "
        "migration; don't touch the API yet."
    )
    b.think(
        "Add the column nullable, backfill, then set NOT NULL: adding a NOT NULL column with a default to a big "
        "table is fine on Postgres 11+, but the explicit backfill keeps the migration honest for older dumps."
    )
    b.read("src/ledger/models.py", ENTRY_MODEL, offset=31)
    b.bash(
        "ls migrations/versions | tail -3",
        "Latest migrations",
        "4b8e0c2d9a17_add_entry_memo.py\n9f31d6a2c4e8_index_entries_posted_at.py",
        seconds=0.2,
    )
    b.bash(
        'alembic revision -m "add currency to entries"',
        "Create the revision",
        f"  Generating /home/sam/code/ledger/migrations/versions/{REVISION}_add_currency_to_entries.py ...  done",
        seconds=1.5,
    )
    b.write(f"migrations/versions/{REVISION}_add_currency_to_entries.py", MIGRATION)
    b.edit(
        "src/ledger/models.py",
        "    memo: Mapped[str | None]\n",
        '    memo: Mapped[str | None]\n    currency: Mapped[str] = mapped_column(String(3), server_default="EUR")\n',
    )
    b.bash(
        "alembic upgrade head",
        "Apply the migration to the dev database",
        "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
        "INFO  [alembic.runtime.migration] Will assume transactional DDL.\n"
        f"INFO  [alembic.runtime.migration] Running upgrade 9f31d6a2c4e8 -> {REVISION}, add currency to entries",
        seconds=2,
    )
    failures = tuple(
        Failure(
            f"tests/test_entries.py::{name}",
            f"E   {UNDEFINED}\nE   LINE 1: ...entries.memo, entries.currency, entries.posted_at FROM entries...\n"
            "\n.venv/lib/python3.12/site-packages/psycopg/cursor.py:97: ProgrammingError",
            UNDEFINED,
        )
        for name in ("test_post_entry", "test_balance_sums_entries", "test_list_entries_by_account")
    )
    b.bash(LEDGER.test_command, "Run the tests", pytest_run(84, failures, seconds=10.02), exit_code=1, seconds=12)
    b.say("The dev database has the column, the test database doesn't. Let me see how the tests build theirs.")
    b.read("tests/conftest.py", CONFTEST_OLD, offset=18)
    b.say(
        "The test database is cloned from `ledger_template`, which `make test-db` built before this revision. "
        "I'll have the fixture upgrade the clone to head, so a stale template can't hide a migration again."
    )
    b.edit("tests/conftest.py", CONFTEST_OLD, CONFTEST_NEW)
    b.passes(
        pytest_run(87, seconds=10.44),
        12,
        f"Model and migration are in. Revision `{REVISION}` adds `entries.currency`, backfills `EUR`, then makes "
        "it NOT NULL with a check that it is three capital letters, and indexes (account_id, currency) for the "
        "per-currency balances. `tests/conftest.py` now migrates the cloned test database to head. 87 passed.",
    )


def _balances(b: Builder) -> None:
    b.prompt(
        "Good. Now balances: Account.balance() should return a dict currency -> Decimal, and "
        "GET /accounts/{id}/balance should return all of them."
    )
    b.read(
        "src/ledger/accounts.py",
        "    def balance(self) -> Decimal:\n"
        "        total = self.session.scalar(select(func.sum(Entry.amount)).where(Entry.account_id == self.id))\n"
        '        return (total or Decimal("0")).quantize(CENT, ROUND_HALF_EVEN)',
        offset=40,
    )
    b.edit(
        "src/ledger/accounts.py",
        "    def balance(self) -> Decimal:\n"
        "        total = self.session.scalar(select(func.sum(Entry.amount)).where(Entry.account_id == self.id))\n"
        '        return (total or Decimal("0")).quantize(CENT, ROUND_HALF_EVEN)',
        "    def balance(self) -> dict[str, Decimal]:\n"
        '        """The balance in each currency the account has entries in."""\n'
        "        rows = self.session.execute(\n"
        "            select(Entry.currency, func.sum(Entry.amount))\n"
        "            .where(Entry.account_id == self.id)\n"
        "            .group_by(Entry.currency)\n"
        "        )\n"
        "        return {currency: total.quantize(CENT, ROUND_HALF_EVEN) for currency, total in rows}",
    )
    b.edit(
        "src/ledger/api/schemas.py",
        "class BalanceOut(BaseModel):\n    balance: Decimal",
        "class BalanceOut(BaseModel):\n    balances: dict[str, Decimal]",
    )
    failure = Failure(
        "tests/test_entries.py::test_balance_sums_entries",
        ">       assert account.balance() == Decimal(\"15.00\")\nE       AssertionError: assert {'EUR': "
        "Decimal('15.00')} == Decimal('15.00')\n\ntests/test_entries.py:61: AssertionError",
        "AssertionError: assert {'EUR': Decimal('15.00')} == Decimal('15.00')",
    )
    b.bash(LEDGER.test_command, "Run the tests", pytest_run(86, (failure,), seconds=10.21), exit_code=1, seconds=12)
    b.edit(
        "tests/test_entries.py",
        '    assert account.balance() == Decimal("15.00")',
        '    assert account.balance() == {"EUR": Decimal("15.00")}\n\n\n'
        "def test_balance_is_kept_per_currency(accounts):\n"
        '    cash = accounts("1000", entries=[("10.00", "EUR"), ("4.50", "USD"), ("2.00", "EUR")])\n'
        '    assert cash.balance() == {"EUR": Decimal("12.00"), "USD": Decimal("4.50")}',
    )
    b.passes(
        pytest_run(88, seconds=10.37),
        12,
        "`Account.balance()` now groups by currency and returns `{'EUR': Decimal('15.00'), …}`; the endpoint "
        'answers `{"balances": {...}}`. I updated the test that compared against a bare Decimal and added '
        "one with two currencies. 88 passed.",
    )


def _validation(b: Builder) -> None:
    b.prompt(
        "Now validate the currency on POST /entries: only codes we support (EUR, USD, GBP, PLN for now), "
        "with a 422 that says which code was wrong."
    )
    b.grep("class EntryIn", "src/ledger", ripgrep((("src/ledger/api/schemas.py", 14, "class EntryIn(BaseModel):"),)))
    b.read(
        "src/ledger/api/schemas.py",
        "class EntryIn(BaseModel):\n    account: str\n    amount: Decimal\n    memo: str | None = None",
        offset=14,
    )
    b.edit(
        "src/ledger/api/schemas.py",
        "class EntryIn(BaseModel):\n    account: str\n    amount: Decimal\n    memo: str | None = None",
        'SUPPORTED_CURRENCIES = frozenset({"EUR", "USD", "GBP", "PLN"})\n\n\n'
        'class EntryIn(BaseModel):\n    account: str\n    amount: Decimal\n    currency: str = "EUR"\n'
        "    memo: str | None = None\n\n"
        '    @field_validator("currency")\n    @classmethod\n    def supported(cls, code: str) -> str:\n'
        "        if code not in SUPPORTED_CURRENCIES:\n"
        '            raise ValueError(f"unsupported currency {code!r}: use one of EUR, GBP, PLN, USD")',
    )
    b.bash(
        "mypy src",
        "Type-check",
        "src/ledger/api/schemas.py:27: error: Missing return statement  [return]\nFound 1 error in 1 file "
        "(checked 42 source files)",
        exit_code=1,
        seconds=6,
    )
    b.edit(
        "src/ledger/api/schemas.py",
        '            raise ValueError(f"unsupported currency {code!r}: use one of EUR, GBP, PLN, USD")',
        '            raise ValueError(f"unsupported currency {code!r}: use one of EUR, GBP, PLN, USD")\n'
        "        return code",
    )
    b.bash("mypy src", "Type-check", "Success: no issues found in 42 source files", seconds=5)
    b.edit(
        "tests/test_api_entries.py",
        "def test_post_entry(client):\n",
        "def test_an_unsupported_currency_is_refused_by_name(client):\n"
        '    response = client.post("/entries", json={"account": "1000", "amount": "5.00", "currency": "JPY"})\n'
        "    assert response.status_code == 422\n"
        '    assert response.json()["detail"][0]["loc"] == ["body", "currency"]\n'
        '    assert "unsupported currency \'JPY\'" in response.json()["detail"][0]["msg"]\n\n\n'
        "def test_currency_defaults_to_eur(client):\n"
        '    response = client.post("/entries", json={"account": "1000", "amount": "5.00"})\n'
        '    assert response.json()["currency"] == "EUR"\n\n\n'
        "def test_post_entry(client):\n",
    )
    b.passes(
        pytest_run(90, seconds=10.58),
        12,
        "POST /entries now takes `currency` (default EUR) and refuses anything but EUR, USD, GBP and PLN with a "
        "422 whose detail is `unsupported currency 'JPY': use one of EUR, GBP, PLN, USD` at `body.currency`. "
        "mypy caught a missing `return code` in the validator. Two new tests; 90 passed.",
    )


def _docs(b: Builder) -> None:
    b.prompt("Last thing: document it in docs/api.md and add a line to CHANGELOG.md")
    b.edit(
        "docs/api.md",
        "| `amount` | decimal string | yes |",
        "| `amount` | decimal string | yes |\n| `currency` | ISO 4217 code: EUR, USD, GBP or PLN | no (EUR) |",
    )
    b.edit(
        "CHANGELOG.md",
        "## Unreleased\n",
        "## Unreleased\n\n- Entries carry a currency (EUR, USD, GBP, PLN); balances are reported per currency. "
        "Run `alembic upgrade head` before deploying.\n",
    )
    b.bash(
        "git diff --stat",
        "Summarize the change",
        " CHANGELOG.md                                       |  3 +\n"
        " docs/api.md                                        | 14 ++-\n"
        f" migrations/versions/{REVISION}_add_currency_to_entries.py | 31 +++++\n"
        " src/ledger/accounts.py                             | 12 ++-\n"
        " src/ledger/api/schemas.py                          | 15 ++-\n"
        " src/ledger/models.py                               |  1 +\n"
        " tests/conftest.py                                  |  5 +-\n"
        " tests/test_api_entries.py                          | 13 +\n"
        " tests/test_entries.py                              |  8 ++-\n"
        " 9 files changed, 93 insertions(+), 9 deletions(-)",
        seconds=0.3,
    )
    b.say(
        "Documented: the `currency` field in docs/api.md's entry table and the balance response, and a "
        "CHANGELOG line reminding whoever deploys to run the migration first. The whole change is 9 files, "
        "+93/−9; ready for a PR when you are."
    )


def currency_migration(b: Builder) -> None:
    _model_and_migration(b)
    _balances(b)
    b.prompt("keep the migration, the balance change and what is left: API validation and docs", command="/compact")
    b.compact(SUMMARY, trigger="manual")
    _validation(b)
    _docs(b)


SCENARIOS = (
    Scenario("Multi-currency entries: migration, balances, validation", LEDGER, "feat/currency", currency_migration),
)
