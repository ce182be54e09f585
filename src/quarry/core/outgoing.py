"""What a call to another node carries (quarry.core.auth decides who a call runs for; this is the part
every client and node channel needs, kept apart so that a client, which checks no caller, does not
import the token store, hashing and the server interceptors to open a channel).

A client's calls carry its bearer token. A node configured by quarry.core.auth.configure_node carries
the cluster key, and the scopes of the call it is serving (`SCOPES`), on every call to another node.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import grpc

SCOPES_HEADER = "quarry-scopes"
CLUSTER_KEY_HEADER = "quarry-cluster-key"
SCOPES: ContextVar[frozenset[str] | None] = ContextVar("quarry_scopes", default=None)


class _Metadata(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, details: grpc.ClientCallDetails, metadata: list[tuple[str, str]]) -> None:
        self.method = details.method
        self.timeout = details.timeout
        self.metadata = metadata
        self.credentials = details.credentials
        self.wait_for_ready = getattr(details, "wait_for_ready", None)
        self.compression = getattr(details, "compression", None)


class OutgoingInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds what a call to another node carries: a bearer token (a client), or the cluster key and the
    current SCOPES (a node; `fail_closed`: an empty list when the call has none)."""

    def __init__(self, bearer: str | None = None, cluster_key: str | None = None, fail_closed: bool = False) -> None:
        self.bearer = bearer
        self.cluster_key = cluster_key
        self.fail_closed = fail_closed

    def _details(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = list(details.metadata or [])
        if self.bearer:
            metadata.append(("authorization", f"Bearer {self.bearer}"))
        if self.cluster_key:
            metadata.append((CLUSTER_KEY_HEADER, self.cluster_key))
        scopes = SCOPES.get()
        if scopes is None and self.fail_closed:
            scopes = frozenset()
        if scopes is not None:
            metadata.append((SCOPES_HEADER, ",".join(sorted(scopes))))
        return _Metadata(details, metadata)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, request_iterator: Any) -> Any:
        return continuation(self._details(details), request_iterator)

    def intercept_stream_stream(self, continuation: Any, details: Any, request_iterator: Any) -> Any:
        return continuation(self._details(details), request_iterator)


_node: OutgoingInterceptor | None = None


def configure(interceptor: OutgoingInterceptor | None) -> None:
    """What this process's node-to-node calls carry from now on (quarry.core.auth.configure_node)."""
    global _node
    _node = interceptor


def interceptor(bearer: str | None = None) -> OutgoingInterceptor | None:
    """The interceptor of a new channel: a client's bearer token when given, else this process's node
    configuration (None: its calls carry nothing)."""
    return OutgoingInterceptor(bearer=bearer) if bearer else _node
