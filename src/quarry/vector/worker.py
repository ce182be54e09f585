"""The embedding worker: queued texts -> embedder -> stored vectors, one batch at a time.

The thread first warms the embedder up (MiniLM loads in seconds; an HTTP endpoint is probed). In the
"auto" embed mode it then takes the next `batch_size` queued texts (the most recently active sessions
first), embeds them and hands texts and vectors to `store`, which commits them and dequeues the texts
in one transaction. A failure
leaves the texts queued; the worker records it, backs off (1 s doubling to a minute) and retries, so
nothing queued is lost. In the "manual" mode the thread only warms up: texts are embedded when a
backfill asks.

Every batch, the background loop's or a backfill's, runs under one lock, so a backfill never embeds
beside the loop: it waits for the batch in flight, then holds the lock for its whole window.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from quarry.vector.catchup import AUTO, BACKFILL, CatchUpRun
from quarry.vector.reuse import ReusingEmbedder
from quarry.vector.store import PendingText

log = logging.getLogger(__name__)

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 60.0
WARM_UP_TEXT = "warm up"
MODES = (AUTO, "manual")

# The sink: commit the vectors (each text's passages) of the texts still queued unchanged; returns the
# texts it stored.
Store = Callable[[Sequence[PendingText], Sequence[np.ndarray]], list[PendingText]]


class EmbedWorker:
    def __init__(
        self,
        embedder: ReusingEmbedder,
        take: Callable[[int], list[PendingText]],
        store: Store,
        batch_size: int,
        background: bool = True,
        last_run: CatchUpRun | None = None,
        on_run_finished: Callable[[CatchUpRun], None] = lambda run: None,
    ) -> None:
        """`background`: embed whatever is queued (the auto mode); else only when `backfill` is called.
        `last_run` is the run persisted by a previous process; `on_run_finished` persists each new one."""
        self._embedder = embedder
        self._take = take
        self._store = store
        self._batch_size = batch_size
        self._background = background
        self._on_run_finished = on_run_finished
        self._batch_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quarry-embed", daemon=True)
        self._backoff = BACKOFF_START_S
        self._auto_run: CatchUpRun | None = None
        self._last_run = last_run
        self.ready = False  # the embedder has answered at least once
        self.last_error = ""

    @property
    def last_run(self) -> CatchUpRun | None:
        """The run in progress, else the last one finished."""
        return self._auto_run or self._last_run

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """New texts were queued."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the batch in flight (its texts stay queued if it cannot be stored) and end the thread."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._batch_lock:
            self._end_auto_run()

    def backfill(
        self, select: Callable[[], list[PendingText]], active: Callable[[], bool]
    ) -> tuple[list[PendingText], CatchUpRun, bool]:
        """Embed the texts `select` picks (under the batch lock, so the loop takes none of them), batch
        by batch while `active()`. Returns (the texts selected, the run, whether it stopped early).
        An embedder failure raises after recording the batches stored before it."""
        with self._batch_lock:
            self._end_auto_run()
            texts = select()
            if texts and not self.ready:  # load the model first: its load time is no part of the rate
                self._embedder.embed([WARM_UP_TEXT])
                self.ready = True
            run = CatchUpRun(BACKFILL)
            try:
                for start in range(0, len(texts), self._batch_size):
                    if not active():
                        return texts, run, True
                    self._embed(texts[start : start + self._batch_size], run)
                    self.ready = True
            finally:
                run.finish()
                self._finished(run)
            return texts, run, False

    # -- the loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.ready:
                    self._embedder.embed([WARM_UP_TEXT])
                    self.ready = True
                    self._succeeded()
                if not self._background:
                    self._stop.wait()
                    break
                self._wake.clear()
                if self._stop.is_set():  # stop() may have set the wake flag just cleared
                    break
                if not self._embed_next():
                    self._wake.wait()
                    continue
            except Exception as error:  # the loop must outlive any one failure; the texts stay queued
                self.last_error = f"{type(error).__name__}: {error}"
                log.exception("embedding batch failed; retrying in %.0f s", self._backoff)
                self._stop.wait(self._backoff)
                self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
            else:
                self._succeeded()

    def _embed_next(self) -> bool:
        """Embed the next queued batch; False when the queue is empty (which ends the auto run)."""
        with self._batch_lock:
            texts = self._take(self._batch_size)
            if not texts:
                self._end_auto_run()
                return False
            if self._auto_run is None:
                self._auto_run = CatchUpRun(AUTO)
            self._embed(texts, self._auto_run)
            return True

    def _embed(self, texts: Sequence[PendingText], run: CatchUpRun) -> None:
        began = time.perf_counter()
        vectors = self._embedder.embed_messages([t.text for t in texts])
        stored = self._store(texts, vectors)
        run.record(stored, time.perf_counter() - began)

    def _end_auto_run(self) -> None:
        run, self._auto_run = self._auto_run, None
        if run is not None:
            run.finish()
            self._finished(run)

    def _finished(self, run: CatchUpRun) -> None:
        if not run.texts:  # a run that stored nothing measured nothing: keep the last one that did
            return
        self._last_run = run
        try:
            self._on_run_finished(run)
        except Exception:  # losing the record of a run must not lose the vectors it stored
            log.exception("could not persist the catch-up run")

    def _succeeded(self) -> None:
        self.last_error = ""
        self._backoff = BACKOFF_START_S
