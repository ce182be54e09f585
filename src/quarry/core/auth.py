"""Who a call runs for, on every node, and how that travels between nodes.

The public surfaces (the query node's gRPC and HTTP, the ingest node) authenticate every call by its
`authorization: Bearer <token>` against the token file (quarry.core.tokens), never by anything in the
request body. Each method needs one grant (`GRANT_BY_METHOD`: reads `read`, writes `write`, embedding
backfills `admin`); a caller holding it on no scope is refused before anything is read. The call then
runs with `CALLER` set and with `SCOPES`, the scopes it may touch with that grant, which every call the
node makes to index nodes carries as `quarry-scopes` metadata: an index node limits every read (hits,
unit rows, facet counts, refs, session reads, id lookups) and every delete to those scopes' sessions.
A public node with authentication sends an empty scope list when a call of its own carries none, so a
forgotten context fails closed.

Between nodes a shared cluster key (`quarry-cluster-key`) proves the caller is a node: index and
vector nodes given one refuse any call without it, so the scope header cannot be forged from outside.
Without a token file and a cluster key (the embedded default on loopback) nothing is checked and every
session is in the scope `default`.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from quarry.core import outgoing as outgoing_calls
from quarry.core.addresses import is_loopback
from quarry.core.errors import QuarryError
from quarry.core.handlers import rebuilt
from quarry.core.outgoing import CLUSTER_KEY_HEADER, SCOPES, SCOPES_HEADER, OutgoingInterceptor
from quarry.core.tokens import ADMIN, READ, WRITE, Caller, TokenStore
from quarry.v1 import errors_pb2

CALLER: ContextVar[Caller | None] = ContextVar("quarry_caller", default=None)
CLUSTER_KEY_FILE = "cluster.key"
_OPEN_SERVICES = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection")
_OPEN_PREFIXES = tuple(f"/{service}/" for service in _OPEN_SERVICES)  # never need a token

GRANT_BY_METHOD: dict[str, str] = {
    **{
        f"/quarry.v1.QueryService/{m}": READ
        for m in ("Search", "QueryUnits", "ClusterStatus", "Explain", "ResolveRef", "ListCandidates", "Facets", "Usage")
    },
    "/quarry.v1.QueryService/WriteAssertion": WRITE,
    "/quarry.v1.QueryService/JudgeCandidate": WRITE,
    **{
        f"/quarry.v1.SessionQueryService/{m}": READ
        for m in (
            "ListSessions",
            "ReadSession",
            "ReadSurface",
            "ListEvents",
            "ReadEvent",
            "TraceEvent",
            "TraceSession",
            "SearchSessions",
            "SearchEvents",
            "ReadTitles",
        )
    },
    "/quarry.v1.EmbeddingService/Status": READ,
    "/quarry.v1.EmbeddingService/Preflight": READ,
    "/quarry.v1.EmbeddingService/Backfill": ADMIN,
    "/quarry.v1.IngestService/IngestSessions": WRITE,
    "/quarry.v1.IngestService/IngestPaths": ADMIN,  # reads the ingest node's own files: an operator's tool
    "/quarry.v1.IngestService/DescribeArchive": WRITE,
    "/quarry.v1.IngestService/DeleteSessions": WRITE,
}


def unauthenticated(why: str) -> QuarryError:
    return QuarryError(errors_pb2.UNAUTHENTICATED, why, parameter="authorization")


def denied(why: str) -> QuarryError:
    return QuarryError(errors_pb2.PERMISSION_DENIED, why)


def bearer_token(value: str | None) -> str:
    """The token of an `Authorization` value, or UNAUTHENTICATED saying what is wrong with it."""
    if not value:
        raise unauthenticated("this cluster requires a token: send `authorization: Bearer <token>`")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthenticated("the authorization header must be `Bearer <token>`")
    return token.strip()


@dataclass(frozen=True)
class Gate:
    """A public node's authentication: the token file (None: the cluster runs without authentication)."""

    tokens: TokenStore | None

    @property
    def enabled(self) -> bool:
        return self.tokens is not None

    def admit(self, authorization: str | None, grant: str) -> tuple[Caller | None, frozenset[str] | None]:
        """The caller and the scopes it may touch with `grant`; raises UNAUTHENTICATED / PERMISSION_DENIED."""
        if self.tokens is None:
            return None, None
        caller = self.tokens.authenticate(bearer_token(authorization))
        if caller is None:
            raise unauthenticated("the token is not valid (unknown, revoked or malformed)")
        scopes = caller.scopes(grant)
        if not scopes:
            raise denied(f"the token grants `{grant}` on no scope")
        return caller, scopes


def run_as(caller: Caller | None, scopes: frozenset[str] | None, fn: Callable[..., Any], *args: Any) -> Any:
    """Call `fn` with CALLER and SCOPES set (for work that is not a gRPC handler, e.g. an HTTP route)."""
    caller_token, scopes_token = CALLER.set(caller), SCOPES.set(scopes)
    try:
        return fn(*args)
    finally:
        CALLER.reset(caller_token)
        SCOPES.reset(scopes_token)


