"""The bound on an embedding window (`quarry embed preflight|backfill --max-sessions N`), checked by
the query node before it asks the vector node and by the vector node itself."""

from __future__ import annotations

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

MAX_WINDOW_SESSIONS = 100_000


def check_max_sessions(max_sessions: int) -> None:
    if not 1 <= max_sessions <= MAX_WINDOW_SESSIONS:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"max_sessions must be between 1 and {MAX_WINDOW_SESSIONS}, got {max_sessions}",
            parameter="max_sessions",
        )
