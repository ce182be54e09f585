"""Calls to a service of this very process through its generated stubs, without the wire.

When the query node holds the partitions itself (the embedded default), each search would otherwise
cross loopback gRPC to reach them: a request serialized, sent, parsed, answered, serialized back and
parsed again, about a millisecond of Python per call on this class of machine (bench/hop_cost.py). As
Quickwit runs its services in one process with local clients, the services registered here answer
through the same stubs (`IndexServiceStub(services.channel())`): the servicer is called with the
request object itself, in the caller's thread.

What a call carries across a node boundary still holds: the servicer runs with no caller and with the
scopes the call would have sent (quarry.core.outgoing: the caller's, or none at all when the node fails
closed), and a typed error aborts it exactly as on the wire (the caller's `from_rpc_error` reads it
back). A request or an answer is not copied: neither side keeps or changes one after the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from quarry.core import auth, outgoing, telemetry
from quarry.core.node import Service


class InProcessServices:
    """The method handlers of services registered here; the generated `add_…_to_server` takes this as
    its server."""

    def __init__(self) -> None:
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        """Generated code registers each service twice; its registered handlers (below) name every method."""

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        for name, handler in handlers.items():
            self._handlers[f"/{service}/{name}"] = handler

    def channel(self) -> InProcessChannel:
        return InProcessChannel(self)

    def handler(self, method: str) -> grpc.RpcMethodHandler:
        found = self._handlers.get(method)
        if found is None:
            raise ValueError(f"{method} is not served in this process")
        return found


@dataclass(frozen=True)
class LocalNode:
    """A node of the cluster's map that is this very process (the query node holding the partitions):
    its name in the map, and its services, called in-process."""

    name: str
    services: InProcessServices


@dataclass(frozen=True)
class HeldServices:
    """Another node's services this process serves as well (a query node holding the partitions): on
    its port, for the other nodes, and in-process, for itself as `node`; `close` when it stops."""

    node: str
    services: Sequence[Service]
    close: Callable[[], None]

    def local_node(self) -> LocalNode:
        registry = InProcessServices()
        for service in self.services:
            service.add_servicer(service.servicer, registry)
        return LocalNode(self.node, registry)


class InProcessChannel:
    """What a generated stub needs of a channel (`unary_unary`, `unary_stream`), answered here."""

    def __init__(self, services: InProcessServices) -> None:
        self._services = services

    def unary_unary(self, method: str, *_: Any, **__: Any) -> Callable[..., Any]:
        return _Call(method, lambda: self._services.handler(method).unary_unary)

    def unary_stream(self, method: str, *_: Any, **__: Any) -> Callable[..., Any]:
        return _Call(method, lambda: self._services.handler(method).unary_stream)

    def close(self) -> None:
        return None


class InProcessError(grpc.RpcError):
    """A call aborted here, read back like a call aborted on the wire (code, details, trailing metadata)."""

    def __init__(self, status: grpc.Status) -> None:
        super().__init__(status.details)
        self._status = status

    def code(self) -> grpc.StatusCode:
        return self._status.code

    def details(self) -> str:
        return self._status.details

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        return tuple(self._status.trailing_metadata or ())


class _Call:
    """One method of a stub: the servicer's behaviour, run as a node's incoming call would run."""

    def __init__(self, method: str, behaviour: Callable[[], Callable[[Any, Any], Any]]) -> None:
        self._method = method
        self._behaviour = behaviour

    def __call__(self, request: Any, timeout: float | None = None, **_: Any) -> Any:
        scopes = outgoing.SCOPES.get()
        if scopes is None and _fails_closed():
            scopes = frozenset()
        if not telemetry.tracing_enabled():
            return self._run(request, scopes)
        with telemetry.tracer("quarry.in_process").start_as_current_span(self._method):
            return self._run(request, scopes)

    def _run(self, request: Any, scopes: frozenset[str] | None) -> Any:
        try:
            return auth.run_as(None, scopes, self._behaviour(), request, _Context())
        except InProcessError:
            raise
        except Exception as error:  # what gRPC answers for a handler that raised: UNKNOWN, with the text
            status = _Status(grpc.StatusCode.UNKNOWN, f"Exception calling application: {error}", ())
            raise InProcessError(status) from error


def _fails_closed() -> bool:
    carried = auth.security().outgoing
    return carried is not None and carried.fail_closed


class _Context:
    """The servicer context of a call made here: aborting raises InProcessError to the caller."""

    def abort_with_status(self, status: grpc.Status) -> None:
        """How `typed_errors` ends a call with its typed error (the partitions' servicers use no other)."""
        raise InProcessError(status)


class _Status(grpc.Status):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[()]) -> None:
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata
