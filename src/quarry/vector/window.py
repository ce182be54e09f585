"""The embedding window: the next sessions a backfill embeds, as preflight describes it.

The window is the first `max_sessions` queued sessions in the worker's order (the most recently active
first), each with every one of its queued texts, so preflight and the backfill that follows it name the same
sessions and texts (in the manual mode nothing else embeds them in between).
"""

from __future__ import annotations

from collections.abc import Sequence

from quarry.v1 import vector_pb2
from quarry.vector.catchup import CatchUpRun, estimate
from quarry.vector.store import VectorStore

SHOWN_SESSION_IDS = 20


def describe(
    store: VectorStore, max_sessions: int, session_ids: Sequence[str], feed_backlog: int, run: CatchUpRun | None
) -> vector_pb2.EmbedWindow:
    """The window of `session_ids` (chosen by `store.window(max_sessions)`), with what stays after it."""
    texts, characters = store.window_size(session_ids)
    queued_texts = store.pending_count()
    queued_sessions = store.queued_sessions()
    seconds, basis = estimate(texts, run)
    window = vector_pb2.EmbedWindow(
        max_sessions=max_sessions,
        sessions=len(session_ids),
        session_ids=session_ids[:SHOWN_SESSION_IDS],
        texts=texts,
        characters=characters,
        estimate_basis=basis,
        sessions_left=max(0, queued_sessions - len(session_ids)),
        texts_left=max(0, queued_texts - texts) + feed_backlog,
    )
    if seconds is not None:
        window.estimated_seconds = seconds
    return window
