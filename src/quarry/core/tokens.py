"""Bearer tokens and their grants on scopes (docs/access.md), kept in one JSON file, hashed.

A scope is a named container of sessions (a team, a project). A token grants `read`, `write` (ingest,
deletes, assertions) and `admin` (local paths, every grant) on one or more scopes. The file holds
each token's id, name, grants and the SHA-256 of the whole token, never the token: a token is 32
random bytes, so a fast hash is as safe as a slow one and keeps every call's check to microseconds.

    qry_<id>_<secret>      id: 12 hex digits (the record's key), secret: 43 url-safe characters

Nodes read the file and reload it when it changes, so `quarry token create` / `revoke` take effect on
a running cluster at its next call. Writes replace the file atomically (mode 0600).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

READ, WRITE, ADMIN = "read", "write", "admin"
GRANTS = (READ, WRITE, ADMIN)
DEFAULT_SCOPE = "default"
SCOPE_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
TOKEN_PATTERN = re.compile(r"qry_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
TOKENS_FILE = "tokens.json"


def check_scope(name: str, parameter: str = "scope") -> str:
    """A scope name, or INVALID_REQUEST saying what a scope name is."""
    if not SCOPE_PATTERN.fullmatch(name):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{name!r} is not a scope name: 1-63 of a-z 0-9 . _ -, starting with a letter or digit",
            parameter=parameter,
        )
    return name


def check_grants(grants: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(g.strip() for g in grants if g.strip())
    unknown = sorted(chosen - set(GRANTS))
    if unknown or not chosen:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"grants are {', '.join(GRANTS)}; got {', '.join(unknown) or 'none'}",
            parameter="grant",
        )
    return chosen


@dataclass(frozen=True)
class Caller:
    """Who a call runs for: a token's id and its grants per scope. `admin` holds every grant."""

    token_id: str
    grants: Mapping[str, frozenset[str]]
    name: str = ""

    @property
    def label(self) -> str:
        """How the caller is named where a write records who made it: the token's name, else its id."""
        return self.name or f"token {self.token_id}"

    def scopes(self, grant: str) -> frozenset[str]:
        return frozenset(s for s, held in self.grants.items() if grant in held or ADMIN in held)

    def may(self, grant: str, scope: str) -> bool:
        held = self.grants.get(scope, frozenset())
        return grant in held or ADMIN in held


@dataclass(frozen=True)
class TokenRecord:
    id: str
    name: str
    sha256: str
    grants: Mapping[str, frozenset[str]]
    created_ms: int

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "sha256": self.sha256,
            "grants": {scope: sorted(held) for scope, held in sorted(self.grants.items())},
            "created_ms": self.created_ms,
        }


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _record(raw: Mapping[str, object]) -> TokenRecord:
    grants = raw["grants"]
    assert isinstance(grants, dict)
    return TokenRecord(
        id=str(raw["id"]),
        name=str(raw.get("name", "")),
        sha256=str(raw["sha256"]),
        grants={str(scope): frozenset(held) for scope, held in grants.items()},
        created_ms=int(str(raw.get("created_ms", 0))),
    )


class TokenStore:
    """The token file of a cluster: create, list, revoke, and authenticate a presented token."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._records: dict[str, TokenRecord] = {}

    @classmethod
    def in_home(cls, home: Path) -> TokenStore:
        return cls(home / "auth" / TOKENS_FILE)

    def exists(self) -> bool:
        return self.path.exists()

    def records(self) -> list[TokenRecord]:
        with self._lock:
            self._reload()
            return sorted(self._records.values(), key=lambda r: (r.created_ms, r.id))

    def authenticate(self, token: str) -> Caller | None:
        """The caller a presented token stands for; None for anything else (malformed, unknown, revoked)."""
        match = TOKEN_PATTERN.fullmatch(token)
        if match is None:
            return None
        with self._lock:
            self._reload()
            record = self._records.get(match.group(1))
        if record is None or not hmac.compare_digest(record.sha256, _digest(token)):
            return None
        return Caller(record.id, record.grants, record.name)

    def create(self, name: str, grants: Mapping[str, Iterable[str]]) -> tuple[str, TokenRecord]:
        """A new token (returned once, never stored) with its grants on each scope."""
        checked = {check_scope(scope): check_grants(held) for scope, held in grants.items()}
        if not checked:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, "a token needs a grant on at least one scope", parameter="scope"
            )
        token_id = secrets.token_hex(6)
        token = f"qry_{token_id}_{secrets.token_urlsafe(32)}"
        record = TokenRecord(token_id, name, _digest(token), checked, int(time.time() * 1000))
        with self._lock:
            self._reload()
            self._write({**self._records, token_id: record})
        return token, record

    def revoke(self, token_id: str) -> bool:
        with self._lock:
            self._reload()
            if token_id not in self._records:
                return False
            self._write({k: v for k, v in self._records.items() if k != token_id})
            return True

    def initialize(self) -> None:
        """Create an empty token file (authentication on, no token yet) if there is none."""
        with self._lock:
            if not self.path.exists():
                self._write({})

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._records, self._seen = {}, None
            return
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen == self._seen:
            return
        raw = orjson.loads(self.path.read_bytes())
        self._records = {r.id: r for r in map(_record, raw.get("tokens", []))}
        self._seen = seen

    def _write(self, records: Mapping[str, TokenRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {"version": 1, "tokens": [r.to_json() for r in sorted(records.values(), key=lambda r: r.id)]}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(body, option=orjson.OPT_INDENT_2))
        tmp.replace(self.path)
        self._records = dict(records)
        stat = self.path.stat()
        self._seen = (stat.st_mtime_ns, stat.st_size)
