"""One replica of a partition: the facade the index node serves its reads and applies its writes through.

Layout under the partition's directory (`<node data>/partitions/p<nn>/`): `store.sqlite3` (source of
truth, see store.py) and `tantivy/`; the partition's assertions sit beside them (assertions.py).

Writes are serialized by one lock and one long-lived Tantivy writer (a second writer on the same
directory, from any process, fails with LockBusy). Reads run concurrently from any thread: each call
takes a fresh Tantivy searcher snapshot and its thread's SQLite read connection.

Upsert order, for crash consistency:
1. sessions whose content_hash equals the stored one are counted as unchanged and not touched;
2. the others get their ordinals (a stored session keeps its own; new sessions and every written
   message take fresh ones: the partition is the only writer) and the next change sequence numbers (the
   vector node's feed, see store.py), and are taken apart in one pass into rows and documents
   (session_rows.py);
3. the rows are replaced in SQLite in one transaction, committed durably with `tantivy_pending=1`;
4. their Tantivy documents are deleted by session ordinal and re-added, then one Tantivy commit
   (fsync'd) and a reader reload, so a search issued after `upsert` returns sees them;
5. the pending marker is cleared.
A crash after 3 leaves pending sessions, which opening the partition re-indexes from SQLite; a Tantivy
index whose document count disagrees with SQLite after that is rebuilt from SQLite. So is an index
built with another analyzer version (schema.open_index): the searchable text changes, the records in
SQLite do not. A delete follows the same order: rows and tombstones in one SQLite transaction, then
the documents.

Fed by the log (cluster mode), `upsert` and `delete` carry the log sequence of the records they apply:
it is written in the same SQLite transaction as the rows (store.py), so the replica resumes after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import tantivy

from quarry.core import source_copies
from quarry.core.errors import QuarryError
from quarry.core.tokens import DEFAULT_SCOPE
from quarry.index.lexical import event_search, facets, schema, session_reads, session_rows
from quarry.index.lexical.leaf import Leaf, PreparedSearch
from quarry.index.lexical.refs import RefReader
from quarry.index.lexical.search_text import CompiledSearch
from quarry.index.lexical.session_rows import SessionRecords
from quarry.index.lexical.store import CACHE_BYTES, Store
from quarry.index.lexical.visibility import Visible
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, refs_pb2, sessions_pb2, units_pb2

WRITER_HEAP_BYTES = 128_000_000
MIN_WRITER_HEAP_BYTES = 15_000_000  # Tantivy's floor for one indexing thread
# One indexing thread: the same documents cost 15-30% more CPU on two (the partition shares its cores
# with the others and the ingest node, so CPU per message is what bounds ingest, not wall time).
_WRITER_THREADS = 1
_REINDEX_BATCH = 500

_log = logging.getLogger(__name__)


def content_hash(session: units_pb2.Session) -> str:
    """The session's own content_hash, or a digest of its canonical serialization when it has none."""
    if session.content_hash:
        return session.content_hash
    canonical = units_pb2.Session()
    canonical.CopyFrom(session)
    canonical.ClearField("content_hash")
    return "sha256:" + hashlib.sha256(canonical.SerializeToString(deterministic=True)).hexdigest()


