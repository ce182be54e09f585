"""The vector node's state and work: durable queue and vectors (sqlite-vec), serving index (FAISS), embedding worker,
and the follower that fills the queue: from the partitions' change feeds (the embedded default), or
from the replicated log (a cluster on the log).

The embed mode decides when queued texts are embedded: "auto", continuously in the background;
"manual", only when a backfill asks (the follower still pulls every feed into the queue, so the
backlog is exact). Status, preflight and backfill are the embedding operations (docs/cluster.md#embedding-operations).

The gRPC servicer wraps this class. Writers (enqueue, the worker storing a batch) hold one lock
across the SQLite commit and the matching FAISS change, so FAISS never holds a vector the store has
removed nor misses one it committed; searches only take FAISS's own lock.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quarry.core.embed_window import check_max_sessions
from quarry.core.errors import QuarryError
from quarry.core.outgoing import SCOPES
from quarry.core.session_ids import scope_of
from quarry.v1 import errors_pb2, index_pb2, vector_pb2
from quarry.vector import window
from quarry.vector.ann import DEFAULT_APPROXIMATE_ABOVE, AnnIndex
from quarry.vector.catchup import AUTO, CatchUpRun
from quarry.vector.embed import Embedder, embedder_for_store, load_embedder
from quarry.vector.follower import FeedFollower
from quarry.vector.kept_training import StoredTraining
from quarry.vector.log_follower import LogFollower
from quarry.vector.reuse import ReusingEmbedder
from quarry.vector.row_sessions import RowSessions
from quarry.vector.store import EnqueueOutcome, PendingText, VectorStore
from quarry.vector.worker import MODES, EmbedWorker

log = logging.getLogger(__name__)

STORE_FILE = "vectors.sqlite"
DEFAULT_LIMIT = 10
# Messages fetched per wanted session on the first try; more are fetched while too few sessions
# come back (many messages of one session can crowd the top of the list).
OVERFETCH = 8
MIN_FETCH = 64
LAST_RUN_KEY = "last_catch_up_run"
# Query texts whose vectors are kept: a paged walk or a refined search repeats its text, and a MiniLM
# query embedding (~20 ms) costs more than the search itself. 1,024 x 384 floats is 1.5 MiB.
QUERY_CACHE_SIZE = 1024


@dataclass(frozen=True)
class MessageHit:
    message_id: str
    session_id: str
    distance: float


@dataclass
class _Open:
    store: VectorStore
    ann: AnnIndex | None
    sessions: RowSessions  # each vector's session, for collapsing hits to sessions without the store
    worker: EmbedWorker | None
    follower: FeedFollower | LogFollower | None
    rebuild_seconds: float
    stored_run: CatchUpRun | None  # the last run persisted, for a node without a worker


class VectorNode:
    def __init__(
        self,
        data_dir: Path,
        embedder_spec: str | None,
        batch_size: int = 64,
        index_addresses: Sequence[str] = (),
        embed_mode: str = AUTO,
        nats: Sequence[str] = (),
        approximate_above: int = DEFAULT_APPROXIMATE_ABOVE,
    ) -> None:
        """`index_addresses`: the partitions' nodes to follow, in partition order (their texts are pulled
        only when an embedder is configured; their backlog counts as pending either way); `nats`: the
        servers of the log to follow instead. `embed_mode`: auto | manual. `approximate_above`: the
        vector count past which FAISS serves approximately (see ann.py)."""
        if embed_mode not in MODES:
            raise QuarryError(
                errors_pb2.BAD_VALUE,
                f"unknown embed mode {embed_mode!r}: expected one of {', '.join(MODES)}",
                parameter="embed_mode",
                expected=list(MODES),
            )
        self._data_dir = Path(data_dir)
        self._embed_mode = embed_mode
        self._embedder_spec = embedder_spec
        self._embedder: Embedder | None = load_embedder(embedder_spec)
        self._batch_size = batch_size
        self._index_addresses = list(index_addresses)
        self._nats = list(nats)
        self._approximate_above = approximate_above
        # Per node, so the cache never outlives its embedder. lru_cache keeps its table consistent
        # across threads without holding a lock through the call: two threads missing the same text
        # both embed it (harmless), and a slow embedding never holds up a cached one.
        self._query_vector = functools.lru_cache(maxsize=QUERY_CACHE_SIZE)(self._embed_query)
        self._write_lock = threading.Lock()
        self._open: _Open | None = None

    @property
    def _state(self) -> _Open:
        if self._open is None:
            raise RuntimeError("VectorNode.start() has not been called")
        return self._open

    @property
    def rebuild_seconds(self) -> float:
        """How long start() took to rebuild FAISS from sqlite-vec."""
        return self._state.rebuild_seconds

    def start(self) -> None:
        """Open the store, rebuild FAISS from it, and start the embedding worker and the follower."""
        self._data_dir.mkdir(parents=True, exist_ok=True)
        store = VectorStore(self._data_dir / STORE_FILE)
        try:
            self._check_model(store)
        except QuarryError:
            store.close()
            raise
        began = time.perf_counter()
        ann = None
        if store.dimension:
            ann = self._new_ann(store)
            for rowids, vectors in store.iter_vectors():
                ann.add(rowids, vectors)
        sessions = RowSessions()
        for rowids, session_ids in store.iter_row_sessions():
            sessions.add(rowids, session_ids)
        rebuild_seconds = time.perf_counter() - began
        log.info("rebuilt FAISS from sqlite-vec: %d vectors in %.2f s", ann.ntotal if ann else 0, rebuild_seconds)
        stored_run = store.meta(LAST_RUN_KEY)
        last_run = CatchUpRun.from_json(stored_run) if stored_run else None
        worker = follower = None
        background = self._embed_mode == AUTO
        if self._embedder is not None:
            worker = EmbedWorker(
                ReusingEmbedder(self._embedder, store.vectors_of_texts),
                store.take_pending,
                self._store_batch,
                self._batch_size,
                background=background,
                last_run=last_run,
                on_run_finished=lambda run: store.save_meta(LAST_RUN_KEY, run.to_json()),
            )
        if self._nats:
            follower = LogFollower(self._nats, cursor=store.cursor, store=self.enqueue)
        elif self._index_addresses:
            follower = FeedFollower(self._index_addresses, cursor=store.cursor, store=self.enqueue)
        self._open = _Open(
            store=store,
            ann=ann,
            sessions=sessions,
            worker=worker,
            follower=follower,
            rebuild_seconds=rebuild_seconds,
            stored_run=last_run,
        )
        if worker is not None:
            worker.start()
            if follower is not None:
                follower.start()

    def _new_ann(self, store: VectorStore) -> AnnIndex:
        """An empty serving index whose IVF training, once it switches, is kept in (and taken from) the store."""
        return AnnIndex(store.dimension, self._approximate_above, keeper=StoredTraining(store))

    def _check_model(self, store: VectorStore) -> None:
        """Vectors of different models are not comparable: refuse to mix them in one store."""
        if self._embedder is not None and store.model:
            self._embedder = embedder_for_store(self._embedder_spec, store.model)
        embedder = self._embedder
        if embedder is None:
            return
        if store.model and store.model != embedder.model:
            raise QuarryError(
                errors_pb2.BAD_VALUE,
                f"the vectors in {self._data_dir} were made by {store.model!r}, the configured embedder "
                f"is {embedder.model!r}: configure the same embedder or use an empty data directory",
                parameter="embedder",
            )
        if not store.dimension and embedder.dimension:
            store.set_model(embedder.model, embedder.dimension)

    def close(self) -> None:
        """Stop the follower and the worker and close the store; texts not yet embedded stay queued on disk."""
        state = self._open
        if state is None:
            return
        if state.follower is not None:
            state.follower.stop()
        if state.worker is not None:
            state.worker.stop()
        self._open = None
        with self._write_lock:
            state.store.close()

    # -- writes ---------------------------------------------------------------------------------

    def enqueue(
        self,
        items: Sequence[index_pb2.EmbedItem],
        replace_session_ids: Sequence[str] = (),
        cursor: tuple[str, int] | None = None,
    ) -> EnqueueOutcome:
        """Durably queue the items' texts (see VectorStore.enqueue), with the follower's cursor in the
        same transaction; returns once committed, never waits for embedding."""
        state = self._state
        for item in items:
            if not item.message_id or not item.session_id:
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"every item needs a message_id and a session_id (got {item.message_id!r}, {item.session_id!r})",
                )
        rows = [(item.message_id, item.session_id, item.text, item.session_updated_ms) for item in items]
        with self._write_lock:
            outcome = state.store.enqueue(rows, list(replace_session_ids), cursor)
            if state.ann is not None:
                state.ann.remove(outcome.removed_rowids)
            state.sessions.remove(outcome.removed_rowids)
        if state.worker is not None and outcome.queued:
            state.worker.wake()
        return outcome

    def _store_batch(self, texts: Sequence[PendingText], vectors: Sequence[np.ndarray]) -> list[PendingText]:
        """The worker's sink: commit the batch, then mirror it into FAISS under the same lock; returns
        the texts stored (a text changed while it was embedded is not)."""
        state = self._state
        assert self._embedder is not None
        with self._write_lock:
            batch = state.store.store_vectors(self._embedder.model, texts, vectors)
            if state.ann is None:
                state.ann = self._new_ann(state.store)
            state.ann.remove(batch.removed_rowids)
            state.ann.add(batch.added_rowids, batch.vectors)
            state.sessions.remove(batch.removed_rowids)
            state.sessions.add(batch.added_rowids, batch.sessions)
        return batch.stored

    # -- reads ----------------------------------------------------------------------------------

    def search(self, request: vector_pb2.VectorSearchRequest) -> vector_pb2.VectorSearchResponse:
        """The `limit` sessions nearest to the text (or to a session), each by its closest message."""
        state = self._state
        near = request.near_session_id
        text = request.text.strip()
        if not near:
            if self._embedder is None:
                raise QuarryError(
                    errors_pb2.SEMANTIC_UNAVAILABLE,
                    "no embedder configured for the vector node (start it with --embedder minilm "
                    "or --embedder openai:<base_url>#<model>)",
                )
            if not text:
                raise QuarryError(errors_pb2.BAD_VALUE, "vector search needs a non-empty text", parameter="text")
        if request.limit < 0:
            raise QuarryError(errors_pb2.BAD_VALUE, f"limit must be positive, got {request.limit}", parameter="limit")
        limit = request.limit or DEFAULT_LIMIT
        ann = state.ann
        if ann is None or ann.ntotal == 0:
            _, pending = state.store.counts()
            raise QuarryError(errors_pb2.SEMANTIC_UNAVAILABLE, f"no vectors yet: {pending} pending")
        began = time.perf_counter()
        allowed = self._allowed_rowids(request)
        if allowed is not None and not len(allowed):
            return vector_pb2.VectorSearchResponse(search_ms=(time.perf_counter() - began) * 1000)
        looked_up = time.perf_counter()
        vector = self._session_centroid(near) if near else self._query_vector(text)
        embedded = time.perf_counter()
        if near:  # one more, since the session itself is usually its own nearest
            hits = [h for h in self._nearest_sessions(ann, vector, limit + 1, allowed) if h.session_id != near]
            hits = hits[:limit]
        else:
            hits = self._nearest_sessions(ann, vector, limit, allowed)
        visible = SCOPES.get()
        if visible is not None:  # a session of a new scope embedded since `allowed` was read
            hits = [h for h in hits if scope_of(h.session_id) in visible]
        done = time.perf_counter()
        return vector_pb2.VectorSearchResponse(
            hits=[
                vector_pb2.VectorHit(session_id=h.session_id, message_id=h.message_id, distance=h.distance)
                for h in hits
            ],
            embed_ms=(embedded - looked_up) * 1000,
            search_ms=(looked_up - began + done - embedded) * 1000,
        )

    def _allowed_rowids(self, request: vector_pb2.VectorSearchRequest) -> np.ndarray | None:
        """The rowids a search may return: its allow-list's sessions' (when it restricts to one), within the
        caller's scopes (when the call carries them); None: every vector."""
        sessions = self._state.sessions
        allowed = sessions.rowids_of(request.allow_session_ids) if request.restrict_to_allowed else None
        visible = SCOPES.get()
        if visible is None:
            return allowed
        in_scopes = sessions.rowids_in_scopes(visible)
        if in_scopes is None or allowed is None:
            return allowed if in_scopes is None else in_scopes
        return np.intersect1d(allowed, in_scopes, assume_unique=True)

    def _session_centroid(self, session_id: str) -> np.ndarray:
        """The unit-length mean of a session's message vectors: what `near:id:` searches from."""
        vectors = self._state.store.session_vectors(session_id)
        if not len(vectors):
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                f"session {session_id!r} has no embedded messages (unknown, or not embedded yet)",
                parameter="near_session_id",
            )
        mean = vectors.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm if norm else mean).astype(np.float32)

    def _embed_query(self, text: str) -> np.ndarray:
        """The text's vector, read-only since `_query_vector` hands the same array to every caller."""
        assert self._embedder is not None
        try:
            vector = self._embedder.embed_query(text)
            vector.setflags(write=False)
            return vector
        except QuarryError:
            raise
        except Exception as error:  # a broken embedder makes the lane unavailable, not the node
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE, f"embedding the query failed: {type(error).__name__}: {error}"
            ) from error

    def _nearest_sessions(
        self, ann: AnnIndex, vector: np.ndarray, limit: int, allowed: np.ndarray | None
    ) -> list[MessageHit]:
        """Top messages from FAISS collapsed to each session's best, fetching more until `limit` sessions,
        ordered by (distance, session id).

        A session's best message ranks before all its others, so the first `limit` sessions among
        the top k messages are the `limit` nearest sessions whenever that many are present. Sessions
        come from the in-memory map; only the messages of the answer are read from the store.
        """
        sessions = self._state.sessions
        candidates = ann.ntotal if allowed is None else len(allowed)
        k = min(candidates, max(MIN_FETCH, limit * OVERFETCH))
        while True:
            distances, rowids = ann.search(vector, k, allowed)
            codes = sessions.codes(rowids)
            known = np.flatnonzero(codes >= 0)  # a rowid removed since the search has no session
            _, first = np.unique(codes[known], return_index=True)
            best = known[np.sort(first)]  # each session's nearest message, nearest first
            if len(best) >= limit or k >= candidates:
                break
            k = min(candidates, k * 4)
        if len(best) > limit:  # sessions tied with the last one kept are cut on their ids below
            best = best[distances[best] <= distances[best[limit - 1]]]
        refs = self._state.store.lookup(rowids[best])
        hits = [
            MessageHit(ref.message_id, ref.session_id, float(distances[i]))
            for i in best
            if (ref := refs.get(int(rowids[i]))) is not None  # removed between the two reads: skipped
        ]
        return sorted(hits, key=lambda h: (h.distance, h.session_id))[:limit]

    def _nearest_messages(
        self, ann: AnnIndex, vector: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[MessageHit]:
        distances, rowids = ann.search(vector, k, allowed)
        refs = self._state.store.lookup(rowids)
        # A rowid the store no longer has was removed between the two reads: skip it.
        hits = [
            MessageHit(ref.message_id, ref.session_id, float(distance))
            for distance, rowid in zip(distances, rowids, strict=True)
            if (ref := refs.get(int(rowid))) is not None
        ]
        hits.sort(key=lambda h: (h.distance, h.session_id, h.message_id))
        return hits

    def ann_search(self, vector: np.ndarray, k: int) -> list[MessageHit]:
        """The k nearest messages by FAISS (message level, no collapsing)."""
        ann = self._state.ann
        return self._nearest_messages(ann, vector, k) if ann is not None and k > 0 else []

    def exact_search(self, vector: np.ndarray, k: int) -> list[MessageHit]:
        """The k nearest messages by sqlite-vec brute force: the reference FAISS is checked against."""
        return [
            MessageHit(ref.message_id, ref.session_id, distance)
            for ref, distance in self._state.store.exact_search(vector, k)
        ]

    def stats(self, recent_backlog: bool = False) -> vector_pb2.VectorStats:
        """Counts now; `pending` is the local queue plus the partitions' backlog after this node's cursors
        (asked of them now, or with `recent_backlog` as the follower last saw it)."""
        state = self._state
        visible = SCOPES.get()
        # Texts the feed holds for the node are the whole archive's: only a caller of every scope sees them.
        backlog = self._backlog(state, live=not recent_backlog) if visible is None else 0  # before the local count
        vectors, pending = state.store.counts(visible)
        embedder = self._embedder
        worker = state.worker
        running = [part for part in (worker, state.follower) if part is not None]
        return vector_pb2.VectorStats(
            vectors=vectors,
            pending=pending + backlog,
            embedder=embedder.name if embedder else "",
            model=embedder.model if embedder else "",
            dimension=(embedder.dimension or state.store.dimension) if embedder else 0,
            ready=worker.ready if worker else False,
            last_error="; ".join(part.last_error for part in running if part.last_error),
            scopes_enforced=True,
        )

    # -- embedding operations -------------------------------------------------------------------

    def embed_status(self) -> vector_pb2.EmbedStatusResponse:
        """Embedder, mode, coverage and backlog now, and the latest catch-up run."""
        state = self._state
        visible = SCOPES.get()  # the caller's scopes: every count is theirs
        backlog = self._backlog(state) if visible is None else 0  # before the local counts, as in stats()
        vectors, queued = state.store.counts(visible)
        embedded_sessions, queued_sessions = (
            state.store.embedded_sessions(visible),
            state.store.queued_sessions(visible),
        )
        embedder, worker = self._embedder, state.worker
        running = [part for part in (worker, state.follower) if part is not None]
        status = vector_pb2.EmbedStatusResponse(
            embedder=embedder.name if embedder else "",
            model=embedder.model if embedder else "",
            dimension=(embedder.dimension or state.store.dimension) if embedder else 0,
            mode=self._embed_mode,
            ready=worker.ready if worker else False,
            vectors=vectors,
            embedded_sessions=embedded_sessions,
            queued_texts=queued,
            queued_sessions=queued_sessions,
            feed_backlog_texts=backlog,
            last_error="; ".join(part.last_error for part in running if part.last_error),
        )
        coverage = state.store.coverage(visible)
        status.covered_after_ms = coverage.covered_after_ms
        status.embedded_oldest_ms = coverage.embedded_oldest_ms
        status.embedded_newest_ms = coverage.embedded_newest_ms
        if (run := self._last_run(state)) is not None:
            status.last_run.CopyFrom(run.to_proto())
        return status

    def preflight(self, max_sessions: int) -> vector_pb2.EmbedWindow:
        """The window a backfill of `max_sessions` would embed now; texts are pulled, none embedded."""
        check_max_sessions(max_sessions)
        state = self._state
        self._fill(state, max_sessions)
        session_ids = state.store.window(max_sessions)
        return window.describe(state.store, max_sessions, session_ids, self._backlog(state), self._last_run(state))

    def backfill(self, max_sessions: int, active: Callable[[], bool] = lambda: True) -> vector_pb2.EmbedBackfillResult:
        """Embed the window preflight describes, now, under the worker's batch lock; stops after the
        batch in flight once `active()` is false (the caller went away)."""
        check_max_sessions(max_sessions)
        state = self._state
        if state.worker is None:
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE,
                "no embedder configured for the vector node: nothing can be embedded (start it with "
                "--embedder minilm or --embedder openai:<base_url>#<model>)",
            )
        began = time.perf_counter()
        self._fill(state, max_sessions)
        planned = vector_pb2.EmbedWindow()

        def select() -> list[PendingText]:
            session_ids = state.store.window(max_sessions)
            backlog, run = self._backlog(state), self._last_run(state)
            planned.CopyFrom(window.describe(state.store, max_sessions, session_ids, backlog, run))
            return state.store.pending_of(session_ids)

        try:
            texts, run, cancelled = state.worker.backfill(select, active)
        except QuarryError:
            raise
        except Exception as error:  # a broken embedder makes embedding unavailable, not the node
            raise QuarryError(
                errors_pb2.SEMANTIC_UNAVAILABLE, f"embedding the window failed: {type(error).__name__}: {error}"
            ) from error
        selected = {t.seq for t in texts}
        unfinished = {
            t.session_id for t in state.store.pending_of(list({t.session_id for t in texts})) if t.seq in selected
        }
        backlog = self._backlog(state)
        _, queued = state.store.counts()
        queued_sessions = state.store.queued_sessions()
        return vector_pb2.EmbedBackfillResult(
            window=planned,
            sessions=planned.sessions - len(unfinished),
            texts=run.texts,
            seconds=time.perf_counter() - began,
            sessions_left=queued_sessions,
            texts_left=queued + backlog,
            cancelled=cancelled,
            run=run.to_proto(),
        )

    def _fill(self, state: _Open, max_sessions: int) -> None:
        """Pull the partitions' feeds until the queue holds `max_sessions` sessions or the feeds are drained."""
        if state.follower is not None:
            state.follower.fill(lambda: state.store.queued_sessions() >= max_sessions)

    @staticmethod
    def _last_run(state: _Open) -> CatchUpRun | None:
        return state.worker.last_run if state.worker is not None else state.stored_run

    @staticmethod
    def _backlog(state: _Open, live: bool = True) -> int:
        return state.follower.backlog(live) if state.follower is not None else 0

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no text is queued here or waits in a followed partition, and every stored vector is
        searchable; False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            state = self._state
            backlog = self._backlog(state)
            with self._write_lock:
                pending = state.store.pending_count()
            if pending + backlog == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
