"""The NATS users of a cluster on the log: a credentials file per role, and the servers' authorization
file made from them.

`<role>.json` holds `{"user": ROLE, "password": SECRET}` (mode 0600, a random 256-bit secret): a node
of that role is given the file (`--nats-credentials FILE`, or `$QUARRY_NATS_CREDENTIALS`), never the
secret on a command line or in a URL. `authorization.conf` is the `authorization` block the servers
include: each user with its password's bcrypt hash, which nats-server checks a password against, and
its role's permissions (quarry.cluster.nats_permissions). It holds no secret.

`ensure_credentials` makes what is missing and keeps what exists, so a cluster keeps its users across
restarts; `write_authorization` rewrites the server file from the role files (a new build's permissions,
a rotated secret: delete the role's file, ensure, write, and reload the servers).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import orjson

from quarry.cluster.nats_permissions import ROLES, authorization_block
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

AUTHORIZATION_FILE = "authorization.conf"
BCRYPT_ROUNDS = 11  # what `nats server passwd` uses; the secrets are random, the hash hides them only
SECRET_BYTES = 32
OPTION = "--nats-credentials"


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str = field(repr=False)


def credentials_dir(home: Path) -> Path:
    """Where a local cluster (`quarry up --log nats`) keeps its NATS users' files."""
    return home / "auth" / "nats"


def credentials_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def read_credentials(path: Path) -> Credentials:
    """The user and password of a credentials file; INVALID_REQUEST naming the file and what is wrong
    (never the secret)."""
    try:
        body = orjson.loads(path.read_bytes())
    except OSError as error:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"cannot read the NATS credentials file {path}: {error.strerror or error}",
            parameter=OPTION,
        ) from None
    except orjson.JSONDecodeError:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f'{path} is not a NATS credentials file: not JSON (expected {{"user": …, "password": …}})',
            parameter=OPTION,
        ) from None
    user = body.get("user") if isinstance(body, dict) else None
    password = body.get("password") if isinstance(body, dict) else None
    if not isinstance(user, str) or not user or not isinstance(password, str) or not password:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{path} is not a NATS credentials file: it needs a non-empty string `user` and `password`",
            parameter=OPTION,
        )
    return Credentials(user, password)


def ensure_credentials(directory: Path, names: Iterable[str] = ROLES) -> dict[str, Credentials]:
    """Each name's credentials: read from `<directory>/<name>.json`, made (random, mode 0600) when absent."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    found = {}
    for name in names:
        path = credentials_file(directory, name)
        if not path.exists():
            made = Credentials(name, secrets.token_urlsafe(SECRET_BYTES))
            write_private(path, orjson.dumps({"user": made.user, "password": made.password}) + b"\n")
        found[name] = read_credentials(path)
    return found


def password_hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_ROUNDS)).decode()


def write_authorization(directory: Path, target: Path | None = None) -> Path:
    """Write the servers' authorization file (default `<directory>/authorization.conf`) for the role
    credentials under `directory`, making those missing; returns its path."""
    users = ensure_credentials(directory)
    hashes = {role: password_hash(credentials.password) for role, credentials in users.items()}
    path = target or directory / AUTHORIZATION_FILE
    write_private(path, authorization_block(hashes).encode())
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable by its owner only (mode 0600) from its first byte on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