def scopes_key() -> bytes:
    """The current call's scopes as bytes for a digest (empty without authentication)."""
    scopes = SCOPES.get()
    return b"" if scopes is None else b"\0scopes:" + ",".join(sorted(scopes)).encode()


def may_see_local_paths() -> bool:
    """Absolute local paths (a session's source file) go to admins only, and everywhere without authentication."""
    caller = CALLER.get()
    return caller is None or any(ADMIN in held for held in caller.grants.values())


LOCAL_PATH_FIELDS = frozenset({"source_path", "stored_source_path", "data_dir"})
_holds_paths: dict[str, bool] = {}


def redact_local_paths(message: Message) -> Message:
    """Clear, in place, every field naming a file or directory on a node's machine (LOCAL_PATH_FIELDS)
    for a caller without `admin`; returns the message."""
    if not may_see_local_paths():
        _clear_paths(message)
    return message


def _clear_paths(message: Message) -> None:
    descriptor = message.DESCRIPTOR
    if not _holds(descriptor):
        return
    for field, value in message.ListFields():
        if field.name in LOCAL_PATH_FIELDS and field.type == FieldDescriptor.TYPE_STRING:
            message.ClearField(field.name)
        elif field.type == FieldDescriptor.TYPE_MESSAGE and _holds(field.message_type):
            if field.message_type.GetOptions().map_entry:
                values = value.values() if field.message_type.fields_by_name["value"].message_type else []
            else:
                values = value if field.is_repeated else [value]
            for item in values:
                _clear_paths(item)


def _holds(descriptor: Descriptor, seen: frozenset[str] = frozenset()) -> bool:
    """Whether messages of this type can carry a local path field, at any depth (cached per type)."""
    name = descriptor.full_name
    if name in _holds_paths:
        return _holds_paths[name]
    if name in seen:
        return False
    found = any(
        (field.name in LOCAL_PATH_FIELDS and field.type == FieldDescriptor.TYPE_STRING)
        or (field.type == FieldDescriptor.TYPE_MESSAGE and _holds(field.message_type, seen | {name}))
        for field in descriptor.fields
    )
    if not seen:
        _holds_paths[name] = found
    return found


def _abort(context: grpc.ServicerContext, error: QuarryError) -> None:
    context.abort_with_status(error.to_status())


def _with_context(
    handler: grpc.RpcMethodHandler,
    admit: Callable[[dict[str, str]], tuple[Caller | None, frozenset[str] | None]],
    respond: Callable[[Any], Any] = lambda response: response,
) -> Any:
    """The handler run with CALLER and SCOPES from `admit` (which refuses by raising), each response
    passed through `respond` within them."""
    streaming = bool(handler.unary_stream or handler.stream_stream)

    def wrap(behavior: Callable[..., Any]) -> Callable[..., Any]:
        def admitted(context: grpc.ServicerContext) -> tuple[Any, Any] | None:
            metadata = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
            try:
                caller, scopes = admit(metadata)
            except QuarryError as error:
                _abort(context, error)
                return None
            return CALLER.set(caller), SCOPES.set(scopes)

        def unary(request: Any, context: grpc.ServicerContext) -> Any:
            tokens = admitted(context)
            assert tokens is not None
            try:
                return respond(behavior(request, context))
            finally:
                CALLER.reset(tokens[0])
                SCOPES.reset(tokens[1])

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            tokens = admitted(context)
            assert tokens is not None
            try:
                for response in behavior(request, context):
                    yield respond(response)
            finally:
                CALLER.reset(tokens[0])
                SCOPES.reset(tokens[1])

        return stream if streaming else unary

    return rebuilt(handler, wrap)


