"""Fan a call out to every shard in parallel under one deadline, inside the request's trace.

Calls are issued as gRPC futures from the request's own thread: the C core runs them concurrently,
no Python worker thread sits in between, and the client spans are children of the request's span."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc

from quarry.core.errors import QuarryError, from_rpc_error
from quarry.v1 import errors_pb2

R = TypeVar("R")


class Deadline:
    """A request budget shared by every call a request makes."""

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = budget_ms
        self._end = time.monotonic() + budget_ms / 1000.0

    def remaining_s(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise QuarryError(errors_pb2.DEADLINE_EXCEEDED, f"the request's {self.budget_ms:.0f} ms budget ran out")
        return left


Call = Callable[[float], "grpc.Future"]


def call(method: Any, request: Any) -> Call:
    """A deferred unary call that, once started, waits for a reconnecting node within the timeout."""
    return lambda timeout: method.future(request, timeout=timeout, wait_for_ready=True)


def gather(names: Sequence[str], calls: Sequence[Call], deadline: Deadline) -> list[Any]:
    """Start every call, then collect the results in order. Any failure fails the request, typed and
    naming the node; a typed error from a node (a bad query, say) passes through unchanged."""
    timeout = deadline.remaining_s()
    futures = [start(timeout) for start in calls]
    results = []
    try:
        for name, future in zip(names, futures, strict=True):
            try:
                results.append(future.result())
            except grpc.RpcError as error:
                typed = from_rpc_error(error)
                if typed.code in (errors_pb2.SHARD_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED, errors_pb2.INTERNAL):
                    raise QuarryError(typed.code, f"{name}: {typed.message}") from None
                raise typed from None
    finally:
        for future in futures:
            future.cancel()
    return results
