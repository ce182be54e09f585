"""A session of any size on the log: a 30 MB Claude Code log (about 40 MB of payload compressed, five times
what a record of the log may be) goes through a cluster on the log with its payload held in the object
store, and every replica has it whole, through a newer version, a rebuild from the log and a delete; a
payload stored without its record is never applied and is swept; a replica skips a payload a newer
version replaced and refuses one that is not what its record names; the vector node embeds it.

The module's own cluster: 3 NATS servers (the log and the payload bucket on all three), 2 index nodes
holding 4 partitions twice each, no embedder (the vector test has a cluster of its own)."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import shutil
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pytest
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from bench.large_sessions import MB, LargeLog
from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.cluster.log_records import HOLD_ABOVE, PAYLOAD, PayloadMismatch, decode, session_record
from quarry.cluster.loop import connect
from quarry.cluster.nats_permissions import INGEST
from quarry.cluster.payloads import CHUNKS, METAS, remove_unreferenced, resolve, store, sweep
from quarry.cluster.publish import publish_all
from quarry.cluster.setup import PAYLOAD_STREAM, STREAM, session_key, session_subject
from quarry.core.routing import partition_for
from quarry.index.partition_set import partition_dir
from quarry.v1 import index_pb2, index_pb2_grpc, sessions_pb2, sessions_pb2_grpc, units_pb2
from tests.cluster.conftest import wait_for_embeddings
from tests.cluster_log.inspect import replicas, wait_for
from tests.index.sessions import Msg, session
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

PARTITIONS = 4
T = TypeVar("T")


@dataclass
class Ingested:
    """The large session's log as last ingested, and the word its latest closing line holds."""

    log: LargeLog
    marker: str


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-log-large"),
        embedder="none",
        log="nats",
        index_nodes=2,
        replicas=2,
        partitions=PARTITIONS,
        nats_servers=3,
        node_left_delay_ms=15_000,
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[QuarryClient]:
    info = cluster.info()
    with QuarryClient(info.query, info.ingest) as quarry:
        yield quarry