class PublicInterceptor(grpc.ServerInterceptor):
    """On a public node: every call of a Quarry service is admitted by the gate or refused."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        method = details.method
        if handler is None or method.startswith(_OPEN_PREFIXES):
            return handler
        grant = GRANT_BY_METHOD.get(method)

        def admit(metadata: dict[str, str]) -> tuple[Caller | None, frozenset[str] | None]:
            if grant is None:  # a method nobody classified is nobody's
                raise denied(f"{method} is not served to clients")
            caller, scopes = self.gate.admit(metadata.get("authorization"), grant)
            return caller, scopes

        return _with_context(handler, admit, redact_local_paths)


class NodeInterceptor(grpc.ServerInterceptor):
    """On an index or vector node: with a cluster key, calls must carry it; `quarry-scopes` sets SCOPES."""

    def __init__(self, cluster_key: str | None) -> None:
        self.cluster_key = cluster_key

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or details.method.startswith(_OPEN_PREFIXES):
            return handler

        def admit(metadata: dict[str, str]) -> tuple[Caller | None, frozenset[str] | None]:
            if self.cluster_key is not None:
                presented = metadata.get(CLUSTER_KEY_HEADER, "")
                if not hmac.compare_digest(presented.encode(), self.cluster_key.encode()):
                    raise unauthenticated("node-to-node calls need this cluster's key")
            return None, parse_scopes(metadata.get(SCOPES_HEADER))

        return _with_context(handler, admit)


# The services of the partitions, which only nodes call (with the cluster key), also on a query node
# that holds the partitions itself.
PARTITION_SERVICES = ("quarry.v1.IndexService", "quarry.v1.AssertionService", "quarry.v1.SessionStoreService")
_PARTITION_PREFIXES = tuple(f"/{service}/" for service in PARTITION_SERVICES)


class SplitInterceptor(grpc.ServerInterceptor):
    """On a query node holding the partitions: calls of the partitions' services are checked as on an
    index node (`partitions`: the cluster key), every other call as on a public node (`public`)."""

    def __init__(self, public: grpc.ServerInterceptor | None, partitions: grpc.ServerInterceptor) -> None:
        self.public = public
        self.partitions = partitions

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        chosen = self.partitions if details.method.startswith(_PARTITION_PREFIXES) else self.public
        return chosen.intercept_service(continuation, details) if chosen is not None else continuation(details)


def parse_scopes(header: str | None) -> frozenset[str] | None:
    if header is None:
        return None
    return frozenset(s for s in header.split(",") if s)


@dataclass(frozen=True)
class NodeSecurity:
    """How this process's node checks its callers and identifies itself to other nodes."""

    gate: Gate = Gate(None)
    server: grpc.ServerInterceptor | None = None
    outgoing: OutgoingInterceptor | None = None
    cluster_key: str | None = None  # the shared key the node was given (--cluster-key-file), None without


_security = NodeSecurity()


def configure_node(
    role: str, host: str, tokens: Path | None, cluster_key_file: Path | None, holds_partitions: bool = False
) -> NodeSecurity:
    """This process is a node of `role` bound to `host`. A public node (query, ingest) checks bearer
    tokens against `tokens`; index and vector nodes check the cluster key. Calls to other nodes carry the
    key, and a public node's carry its caller's scopes, failing closed. Beyond loopback, a node without
    its authentication refuses to start. A query node that `holds_partitions` serves their services on
    its port too, to the other nodes: those calls need the cluster key, and a node checking tokens
    refuses to start without one (its partitions would be open to anyone who reaches the port)."""
    global _security
    public = role in ("query", "ingest")
    cluster_key = read_cluster_key(cluster_key_file)
    gate = Gate(TokenStore(tokens) if tokens is not None and public else None)
    require_auth_off_loopback(role, host, gate.enabled if public else cluster_key is not None)
    server: grpc.ServerInterceptor | None
    if holds_partitions:
        server = _holding_partitions(gate, cluster_key)
    elif public:
        server = PublicInterceptor(gate) if gate.enabled else None
    else:
        server = NodeInterceptor(cluster_key) if cluster_key is not None else None
    fail_closed = gate.enabled
    outgoing = (
        OutgoingInterceptor(cluster_key=cluster_key, fail_closed=fail_closed) if cluster_key or fail_closed else None
    )
    _security = NodeSecurity(gate, server, outgoing, cluster_key)
    outgoing_calls.configure(outgoing)
    return _security


def _holding_partitions(gate: Gate, cluster_key: str | None) -> grpc.ServerInterceptor | None:
    if cluster_key is None:
        if gate.enabled:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                "a query node holding the partitions serves them on its port to the other nodes: with --tokens "
                "it needs --cluster-key-file too",
                parameter="--cluster-key-file",
            )
        return None
    return SplitInterceptor(PublicInterceptor(gate) if gate.enabled else None, NodeInterceptor(cluster_key))


def security() -> NodeSecurity:
    """This process's node security (nothing checked, nothing carried, until configure_node)."""
    return _security


def server_interceptors() -> list[grpc.ServerInterceptor]:
    return [_security.server] if _security.server is not None else []


def ensure_cluster_key(path: Path) -> None:
    """Write a random cluster key (mode 0600) unless there is one."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(32) + "\n")


def read_cluster_key(path: Path | None) -> str | None:
    if path is None:
        return None
    key = path.read_text().strip()
    if len(key) < 32:
        raise QuarryError(errors_pb2.INVALID_REQUEST, f"{path}: a cluster key has at least 32 characters")
    return key


def require_auth_off_loopback(role: str, host: str, configured: bool) -> None:
    """A node bound beyond loopback refuses to start without authentication configured."""
    if not configured and not is_loopback(host):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"the {role} node binds {host}, beyond loopback, without authentication: give it "
            f"{'--tokens FILE' if role in ('query', 'ingest') else '--cluster-key-file FILE'} "
            "(see `quarry token create`), or bind 127.0.0.1",
            parameter="--host",
        )
