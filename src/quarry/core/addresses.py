"""Whether an address is this machine's own: what decides if a node may run without authentication and
a client may speak plaintext; and the host a peer on this machine dials for a bound one. Kept apart
(stdlib only) so that a client tests an address without importing the server side of authentication."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost`, or an IPv4 / IPv6 loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dialed_host(bound: str) -> str:
    """The host a peer on this machine dials to reach a server bound to `bound` (every interface: loopback)."""
    return "127.0.0.1" if bound in ("0.0.0.0", "::") else bound
