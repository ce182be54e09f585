"""Catch-up runs: what one stretch of embedding did and how fast, the measurement preflight estimates from.

A run is a backfill, or the background worker from the moment it finds texts queued to the moment
the queue is empty. Its `seconds` count only time spent embedding and storing, so the rate it gives
(texts per second) is the embedder's, not the pace at which texts arrived. The last finished run is
persisted in the vector store, so status and estimates survive a restart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import orjson

from quarry.v1 import vector_pb2
from quarry.vector.store import PendingText

AUTO = "auto"
BACKFILL = "backfill"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class CatchUpRun:
    trigger: str
    started_ms: int = field(default_factory=_now_ms)
    finished_ms: int = 0
    sessions: int = 0
    texts: int = 0
    characters: int = 0
    seconds: float = 0.0
    _session_ids: set[str] = field(default_factory=set, repr=False)

    def record(self, stored: Sequence[PendingText], seconds: float) -> None:
        """A batch whose texts were embedded and stored in `seconds`."""
        self.texts += len(stored)
        self.characters += sum(len(t.text) for t in stored)
        self.seconds += seconds
        self._session_ids.update(t.session_id for t in stored)
        self.sessions = len(self._session_ids)

    def finish(self) -> None:
        self.finished_ms = _now_ms()
        self._session_ids.clear()  # the count stays; the ids are not needed past the run

    @property
    def texts_per_second(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else 0.0

    def to_proto(self) -> vector_pb2.CatchUpRun:
        return vector_pb2.CatchUpRun(
            trigger=self.trigger,
            started_ms=self.started_ms,
            finished_ms=self.finished_ms,
            running=not self.finished_ms,
            sessions=self.sessions,
            texts=self.texts,
            characters=self.characters,
            seconds=self.seconds,
            texts_per_second=self.texts_per_second,
        )

    def to_json(self) -> str:
        data = asdict(self)
        del data["_session_ids"]
        return orjson.dumps(data).decode()

    @classmethod
    def from_json(cls, text: str) -> CatchUpRun:
        return cls(**orjson.loads(text))


def estimate(texts: int, run: CatchUpRun | None) -> tuple[float | None, str]:
    """(seconds to embed `texts` at the rate `run` measured, what the figure rests on); None without a rate."""
    if run is None or run.texts == 0 or run.seconds <= 0:
        return None, "no measured embed rate yet: no catch-up run has embedded anything on this node"
    rate = run.texts_per_second
    basis = (
        f"{rate:.1f} texts/s, measured by the {'running' if not run.finished_ms else 'last'} {run.trigger} run "
        f"({run.texts} texts in {run.seconds:.1f} s)"
    )
    return texts / rate, basis
