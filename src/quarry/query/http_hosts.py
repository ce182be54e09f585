"""The names the HTTP API answers to and the pages that may call it: its defence against DNS rebinding.

A web page open in the user's browser can have the browser call any address, 127.0.0.1 included, under
a name of the page's own site (DNS rebinding: `attacker.example` made to resolve to 127.0.0.1), and read
the answers as its own. On the loopback default without tokens that is the whole archive. The browser
always says the name it called in `Host`, and the page's site in `Origin` on a cross-site call, so the
API answers only

- a `Host` among its allowed names, with any port: the loopback names (localhost, 127.0.0.1, [::1]),
  the host the API is bound to, and each name given with `--http-allowed-host`; anything else is
  refused with 421 Misdirected Request (INVALID_REQUEST on parameter `host`);
- a request without `Origin` (curl, scripts, a page of the API's own origin), or with an `Origin`
  `http(s)://NAME[:port]` whose NAME is allowed; anything else (another site, `null`) is refused
  with 403 (PERMISSION_DENIED on parameter `origin`).

`quarry mcp --http` refuses the same requests the same way (the MCP SDK's transport security: 421 and
403), there on loopback ports only.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
MISDIRECTED = 421  # the HTTP status of a Host the API does not answer to
OPTION = "--http-allowed-host"
_HOSTNAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
_HOST_HEADER = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[^:\[\]]+)(:(?P<port>[0-9]{1,5}))?")


def normalized(name: str) -> str | None:
    """A host name as the allowlist compares it: lower case, no trailing dot, an IPv6 address in
    brackets in its compressed form; None when it is not a host name or address."""
    name = name.strip().lower().removesuffix(".")
    literal = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        return name if _HOSTNAME.fullmatch(name) and literal == name else None
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


@dataclass(frozen=True)
class AllowedHosts:
    names: frozenset[str]

    @classmethod
    def of(cls, bound: str, extra: Sequence[str] = ()) -> AllowedHosts:
        """The loopback names, the host the API binds, and `extra` (INVALID_REQUEST naming the option
        for one that is not a host name or address, e.g. one with a port or a scheme)."""
        names = {name for name in (*LOOPBACK_NAMES, normalized(bound)) if name}
        for name in extra:
            allowed = normalized(name)
            if allowed is None:
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"{OPTION} {name!r} is not a host name or address (give the name alone: no scheme, no port)",
                    parameter=OPTION,
                )
            names.add(allowed)
        return cls(frozenset(names))

    def check_host(self, header: str | None) -> None:
        """Refuse a request whose Host is missing or not an allowed name (any port)."""
        match = _HOST_HEADER.fullmatch(header or "")
        name = normalized(match["name"]) if match else None
        if name not in self.names:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"this API does not answer to the host {header!r}: a page of another site may be calling it "
                f"under its own name (DNS rebinding). Its names: {', '.join(sorted(self.names))}; the query "
                f"node serves another with {OPTION} NAME",
                parameter="host",
            )

    def check_origin(self, header: str | None) -> None:
        """Refuse a browser request from a page whose origin is not on an allowed name."""
        if header is None:
            return
        try:
            origin = urllib.parse.urlsplit(header.strip())
            name = normalized(origin.hostname or "") if origin.scheme in ("http", "https") else None
            valid = name in self.names and origin.path == "" and (origin.port is None or origin.port > 0)
        except ValueError:  # a port that is no number
            valid = False
        if not valid:
            raise QuarryError(
                errors_pb2.PERMISSION_DENIED,
                f"a page of origin {header!r} may not call this API: only pages on its own names "
                f"({', '.join(sorted(self.names))}) may",
                parameter="origin",
            )
