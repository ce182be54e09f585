"""Fan a call out to every shard in parallel under one deadline, inside the request's trace."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
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


class Scatter:
    """Parallel calls to a set of stubs; any failure fails the whole request, typed and named."""

    def __init__(self, workers: int = 32) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="scatter")

    def each(
        self,
        names: Sequence[str],
        calls: Sequence[Callable[[float], R]],
        deadline: Deadline,
    ) -> list[R]:
        """Run calls[i](timeout_s) concurrently; results in the order of `calls`."""
        timeout = deadline.remaining_s()
        futures = [submit_in_context(self._pool, call, timeout) for call in calls]
        wait(futures, timeout=timeout + 0.5)
        results: list[R] = []
        for name, future in zip(names, futures, strict=True):
            try:
                results.append(future.result(timeout=0))
            except grpc.RpcError as error:
                typed = from_rpc_error(error)
                if typed.code in (
                    errors_pb2.SHARD_UNAVAILABLE,
                    errors_pb2.DEADLINE_EXCEEDED,
                    errors_pb2.INTERNAL,
                ):
                    raise QuarryError(typed.code, f"{name}: {typed.message}") from None
                raise typed from None
            except TimeoutError:
                raise QuarryError(errors_pb2.DEADLINE_EXCEEDED, f"{name} did not answer in time") from None
        return results

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def call(method: Any, request: Any) -> Callable[[float], Any]:
    """A deferred unary call that waits for a reconnecting node within the timeout."""
    return lambda timeout: method(request, timeout=timeout, wait_for_ready=True)
