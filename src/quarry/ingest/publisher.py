"""The cluster-mode write path: sessions into the replicated log, acknowledged by level.

Every valid session becomes one record on its session's subject of the partition its lineage root
routes to (quarry.cluster.log_records), whatever its size: a payload too large to be a record is held in the
object store, stored before its record is published (quarry.cluster.payloads).
Two copies of one session read from two files are judged here, before the log (quarry.core.source_copies):
the log keeps only a session's latest record, and every replica applies whatever it holds, so a cut copy
must never become that record. A version is judged against the one kept earlier in its batch, else against
the log's latest record (read only when that record names another source file: each record carries a
digest of its source path, SOURCE_DIGEST); a cut copy is not published (the issue `cut_copy`), nor is one
whose events contradict the held copy's (`source_conflict`), as in the embedded default.
Records are published in batches, each until the stream has acknowledged every record of it, retried
with the same message ids through a log server's failure (quarry.cluster.publish). Once a batch's
records (or tombstones) are in the log, the held payloads the sessions' earlier records named are
removed, and every SWEEP_S the node removes held payloads no record names (an ingest that died between
storing one and publishing its record). Then:
- ack `log`: the call returns once every record is acknowledged by the stream: stored on a quorum of
  log servers, each fsync'd (`sync_interval: always`). It survives the loss of any index node and of
  one of three log servers, and is not searchable yet.
- ack `applied` (default): it also waits until, for every partition it wrote to, every active replica
  on a live node (at least one) has applied up to the partition's last record (replicas announce each
  applied sequence, and heartbeat it every second). That is the embedded default's meaning, searchable,
  whichever replica a query reads (as Elasticsearch acknowledges once every in-sync copy has the write);
  a replica still catching up is not read, and a dead node's is not waited for. If the replicas make no
  progress for APPLIED_STALL_S, the report says `searchable: false` instead of failing: the sessions are
  safe in the log and become searchable as the replicas catch up.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Iterable, Sequence

import orjson
from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from quarry.cluster.cluster_map import ClusterWatch, now_ms
from quarry.cluster.log_records import (
    DELETE,
    OP,
    PAYLOAD,
    SCOPE,
    SOURCE_DIGEST,
    UPSERT,
    Outgoing,
    decode,
    session_record,
    tombstone,
)
from quarry.cluster.loop import LoopThread, connect
from quarry.cluster.payloads import SWEEP_S, remove_unreferenced, resolve, sweep
from quarry.cluster.placement import ACTIVE
from quarry.cluster.publish import publish_all
from quarry.cluster.setup import APPLIED_PREFIX, STREAM, session_subject
from quarry.core import auth, source_copies
from quarry.core.routing import partition_for
from quarry.core.tokens import DEFAULT_SCOPE
from quarry.ingest.acks import APPLIED, check_ack
from quarry.ingest.router import scope_conflict_issue, source_conflict_issue
from quarry.v1 import ingest_pb2, units_pb2

BATCH_SESSIONS = 500
BATCH_BYTES = 32 * 1024 * 1024
APPLIED_STALL_S = 30.0
LOOKUP_TIMEOUT_S = 5.0
REMOVE_TIMEOUT_S = 60.0
COPIES_TIMEOUT_S = 120.0  # reading the held copies a batch is judged against (held payloads: tens of MB)

_log = logging.getLogger(__name__)


class LogPublisher:
    def __init__(self, urls: list[str]) -> None:
        self.loop = LoopThread("quarry-ingest-nats")
        self.nc = self.loop.run(connect(urls, "quarry-ingest"))
        self.watch = ClusterWatch(self.nc)
        self.loop.run(self.watch.start())
        assert self.watch.config is not None
        self.partitions = self.watch.config.partitions
        self._applied: dict[tuple[int, str], int] = {}
        self._progress = asyncio.Event()
        self.loop.run(self.nc.subscribe(f"{APPLIED_PREFIX}.*", cb=self._on_applied))
        self.loop.spawn(self._sweep_forever())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.run(self.watch.stop(), timeout=5)
            self.loop.run(self.nc.close(), timeout=5)
        self.loop.stop()

    def epoch(self) -> str:
        """The log's identity: a log created anew (a new cluster) means every file is read again."""
        info = self.loop.run(self.nc.jetstream().stream_info(STREAM), timeout=30)
        return f"log {STREAM} created {info.created}"

    # ----- writes -------------------------------------------------------------------------------

    def ingest(
        self, sessions: Iterable[units_pb2.Session], report: ingest_pb2.IngestReport, ack: str = APPLIED
    ) -> None:
        """Publish the sessions (validated and counted as received by the servicer: quarry.ingest.validate)
        and acknowledge them as `ack` says; adds what was written and refused to `report`."""
        level = check_ack(ack, has_log=True)
        started = time.perf_counter()
        watermarks: dict[int, int] = {}
        batch: list[tuple[units_pb2.Session, Outgoing]] = []
        size = 0
        for session in sessions:
            record = session_record(partition_for(session.id, self.partitions), session)
            record.headers[SOURCE_DIGEST] = source_digest(session.source_path)
            batch.append((session, record))
            size += record.size
            if len(batch) >= BATCH_SESSIONS or size >= BATCH_BYTES:
                self._publish_versions(batch, report, watermarks)
                batch, size = [], 0
        if batch:
            self._publish_versions(batch, report, watermarks)
        report.in_log = True
        report.watermarks.extend(
            ingest_pb2.PartitionWatermark(partition=p, seq=s) for p, s in sorted(watermarks.items())
        )
        report.searchable = level == APPLIED and self._wait_applied(watermarks)
        if level == APPLIED and not report.searchable:
            report.caveats.append(_NOT_YET_SEARCHABLE)
        report.elapsed_ms += (time.perf_counter() - started) * 1000

    def _publish_versions(
        self,
        batch: list[tuple[units_pb2.Session, Outgoing]],
        report: ingest_pb2.IngestReport,
        watermarks: dict[int, int],
    ) -> None:
        """Publish one version of each session of a batch: the last of those read from one file, and of
        copies read from several the complete one (`_judged`). A session the log holds in another scope is
        refused (a scope conflict: the replicas take the log's latest version, so it is refused here,
        before the log). A session's id names its scope (quarry.core.session_ids), so only a log written
        before ids did can hold one: a session of the scope `default` whose id another scope's session had
        then."""
        latest = self.loop.run(self._latest([s.id for s, _ in batch]), timeout=LOOKUP_TIMEOUT_S * 4)
        in_scope = []
        for session, record in batch:
            held = latest[session.id]
            if held is not None and held.get(OP) != DELETE and held.get(SCOPE, DEFAULT_SCOPE) != session.scope:
                report.issues.append(scope_conflict_issue(session.id, session.source_path))
            else:
                in_scope.append((session, record))
        elsewhere = {  # the sessions whose latest record in the log was read from another file than a version here
            s.id
            for s, r in in_scope
            if (held := latest[s.id]) is not None
            and held.get(OP) == UPSERT
            and held.get(SOURCE_DIGEST) != r.headers[SOURCE_DIGEST]
        }
        logged = self.loop.run(self._logged_copies(sorted(elsewhere)), timeout=COPIES_TIMEOUT_S) if elsewhere else {}
        kept = _judged(in_scope, logged, report)
        named: list[dict[str, str] | None] = []  # the records naming held payloads this batch may supersede
        for session, record in kept:
            named += [latest[session.id], record.headers]
            report.messages_written += len(session.messages)
        if kept:
            self._publish([record for _, record in kept], watermarks)
            self._remove_superseded(named)
        report.sessions_written += len(kept)

    def delete(self, session_ids: list[str], ack: str) -> ingest_pb2.DeleteReport:
        """A tombstone for each session the log holds (the others are not found), acknowledged as `ack`."""
        level = check_ack(ack, has_log=True)
        report = ingest_pb2.DeleteReport()
        ids = list(dict.fromkeys(session_ids))
        latest = self.loop.run(self._latest(ids), timeout=LOOKUP_TIMEOUT_S * 4)
        held = _held(latest, auth.SCOPES.get())
        records = []
        for session_id in ids:
            if held[session_id]:
                records.append(tombstone(partition_for(session_id, self.partitions), session_id))
                report.deleted.append(session_id)
            else:
                report.not_found.append(session_id)
        watermarks: dict[int, int] = {}
        if records:
            self._publish(records, watermarks)
            self._remove_superseded([latest[s] for s in report.deleted])
        report.in_log = True
        report.searchable = level == APPLIED and self._wait_applied(watermarks)
        if level == APPLIED and not report.searchable:
            report.caveats.append(_NOT_YET_SEARCHABLE)
        return report

    async def _latest(self, session_ids: Sequence[str]) -> dict[str, dict[str, str] | None]:
        """The headers of the log's latest record of each session (None: the log holds none)."""
        jsm = self.nc.jetstream()

        async def one(session_id: str) -> dict[str, str] | None:
            subject = session_subject(partition_for(session_id, self.partitions), session_id)
            try:
                message = await jsm.get_last_msg(STREAM, subject, direct=True)
            except NotFoundError:
                return None
            return dict(message.headers or {})

        found = await asyncio.gather(*(one(s) for s in session_ids))
        return dict(zip(session_ids, found, strict=True))

    async def _logged_copies(self, session_ids: Sequence[str]) -> dict[str, units_pb2.Session]:
        """The session version the log's latest record of each session holds, its held payload read (none
        for a session whose latest record is no longer a version, or was replaced meanwhile)."""
        js = self.nc.jetstream()

        async def one(session_id: str) -> units_pb2.Session | None:
            subject = session_subject(partition_for(session_id, self.partitions), session_id)
            try:
                message = await js.get_last_msg(STREAM, subject, direct=True)
            except NotFoundError:
                return None
            record = await resolve(js, decode(subject, message.seq or 0, message.headers, message.data))
            if record.op != UPSERT or record.refused or record.superseded:
                return None
            return record.session()

        found = await asyncio.gather(*(one(s) for s in session_ids))
        return {s: copy for s, copy in zip(session_ids, found, strict=True) if copy is not None}

    def _remove_superseded(self, headers: Sequence[dict[str, str] | None]) -> None:
        """Remove the held payloads these records name that the log's latest records no longer name (the
        new versions and tombstones are in the log). A failure leaves them to the sweep."""
        names = [h[PAYLOAD] for h in headers if h is not None and h.get(PAYLOAD)]
        if not names:
            return
        try:
            self.loop.run(remove_unreferenced(self.nc.jetstream(), names), timeout=REMOVE_TIMEOUT_S)
        except Exception as error:
            _log.warning(
                "removing superseded payloads failed (%s: %s); the sweep removes them", type(error).__name__, error
            )

    async def _sweep_forever(self) -> None:
        while True:
            try:
                await sweep(self.nc.jetstream())
            except Exception as error:
                _log.warning(
                    "sweeping held payloads failed (%s: %s); again in %.0f s", type(error).__name__, error, SWEEP_S
                )
            await asyncio.sleep(SWEEP_S)

    def _publish(self, records: Sequence[Outgoing], watermarks: dict[int, int]) -> None:
        acknowledged = self.loop.run(publish_all(self.nc, records))
        for record, seq in zip(records, acknowledged, strict=True):
            partition = int(record.subject.split(".", 2)[1])
            watermarks[partition] = max(watermarks.get(partition, 0), seq)

    # ----- applied ------------------------------------------------------------------------------

    async def _on_applied(self, message: Msg) -> None:
        body = orjson.loads(message.data)
        partition = int(message.subject.rsplit(".", 1)[1])
        key = (partition, str(body["node"]))
        if int(body["seq"]) > self._applied.get(key, 0):
            self._applied[key] = int(body["seq"])
            self._progress.set()

    def _wait_applied(self, watermarks: dict[int, int]) -> bool:
        if not watermarks:
            return True
        return self.loop.run(self._applied_everywhere(dict(watermarks)))

    async def _applied_everywhere(self, watermarks: dict[int, int]) -> bool:
        """True once every active replica on a live node applied each partition's watermark; False when
        the replicas made no progress toward it for APPLIED_STALL_S."""
        stalled_since = time.monotonic()
        left = len(watermarks)
        while True:
            missing = [p for p, seq in watermarks.items() if not self._applied_by_every_active(p, seq)]
            if not missing:
                return True
            if len(missing) < left:
                left, stalled_since = len(missing), time.monotonic()
            if time.monotonic() - stalled_since > APPLIED_STALL_S:
                return False
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), 0.2)

    def _applied_by_every_active(self, partition: int, seq: int) -> bool:
        layout = self.watch.map
        if layout is None:
            return False
        now = now_ms()
        serving = 0
        for replica in layout.placement.get(partition, ()):
            if replica.state != ACTIVE:
                continue
            beat = self.watch.heartbeats.get(replica.node)
            if beat is None or not beat.alive(now):
                continue
            progress = beat.partitions.get(partition)
            heard = max(self._applied.get((partition, replica.node), 0), progress.applied if progress else 0)
            if heard < seq:
                return False
            serving += 1
        return serving > 0


