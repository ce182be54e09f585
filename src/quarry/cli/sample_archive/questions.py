"""Short sessions: a question asked between tasks and the model's answer, with no tool call, as people ask
their agent what a setting does or which of two approaches to take."""

from __future__ import annotations

from collections.abc import Callable

from quarry.cli.sample_archive.repos import BILLING, LEDGER, STOREFRONT, TILEKIT, Repo
from quarry.cli.sample_archive.script import Builder, Scenario

# (repo, title, [(question, answer), ...])
QUESTIONS: tuple[tuple[Repo, str, tuple[tuple[str, str], ...]], ...] = (
    (
        LEDGER,
        "What pool_pre_ping does",
        (
            (
                "what does pool_pre_ping actually do in SQLAlchemy? is it worth turning on for ledger?",
                "`pool_pre_ping=True` makes the pool test a connection (a lightweight `SELECT 1`) each time it is "
                "checked out, and replace it if the test fails. It protects you from connections the server or a "
                "proxy closed while they sat idle in the pool, which otherwise surface as `OperationalError: "
                "server closed the connection unexpectedly` on the first query of a request.\n\n"
                "The cost is one round trip per checkout, usually well under a millisecond on the same network. "
                "For ledger, behind PgBouncer with `server_idle_timeout` at 10 minutes, I'd turn it on; "
                "`pool_recycle=1800` is the complementary setting if you'd rather recycle on age.",
            ),
        ),
    ),
    (
        TILEKIT,
        "trimpath and ldflags for release builds",
        (
            (
                "For release builds, what's the difference between -trimpath and -ldflags '-s -w'? Do I want both?",
                "They do different things, and goreleaser users usually want both.\n\n"
                "- `-trimpath` removes your machine's file system paths (`/home/sam/code/tilekit/...`) from the "
                "binary, so builds are reproducible and panics don't leak your directory layout.\n"
                "- `-ldflags '-s -w'` strips the symbol table (`-s`) and DWARF debug info (`-w`): a binary about "
                "25-30% smaller, but no `dlv` debugging of release binaries. Stack traces still work: they come "
                "from the pclntab, which is kept.\n\n"
                "Your `.goreleaser.yaml` already has `-s -w`; add `flags: [-trimpath]` to the build.",
            ),
        ),
    ),
    (
        STOREFRONT,
        "Type instantiation is excessively deep",
        (
            (
                "tsc says 'Type instantiation is excessively deep and possibly infinite' on our zod checkout "
                "schema since we added the discriminated union for payment methods. what's going on?",
                "That error (TS2589) means the checker hit its recursion limit while expanding a type, here "
                "`z.infer` over a large schema: each `.extend()`, `.merge()` and union member adds a level of "
                "generic instantiation, and a discriminated union over objects that are themselves built by "
                "chaining is where it tips over.\n\n"
                "Two fixes that usually work: declare the TypeScript type yourself and annotate the schema with "
                "it (`const Payment: z.ZodType<Payment> = ...`), which stops inference at that boundary; or build "
                "each union member as one `z.object({...})` instead of chains of `.extend()`.",
            ),
            (
                "the annotation one. do I lose anything?",
                "You lose automatic sync: if the schema and the hand-written type drift apart, tsc only catches it "
                "where they're incompatible. Add a compile-time check next to it, e.g. "
                "`type _Check = AssertEqual<z.infer<typeof PaymentSchema>, Payment>`, and you keep both the fast "
                "checker and the guarantee.",
            ),
        ),
    ),
    (
        BILLING,
        "VACUUM while the relay runs",
        (
            (
                "is it safe to run VACUUM on the outbox db while the relays are running?",
                "Safe, yes; free, no. `VACUUM` rebuilds the whole database file inside one write transaction, so "
                "for its duration both relays wait for the write lock; with `busy_timeout = 5000` they wait up to "
                "5 s, then get `database is locked`. On a database of a few hundred MB that can take longer.\n\n"
                "Better options: `PRAGMA incremental_vacuum` (after setting `auto_vacuum = INCREMENTAL`, which "
                "itself needs one full VACUUM) in small steps, or simply deleting sent messages regularly: "
                "SQLite reuses free pages, so the file stops growing even without vacuuming.",
            ),
        ),
    ),
)


def _asking(exchanges: tuple[tuple[str, str], ...]) -> Callable[[Builder], None]:
    def play(b: Builder) -> None:
        for question, answer in exchanges:
            b.prompt(question, pause=(40, 300))
            b.say(answer)

    return play


SCENARIOS = tuple(Scenario(title, repo, "main", _asking(exchanges)) for repo, title, exchanges in QUESTIONS)