@pytest.fixture(scope="module")
def large(client: QuarryClient, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    log = LargeLog(tmp_path_factory.mktemp("large") / "large-one.jsonl", "large-one")
    log.grow(30 * MB, "xyzzyquokkafirst")
    report = list(client.ingest_paths([log.path]))[-1].report
    assert (report.sessions_written, report.searchable, list(report.issues)) == (1, True, []), report
    return Ingested(log, "xyzzyquokkafirst")


def on_log(cluster: LocalCluster, step: Callable[[Client, JetStreamContext], Awaitable[T]]) -> T:
    """`step` with a connection of the test's own to the cluster's NATS servers, as the ingest role (which
    writes records and payloads and reads both)."""

    async def run() -> T:
        nc = await connect(list(cluster.nats_urls), "quarry-test", cluster.nats_access(INGEST))
        try:
            return await step(nc, nc.jetstream())
        finally:
            await nc.close()

    return asyncio.run(run())


def objects_of(cluster: LocalCluster, session_id: str) -> list[str]:
    """The names of the objects the payload bucket holds for the session (not deleted)."""

    async def names(_: Client, js: JetStreamContext) -> list[str]:
        info = await js.stream_info(PAYLOAD_STREAM, subjects_filter=f"{METAS}>")
        found = []
        for subject in info.state.subjects or {}:
            name = base64.urlsafe_b64decode(subject.removeprefix(METAS)).decode()
            meta = json.loads((await js.get_last_msg(PAYLOAD_STREAM, subject)).data or b"{}")
            if name.startswith(session_key(session_id) + ".") and not meta.get("deleted"):
                found.append(name)
        return sorted(found)

    return on_log(cluster, names)


def named_payload(cluster: LocalCluster, session_id: str) -> str:
    """The object the log's latest record of the session names ("" for an inline payload)."""
    subject = session_subject(partition_for(session_id, PARTITIONS), session_id)

    async def latest(_: Client, js: JetStreamContext) -> str:
        return str(((await js.get_last_msg(STREAM, subject, direct=True)).headers or {}).get(PAYLOAD, ""))

    return on_log(cluster, latest)


def assert_every_replica_holds(cluster: LocalCluster, ingested: Ingested) -> None:
    """Each replica of the session's partition holds every event of the log, its closing line's text last."""
    session_id = ingested.log.session_id
    partition = partition_for(session_id, PARTITIONS)
    nodes = [r.node for r in replicas(cluster)[partition]]
    assert len(nodes) == 2
    for node in nodes:
        with cluster.node_channel(node) as channel:
            stub = sessions_pb2_grpc.SessionStoreServiceStub(channel)
            read = sessions_pb2.PartitionReadEvents(partition=partition, session_id=session_id)
            stored = stub.ReadEvents(read, timeout=60)
            assert stored.event_count == ingested.log.lines, node
            last = max(e.seq for e in stored.events)
            late = stub.ReadEvents(
                sessions_pb2.PartitionReadEvents(
                    partition=partition,
                    session_id=session_id,
                    filters=[sessions_pb2.EventFilter(seq=sessions_pb2.Range(min=last))],
                    with_text=True,
                ),
                timeout=60,
            )
            assert ingested.marker in late.events[-1].text, node


def assert_read_back_whole(client: QuarryClient, ingested: Ingested) -> None:
    header, events = client.sessions.read(ingested.log.session_id)
    assert header.id == ingested.log.session_id
    assert len(events) == ingested.log.lines and ingested.marker in events[-1].text
    assert sum(len(e.raw_json) for e in events) > 25 * MB  # the tool outputs came back too


def test_a_30_mb_session_is_searchable_and_whole_on_every_replica(
    cluster: LocalCluster, client: QuarryClient, large: Ingested
) -> None:
    assert [h.session.id for h in client.search(large.marker).hits] == [large.log.session_id]
    assert_read_back_whole(client, large)
    assert_every_replica_holds(cluster, large)
    held = named_payload(cluster, large.log.session_id)
    assert held.startswith(session_key(large.log.session_id))
    assert objects_of(cluster, large.log.session_id) == [held]


def test_a_grown_copy_replaces_it_and_its_old_payload(
    cluster: LocalCluster, client: QuarryClient, large: Ingested
) -> None:
    before = named_payload(cluster, large.log.session_id)
    large.log.grow(3 * MB, "xyzzyquokkagrown")
    report = list(client.ingest_paths([large.log.path]))[-1].report
    assert (report.sessions_written, report.searchable, list(report.issues)) == (1, True, []), report
    large.marker = "xyzzyquokkagrown"
    assert [h.session.id for h in client.search(large.marker).hits] == [large.log.session_id]
    assert_read_back_whole(client, large)
    assert_every_replica_holds(cluster, large)
    after = named_payload(cluster, large.log.session_id)
    assert after != before and objects_of(cluster, large.log.session_id) == [after]


def test_a_replica_wiped_and_rebuilt_from_the_log_has_it(
    cluster: LocalCluster, client: QuarryClient, large: Ingested
) -> None:
    partition = partition_for(large.log.session_id, PARTITIONS)
    wiped, kept = (r.node for r in replicas(cluster)[partition])
    held = content_digest(cluster, kept, partition)
    assert held
    cluster.kill(wiped)
    shutil.rmtree(partition_dir(cluster.home / "nodes" / wiped, partition))
    cluster.restart(wiped)
    wait_for(lambda: rebuilt(cluster, wiped, partition, held), 180, "the wiped replica was not rebuilt")
    assert_every_replica_holds(cluster, large)


def content_digest(cluster: LocalCluster, node: str, partition: int) -> str:
    """The digest of what the node's replica of the partition holds ("" while the node does not hold it)."""
    with cluster.node_channel(node) as channel:
        request = index_pb2.PartitionStatsRequest(partitions=[partition], content_digest=True)
        answer = index_pb2_grpc.IndexServiceStub(channel).Stats(request, timeout=30)
    return "" if answer.failures else str(answer.partitions[0].content_digest)


def rebuilt(cluster: LocalCluster, node: str, partition: int, wanted: str) -> bool:
    """Whether the node's replica of the partition is active, caught up, and holds what `wanted` digests."""
    listed = {r.node: r for r in replicas(cluster)[partition]}
    replica = listed.get(node)
    if replica is None or replica.state != "active" or not replica.alive or replica.lag > 0:
        return False
    return content_digest(cluster, node, partition) == wanted


def big_session(native_id: str, word: str) -> units_pb2.Session:
    """A session found by `word` whose payload is held: random words compress too little to fit in a record."""
    rng = random.Random(word)
    words = " ".join(f"{rng.getrandbits(40):x}" for _ in range(400_000))
    return session(native_id, [Msg("user", f"{word}: {words}")], origin="codex-session", content_hash=f"sha256:{word}")


def test_ack_log_returns_with_the_payload_and_its_record_in_the_log_and_applied_follows(
    cluster: LocalCluster, client: QuarryClient
) -> None:
    held = big_session("logged", "xyzzylogged")
    report = client.ingest_sessions([held], ack="log")
    assert (report.sessions_written, report.in_log, report.searchable) == (1, True, False), report
    named = named_payload(cluster, held.id)
    assert named and objects_of(cluster, held.id) == [named]  # stored before its record was acknowledged
    wait_for(lambda: [h.session.id for h in client.search("xyzzylogged").hits] == [held.id], 60, "not applied")
    assert client.delete([held.id]).searchable
    assert objects_of(cluster, held.id) == []


def test_a_payload_stored_without_its_record_is_never_applied_and_is_swept(
    cluster: LocalCluster, client: QuarryClient, large: Ingested
) -> None:
    orphan = big_session("orphan", "xyzzyorphaned")
    record = session_record(partition_for(orphan.id, PARTITIONS), orphan)
    assert record.held is not None and not record.payload

    async def scenario(_: Client, js: JetStreamContext) -> tuple[int, int]:
        await store(js, record)  # an ingest node that died here, before publishing the record
        await js.publish(f"{CHUNKS}unfinished", b"a chunk of a write that died before its object")
        young = await sweep(js)  # just written: they may be writes still under way
        return young, await sweep(js, older_than_s=0)

    assert objects_of(cluster, orphan.id) == []
    young, swept = on_log(cluster, scenario)
    assert (young, swept) == (0, 2)
    assert objects_of(cluster, orphan.id) == []
    assert [h.session.id for h in client.search("xyzzyorphaned").hits] == []
    assert objects_of(cluster, large.log.session_id) == [named_payload(cluster, large.log.session_id)]

    async def chunks_left(_: Client, js: JetStreamContext) -> list[str]:
        info = await js.stream_info(PAYLOAD_STREAM, subjects_filter=f"{CHUNKS}unfinished")
        return list(info.state.subjects or {})

    assert on_log(cluster, chunks_left) == []


def test_a_replica_skips_a_payload_a_newer_version_replaced_and_refuses_a_wrong_one(
    cluster: LocalCluster, client: QuarryClient
) -> None:
    older, newer = big_session("swapped", "xyzzyolder"), big_session("swapped", "xyzzynewer")
    partition = partition_for(older.id, PARTITIONS)
    first, second = session_record(partition, older), session_record(partition, newer)
    assert first.held is not None and second.held is not None and first.held.size > HOLD_ABOVE

    async def scenario(nc: Client, js: JetStreamContext) -> None:
        await publish_all(nc, [first])
        read = await js.get_last_msg(STREAM, first.subject, direct=True)
        applying = decode(read.subject or "", int(read.seq or 0), read.headers, read.data)  # a replica's, mid-batch
        await publish_all(nc, [second])
        assert await remove_unreferenced(js, [first.held.name, second.held.name]) == [first.held.name]
        skipped = await resolve(js, applying)
        assert skipped.superseded and skipped.payload == b""
        latest = await js.get_last_msg(STREAM, second.subject, direct=True)
        current = decode(latest.subject or "", int(latest.seq or 0), latest.headers, latest.data)
        assert (await resolve(js, current)).session() == newer
        forged = replace(current, held=replace(current.held, digest="0" * 64))
        with pytest.raises(PayloadMismatch):
            await resolve(js, forged)

    on_log(cluster, scenario)
    wait_for(
        lambda: [h.session.id for h in client.search("xyzzynewer").hits] == [newer.id],
        60,
        "the newer version was not applied",
    )
    assert [h.session.id for h in client.search("xyzzyolder").hits] == []
    assert client.delete([newer.id]).searchable
    assert objects_of(cluster, newer.id) == []


def test_a_delete_removes_it_and_its_payload(cluster: LocalCluster, client: QuarryClient, large: Ingested) -> None:
    report = client.delete([f"session:{large.log.session_id}"])
    assert (list(report.deleted), report.searchable) == ([large.log.session_id], True)
    assert [h.session.id for h in client.search(large.marker).hits] == []
    assert objects_of(cluster, large.log.session_id) == []

    async def bucket_bytes(_: Client, js: JetStreamContext) -> int:
        return int((await js.stream_info(PAYLOAD_STREAM)).state.bytes)

    assert on_log(cluster, bucket_bytes) < 64 * 1024  # the chunks are gone, not just marked


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[QuarryClient, Path]]:
    local = LocalCluster(
        tmp_path_factory.mktemp("quarry-log-large-vectors"),
        embedder="minilm",
        log="nats",
        index_nodes=1,
        replicas=1,
        partitions=2,
        nats_servers=1,
        env={"HF_HUB_OFFLINE": "1"},
        ingest_roots=INGEST_ROOTS,
    )
    local.start()
    try:
        info = local.info()
        with QuarryClient(info.query, info.ingest) as quarry:
            yield quarry, tmp_path_factory.mktemp("large-vectors")
    finally:
        local.stop()


def test_the_vector_node_embeds_a_session_whose_payload_is_held(semantic: tuple[QuarryClient, Path]) -> None:
    client, folder = semantic
    log = LargeLog(folder / "large-vectors.jsonl", "large-vectors")
    log.grow(8 * MB, "xyzzyquokkavectors")
    other = session("css", [Msg("user", "the button colour and the page margins look wrong on narrow phone screens")])
    assert client.ingest_sessions([other]).searchable
    assert list(client.ingest_paths([log.path]))[-1].report.searchable
    wait_for_embeddings(client)
    hits = client.search("run all of the test suites and print their output", lane="semantic", limit=2).hits
    assert hits[0].session.id == log.session_id
