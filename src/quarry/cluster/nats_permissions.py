"""What each role of a cluster on the log may do on NATS: the subjects it may publish and subscribe to.

Every Quarry process connects to NATS as the user of its role, and the servers refuse any subject
outside the role's allow-lists (nothing is denied by exception: what is not listed is refused, and the
server logs the violation and tells the client). JetStream and the KV buckets are reached through
subjects too, so the lists name the JetStream API calls each role makes (`$JS.API.<verb>.<stream>…`),
the KV keys it writes (`$KV.<bucket>.<key>`) and the log subjects it writes:

- `admin`: `quarry cluster init` (creates the stream and the buckets, records the config once) and
  operators' reads of the map and the heartbeats (`quarry up` waits on them for its nodes to be placed).
- `ingest`: writes session versions and tombstones (`quarry.<ppp>.s.<key>`) and nothing else of the log,
  reads the latest record of a session (scope conflicts, deletes), holds large payloads in the object
  store (writes `$O.quarry_payloads.>`), reads the map and the heartbeats, and hears `quarry_applied.*`.
- `index`: follows partitions (consumers filtered on `quarry.<ppp>.>`), reads held payloads, writes the
  map and heartbeats (`$KV.quarry_map.assignment`, `$KV.quarry_nodes.node.*`), announces
  `quarry_applied.<ppp>`. It publishes no record.
- `vector`: follows the session records (consumers filtered on `quarry.*.s.*`) and reads held payloads.
  It publishes nothing.
- `query`: writes assertion records (`quarry.<ppp>.a.<op>`) and no session record, reads the map, the
  heartbeats and the log's state (stream info: counts, never records). It creates no consumer on the
  log and reads no record of it.

Replies: each role's replies come to inboxes under its own prefix (`_INBOX.<role>.`, the prefix its
connection uses), and a role may subscribe there only: a role that could subscribe to every inbox
would receive the records another role's consumers deliver to its inbox.

A push consumer delivers to its deliver subject on its creator's behalf, whatever the creator may
publish (nats-server issue #8274). The server refuses one whose deliver subject is in its own stream,
and delivers only where some client holds a literal subscription, so none reaches the log: no role may
subscribe to any log subject. Ordered consumers (KV watches) answer flow control on `$JS.FC.<stream>.>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from quarry.cluster.setup import (
    APPLIED_PREFIX,
    ASSIGNMENT_KEY,
    CONFIG_KEY,
    MAP_BUCKET,
    NODES_BUCKET,
    PAYLOAD_BUCKET,
    PAYLOAD_STREAM,
    SESSIONS_FILTER,
    STREAM,
)

ADMIN, INGEST, INDEX, VECTOR, QUERY = "admin", "ingest", "index", "vector", "query"
ROLES = (ADMIN, INGEST, INDEX, VECTOR, QUERY)
ASSERTIONS_FILTER = "quarry.*.a.*"
PARTITIONS_FILTER = "quarry.*.>"  # one partition's records: quarry.<ppp>.> (sessions and assertions)
API = "$JS.API"


@dataclass(frozen=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def inbox_prefix(role: str) -> str:
    """The inbox prefix a role's connection uses (its replies and consumer deliveries come there)."""
    return f"_INBOX.{role}"


def _api(*tokens: str) -> str:
    return ".".join((API, *tokens))


def _kv_stream(bucket: str) -> str:
    return f"KV_{bucket}"


def _streams_made() -> tuple[str, ...]:
    return (STREAM, _kv_stream(MAP_BUCKET), _kv_stream(NODES_BUCKET), PAYLOAD_STREAM)


def _reads_bucket(bucket: str) -> tuple[str, ...]:
    """A KV bucket read and watched: its stream's info (opening it), gets of a key's last value (the
    buckets take no direct gets), and the ordered push consumers of watches and key listings, asked
    how far they are and answering flow control (`$JS.FC.<stream>.…`; `$JS.FC.<domain>.<account>.<stream>.…`
    where a server has the `js_ack_fc_v2` feature on)."""
    stream = _kv_stream(bucket)
    return (
        _api("STREAM", "INFO", stream),
        _api("STREAM", "MSG", "GET", stream),
        _api("CONSUMER", "CREATE", stream),
        _api("CONSUMER", "INFO", stream, "*"),
        f"$JS.FC.{stream}.>",
        f"$JS.FC.*.*.{stream}.>",
    )


def _reads_cluster_map() -> tuple[str, ...]:
    return (*_reads_bucket(MAP_BUCKET), *_reads_bucket(NODES_BUCKET))


