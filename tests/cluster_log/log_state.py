"""The log's servers as a test sees them. For a failed test's report, what each NATS server says of the
heartbeats bucket: the bucket's stream (its leader, each replica's currency and lag) and every node's
newest heartbeat (its revision and age) as that server answers; a node taken for gone while it says it
beats is explained here or nowhere: a server that lags, or a heartbeat that never landed. And whether
the log is whole (`whole`): every stream led, every replica current, as after a restarted server has
caught up. It reads as the cluster's admin user (`access`), which may read the map and the heartbeats."""

from __future__ import annotations

import asyncio
import time

import nats
import orjson
from nats.aio.client import Client

from quarry.cluster.nats_access import NatsAccess
from quarry.cluster.setup import MAP_BUCKET, NODES_BUCKET, STREAM

READ_TIMEOUT_S = 3.0


async def _connect(urls: str | list[str], access: NatsAccess) -> Client:
    """One attempt, no reconnection: a server that does not answer is what the report says."""
    return await nats.connect(
        urls, connect_timeout=2, allow_reconnect=False, max_reconnect_attempts=0, **access.connect_options()
    )


def whole(urls: list[str], access: NatsAccess) -> bool:
    """Whether every stream of the cluster (the log and both buckets) has a leader and every other
    replica current, as the first server that answers says."""
    try:
        return asyncio.run(asyncio.wait_for(_whole(urls, access), READ_TIMEOUT_S * 3))
    except Exception:
        return False


async def _whole(urls: list[str], access: NatsAccess) -> bool:
    nc = await _connect(urls, access)
    try:
        js = nc.jetstream(timeout=READ_TIMEOUT_S)
        for stream in (STREAM, f"KV_{MAP_BUCKET}", f"KV_{NODES_BUCKET}"):
            cluster = (await js.stream_info(stream)).cluster
            if cluster is None or not cluster.leader:
                return False
            if any(not r.current or r.offline for r in cluster.replicas or []):
                return False
        return True
    finally:
        await nc.close()


def describe(urls: list[str], access: NatsAccess) -> str:
    try:
        return asyncio.run(asyncio.wait_for(_describe(urls, access), READ_TIMEOUT_S * 4 * max(1, len(urls))))
    except Exception as error:  # a report must not fail the report
        return f"(the log could not be read: {error!r})"


async def _describe(urls: list[str], access: NatsAccess) -> str:
    return "\n".join([await _one(url, access) for url in urls])


async def _one(url: str, access: NatsAccess) -> str:
    try:
        nc = await _connect(url, access)
    except Exception as error:
        return f"{url}: does not answer ({error!r})"
    lines = [f"{url}:"]
    try:
        js = nc.jetstream(timeout=READ_TIMEOUT_S)
        stream = f"KV_{NODES_BUCKET}"
        try:
            info = await js.stream_info(stream)
            cluster = info.cluster
            replicas = ", ".join(
                f"{r.name} current={r.current} lag={r.lag} active={r.active}" for r in (cluster.replicas or [])
            )
            lines.append(f"  {stream}: leader {cluster.leader}; {replicas}; last seq {info.state.last_seq}")
        except Exception as error:
            lines.append(f"  {stream}: no info ({error!r})")
        try:
            kv = await js.key_value(NODES_BUCKET)
            now = int(time.time() * 1000)
            for key in sorted(await kv.keys()):
                entry = await kv.get(key)
                beat = orjson.loads(entry.value) if entry.value else {}
                lines.append(f"  {key}: revision {entry.revision}, {now - beat.get('at_ms', now)} ms old")
        except Exception as error:
            lines.append(f"  heartbeats: not read ({error!r})")
    finally:
        await nc.close()
    return "\n".join(lines)
