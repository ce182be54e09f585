"""Fan a call out to every partition in parallel under one deadline, inside the request's trace.

Blocking calls on a small worker pool, the last one on the request's own thread. (gRPC Python's
`.future()` starts a channel spin thread per call: measured at ~3 ms a call, far more than a pool
hand-off.) Workers run in the request's context, so client spans are children of its span."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.fanout import submit_in_context
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


Call = Callable[[float], Any]
POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="scatter")


def call(method: Any, request: Any) -> Call:
    """A deferred unary call that waits for a reconnecting node within the timeout."""
    return lambda timeout: method(request, timeout=timeout, wait_for_ready=True)


def gather(names: Sequence[str], calls: Sequence[Call], deadline: Deadline) -> list[Any]:
    """Run every call concurrently and return the results in order. Any failure fails the request,
    typed and naming the node; a typed error from a node (a bad query, say) passes through unchanged."""
    return [_result(name, outcome) for name, outcome in zip(names, _start(calls, deadline), strict=True)]


def _start(calls: Sequence[Call], deadline: Deadline) -> list[Future[Any]]:
    """Every call but the last on the pool, the last on this thread."""
    timeout = deadline.remaining_s()
    futures = [submit_in_context(POOL, start, timeout) for start in calls[:-1]]
    return [*futures, _run_inline(calls[-1], timeout)] if calls else []


def _run_inline(start: Call, timeout: float) -> Future[Any]:
    future: Future[Any] = Future()
    try:
        future.set_result(start(timeout))
    except Exception as error:
        future.set_exception(error)
    return future


def _result(name: str, future: Future[Any]) -> Any:
    try:
        return future.result()
    except grpc.RpcError as error:
        typed = from_rpc_error(error)
        if typed.code in (errors_pb2.NODE_UNAVAILABLE, errors_pb2.DEADLINE_EXCEEDED, errors_pb2.INTERNAL):
            raise QuarryError(typed.code, f"{name}: {typed.message}") from None
        raise typed from None


def both(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """Run two independent steps of one request concurrently (e.g. the lexical and the vector lane)."""
    first_result, second_result = concurrently([first, second])
    return first_result, second_result


def concurrently(steps: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run independent steps of one request concurrently, the first on this thread; results in order."""
    pending = [submit_in_context(POOL, step) for step in steps[1:]]
    return [steps[0](), *(p.result() for p in pending)] if steps else []
