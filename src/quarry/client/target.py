"""Which cluster a client talks to, and with what token and CA: one order of precedence for the CLI,
`quarry mcp` and QuarryClient.connect.

    1. a URL given to the call          (`quarry --cluster URL`, `connect(url=…)`)
    2. $QUARRY_URL
    3. a context given to the call      (`quarry --context NAME`, `connect(context=…)`)
    4. $QUARRY_CONTEXT
    5. the current context              (`quarry context use NAME`)
    6. the local cluster `quarry up` recorded under the data directory (--home, $QUARRY_HOME, per-user)

The context `local` is the local cluster, so `--context local` reaches it whatever is current. The token
is the call's, else $QUARRY_TOKEN, else the context's token file (refused when group or others may read
or write it). A grpcs:// cluster is verified with the call's CA file, else $QUARRY_TLS_CA, else the
context's, else the system's roots. Without an ingest address (`?ingest=` or the context's) ingest calls
go to the query node's host at the port the cluster reports for its ingest node (QuarryClient).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from quarry.client.cluster_url import ClusterUrl, parse_cluster_url, parse_host_port, require_private
from quarry.client.contexts import LOCAL, Context, ContextStore, check_name
from quarry.core.config import ClusterInfo, resolve_home
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

TOKEN_ENV = "QUARRY_TOKEN"
TLS_CA_ENV = "QUARRY_TLS_CA"
URL_ENV = "QUARRY_URL"
CONTEXT_ENV = "QUARRY_CONTEXT"


class Names(NamedTuple):
    """What the caller calls each input, for errors that say where a wrong value came from."""

    url: str = "url"
    context: str = "context"
    ca: str = "ca"
    allow_plaintext: str = "allow_plaintext=True"


PYTHON_NAMES = Names()
CLI_NAMES = Names("--cluster", "--context", "--ca", "--allow-plaintext")


@dataclass(frozen=True)
class Target:
    """Where a client's calls go and what they carry."""

    query: str  # the query node's HOST:PORT
    ingest: str | None  # the ingest node's; None: ask the cluster (QuarryClient)
    tls: bool
    ca: Path | None  # None with tls: the system's roots
    token: str | None = dataclasses.field(repr=False)
    home: Path | None = None  # the data directory, when this is the local cluster under it

    def with_token(self, token: str | None) -> Target:
        return dataclasses.replace(self, token=token)


def resolve_target(
    url: str | None = None,
    context: str | None = None,
    token: str | None = None,
    ca: str | Path | None = None,
    home: str | Path | None = None,
    allow_plaintext: bool = False,
    names: Names = PYTHON_NAMES,
    store: ContextStore | None = None,
) -> Target:
    """The cluster the arguments, the environment and the contexts file select (the module's order)."""
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    chosen_ca = _given_ca(ca, names.ca)
    for text, parameter in ((url, names.url), (os.environ.get(URL_ENV), URL_ENV)):
        if text:
            parsed = parse_cluster_url(text, parameter)
            require_private(parsed, allow_plaintext, parameter, names.allow_plaintext)
            return _remote(parsed, parsed.ingest, chosen_ca, token, names.ca)
    store = store if store is not None else ContextStore()
    name, parameter, source = _context_name(context, names.context)
    contexts = store.load() if name != LOCAL else None  # no file: no contexts, and no YAML to import
    if contexts is not None and not name:
        name, parameter, source = contexts.current, "current-context", f"the current context in {store.path}"
    if contexts is None or not name:
        return local_target(home, token)
    return _from_context(contexts.get(name, parameter, source), chosen_ca, token, allow_plaintext, names)


def local_target(home: str | Path | None, token: str | None) -> Target:
    """The cluster `quarry up` recorded under the data directory; NODE_UNAVAILABLE when none runs there."""
    resolved = resolve_home(home)
    info = ClusterInfo.load(resolved)
    if info is None:
        raise QuarryError(
            errors_pb2.NODE_UNAVAILABLE,
            f"no cluster is running under {resolved}: start one with `quarry up` (or pass --home), "
            "or name a remote one with --cluster URL or --context NAME",
        )
    ca_path = info.tls_ca or os.environ.get(TLS_CA_ENV) or ""
    ca = Path(ca_path) if ca_path else None
    return Target(info.query, info.ingest, ca is not None, ca, token, home=resolved)


def read_token_file(path: Path, parameter: str) -> str:
    """The token a token file holds (its first line); refused when group or others may read or write the
    file (a token anyone else can read is theirs too; one they can write makes your writes theirs)."""
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            text = handle.read().decode("utf-8", "replace")
    except OSError as error:
        raise QuarryError(
            errors_pb2.NOT_FOUND, f"cannot read the token file {path}: {error.strerror}", parameter=parameter
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise QuarryError(
            errors_pb2.PERMISSION_DENIED,
            f"the token file {path} is open to group or others (mode {stat.filemode(mode)}): `chmod 600 {path}`",
            parameter=parameter,
        )
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"the token file {path} is empty", parameter=parameter)
    return token


def check_ca_file(path: Path, parameter: str) -> Path:
    """`path`, absolute, when it is a readable file; NOT_FOUND naming where it came from otherwise."""
    if not path.is_file() or not os.access(path, os.R_OK):
        raise QuarryError(
            errors_pb2.NOT_FOUND,
            f"the CA file {path} ({parameter}) does not exist or cannot be read",
            parameter=parameter,
        )
    return path.resolve()


def _given_ca(ca: str | Path | None, parameter: str) -> tuple[Path, str] | None:
    """The CA the call or $QUARRY_TLS_CA names, with where it came from."""
    if ca:
        return Path(ca).expanduser(), parameter
    env = os.environ.get(TLS_CA_ENV)
    return (Path(env).expanduser(), TLS_CA_ENV) if env else None


def _context_name(given: str | None, parameter: str) -> tuple[str, str, str]:
    """(name, parameter, source) of the context the call or $QUARRY_CONTEXT names; "" for neither."""
    if given:
        return check_name(given, parameter), parameter, parameter
    env = os.environ.get(CONTEXT_ENV)
    if env:
        return check_name(env, CONTEXT_ENV), CONTEXT_ENV, CONTEXT_ENV
    return "", "", ""


def _from_context(
    context: Context, given_ca: tuple[Path, str] | None, token: str | None, allow_plaintext: bool, names: Names
) -> Target:
    where = f"contexts.{context.name}"
    parsed = parse_cluster_url(context.cluster, f"{where}.cluster")
    require_private(parsed, allow_plaintext or context.allow_plaintext, f"{where}.cluster", names.allow_plaintext)
    ingest = parsed.ingest or (parse_host_port(context.ingest, f"{where}.ingest") if context.ingest else None)
    ca = given_ca or ((Path(context.ca), f"{where}.ca") if context.ca else None)
    if token is None and context.token_file:
        token = read_token_file(Path(context.token_file), f"{where}.token-file")
    return _remote(parsed, ingest, ca, token, names.ca)


def _remote(
    url: ClusterUrl, ingest: str | None, ca: tuple[Path, str] | None, token: str | None, ca_name: str
) -> Target:
    """A target of a URL; a CA named for a plaintext URL is refused when the call named it, and unused
    (a default for TLS clusters) when it came from the environment or a context."""
    if not url.tls:
        if ca is not None and ca[1] == ca_name:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"{ca_name} verifies a TLS cluster, but {url.text!r} is plaintext (grpc://): use grpcs://",
                parameter=ca_name,
            )
        return Target(url.query, ingest, False, None, token)
    checked = check_ca_file(*ca) if ca is not None else None
    return Target(url.query, ingest, True, checked, token)
