"""The background embedding loop: queued texts -> embedder -> stored vectors, one batch at a time.

The thread first warms the embedder up (MiniLM loads in seconds; an HTTP endpoint is probed), then
takes the oldest `batch_size` queued texts, embeds them and hands texts and vectors to `store`, which
commits them and dequeues the texts in one transaction. A failure leaves the texts queued; the
worker records it, backs off (1 s doubling to a minute) and retries, so nothing queued is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import numpy as np

from quarry.core.embed import Embedder
from quarry.index.vector.store import PendingText

log = logging.getLogger(__name__)

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 60.0
WARM_UP_TEXT = "warm up"


class EmbedWorker:
    def __init__(
        self,
        embedder: Embedder,
        take: Callable[[int], list[PendingText]],
        store: Callable[[Sequence[PendingText], np.ndarray], None],
        batch_size: int,
    ) -> None:
        self._embedder = embedder
        self._take = take
        self._store = store
        self._batch_size = batch_size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quarry-embed", daemon=True)
        self._backoff = BACKOFF_START_S
        self.ready = False  # the embedder has answered at least once
        self.last_error = ""

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

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.ready:
                    self._embedder.embed([WARM_UP_TEXT])
                    self.ready = True
                    self._succeeded()
                self._wake.clear()
                if self._stop.is_set():  # stop() may have set the wake flag just cleared
                    break
                texts = self._take(self._batch_size)
                if not texts:
                    self._wake.wait()
                    continue
                vectors = self._embedder.embed([t.text for t in texts])
                self._store(texts, vectors)
            except Exception as error:  # the loop must outlive any one failure; the texts stay queued
                self.last_error = f"{type(error).__name__}: {error}"
                log.exception("embedding batch failed; retrying in %.0f s", self._backoff)
                self._stop.wait(self._backoff)
                self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
            else:
                self._succeeded()

    def _succeeded(self) -> None:
        self.last_error = ""
        self._backoff = BACKOFF_START_S
