"""The runtime every node shares: a gRPC server with tracing, health checking and reflection,
a run file announcing the bound address, and a clean stop on SIGTERM / SIGINT."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import orjson
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from quarry.core import admission, auth, telemetry, tls
from quarry.core.addresses import dialed_host
from quarry.core.errors import QuarryError, abort_with, from_rpc_error
from quarry.core.stop_signal import StopSignal
from quarry.v1 import errors_pb2

_log = logging.getLogger(__name__)
STOP_GRACE_S = 5  # how long calls in flight may finish when the node stops

F = TypeVar("F", bound=Callable[..., Any])


def _abort_for(context: grpc.ServicerContext, error: Exception) -> None:
    if isinstance(error, QuarryError):
        abort_with(context, error)
    if isinstance(error, grpc.RpcError):
        abort_with(context, from_rpc_error(error))
    abort_with(context, QuarryError(errors_pb2.INTERNAL, f"{type(error).__name__}: {error}"))


def typed_errors(method: F) -> F:
    """Servicer method decorator: a QuarryError aborts the call with its status and typed detail;
    any other exception aborts as INTERNAL with the exception text (never a silent empty answer).
    Works for unary and for server-streaming (generator) methods."""
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def streaming(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            try:
                yield from method(self, request, context)
            except Exception as error:
                _abort_for(context, error)

        return streaming  # type: ignore[return-value]

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as error:
            _abort_for(context, error)

    return unary  # type: ignore[return-value]


class Node:
    """A started gRPC server of one role. `wait()` blocks until SIGTERM / SIGINT, then stops."""

    def __init__(
        self,
        name: str,
        service_names: Iterable[str],
        register: Callable[[grpc.Server], None],
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int = 16,
    ) -> None:
        self.name = name
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name),
            interceptors=[
                *telemetry.server_interceptors(),
                *auth.server_interceptors(),
                *admission.server_interceptors(),
            ],
            options=[
                ("grpc.max_send_message_length", telemetry.MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", telemetry.MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 1),
            ],
        )
        register(self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = list(service_names)
        reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server)
        credentials = tls.server_credentials()
        bind = f"{host}:{port}"
        self.port = (
            self.server.add_secure_port(bind, credentials) if credentials else self.server.add_insecure_port(bind)
        )
        if self.port == 0:
            raise OSError(f"{name}: could not bind {host}:{port}")
        self.address = f"{dialed_host(host)}:{self.port}"
        self.server.start()
        for service in ["", *names]:
            self.health.set(service, health_pb2.HealthCheckResponse.SERVING)

    def announce(self, run_file: Path | None, role: str) -> None:
        """Write the run file (atomically) that launchers wait for: the node is serving."""
        if run_file is None:
            return
        run_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = run_file.with_suffix(".tmp")
        info = {"name": self.name, "role": role, "address": self.address, "pid": os.getpid()}
        tmp.write_bytes(orjson.dumps(info))
        tmp.replace(run_file)

    def wait(self, on_stop: Callable[[], None] | None = None) -> None:
        StopSignal(signal.SIGTERM, signal.SIGINT).wait()
        # Each step of a stop is logged: a stop that hangs says where in the node's log.
        _log.info("%s: stopping: no new calls, %d s for those in flight", self.name, STOP_GRACE_S)
        self.health.enter_graceful_shutdown()
        self.server.stop(grace=STOP_GRACE_S).wait()
        _log.info("%s: calls stopped; stopping the node's work", self.name)
        if on_stop is not None:
            on_stop()
        telemetry.shutdown_telemetry()
        _log.info("%s: stopped", self.name)


@dataclass(frozen=True)
class Service:
    """One gRPC service a node serves: its descriptor, the generated `add_…_to_server`, the servicer."""

    descriptor: ServiceDescriptor
    add_servicer: Callable[[Any, grpc.Server], None]
    servicer: Any


def serve(
    name: str,
    role: str,
    services: Sequence[Service],
    host: str,
    port: int,
    run_file: Path | None,
    on_stop: Callable[[], None] | None = None,
    workers: int = 16,
) -> None:
    """Serve the services as one node until SIGTERM / SIGINT."""

    def register(server: grpc.Server) -> None:
        for service in services:
            service.add_servicer(service.servicer, server)

    node = Node(name, [s.descriptor.full_name for s in services], register, host, port, workers)
    node.announce(run_file, role)
    node.wait(on_stop=on_stop)