def source_digest(path: str) -> str:
    """What a record says of its source file: enough to tell two files apart without naming either."""
    return hashlib.sha256(path.encode()).hexdigest()[:32]


def _judged(
    versions: Sequence[tuple[units_pb2.Session, Outgoing]],
    logged: dict[str, units_pb2.Session],
    report: ingest_pb2.IngestReport,
) -> list[tuple[units_pb2.Session, Outgoing]]:
    """The version of each session to publish, in the order first read. Each version read from another
    file than the copy held (the batch's kept version, else the log's, `logged`) is judged against it
    (quarry.core.source_copies): one the held copy continues, or contradicts, is not published and is
    named in `report` (`cut_copy`, `source_conflict`); otherwise the later version replaces the held one."""
    kept: dict[str, tuple[units_pb2.Session, Outgoing]] = {}
    for session, record in versions:
        earlier = kept.get(session.id)
        held = earlier[0] if earlier is not None else logged.get(session.id)
        if held is not None and held.source_path != session.source_path:
            comparison = source_copies.compare(held.log_events, session.log_events)
            if comparison.verdict is not source_copies.Verdict.TAKE:
                refusal = source_copies.refusal(session, held.source_path, comparison)
                report.issues.append(source_conflict_issue(refusal))
                continue
        kept[session.id] = (session, record)
    return list(kept.values())


def _held(latest: dict[str, dict[str, str] | None], writable: frozenset[str] | None) -> dict[str, bool]:
    """Whether the log's latest record of each session is a version (not a tombstone, not absent) in one
    of the `writable` scopes (any when None: a cluster without authentication)."""
    return {
        session_id: headers is not None
        and headers.get(OP) != DELETE
        and (writable is None or headers.get(SCOPE, DEFAULT_SCOPE) in writable)
        for session_id, headers in latest.items()
    }


_NOT_YET_SEARCHABLE = (
    "the sessions are in the replicated log, but no active replica of some partitions applied them in time: "
    "they become searchable as the replicas catch up (`quarry cluster status` shows the lag)"
)
