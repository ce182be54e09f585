"""The made-up repositories the sample sessions work in: a Python ledger service, a Python billing worker,
a TypeScript storefront and a Go command-line tool, each checked out under one developer's home."""

from __future__ import annotations

from dataclasses import dataclass

HOME = "/home/sam"


@dataclass(frozen=True, slots=True)
class Repo:
    name: str
    language: str
    remote: str  # the origin's URL, as `git remote -v` shows it
    test_command: str

    @property
    def cwd(self) -> str:
        return f"{HOME}/code/{self.name}"

    def path(self, relative: str) -> str:
        return f"{self.cwd}/{relative}"


LEDGER = Repo("ledger", "python", "git@github.com:northwind-labs/ledger.git", "pytest -q")
BILLING = Repo("billing", "python", "git@github.com:northwind-labs/billing.git", "pytest -q")
STOREFRONT = Repo("storefront", "typescript", "git@github.com:northwind-labs/storefront.git", "npx vitest run")
TILEKIT = Repo("tilekit", "go", "git@github.com:sam-okafor/tilekit.git", "go test ./...")
