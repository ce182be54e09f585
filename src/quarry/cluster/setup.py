"""The cluster's resources on NATS JetStream, their names, and creating them (`quarry cluster init`).

- Stream `QUARRY` (subjects `quarry.>`): the log. One subject per session, `quarry.<ppp>.s.<key>`
  (ppp the partition, key a digest of the session id), keeping only the latest record of each
  (`max_msgs_per_subject: 1`): the log is a compacted copy of the archive, from which any replica can
  be rebuilt. Assertion writes are records of their own, `quarry.<ppp>.a.<op id>`, applied in log order
  with the sessions of their partition. File storage, `num_replicas` = the log replicas (3: one log
  server may die), a 2-minute duplicate window for idempotent publishes (message ids).
- KV bucket `quarry_map`: `config` (partitions, replicas; written once) and `assignment` (partition ->
  replicas with their states), written only by compare-and-set on the key's revision, which is the
  map's generation.
- KV bucket `quarry_nodes`: `node.<id>` is each index node's heartbeat (address, partitions with their
  applied sequence and lag), put every second. In memory (replicated, not fsync'd): a heartbeat is
  worth nothing a few seconds later, and must not wait behind the log's fsync'd writes of a bulk ingest.
- Object store bucket `quarry_payloads` (stream `OBJ_quarry_payloads`, file storage, the log's replicas):
  the payloads of session versions too large to be a record of the log themselves (quarry.cluster.payloads);
  the log's record then names its object.
- Core subject `quarry_applied.<ppp>` (not stored): a replica announces each applied sequence there,
  so an ingest waiting for `applied` need not poll.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.errors import BadRequestError, KeyWrongLastSequenceError, NotFoundError, ServiceUnavailableError

from quarry.cluster.loop import LoopThread, connect
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

if TYPE_CHECKING:
    from quarry.cluster.nats_access import NatsAccess

STREAM = "QUARRY"
SUBJECTS = "quarry.>"
MAP_BUCKET = "quarry_map"
NODES_BUCKET = "quarry_nodes"
PAYLOAD_BUCKET = "quarry_payloads"
PAYLOAD_STREAM = f"OBJ_{PAYLOAD_BUCKET}"  # the object store's stream, as NATS names it
CONFIG_KEY = "config"
ASSIGNMENT_KEY = "assignment"
APPLIED_PREFIX = "quarry_applied"
DUPLICATE_WINDOW_S = 120.0
MAX_RECORD_BYTES = 8 * 1024 * 1024
NODE_TTL_S = 24 * 3600.0
READY_TIMEOUT_S = 60.0
T = TypeVar("T")  # a heartbeat key of a node gone for a day is dropped by NATS itself


@dataclass(frozen=True)
class ClusterConfig:
    """Fixed when the cluster is created: the partitions, the copies of each, the log's copies, and how
    the controller moves replicas (how long a node may be gone before its partitions are copied
    elsewhere, and how many partitions may be copying at once)."""

    partitions: int = 16
    replicas: int = 2
    log_replicas: int = 3
    node_left_delay_ms: int = 60_000
    max_moves: int = 4

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: bytes) -> ClusterConfig:
        body: dict[str, Any] = orjson.loads(data)
        defaults = cls()
        return cls(
            int(body["partitions"]),
            int(body["replicas"]),
            int(body.get("log_replicas", defaults.log_replicas)),
            int(body.get("node_left_delay_ms", defaults.node_left_delay_ms)),
            int(body.get("max_moves", defaults.max_moves)),
        )


def session_key(session_id: str) -> str:
    return hashlib.blake2b(session_id.encode(), digest_size=16).hexdigest()


def session_subject(partition: int, session_id: str) -> str:
    return f"quarry.{partition:03d}.s.{session_key(session_id)}"


def assertion_subject(partition: int, op_id: str) -> str:
    return f"quarry.{partition:03d}.a.{op_id}"


def partition_filter(partition: int) -> str:
    return f"quarry.{partition:03d}.>"


def partition_of_subject(subject: str) -> int:
    return int(subject.split(".", 2)[1])


SESSIONS_FILTER = "quarry.*.s.*"


def applied_subject(partition: int) -> str:
    return f"{APPLIED_PREFIX}.{partition:03d}"


def node_key(node: str) -> str:
    return f"node.{node}"


async def ensure(nc: Client, wanted: ClusterConfig) -> ClusterConfig:
    """Create the stream and the buckets when absent and record the config once; returns the cluster's
    config (an existing cluster's, which must have the same partition count as `wanted`)."""
    js = nc.jetstream()
    replicas = wanted.log_replicas
    stream = api.StreamConfig(
        name=STREAM,
        subjects=[SUBJECTS],
        storage=api.StorageType.FILE,
        num_replicas=replicas,
        max_msgs_per_subject=1,
        duplicate_window=DUPLICATE_WINDOW_S,
        max_msg_size=MAX_RECORD_BYTES,
        discard=api.DiscardPolicy.OLD,
        allow_direct=True,
    )
    try:
        await js.stream_info(STREAM)
    except NotFoundError:
        await js.add_stream(stream)
    map_kv = await _bucket(
        js, api.KeyValueConfig(bucket=MAP_BUCKET, history=16, replicas=replicas, storage=api.StorageType.FILE)
    )
    await _bucket(
        js,
        api.KeyValueConfig(
            bucket=NODES_BUCKET, history=1, replicas=replicas, storage=api.StorageType.MEMORY, ttl=NODE_TTL_S
        ),
    )
    await _payload_bucket(js, replicas)
    config = wanted
    try:
        await map_kv.create(CONFIG_KEY, config.to_json())
    except KeyWrongLastSequenceError:
        existing = ClusterConfig.from_json((await map_kv.get(CONFIG_KEY)).value or b"{}")
        if existing.partitions != wanted.partitions:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"this cluster has {existing.partitions} partitions, fixed when it was created; it cannot be "
                f"given {wanted.partitions}",
                parameter="--partitions",
            ) from None
        return existing
    return config