class LexicalPartition:
    def __init__(
        self,
        directory: Path,
        partition: int,
        writer_heap_bytes: int = WRITER_HEAP_BYTES,
        durable: bool = True,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        """`writer_heap_bytes`: this partition's share of its node's Tantivy indexing memory (at least
        MIN_WRITER_HEAP_BYTES); an idle writer holds little of it, a batch being indexed up to all of it.
        `durable` False: a replica of the log, whose store need not fsync its commits (store.py).
        `cache_bytes`: its share of the node's SQLite page cache budget."""
        self.partition = partition
        self.directory = Path(directory)
        self._writer_heap_bytes = max(MIN_WRITER_HEAP_BYTES, writer_heap_bytes)
        self._store = Store(self.directory / "store.sqlite3", durable, cache_bytes)
        self._index = schema.open_index(self.directory / "tantivy")
        self._writer = self._new_writer()
        self._write_lock = threading.Lock()
        self._leaf = Leaf(self._index, self._store)
        self._refs = RefReader(self._store)
        self._closed = False
        self._reconcile()

    def _new_writer(self) -> tantivy.IndexWriter:
        return self._index.writer(heap_size=self._writer_heap_bytes, num_threads=_WRITER_THREADS)

    # ---- writes --------------------------------------------------------------------------------

    def upsert(
        self, sessions: Sequence[units_pb2.Session], applied_seq: int | None = None
    ) -> index_pb2.UpsertSessionsResponse:
        """Durably store new and changed sessions; returns once both stores have committed them.

        Within one batch the last version of a session id read from one file wins. `applied_seq`: the log
        sequence of the last record of the batch, stored with the rows (or alone when nothing changed).

        A direct write (no `applied_seq`) of a version read from another file than the stored one (or than
        an earlier one of the batch) is judged by `source_copies`: a cut copy never replaces the complete
        one, and a version whose event log contradicts the held one is refused, and so is a direct
        write into another scope than the stored session's (a scope conflict: one team cannot take over
        another's session by ingesting a copy of its file; a session's id names its scope, so only a store
        written before ids did can hold one). A replica applying
        the log takes every version: the log keeps only a session's latest record, so a replica rebuilt
        from it could not know the older copy, and replicas must hold what the log holds.
        """
        conflicts: list[index_pb2.SourceConflict] = []
        latest = self._latest(sessions, conflicts if applied_seq is None else None)
        with self._write_lock:
            self._check_open()
            self._index_pending()  # left behind by a failed Tantivy commit; unchanged hashes would skip them
            stored = self._store.stored_sessions(list(latest))
            next_session, next_message = self._store.next_ords()
            change_seq = self._store.head_seq()
            batch: list[SessionRecords] = []
            replaced: set[int] = set()
            messages_written = unchanged = 0
            scope_conflicts: list[index_pb2.ScopeConflict] = []
            for session in latest.values():
                digest = content_hash(session)
                known = stored.get(session.id)
                if known is not None and known.content_hash == digest:
                    unchanged += 1
                    continue
                if applied_seq is None and known is not None and known.scope != (session.scope or DEFAULT_SCOPE):
                    scope_conflicts.append(
                        index_pb2.ScopeConflict(session_id=session.id, source_path=session.source_path)
                    )
                    continue
                if applied_seq is None and known is not None and known.source_path != session.source_path:
                    held = session_reads.read_events(self._store, session.id, (), full=True).events
                    comparison = source_copies.compare(held, session.log_events)
                    if comparison.verdict is not source_copies.Verdict.TAKE:
                        conflicts.append(source_copies.refusal(session, known.source_path, comparison))
                        continue
                if known is None:
                    session_ord, next_session = next_session, next_session + 1
                else:
                    session_ord = known.ord
                    replaced.add(session_ord)
                count = len(session.messages)
                message_ords = range(next_message, next_message + count)
                next_message += count
                messages_written += count
                change_seq += 1
                batch.append(session_rows.decompose(session, session_ord, message_ords, digest, change_seq=change_seq))
            response = index_pb2.UpsertSessionsResponse(
                sessions_written=len(batch),
                sessions_unchanged=unchanged,
                messages_written=messages_written,
                source_conflicts=conflicts,
                scope_conflicts=scope_conflicts,
            )
            if batch:
                self._store.replace(batch, replaced, applied_seq)
                self._index_sessions(batch)
            elif applied_seq is not None:
                self._store.set_applied_seq(applied_seq)
            return response

    @staticmethod
    def _latest(
        sessions: Sequence[units_pb2.Session], refused: list[index_pb2.SourceConflict] | None
    ) -> dict[str, units_pb2.Session]:
        """The batch's version of each session id: the last one read from a file. Given `refused` (a direct
        write), a copy read from another file than an earlier one of the batch is judged as against the
        stored one (`source_copies`), a refused one added to `refused`; otherwise the last version wins."""
        latest: dict[str, units_pb2.Session] = {}
        for session in sessions:
            if not session.id:
                raise QuarryError(errors_pb2.INGEST_REJECTED, "a session without an id", parameter="sessions.id")
            held = latest.get(session.id)
            if refused is not None and held is not None and held.source_path != session.source_path:
                comparison = source_copies.compare(held.log_events, session.log_events)
                if comparison.verdict is not source_copies.Verdict.TAKE:
                    refused.append(source_copies.refusal(session, held.source_path, comparison))
                    continue
            latest[session.id] = session
        return latest

    def delete(self, session_ids: Sequence[str], applied_seq: int | None = None, visible: Visible = None) -> list[str]:
        """Durably remove the sessions this partition stores (rows, documents); returns their ids.
        Ids it does not store, or of a scope not `visible`, are skipped. `applied_seq`: as in `upsert`."""
        with self._write_lock:
            self._check_open()
            self._index_pending()
            found = self._store.stored_sessions(list(session_ids)).items()
            stored = {sid: known.ord for sid, known in found if visible is None or known.scope in visible}
            if not stored and applied_seq is None:
                return []
            self._store.delete(stored, applied_seq)
            if stored:
                try:
                    for session_ord in stored.values():
                        self._writer.delete_documents_by_term(schema.SESSION_ORD, session_ord)
                    self._writer.commit()
                except BaseException:
                    self._discard_writer()
                    raise
                self._index.reload()
            return sorted(stored)

    def set_applied_seq(self, applied_seq: int) -> None:
        """Advance the log checkpoint past records that changed no session (assertion operations)."""
        with self._write_lock:
            self._check_open()
            self._store.set_applied_seq(applied_seq)

    @property
    def applied_seq(self) -> int:
        """The last log sequence applied here (0: none yet, or fed by direct pushes)."""
        return self._store.applied_seq()

    def _index_sessions(self, batch: Iterable[SessionRecords]) -> None:
        """Replace the sessions' documents, commit, make them visible, then clear their pending marks."""
        ords = []
        try:
            for item in batch:
                self._writer.delete_documents_by_term(schema.SESSION_ORD, item.session_ord)
                for doc in item.documents:
                    self._writer.add_json(doc)
                ords.append(item.session_ord)
            self._writer.commit()
        except BaseException:
            self._discard_writer()
            raise
        self._index.reload()
        self._store.clear_pending(ords)

    def _discard_writer(self) -> None:
        """Drop uncommitted operations; a writer whose indexing thread died is replaced."""
        try:
            self._writer.rollback()
        except (ValueError, RuntimeError):
            with contextlib.suppress(ValueError, RuntimeError):
                self._writer.wait_merging_threads()
            self._writer = self._new_writer()

    def _reconcile(self) -> None:
        """Bring Tantivy in line with SQLite after a crash, a lost index directory or an analyzer upgrade
        (schema.open_index leaves an empty index in place of one built with another analyzer)."""
        self._index.reload()
        self._index_pending()
        if self._index.searcher().num_docs != self._store.expected_documents():
            started = time.perf_counter()
            everything = self._store.all_ords()
            _log.warning(
                "partition %d: rebuilding its Tantivy index from the store (%d sessions)",
                self.partition,
                len(everything),
            )
            self._writer.delete_all_documents()
            self._writer.commit()
            for start in range(0, len(everything), _REINDEX_BATCH):
                self._reindex(everything[start : start + _REINDEX_BATCH])
            self._index.reload()
            _log.warning(
                "partition %d: Tantivy index rebuilt, %d documents in %.1f s",
                self.partition,
                self._index.searcher().num_docs,
                time.perf_counter() - started,
            )

    def _index_pending(self) -> None:
        pending = self._store.pending_ords()
        for start in range(0, len(pending), _REINDEX_BATCH):
            self._reindex(pending[start : start + _REINDEX_BATCH])

    def _reindex(self, session_ords: Sequence[int]) -> None:
        self._index_sessions(
            session_rows.decompose(session, session_ord, message_ords, rows=False)
            for session, session_ord, message_ords in self._store.load_sessions(session_ords)
        )

    # ---- reads ---------------------------------------------------------------------------------

    def search(
        self, request: index_pb2.PartitionSearchRequest, anchor: index_pb2.PartitionAnchor | None = None
    ) -> index_pb2.PartitionSearchResponse:
        """Sessions matching the plan; with an anchor that has one, only those after it (a cursor walk)."""
        return self.prepare_search(request, anchor).finish()

    def explain(
        self,
        request: index_pb2.PartitionSearchRequest,
        hits: Sequence[index_pb2.PartitionHit],
        compiled: CompiledSearch | None = None,
        visible: Visible = None,
    ) -> index_pb2.PartitionSearchResponse:
        """Rank-only hits of the search explained where they were ranked (leaf.Leaf.explain), those of
        the `visible` scopes only."""
        self._check_open()
        response = self._leaf.explain(request, self.partition, hits, compiled)
        if visible is not None:
            shown = [h for h in response.hits if (h.session.scope or DEFAULT_SCOPE) in visible]
            del response.hits[:]
            response.hits.extend(shown)
        return response

    def term_stats(
        self, request: index_pb2.PartitionSearchRequest, compiled: CompiledSearch | None = None
    ) -> index_pb2.PartitionTermStats:
        """The document count and the scored terms' document frequencies a search would use here."""
        self._check_open()
        return self._leaf.term_stats(request, self.partition, compiled)

    def prepare_search(
        self,
        request: index_pb2.PartitionSearchRequest,
        anchor: index_pb2.PartitionAnchor | None = None,
        compiled: CompiledSearch | None = None,
    ) -> PreparedSearch:
        """`search` ranked, its hits explained only by `finish` (leaf.PreparedSearch); `compiled`: the
        request compiled once for every partition of a node (leaf.compile_search)."""
        self._check_open()
        after = anchor if anchor is not None and anchor.has_after else None
        return self._leaf.prepare(request, self.partition, after, compiled)

    def match_session_ids(self, where: plan_pb2.Predicate) -> list[str]:
        self._check_open()
        return self._leaf.match_session_ids(where if where.WhichOneof("node") else None)

    # Reads below take `visible`: the scopes whose sessions the caller may see (None: every session).

    def facets(
        self, request: index_pb2.PartitionFacetsRequest, visible: Visible = None
    ) -> index_pb2.PartitionFacetsResponse:
        """Per-value session counts of facet families, global and scoped (facets.py)."""
        self._check_open()
        return facets.count(self._index, self._store, request, self.partition, visible)

    def get_sessions(self, ids: Sequence[str], visible: Visible = None) -> list[units_pb2.Session]:
        """Session summaries (no messages or actions) in the order asked; unknown ids are skipped."""
        self._check_open()
        return self._store.sessions_by_id(list(ids), visible)

    def list_sessions(
        self,
        filters: Sequence[sessions_pb2.SessionFilter],
        after: sessions_pb2.SessionAnchor | None,
        limit: int,
        visible: Visible = None,
    ) -> list[units_pb2.Session]:
        """The session API's session list of this partition (store_events.EventReads.list_sessions)."""
        self._check_open()
        return self._store.list_sessions(filters, limit, after, visible)

    def read_events(
        self, request: sessions_pb2.PartitionReadEvents, visible: Visible = None
    ) -> sessions_pb2.StoredEvents:
        """One session's header and events (session_reads.read_events)."""
        self._check_open()
        return session_reads.read_events(
            self._store,
            request.session_id,
            request.filters,
            full=request.full,
            with_text=request.with_text,
            with_payloads=request.with_payloads,
            with_messages=request.with_messages,
            visible=visible,
        )

    def search_events(
        self, request: sessions_pb2.PartitionSearchEvents, visible: Visible = None
    ) -> sessions_pb2.EventSearchPage:
        """Events of one session ranked by a query (session_reads.search_events)."""
        self._check_open()
        return session_reads.search_events(self._store, request.request, request.offset, visible)

    def search_session_events(
        self, request: sessions_pb2.NodeSearchSessions, visible: Visible = None
    ) -> list[sessions_pb2.SessionSearchHit]:
        """Sessions ranked by their strongest matching event (event_search.search_sessions)."""
        self._check_open()
        return event_search.search_sessions(self._index, self._store, request, visible)

    def query_units(self, request: index_pb2.PartitionUnitsRequest) -> index_pb2.PartitionUnitsResponse:
        self._check_open()
        return self._leaf.query_units(request, self.partition)

    def resolve_ref(self, request: refs_pb2.ResolveRefRequest, visible: Visible = None) -> refs_pb2.ResolvedRef:
        """The object a public ref names (refs.py); unresolved with caveats when it is not here."""
        self._check_open()
        return self._refs.resolve(request, visible)

    def embed_feed(self, after_seq: int, max_sessions: int) -> index_pb2.EmbedFeedResponse:
        """What the vector node embeds next: sessions written after its cursor, with their texts."""
        self._check_open()
        for name, value in (("after_seq", after_seq), ("max_sessions", max_sessions)):
            if value < 0:
                raise QuarryError(errors_pb2.INVALID_REQUEST, f"{name} must not be negative", parameter=name)
        return self._store.embed_feed(after_seq, max_sessions)

    def stats(
        self, content_digest: bool = False, visible: Visible = None, identity_only: bool = False
    ) -> index_pb2.PartitionStats:
        """The partition's figures; limited to the `visible` scopes' sessions (without the index's document
        count, which no scope owns) when the call is. `identity_only`: the partition and its store's uuid
        alone, without counting anything (the ingest node asks it at every push)."""
        self._check_open()
        if identity_only:
            return index_pb2.PartitionStats(partition=self.partition, store_uuid=self._store.store_uuid)
        sessions, messages, actions = self._store.totals(visible)
        return index_pb2.PartitionStats(
            partition=self.partition,
            sessions=sessions,
            messages=messages,
            documents=self._index.searcher().num_docs if visible is None else 0,
            actions=actions,
            data_dir=str(self.directory),
            applied_seq=self._store.applied_seq(),
            content_digest=self._store.content_digest() if content_digest else "",
            store_uuid=self._store.store_uuid,
        )

    def close(self) -> None:
        """Finish background merges, release the writer lock, checkpoint SQLite. Idempotent."""
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._writer.wait_merging_threads()
            self._store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise QuarryError(errors_pb2.NOT_HOSTED, f"partition {self.partition} is closed here")