def _follows_log(records: str) -> tuple[str, ...]:
    """Ephemeral pull consumers on the log filtered on `records` (the filter is in the create subject,
    so no other may be asked for), pulled from and asked how far behind they are (they expire unused);
    and the log's latest record of a session, which says whether a held payload was replaced."""
    return (
        _api("CONSUMER", "CREATE", STREAM, "*", records),
        _api("CONSUMER", "MSG", "NEXT", STREAM, "*"),
        _api("CONSUMER", "INFO", STREAM, "*"),
        _api("DIRECT", "GET", STREAM, SESSIONS_FILTER),
    )


def _reads_payloads() -> tuple[str, ...]:
    """Held payloads read by direct gets: an object's meta message (last by subject), then its chunks."""
    return (
        _api("DIRECT", "GET", PAYLOAD_STREAM),
        _api("DIRECT", "GET", PAYLOAD_STREAM, f"$O.{PAYLOAD_BUCKET}.>"),
    )


def _writes_payloads() -> tuple[str, ...]:
    """Held payloads written (chunks and meta messages), looked up, listed by the sweep, and the chunks
    of superseded or unfinished objects purged."""
    return (
        *_reads_payloads(),
        f"$O.{PAYLOAD_BUCKET}.>",
        _api("STREAM", "INFO", PAYLOAD_STREAM),
        _api("STREAM", "MSG", "GET", PAYLOAD_STREAM),
        _api("STREAM", "PURGE", PAYLOAD_STREAM),
    )


def permissions(role: str) -> Permissions:
    """The role's allow-lists; KeyError for a role that is not one of ROLES."""
    inbox = (f"{inbox_prefix(role)}.>",)
    table = {
        ADMIN: Permissions(
            publish=(
                *(_api("STREAM", verb, stream) for stream in _streams_made() for verb in ("INFO", "CREATE")),
                f"$KV.{MAP_BUCKET}.{CONFIG_KEY}",
                *_reads_cluster_map(),
            ),
            subscribe=inbox,
        ),
        INGEST: Permissions(
            publish=(
                SESSIONS_FILTER,
                _api("STREAM", "INFO", STREAM),
                _api("DIRECT", "GET", STREAM, SESSIONS_FILTER),
                # whether a held payload is still named, asked of the log's leader (payloads._referenced)
                _api("STREAM", "MSG", "GET", STREAM),
                *_reads_cluster_map(),
                *_writes_payloads(),
            ),
            subscribe=(*inbox, f"{APPLIED_PREFIX}.*"),
        ),
        INDEX: Permissions(
            publish=(
                *_follows_log(PARTITIONS_FILTER),
                *_reads_payloads(),
                *_reads_cluster_map(),
                f"$KV.{MAP_BUCKET}.{ASSIGNMENT_KEY}",
                f"$KV.{NODES_BUCKET}.node.*",
                f"{APPLIED_PREFIX}.*",
            ),
            subscribe=inbox,
        ),
        VECTOR: Permissions(
            publish=(_api("STREAM", "INFO", STREAM), *_follows_log(SESSIONS_FILTER), *_reads_payloads()),
            subscribe=inbox,
        ),
        QUERY: Permissions(
            publish=(ASSERTIONS_FILTER, _api("STREAM", "INFO", STREAM), *_reads_cluster_map()),
            subscribe=inbox,
        ),
    }
    chosen = table[role]
    return Permissions(tuple(dict.fromkeys(chosen.publish)), tuple(dict.fromkeys(chosen.subscribe)))


def authorization_block(password_hashes: Mapping[str, str]) -> str:
    """The NATS server config's `authorization` block: one user per role, named after it, with its
    password's bcrypt hash (never the password) and its permissions."""
    users = []
    for role in ROLES:
        allowed = permissions(role)
        users.append(
            "    {\n"
            f"      user: {config_string(role)}\n"
            f"      password: {config_string(password_hashes[role])}\n"
            "      permissions: {\n"
            f"        publish: {{allow: {_list(allowed.publish)}}}\n"
            f"        subscribe: {{allow: {_list(allowed.subscribe)}}}\n"
            "      }\n"
            "    }"
        )
    return "authorization {\n  users: [\n" + "\n".join(users) + "\n  ]\n}\n"


def _list(subjects: tuple[str, ...]) -> str:
    return "[" + ", ".join(config_string(s) for s in subjects) + "]"


def config_string(text: str) -> str:
    """`text` as a NATS config string, in double quotes (unquoted, a `$` starts a variable reference)."""
    if '"' in text or "\\" in text or "\n" in text:
        raise ValueError(f"a NATS config string cannot hold quotes, backslashes or line breaks: {text!r}")
    return f'"{text}"'