async def _bucket(js: Any, config: api.KeyValueConfig) -> Any:
    try:
        return await js.key_value(config.bucket)
    except (NotFoundError, BadRequestError):
        return await js.create_key_value(config)


async def _payload_bucket(js: Any, replicas: int) -> None:
    """The payload bucket, created when absent (a cluster made before large payloads were held gets it)."""
    try:
        await js.object_store(PAYLOAD_BUCKET)
    except (NotFoundError, BadRequestError):
        config = api.ObjectStoreConfig(storage=api.StorageType.FILE, replicas=replicas)
        await js.create_object_store(PAYLOAD_BUCKET, config=config)


async def read_config(nc: Client) -> ClusterConfig | None:
    """The cluster's config, None when `quarry cluster init` has not run yet."""
    try:
        kv = await nc.jetstream().key_value(MAP_BUCKET)
        entry = await kv.get(CONFIG_KEY)
    except (NotFoundError, BadRequestError):
        return None
    return ClusterConfig.from_json(entry.value or b"{}")


async def until_ready(call: Callable[[], Awaitable[T]], timeout: float = READY_TIMEOUT_S) -> T:
    """`call()` once JetStream answers: a cluster of log servers just started elects its meta leader
    first (a few seconds), and answers timeouts or 503 until then."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await call()
        except (NatsTimeoutError, ServiceUnavailableError, NoRespondersError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


def ensure_cluster(urls: list[str], wanted: ClusterConfig, access: NatsAccess | None = None) -> ClusterConfig:
    """`ensure` from blocking code (the CLI, the local launcher), as `access`'s user (default: this process's)."""
    loop = LoopThread("quarry-cluster-init")
    try:

        async def run() -> ClusterConfig:
            nc = await connect(urls, "quarry-cluster-init", access)
            try:
                return await until_ready(lambda: ensure(nc, wanted))
            finally:
                await nc.close()

        return loop.run(run(), timeout=READY_TIMEOUT_S + 10)
    finally:
        loop.stop()
