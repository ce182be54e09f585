"""NATS on a cluster on the log, attacked from the machine it runs on: every Quarry process connects as
its role's user, and the servers refuse everything else.

The module's cluster is `quarry up --log nats` with tokens and TLS: two NATS servers routed over TLS, one
index node holding 4 partitions, no embedder. It starts with no bearer token in the environment (its
start-up check reads the map from NATS as the admin user). The attacks use the plain nats-py client, as
any local process could: no user, a wrong password, another CA, a plaintext connection, a rogue server
routing itself in; and each role's own user trying what belongs to another role: the query node's user
writing a session record (on a session subject, or disguised on its assertion subjects) or reading the
log's records, the vector node's user publishing records, the ingest node's user writing the cluster
map. Then the product's own path, ingest and search with a token, still works, and none of the nodes
was ever refused a subject."""

from __future__ import annotations

import asyncio
import re
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import nats
import orjson
import pytest
from nats.aio.client import Client

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.cluster import local_nats
from quarry.cluster.log_records import assertion_record, decode, session_record
from quarry.cluster.loop import connect, refused_user
from quarry.cluster.nats_access import NatsAccess
from quarry.cluster.nats_credentials import (
    AUTHORIZATION_FILE,
    credentials_dir,
    credentials_file,
    ensure_credentials,
    read_credentials,
    write_authorization,
)
from quarry.cluster.nats_permissions import (
    ADMIN,
    INDEX,
    INGEST,
    QUERY,
    ROLES,
    VECTOR,
    inbox_prefix,
    permissions,
)
from quarry.cluster.setup import ASSIGNMENT_KEY, MAP_BUCKET, NODES_BUCKET, STREAM, session_subject
from quarry.core.errors import QuarryError
from quarry.core.routing import partition_for
from quarry.core.tokens import TokenStore
from quarry.v1 import errors_pb2, units_pb2
from tests.cluster.test_tls import write_certificates
from tests.index.sessions import Msg, session
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

PARTITIONS = 4
REFUSED_WITHIN_S = 2.0  # a request the server refuses gets no answer: the client's wait ends here
T = TypeVar("T")


