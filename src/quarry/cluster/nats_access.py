"""How this process reaches NATS: as which user (a credentials file, quarry.cluster.nats_credentials) and
verifying the servers with which CA.

A node is configured once as it starts (`configure`, from `--nats-credentials FILE` or
`$QUARRY_NATS_CREDENTIALS`, and `--nats-tls-ca FILE`); every connection it opens
(quarry.cluster.loop.connect) then authenticates as that user, takes its replies on the role's own
inbox prefix (the only inboxes its permissions let it subscribe to), and, with a CA, speaks TLS and
checks the server's certificate against it and the address it dialled before anything else is said
(the servers' TLS is `handshake_first`). A launcher or a test that speaks for another role passes its
own `NatsAccess` to `connect`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quarry.cluster.nats_credentials import read_credentials
from quarry.cluster.nats_permissions import inbox_prefix
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2


@dataclass(frozen=True)
class NatsAccess:
    credentials: Path | None = None
    tls_ca: Path | None = None

    @property
    def user(self) -> str:
        """The user the credentials name ("" without credentials)."""
        return read_credentials(self.credentials).user if self.credentials is not None else ""

    def connect_options(self) -> dict[str, Any]:
        """nats.connect's keyword arguments for this access (the credentials file is read now)."""
        options: dict[str, Any] = {}
        if self.credentials is not None:
            credentials = read_credentials(self.credentials)
            options.update(
                user=credentials.user,
                password=credentials.password,
                inbox_prefix=inbox_prefix(credentials.user),
            )
        if self.tls_ca is not None:
            # TLS from the first byte: the client never reads a server's plaintext INFO, so a listener
            # that is not a server holding a certificate of the CA never receives the credentials.
            options.update(tls=tls_context(self.tls_ca), tls_handshake_first=True)
        return options


def tls_context(ca: Path) -> ssl.SSLContext:
    """A client context that trusts only `ca` and checks the server's name."""
    try:
        return ssl.create_default_context(cafile=str(ca))
    except (OSError, ssl.SSLError) as error:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, f"cannot read the NATS TLS CA {ca}: {error}", parameter="--nats-tls-ca"
        ) from None


_configured = NatsAccess()


def configure(access: NatsAccess) -> None:
    """This process's NATS access, for every connection that names none (read and checked now, so a
    node with an unreadable file fails as it starts, not at its first connection)."""
    global _configured
    access.connect_options()
    _configured = access


def configured() -> NatsAccess:
    return _configured
