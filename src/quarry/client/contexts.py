"""Named clusters (contexts), in the manner of kubectl's: a per-user file of cluster URLs with the CA and
token file to reach each, and which one is current.

The file is `$XDG_CONFIG_HOME/quarry/contexts.yaml` (else `~/.config/quarry/contexts.yaml`):

    current-context: team
    contexts:
      team:
        cluster: grpcs://quarry.example.com:7443
        ingest: quarry-ingest.example.com:7444      # optional
        ca: /home/me/.config/quarry/team-ca.pem     # optional: else the system's roots
        token-file: /home/me/.config/quarry/team.token
        allow-plaintext: false                      # optional: a grpc:// URL beyond loopback

It holds no secret (a token stays in its own file), but it says where the token is sent: a file another
user could write would let them redirect it, so one open to writes by group or others is refused. Every
write replaces the whole file atomically (mode 0600, in a 0700 folder) under a lock, so concurrent
`quarry context` commands never leave half a file or lose each other's changes.

`local` names the cluster `quarry up` runs under the data directory; it is not stored, and cannot be
replaced or removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

CONTEXTS_FILE = "contexts.yaml"
LOCAL = "local"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
CURRENT_KEY = "current-context"
FIELDS = ("cluster", "ingest", "ca", "token-file", "allow-plaintext")


def config_dir() -> Path:
    """Quarry's per-user configuration folder (XDG: a relative $XDG_CONFIG_HOME is ignored)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "quarry"


def check_name(name: str, parameter: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{name!r} is not a context name: 1-63 of A-Z a-z 0-9 . _ -, starting with a letter or digit",
            parameter=parameter,
        )
    return name


@dataclass(frozen=True)
class Context:
    """One named cluster. Paths are absolute; empty strings are fields not given."""

    name: str
    cluster: str
    ingest: str = ""
    ca: str = ""
    token_file: str = ""
    allow_plaintext: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster}
        for key, value in (("ingest", self.ingest), ("ca", self.ca), ("token-file", self.token_file)):
            if value:
                out[key] = value
        if self.allow_plaintext:
            out["allow-plaintext"] = True
        return out


@dataclass
class Contexts:
    """The file's contents: the contexts by name, and the current one ("" for the local cluster)."""

    current: str = ""
    contexts: dict[str, Context] = field(default_factory=dict)

    def get(self, name: str, parameter: str, source: str) -> Context:
        """The context `name`; NOT_FOUND naming where the name came from and which contexts exist."""
        found = self.contexts.get(name)
        if found is None:
            known = ", ".join([LOCAL, *sorted(self.contexts)])
            raise QuarryError(
                errors_pb2.NOT_FOUND,
                f"no context {name!r} ({source}); the contexts are {known} (`quarry context add`)",
                parameter=parameter,
            )
        return found


class ContextStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / CONTEXTS_FILE

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> Contexts:
        """The file's contexts (none when there is no file); INVALID_REQUEST naming the file and the
        entry when it is malformed, or open to writes by other users."""
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                text = handle.read()
        except FileNotFoundError:
            return Contexts()
        except OSError as error:
            raise self._bad("", f"cannot be read: {error.strerror}") from None
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise self._bad(
                "",
                f"another user may change it (owner uid {info.st_uid}, mode {stat.filemode(info.st_mode)}), "
                f"so it could send your tokens elsewhere: `chmod 600 {self.path}`",
            )
        import yaml  # only a command that reads contexts pays for it (tests/client/test_cli_imports.py)

        try:
            body = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise self._bad("", f"not YAML: {error}") from None
        return self._parse(body if body is not None else {})

    def add(self, context: Context) -> bool:
        """Store `context` (replacing one of the same name); True when it replaced one."""
        with self._update() as contexts:
            replaced = context.name in contexts.contexts
            contexts.contexts[context.name] = context
        return replaced

    def use(self, name: str) -> None:
        """Make `name` the current context (`local`: the local cluster)."""
        with self._update() as contexts:
            if name != LOCAL:
                contexts.get(name, "name", "quarry context use")
            contexts.current = "" if name == LOCAL else name

    def remove(self, name: str) -> None:
        """Forget `name`; when it was current, the local cluster becomes current."""
        with self._update() as contexts:
            contexts.get(name, "name", "quarry context remove")
            del contexts.contexts[name]
            if contexts.current == name:
                contexts.current = ""

    @contextlib.contextmanager
    def _update(self) -> Iterator[Contexts]:
        """Read, change and write the file under an exclusive lock (a sibling lock file: the file itself
        is replaced, so a lock on it would be a lock on the old one)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            contexts = self.load()
            yield contexts
            self._write(contexts)
        finally:
            os.close(lock)

    def _write(self, contexts: Contexts) -> None:
        import yaml

        body: dict[str, Any] = {}
        if contexts.current:
            body[CURRENT_KEY] = contexts.current
        body["contexts"] = {name: contexts.contexts[name].to_json() for name in sorted(contexts.contexts)}
        text = "# Quarry's named clusters: `quarry context add|use|list|remove` keep this file.\n"
        text += yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _parse(self, body: Any) -> Contexts:
        if not isinstance(body, dict):
            raise self._bad("", "not a mapping of current-context and contexts")
        unknown = sorted(set(body) - {CURRENT_KEY, "contexts"})
        if unknown:
            raise self._bad(unknown[0], f"unknown key {unknown[0]!r}")
        current = body.get(CURRENT_KEY) or ""
        if not isinstance(current, str):
            raise self._bad(CURRENT_KEY, f"{CURRENT_KEY} is not a name")
        entries = body.get("contexts") or {}
        if not isinstance(entries, dict):
            raise self._bad("contexts", "contexts is not a mapping of names to contexts")
        contexts = Contexts(current=current)
        for name, entry in entries.items():
            where = f"contexts.{name}"
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name == LOCAL:
                raise self._bad(where, f"{name!r} is not a context name")
            contexts.contexts[name] = self._context(name, entry, where)
        return contexts

    def _context(self, name: str, entry: Any, where: str) -> Context:
        if not isinstance(entry, dict):
            raise self._bad(where, f"{where} is not a mapping")
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            raise self._bad(f"{where}.{unknown[0]}", f"{where} has an unknown field {unknown[0]!r}")
        for key in ("cluster", "ingest", "ca", "token-file"):
            if not isinstance(entry.get(key, ""), str):
                raise self._bad(f"{where}.{key}", f"{where}.{key} is not a string")
        if not entry.get("cluster"):
            raise self._bad(f"{where}.cluster", f"{where} has no cluster URL")
        if not isinstance(entry.get("allow-plaintext", False), bool):
            raise self._bad(f"{where}.allow-plaintext", f"{where}.allow-plaintext is not true or false")
        return Context(
            name=name,
            cluster=entry["cluster"],
            ingest=entry.get("ingest", ""),
            ca=entry.get("ca", ""),
            token_file=entry.get("token-file", ""),
            allow_plaintext=entry.get("allow-plaintext", False),
        )

    def _bad(self, where: str, why: str) -> QuarryError:
        return QuarryError(
            errors_pb2.INVALID_REQUEST, f"contexts file {self.path}: {why}", parameter=where or str(self.path)
        )
