"""Run calls on worker threads inside the caller's trace context."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")


def submit_in_context(executor: Executor, fn: Callable[..., T], *args: Any) -> Future[T]:
    """Like executor.submit, but the call sees the submitting thread's context (the current span),
    so client spans of the fan-out are children of the request's span."""
    context = contextvars.copy_context()
    return executor.submit(context.run, fn, *args)