@dataclass
class Secured:
    local: LocalCluster
    token: str  # read and write on the scope `default`

    def client(self) -> QuarryClient:
        info = self.local.info()
        return QuarryClient(
            info.query, info.ingest, token=self.token, tls_ca=self.local.tls.ca if self.local.tls else None
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("nats-access")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("QUARRY_TOKEN", raising=False)  # the start-up check must need none
        local = LocalCluster(
            base / "home",
            embedder="none",
            log="nats",
            index_nodes=1,
            replicas=1,
            partitions=PARTITIONS,
            nats_servers=2,
            auth=True,
            tls=write_certificates(base / "tls"),
            ingest_roots=INGEST_ROOTS,
        )
        local.start()
    token, _ = TokenStore.in_home(local.home).create("nats-access", {"default": ["read", "write"]})
    try:
        yield Secured(local, token)
    finally:
        local.stop()


@dataclass
class Probe:
    """A connection of the test's own, as an attacker's process would open one, and the errors the
    servers sent it (a refused subject comes back as an error, not as an exception)."""

    nc: Client
    errors: list[str] = field(default_factory=list)

    def refused(self, subject: str) -> bool:
        return any(subject.lower() in e.lower() and "permissions violation" in e.lower() for e in self.errors)

    async def settle(self) -> None:
        """Until the servers have answered everything sent so far (their refusals included)."""
        await self.nc.flush(timeout=5)
        await asyncio.sleep(0.3)


async def probe(cluster: LocalCluster, errors: list[str] | None = None, **options: Any) -> Probe:
    """A connection to the cluster's servers with these options; `errors` (when given) also receives the
    errors seen while connecting, for a connection that fails."""
    seen = errors if errors is not None else []

    async def on_error(error: Exception) -> None:
        seen.append(f"{type(error).__name__}: {error}")

    nc = await nats.connect(
        list(cluster.nats_urls),
        name="attacker",
        allow_reconnect=False,
        max_reconnect_attempts=0,
        connect_timeout=5,
        error_cb=on_error,
        **options,
    )
    return Probe(nc, seen)


async def as_role(cluster: LocalCluster, role: str) -> Probe:
    """A connection with the role's own credentials and the cluster's CA (what a node of that role has)."""
    return await probe(cluster, **cluster.nats_access(role).connect_options())


def run(step: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(step())


def forged_session(word: str) -> units_pb2.Session:
    return session(f"forged-{uuid.uuid4().hex[:8]}", [Msg("user", f"{word} planted by another role")])


def searched(secured: Secured, word: str) -> list[str]:
    with secured.client() as client:
        return [h.session.id for h in client.search(word).hits]


async def log_subjects(cluster: LocalCluster, filter_subject: str) -> dict[str, int]:
    """The log's subjects matching the filter and how many records each holds, as the admin user reads."""
    nc = await connect(list(cluster.nats_urls), "quarry-test-admin", cluster.nats_access(ADMIN))
    try:
        info = await nc.jetstream().stream_info(STREAM, subjects_filter=filter_subject)
        return dict(info.state.subjects or {})
    finally:
        await nc.close()


def tls_options(cluster: LocalCluster) -> dict[str, Any]:
    assert cluster.tls is not None
    return {"tls": ssl.create_default_context(cafile=str(cluster.tls.ca)), "tls_handshake_first": True}


# ----- the permissions as written ------------------------------------------------------------------


def test_only_the_ingest_role_publishes_sessions_and_only_the_query_role_assertions() -> None:
    for role in ROLES:
        publish = permissions(role).publish
        assert ("quarry.*.s.*" in publish) == (role == INGEST), role
        assert ("quarry.*.a.*" in publish) == (role == QUERY), role
        assert not [s for s in publish if s.startswith("quarry.") and s not in ("quarry.*.s.*", "quarry.*.a.*")]
        assert "$JS.API.>" not in publish and ">" not in publish, role


def test_no_role_may_subscribe_to_the_log_or_to_another_roles_inbox() -> None:
    for role in ROLES:
        subscribe = permissions(role).subscribe
        assert f"{inbox_prefix(role)}.>" in subscribe
        for subject in subscribe:
            assert not subject.startswith(("quarry.", ">", "_INBOX.>", "$JS", "$KV", "$O")), (role, subject)
            for other in set(ROLES) - {role}:
                assert not subject.startswith(inbox_prefix(other)), (role, subject)


def test_only_the_index_role_writes_the_map_and_heartbeats_and_only_the_admin_creates_streams() -> None:
    for role in ROLES:
        publish = permissions(role).publish
        assert (f"$KV.{MAP_BUCKET}.{ASSIGNMENT_KEY}" in publish) == (role == INDEX), role
        assert (f"$KV.{NODES_BUCKET}.node.*" in publish) == (role == INDEX), role
        assert any(".STREAM.CREATE." in s for s in publish) == (role == ADMIN), role
        assert not [s for s in publish if ".STREAM.DELETE." in s or ".STREAM.UPDATE." in s], role


def test_the_consumers_a_role_may_create_on_the_log_are_filtered_to_its_records() -> None:
    creates = {
        role: [s for s in permissions(role).publish if s.startswith(f"$JS.API.CONSUMER.CREATE.{STREAM}")]
        for role in ROLES
    }
    assert creates[INDEX] == [f"$JS.API.CONSUMER.CREATE.{STREAM}.*.quarry.*.>"]
    assert creates[VECTOR] == [f"$JS.API.CONSUMER.CREATE.{STREAM}.*.quarry.*.s.*"]
    assert creates[INGEST] == creates[QUERY] == creates[ADMIN] == []


def test_a_record_of_the_log_is_read_as_what_its_subject_says_not_what_its_headers_claim() -> None:
    planted = forged_session("disguised")
    real = session_record(1, planted)
    assert decode(real.subject, 7, real.headers, real.payload).session().id == planted.id
    on_assertions = decode(f"quarry.001.a.{uuid.uuid4().hex}", 8, real.headers, real.payload)  # a session there
    assert "does not belong on this subject" in on_assertions.refused and on_assertions.payload == b""
    assertion = assertion_record(1, "assert", b"", 0)
    assert "does not belong on this subject" in decode(real.subject, 9, assertion.headers, assertion.payload).refused


# ----- the cluster's files -------------------------------------------------------------------------


def test_each_role_has_a_private_credentials_file_and_the_servers_only_hashes(secured: Secured) -> None:
    directory = credentials_dir(secured.local.home)
    passwords = []
    for name in (*ROLES, local_nats.ROUTE_USER):
        path = credentials_file(directory, name)
        assert path.stat().st_mode & 0o777 == 0o600, path
        credentials = read_credentials(path)
        assert credentials.user == name and len(credentials.password) >= 40
        passwords.append(credentials.password)
    assert len(set(passwords)) == len(passwords), "every user has its own secret"
    configs = [*(secured.local.home / "nats").glob("nats-*/nats.conf"), directory / AUTHORIZATION_FILE]
    texts = [path.read_text() for path in configs]
    assert (
        len(re.findall(r'password: "\$2[ab]\$', "\n".join(texts))) == len(ROLES) + 2
    )  # each role, each server's route
    for secret in passwords:
        assert not any(secret in text for text in texts), "a server config holds a secret"
    routes = directory / local_nats.ROUTES_FILE
    assert routes.stat().st_mode & 0o777 == 0o600


def test_no_node_is_given_a_secret_on_its_command_line(secured: Secured) -> None:
    directory = credentials_dir(secured.local.home)
    secrets = [read_credentials(credentials_file(directory, n)).password for n in (*ROLES, local_nats.ROUTE_USER)]
    for name, proc in secured.local.procs.items():
        command = " ".join(proc.args if isinstance(proc.args, list) else [str(proc.args)])
        assert not any(secret in command for secret in secrets), name
        if not name.startswith("nats-"):
            assert "--nats-credentials" in command, name


# ----- who may connect -----------------------------------------------------------------------------


def test_a_cluster_with_tokens_starts_and_answers_only_callers_with_one(secured: Secured) -> None:
    assert "QUARRY_TOKEN" not in secured.local.env
    info = secured.local.info()
    with (
        QuarryClient(info.query, token="", tls_ca=secured.local.tls.ca) as anonymous,
        pytest.raises(QuarryError) as refused,
    ):
        anonymous.status()
    assert refused.value.code == errors_pb2.UNAUTHENTICATED
    with secured.client() as client:
        status = client.status()
    assert status.map.partitions == PARTITIONS
    assert all(any(r.state == "active" and r.alive for r in p.replicas) for p in status.map.partition_replicas)


def test_a_client_without_credentials_is_refused(secured: Secured) -> None:
    with pytest.raises(Exception) as refused:
        run(lambda: probe(secured.local, **tls_options(secured.local)))
    assert refused_user(refused.value), refused.value


def test_a_wrong_password_is_refused(secured: Secured, tmp_path: Path) -> None:
    with pytest.raises(Exception) as refused_password:
        run(lambda: probe(secured.local, user=ADMIN, password="not-the-password", **tls_options(secured.local)))
    assert refused_user(refused_password.value), refused_password.value
    forged = tmp_path / "admin.json"
    forged.write_bytes(orjson.dumps({"user": ADMIN, "password": "not-the-password"}))
    access = NatsAccess(forged, secured.local.tls.ca)
    with pytest.raises(QuarryError) as refused:
        run(lambda: connect(list(secured.local.nats_urls), "quarry-test", access))
    assert refused.value.code == errors_pb2.UNAUTHENTICATED and "admin" in refused.value.message


def test_a_plaintext_client_or_one_trusting_another_ca_reaches_no_server(secured: Secured, tmp_path: Path) -> None:
    admin = read_credentials(credentials_file(credentials_dir(secured.local.home), ADMIN))
    plain = [u.replace("tls://", "nats://") for u in secured.local.nats_urls]

    async def plaintext() -> None:
        await nats.connect(plain, user=admin.user, password=admin.password, allow_reconnect=False, connect_timeout=3)

    with pytest.raises(Exception) as no_answer:
        run(plaintext)
    assert not refused_user(no_answer.value), "the server read no credentials in plaintext"
    other = write_certificates(tmp_path / "other-ca")
    context = ssl.create_default_context(cafile=str(other.ca))
    seen: list[str] = []
    with pytest.raises(Exception) as untrusted:
        run(
            lambda: probe(
                secured.local, seen, user=admin.user, password=admin.password, tls=context, tls_handshake_first=True
            )
        )
    assert not refused_user(untrusted.value)
    assert seen and all("CERTIFICATE_VERIFY_FAILED" in e for e in seen), seen


def test_a_server_without_the_route_password_is_not_let_into_the_cluster(secured: Secured, tmp_path: Path) -> None:
    """A rogue nats-server holding the nodes' certificate (every Quarry node can read it) but not the
    route user's password routes itself to each server: every server refuses it, it holds no route."""
    tls = secured.local.tls
    assert tls is not None
    configs = sorted((secured.local.home / "nats").glob("nats-*/nats.conf"))
    peers = [
        int(line.split()[-1])
        for c in configs
        for line in c.read_text().splitlines()
        if line.startswith("# cluster-port ")
    ]
    routes = ", ".join(f'"nats://route:guessed@127.0.0.1:{port}"' for port in peers)
    monitor = local_nats.free_port()
    config = tmp_path / "rogue.conf"
    config.write_text(
        f"server_name: rogue\nlisten: 127.0.0.1:{local_nats.free_port()}\nhttp: 127.0.0.1:{monitor}\n"
        f"cluster {{\n  name: quarry\n  listen: 127.0.0.1:{local_nats.free_port()}\n  routes: [{routes}]\n"
        f'  tls {{ cert_file: "{tls.cert}", key_file: "{tls.key}", ca_file: "{tls.ca}", verify: true }}\n}}\n'
    )
    log = tmp_path / "rogue.log"
    with log.open("wb") as out:
        rogue = subprocess.Popen([local_nats.server_binary(), "-c", str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and log.read_text().count("Authorization Violation") < 2 * len(peers):
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/routez", timeout=10) as answer:
            held = orjson.loads(answer.read())["num_routes"]
    finally:
        rogue.terminate()
        rogue.wait(timeout=10)
    text = log.read_text()
    assert text.count("Authorization Violation") >= 2 * len(peers), text[-2000:]  # refused, and again
    assert held == 0, text[-2000:]


def test_servers_planned_without_tls_refuse_clients_without_a_user_all_the_same(tmp_path: Path) -> None:
    """`quarry up --log nats` without --tls-dir: plaintext on loopback, and still no user, no connection."""
    directory = credentials_dir(tmp_path)
    security = local_nats.NatsSecurity(
        write_authorization(directory), ensure_credentials(directory, [local_nats.ROUTE_USER])[local_nats.ROUTE_USER]
    )
    (server,) = local_nats.plan_servers(tmp_path / "nats", 1, security)
    process = subprocess.Popen(local_nats.command(server), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    admin = read_credentials(credentials_file(directory, ADMIN))

    async def attempt(**credentials: str) -> BaseException | None:
        deadline = time.monotonic() + 10
        while True:
            try:
                nc = await nats.connect(server.url, allow_reconnect=False, connect_timeout=2, **credentials)
                await nc.close()
                return None
            except Exception as error:
                if refused_user(error) or time.monotonic() > deadline:
                    return error
                await asyncio.sleep(0.2)  # not listening yet

    try:
        assert run(lambda: attempt(user=admin.user, password=admin.password)) is None
        assert refused_user(run(lambda: attempt()))
        assert refused_user(run(lambda: attempt(user=admin.user, password="guessed")))
    finally:
        process.terminate()
        process.wait(timeout=10)


# ----- each role may do its job only ---------------------------------------------------------------


def test_the_query_role_cannot_publish_a_session_record_into_the_log(secured: Secured) -> None:
    word = f"forgedq{uuid.uuid4().hex[:6]}"
    planted = forged_session(word)
    record = session_record(partition_for(planted.id, PARTITIONS), planted)

    async def attack() -> Probe:
        query = await as_role(secured.local, QUERY)
        await query.nc.publish(record.subject, record.payload, headers=record.headers)
        with pytest.raises(nats.errors.TimeoutError):  # no acknowledgement: the stream never saw it
            await query.nc.jetstream().publish(
                record.subject, record.payload, headers=record.headers, timeout=REFUSED_WITHIN_S
            )
        await query.settle()
        await query.nc.close()
        return query

    query = run(attack)
    assert query.refused(record.subject)
    assert run(lambda: log_subjects(secured.local, record.subject)) == {}
    assert searched(secured, word) == []


def test_the_query_role_cannot_read_the_records_of_the_log(secured: Secured) -> None:
    word = f"secretq{uuid.uuid4().hex[:6]}"
    with secured.client() as client:
        written = client.ingest_sessions([session(f"secret-{word}", [Msg("user", f"{word} is confidential")])])
    assert written.searchable
    subject = session_subject(
        partition_for(f"claude-code-session:secret-{word}", PARTITIONS), f"claude-code-session:secret-{word}"
    )

    async def attack() -> tuple[Probe, list[bytes]]:
        query = await as_role(secured.local, QUERY)
        js = query.nc.jetstream(timeout=REFUSED_WITHIN_S)
        heard: list[bytes] = []

        async def hear(message: Any) -> None:
            heard.append(message.data)

        for wildcard in ("quarry.>", "_INBOX.>", f"{inbox_prefix(INDEX)}.>", f"{inbox_prefix(VECTOR)}.>"):
            await query.nc.subscribe(wildcard, cb=hear)
        with pytest.raises(nats.errors.TimeoutError):
            await js.pull_subscribe("quarry.>", stream=STREAM)
        with pytest.raises(nats.errors.TimeoutError):
            await js.get_last_msg(STREAM, subject, direct=True)
        with pytest.raises(nats.errors.TimeoutError):
            await js.get_msg(STREAM, seq=1)
        with secured.client() as client:  # a new record while it listens: its bytes must not reach it
            client.ingest_sessions([session(f"later-{word}", [Msg("user", f"{word} again, later")])])
        await query.settle()
        await query.nc.close()
        return query, heard

    query, heard = run(attack)
    for refused in (
        "quarry.>",
        "_INBOX.>",
        f"{inbox_prefix(INDEX)}.>",
        f"$JS.API.CONSUMER.CREATE.{STREAM}",
        f"$JS.API.DIRECT.GET.{STREAM}",
        f"$JS.API.STREAM.MSG.GET.{STREAM}",
    ):
        assert query.refused(refused), (refused, query.errors)
    assert not [data for data in heard if word.encode() in data]


def test_the_vector_role_cannot_publish_records_not_even_through_a_consumer(secured: Secured) -> None:
    word = f"forgedv{uuid.uuid4().hex[:6]}"
    planted = forged_session(word)
    partition = partition_for(planted.id, PARTITIONS)
    record = session_record(partition, planted)
    assertion = assertion_record(partition, "assert", b"", 0)

    async def attack() -> tuple[Probe, str]:
        vector = await as_role(secured.local, VECTOR)
        for forged in (record, assertion):
            await vector.nc.publish(forged.subject, forged.payload, headers=forged.headers)
        # A push consumer on the log delivering its records onto a session subject of the log.
        request = {
            "stream_name": STREAM,
            "config": {
                "name": "replay",
                "filter_subject": "quarry.*.s.*",
                "deliver_subject": record.subject,
                "ack_policy": "none",
                "deliver_policy": "all",
            },
        }
        answer = await vector.nc.request(
            f"$JS.API.CONSUMER.CREATE.{STREAM}.replay.quarry.*.s.*", orjson.dumps(request), timeout=5
        )
        await vector.settle()
        await vector.nc.close()
        return vector, orjson.loads(answer.data).get("error", {}).get("description", "")

    vector, refusal = run(attack)
    assert vector.refused(record.subject) and vector.refused(assertion.subject)
    assert "cycle" in refusal
    assert (
        run(lambda: log_subjects(secured.local, f"quarry.{partition:03d}.>"))
        .keys()
        .isdisjoint({record.subject, assertion.subject})
    )
    assert searched(secured, word) == []


def test_the_ingest_role_cannot_write_the_cluster_map(secured: Secured) -> None:
    async def attack() -> tuple[Probe, int, int]:
        ingest = await as_role(secured.local, INGEST)
        kv = await ingest.nc.jetstream(timeout=REFUSED_WITHIN_S).key_value(MAP_BUCKET)
        before = await kv.get(ASSIGNMENT_KEY)
        layout = orjson.dumps({"partitions": {str(p): [["intruder", "active", 0]] for p in range(PARTITIONS)}})
        with pytest.raises(nats.errors.TimeoutError):
            await kv.put(ASSIGNMENT_KEY, layout)
        nodes = await ingest.nc.jetstream(timeout=REFUSED_WITHIN_S).key_value(NODES_BUCKET)
        with pytest.raises(nats.errors.TimeoutError):
            await nodes.put("node.intruder", b"{}")
        await ingest.settle()
        after = await kv.get(ASSIGNMENT_KEY)
        await ingest.nc.close()
        return ingest, before.revision, after.revision

    ingest, before, after = run(attack)
    assert ingest.refused(f"$KV.{MAP_BUCKET}.{ASSIGNMENT_KEY}") and ingest.refused(f"$KV.{NODES_BUCKET}.node.intruder")
    assert after == before
    with secured.client() as client:
        assert all(r.node != "intruder" for p in client.status().map.partition_replicas for r in p.replicas)


# ----- the product's own path ----------------------------------------------------------------------


def test_ingest_search_and_assertions_work_with_every_node_on_its_own_user(secured: Secured) -> None:
    word = f"allowed{uuid.uuid4().hex[:6]}"
    target = session(f"allowed-{word}", [Msg("user", f"{word}: the retry loop backs off"), Msg("assistant", "yes")])
    with secured.client() as client:
        report = client.ingest_sessions([target])
        assert (report.sessions_written, report.searchable) == (1, True)
        assert searched(secured, word) == [target.id]
        written = client.write_assertion(
            units_pb2.Assertion(kind="decision", author="agent", target_ref=f"session:{target.id}", body="keep it")
        )
        assert written.status == "candidate"
        assert client.judge_candidate(written.id, "accept").candidate.status == "accepted"
        assert client.delete([target.id]).deleted == [target.id]
    assert searched(secured, word) == []
    nodes = {"quarry-cluster-init", "quarry-placement", "quarry-ingest", "quarry-vector", "quarry-query", "index-0"}
    for log in (secured.local.home / "logs").glob("nats-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if "Violation" in line:
                assert not any(f':{node}"' in line for node in nodes), line


def test_a_session_record_disguised_as_an_assertion_is_never_applied(secured: Secured) -> None:
    """The query role may publish on its assertion subjects, so the record lands in the log; the index
    node refuses an upsert there (logged, never applied), so the session never becomes searchable, and
    the partition goes on applying what follows it."""
    word = f"disguised{uuid.uuid4().hex[:6]}"
    planted = forged_session(word)
    partition = partition_for(planted.id, PARTITIONS)
    real = session_record(partition, planted)
    disguised_subject = f"quarry.{partition:03d}.a.{uuid.uuid4().hex}"

    async def attack() -> None:
        query = await as_role(secured.local, QUERY)
        await query.nc.jetstream().publish(disguised_subject, real.payload, headers=real.headers)
        await query.nc.close()

    run(attack)
    assert run(lambda: log_subjects(secured.local, disguised_subject)) == {disguised_subject: 1}
    index_log = secured.local.home / "logs" / "index-0.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "does not belong on this subject" not in index_log.read_text():
        time.sleep(0.2)
    assert disguised_subject in index_log.read_text()
    assert searched(secured, word) == []
    after = next(
        s for _ in range(1000) if partition_for((s := forged_session(f"after{word}")).id, PARTITIONS) == partition
    )
    with secured.client() as client:
        assert client.ingest_sessions([after]).searchable, "the partition was not held at the refused record"
    assert searched(secured, f"after{word}") == [after.id]
