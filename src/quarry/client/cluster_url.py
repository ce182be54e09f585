"""Cluster URLs: where a client finds a cluster that `quarry up` did not start on this machine.

    grpc://HOST:PORT      the query node, plaintext
    grpcs://HOST:PORT     the query node, TLS (verified with a CA file, else the system's roots)
    …?ingest=HOST:PORT    and its ingest node (same scheme)

A plaintext URL to a host beyond loopback is refused unless the caller allows it explicitly
(`require_private`): every call carries a bearer token and session text, which would cross the network
readable by anyone on the path. Credentials never go in a URL (it ends up in shell history, process
lists and logs): tokens come from $QUARRY_TOKEN or a context's token file.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from quarry.core.addresses import is_loopback
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

SCHEMES = {"grpc": False, "grpcs": True}  # scheme -> TLS
INGEST_PARAMETER = "ingest"


@dataclass(frozen=True)
class ClusterUrl:
    text: str
    host: str  # the query node's host, as written (an IPv6 address without brackets)
    port: int
    tls: bool
    ingest: str | None  # HOST:PORT of the ingest node, when the URL names it

    @property
    def query(self) -> str:
        """The query node's address as gRPC dials it."""
        return join_host_port(self.host, self.port)


def parse_cluster_url(text: str, parameter: str) -> ClusterUrl:
    """`text` as a cluster URL; INVALID_REQUEST naming `parameter` (the option, variable or context field
    it came from) and what is wrong."""

    def bad(why: str, shown: str = text) -> QuarryError:
        return QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{parameter} {shown!r} is not a cluster URL: {why} (grpc://HOST:PORT or grpcs://HOST:PORT, "
            "optionally ?ingest=HOST:PORT)",
            parameter=parameter,
        )

    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as error:
        raise bad(str(error)) from None
    if parts.scheme not in SCHEMES:
        raise bad(f"the scheme must be grpc or grpcs, not {parts.scheme or 'missing'!r}")
    if parts.username is not None or parts.password is not None:
        shown = parts._replace(netloc="…@" + parts.netloc.rpartition("@")[2]).geturl()  # not echoing the secret
        raise bad("credentials do not go in a URL: use $QUARRY_TOKEN or a context's --token-file", shown)
    if not parts.hostname:
        raise bad("it names no host")
    if port is None or port == 0:
        raise bad("it names no port")
    if parts.path not in ("", "/") or parts.fragment:
        raise bad("it has a path or fragment")
    try:
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise bad(f"its query {parts.query!r} is not NAME=VALUE pairs") from None
    unknown = sorted(set(query) - {INGEST_PARAMETER})
    if unknown:
        raise bad(f"unknown parameter {unknown[0]!r}")
    ingest_values = query.get(INGEST_PARAMETER, [])
    if len(ingest_values) > 1:
        raise bad("ingest is given twice")
    try:
        ingest = parse_host_port(ingest_values[0], parameter) if ingest_values else None
    except QuarryError:
        raise bad(f"ingest={ingest_values[0]!r} is not HOST:PORT") from None
    return ClusterUrl(text=text.strip(), host=parts.hostname, port=port, tls=SCHEMES[parts.scheme], ingest=ingest)


def parse_host_port(text: str, parameter: str) -> str:
    """HOST:PORT (an IPv6 host in brackets), normalized; INVALID_REQUEST naming `parameter` otherwise."""
    try:
        parts = urlsplit(f"//{text.strip()}")
        port = parts.port
    except ValueError:
        port = None
        parts = None
    if parts is None or not parts.hostname or not port or parts.path or parts.query or parts.username:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"{parameter} {text!r} is not HOST:PORT", parameter=parameter)
    return join_host_port(parts.hostname, port)


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_port(address: str) -> int | None:
    """The port of a HOST:PORT address, None when it has none."""
    _, _, port = address.rpartition(":")
    return int(port) if port.isdigit() else None


def require_private(url: ClusterUrl, allow_plaintext: bool, parameter: str, flag: str) -> None:
    """A plaintext URL to a host beyond loopback, unless `allow_plaintext`: INVALID_REQUEST naming `flag`,
    the explicit way to insist."""
    if url.tls or allow_plaintext or is_loopback(url.host):
        return
    raise QuarryError(
        errors_pb2.INVALID_REQUEST,
        f"{parameter} {url.text!r} is plaintext to {url.host}, beyond this machine: tokens and sessions would "
        f"cross the network unencrypted. Use grpcs://, or pass {flag} to insist",
        parameter=parameter,
    )
