"""How many calls a process works on at once: the rest wait their turn.

A query node that holds the partitions itself does all of a search's Python work in one process, under
one interpreter lock. Past a few calls at once, more threads only trade the lock back and forth: on two
cores, 32 concurrent searches cost 1.4x the CPU of 8 each and answered fewer per second
(bench/query_cost.py, bench/RESULTS.md). So such a node admits ADMITTED_PER_CPU calls per CPU at once,
over gRPC and HTTP alike, and queues the others in arrival order; a call's deadline still counts while
it waits. Only the clients' calls wait (searches, unit queries, session reads): the other nodes' calls
(the ingest node's writes, the vector node's reads of what to embed) never do, so a client's call that
waits on another node (an embedding backfill) cannot wait on itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import grpc

from quarry.core.handlers import rebuilt

ADMITTED_PER_CPU = 2
ADMITTED_SERVICES = ("/quarry.v1.QueryService/", "/quarry.v1.SessionQueryService/")

_slots: threading.BoundedSemaphore | None = None
_DONE = object()


def limit_to_cpus() -> int:
    """Admit ADMITTED_PER_CPU calls per CPU this process may run on from now on; the number admitted."""
    global _slots
    admitted = ADMITTED_PER_CPU * len(os.sched_getaffinity(0))
    _slots = threading.BoundedSemaphore(admitted)
    return admitted


def admitted() -> AbstractContextManager[Any]:
    """Held while a call is worked on (nothing to wait for in a process that admits every call)."""
    return _slots if _slots is not None else nullcontext()


def server_interceptors() -> list[grpc.ServerInterceptor]:
    return [AdmissionInterceptor()] if _slots is not None else []


def run_admitted(fn: Callable[..., Any], *args: Any) -> Any:
    with admitted():
        return fn(*args)


class AdmissionInterceptor(grpc.ServerInterceptor):
    """Every client's call (ADMITTED_SERVICES) waits for a slot; a streaming call for one per answer, so
    a slow reader holds none."""

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or not details.method.startswith(ADMITTED_SERVICES):
            return handler
        streaming = handler.unary_stream or handler.stream_stream
        return rebuilt(handler, _answer_by_answer if streaming else _admitting)


def _admitting(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        with admitted():
            return behaviour(request, context)

    return unary


def _answer_by_answer(behaviour: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        answers = iter(behaviour(request, context))
        while True:
            with admitted():
                answer = next(answers, _DONE)
            if answer is _DONE:
                return
            yield answer

    return stream
