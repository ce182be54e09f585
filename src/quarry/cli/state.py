"""What every command of the `quarry` CLI shares: the global options as parsed (`settings`, filled
by the root callback in quarry.cli.main), the cluster they name (`cluster_target`) and a client for it
(`open_client`). Command modules import this module, never the root one, so the root can import them
all without a cycle. Only the standard library is imported here: the SDK, gRPC and the contexts file
are loaded when a command asks for its cluster (tests/client/test_cli_imports.py)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quarry.client.client import QuarryClient
    from quarry.client.target import Target


class Settings:
    """The global options of the command line being run (`quarry [OPTIONS] COMMAND …`)."""

    home: Path
    format: str = "plain"
    query: str = ""  # the query being run, to point at an error's position
    explain: bool = False
    cluster: str | None = None  # --cluster URL
    context: str | None = None  # --context NAME
    ca: Path | None = None  # --ca FILE
    allow_plaintext: bool = False


settings = Settings()


@functools.cache
def cluster_target() -> Target:
    """The cluster this command talks to (quarry.client.target: --cluster, $QUARRY_URL, --context,
    $QUARRY_CONTEXT, the current context, else the local cluster under --home). Chosen once per
    command: the root callback clears the cache for every command run in this process."""
    from quarry.client.target import CLI_NAMES, resolve_target

    return resolve_target(
        settings.cluster,
        settings.context,
        ca=settings.ca,
        home=settings.home,
        allow_plaintext=settings.allow_plaintext,
        names=CLI_NAMES,
    )


def open_client() -> QuarryClient:
    """A client for `cluster_target()`, to use in a `with` block."""
    from quarry.client.client import QuarryClient

    return QuarryClient.for_target(cluster_target())
