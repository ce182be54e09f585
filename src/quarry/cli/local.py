"""Start, stop, supervise and restart a local cluster: every node a real process on a free localhost port.

Two shapes (`log`):
- `direct`, the embedded default: `partitions` index nodes each holding one partition, a vector, an
  ingest and a query node; the ingest node pushes to the index nodes.
- `nats`, a cluster on the replicated log: `nats_servers` NATS servers (JetStream, the log on
  min(3, servers) of them), `index_nodes` index nodes joining the cluster map, which places
  `partitions` partitions on them with `replicas` copies each, and the vector, ingest and query nodes
  on the log. `start` returns once every partition has an active replica.

Nodes bind port 0 and announce the port they got in a run file, so no port is guessed; NATS servers get
free ports when the cluster is first created (recorded in their config files). A node restarted binds
its previous port again, so its peers' channels reconnect.

Supervision (`supervise=True`, what `quarry up` does): a thread restarts a node that died with a
failure (killed, crashed: a non-zero exit) with exponential backoff, SUPERVISE_BACKOFF_S doubling up to
SUPERVISE_MAX_BACKOFF_S and reset once it stayed up a minute; it counts the restarts in cluster.json
(`quarry status` shows them). A node that exited cleanly was stopped on purpose and stays stopped.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeoutError
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import orjson

from quarry.cluster.nats_access import NatsAccess
from quarry.cluster.nats_permissions import ADMIN, INDEX, INGEST, QUERY, VECTOR
from quarry.core.auth import CLUSTER_KEY_FILE, ensure_cluster_key, read_cluster_key
from quarry.core.config import QUERY_NODE, ClusterInfo
from quarry.core.errors import QuarryError
from quarry.core.outgoing import OutgoingInterceptor
from quarry.core.tls import TlsFiles
from quarry.core.tokens import TokenStore
from quarry.v1 import errors_pb2

if TYPE_CHECKING:
    from quarry.cluster.cluster_map import ClusterWatch
    from quarry.cluster.local_nats import NatsSecurity

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
SUPERVISE_POLL_S = 0.2
SUPERVISE_BACKOFF_S = 0.5
SUPERVISE_MAX_BACKOFF_S = 30.0
SUPERVISE_STABLE_S = 60.0
DIRECT, NATS = "direct", "nats"
LOGS = (DIRECT, NATS)


DIRECT_PARTITIONS = 2  # the embedded default: one partition per index node
MAX_DIRECT_PARTITIONS = 64
LOG_PARTITIONS = 16  # a cluster on the log: partitions spread over its index nodes


class LocalCluster:
    def __init__(
        self,
        home: Path,
        partitions: int | None = None,
        embedder: str = "minilm",
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        embed_mode: str = "auto",
        log: str = DIRECT,
        index_nodes: int = 3,
        replicas: int = 2,
        nats_servers: int = 3,
        supervise: bool = False,
        node_left_delay_ms: int = 60_000,
        http: str = "",
        http_allowed_hosts: list[str] | None = None,
        auth: bool | None = None,
        tls: TlsFiles | None = None,
        ingest_roots: list[Path] | None = None,
        colocate: bool = True,
    ) -> None:
        """`partitions`: the embedded default's index nodes, one partition each (default 2); on the log, the
        partitions spread over `index_nodes`, fixed at creation (default 16). `embed_mode`: the vector node's,
        auto (embed in the background) or manual (only on backfill).
        `http`: HOST:PORT of the query node's HTTP JSON API ("" for none), answering the loopback names,
        its host and `http_allowed_hosts`. `auth`: every call needs a
        bearer token of `<home>/auth/tokens.json` and node-to-node calls a cluster key (None: on when
        the token file exists, i.e. once `quarry token create` made a token). `tls`: the nodes' certificate,
        key and CA: every node serves and calls with TLS (the certificate must name `host`).
        `ingest_roots`: the folders whose files may be ingested by path (`quarry ingest`; default: the
        user's home folder and the cluster's home). `colocate` (the embedded default only): the query node
        holds the partitions itself and searches them in-process; False: an index node per partition, as
        on separate machines."""
        if log not in LOGS:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST, f"log {log!r} is not one of {', '.join(LOGS)}", parameter="log"
            )
        if log == DIRECT and partitions is not None and partitions > MAX_DIRECT_PARTITIONS:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"the embedded default runs an index node per partition: at most {MAX_DIRECT_PARTITIONS}, got "
                f"{partitions} (a cluster on the log spreads more over fewer nodes: --log nats)",
                parameter="partitions",
            )
        self.home = Path(home)
        self.embedder = embedder
        self.embed_mode = embed_mode
        self.host = host
        self.log = log
        self.index_nodes = index_nodes
        self.replicas = replicas
        self.partitions = (
            partitions if partitions is not None else (DIRECT_PARTITIONS if log == DIRECT else LOG_PARTITIONS)
        )
        self.nats_servers = nats_servers
        self.node_left_delay_ms = node_left_delay_ms
        self.http = http
        self.http_allowed_hosts = list(http_allowed_hosts or [])
        self.tokens = TokenStore.in_home(self.home)
        self.auth = self.tokens.exists() if auth is None else auth
        self.tls = tls
        self.ingest_roots = ingest_roots if ingest_roots is not None else [Path.home(), self.home]
        self.colocate = colocate and log == DIRECT
        self.env = {**os.environ, **(env or {})}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.node_addresses: dict[str, str] = {}
        self.nats_urls: list[str] = []
        self.restarts: dict[str, int] = {}
        self._args: dict[str, list[str]] = {}
        self._stopping = threading.Event()
        self._supervise = supervise
        self._supervisor: threading.Thread | None = None
        self._lock = threading.RLock()

    # ----- lifecycle ----------------------------------------------------------------------------

    def start(self, detach: bool = False) -> ClusterInfo:
        """Start every node and record the cluster in `<home>/cluster.json`."""
        existing = ClusterInfo.load(self.home)
        if existing is not None and any(process_alive(pid) for pid in [*existing.pids.values(), existing.supervisor]):
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"a cluster is already running under {self.home} (query node {existing.query}); "
                "stop it with `quarry down`",
            )
        for sub in ("nodes", "logs", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        if self.auth:
            self.tokens.initialize()
        ensure_cluster_key(self._cluster_key_file())  # node-to-node calls carry it, with or without tokens
        try:
            if self.log == NATS:
                self._start_on_log(detach)
            else:
                self._start_direct(detach)
        except BaseException:
            self.stop()
            raise
        info = self.info()
        info.save(self.home)
        if self._supervise:
            self._supervisor = threading.Thread(target=self._supervise_forever, name="quarry-supervisor", daemon=True)
            self._supervisor.start()
        return info

    def _start_direct(self, detach: bool) -> None:
        if self.colocate:
            self._start_colocated(detach)
            return
        for partition in range(self.partitions):
            name = f"index-{partition}"
            args = [
                "index",
                "--partition",
                str(partition),
                "--partitions",
                str(self.partitions),
                "--data",
                str(self._data(name)),
            ]
            self._spawn(name, args, detach)
        self._wait([f"index-{i}" for i in range(self.partitions)])
        index_list = ",".join(self.node_addresses[f"index-{i}"] for i in range(self.partitions))
        self._spawn("vector", [*self._vector_args(), "--index", index_list], detach)
        self._spawn("ingest", ["ingest", "--index", index_list, *self._ingest_args()], detach)
        self._wait(["vector", "ingest"])
        self._spawn_query(["--index", index_list], detach)

    def _start_colocated(self, detach: bool) -> None:
        """The query node holding the partitions. The vector and ingest nodes reach them at its address,
        so its port is chosen first; they start before it, since it calls them."""
        from quarry.cluster.local_nats import free_port
        from quarry.core.addresses import dialed_host

        self._adopt_split_partitions()
        port = free_port(self.host)
        address = f"{dialed_host(self.host)}:{port}"
        index_list = ",".join([address] * self.partitions)
        self._spawn("vector", [*self._vector_args(), "--index", index_list], detach)
        self._spawn("ingest", ["ingest", "--index", index_list, *self._ingest_args()], detach)
        self._wait(["vector", "ingest"])
        held = ["--partitions", str(self.partitions), "--data", str(self._data(QUERY_NODE)), "--port", str(port)]
        self._spawn_query(held, detach)

    def _adopt_split_partitions(self) -> None:
        """Partitions an index node per partition held under this home (before the query node held them
        itself): moved to the query node's data, so the archive stays whole."""
        from quarry.index.partition_set import PARTITIONS_DIR

        target = self._data(QUERY_NODE) / PARTITIONS_DIR
        for held in sorted((self.home / "nodes").glob(f"index-*/{PARTITIONS_DIR}/*")):
            moved = target / held.name
            if held.is_dir() and not moved.exists():
                target.mkdir(parents=True, exist_ok=True)
                held.rename(moved)

    def _start_on_log(self, detach: bool) -> None:
        from quarry.cluster import local_nats
        from quarry.cluster.setup import ClusterConfig, ensure_cluster

        servers = local_nats.plan_servers(self.home / "nats", self.nats_servers, self._nats_security(), self.host)
        for server in servers:
            self._spawn_process(server.name, local_nats.command(server), detach)
        self.nats_urls = [s.url for s in servers]
        for server in servers:
            self._wait_port(server.name, server.host, server.client_port)
        config = ClusterConfig(
            self.partitions, self.replicas, min(3, self.nats_servers), node_left_delay_ms=self.node_left_delay_ms
        )
        ensure_cluster(self.nats_urls, config, self.nats_access(ADMIN))
        names = [f"index-{i}" for i in range(self.index_nodes)]
        for name in names:
            self._spawn(name, self._join_args(name), detach)
        self._wait(names)
        self._spawn("vector", [*self._vector_args(), *self._nats_args(VECTOR)], detach)
        self._spawn("ingest", ["ingest", *self._nats_args(INGEST), *self._ingest_args()], detach)
        self._wait(["vector", "ingest"])
        self._spawn_query(self._nats_args(QUERY), detach)
        self.wait_until_placed()

    def _nats_security(self) -> NatsSecurity:
        """The NATS users' credentials under `<home>/auth/nats/` (made once, mode 0600), the servers'
        authorization file made from them (hashes only), the routes' user and the cluster's TLS."""
        from quarry.cluster.local_nats import ROUTE_USER, NatsSecurity
        from quarry.cluster.nats_credentials import ensure_credentials, write_authorization

        directory = self._nats_credentials_dir()
        authorization = write_authorization(directory)
        route = ensure_credentials(directory, [ROUTE_USER])[ROUTE_USER]
        return NatsSecurity(authorization, route, self.tls)

    def _nats_credentials_dir(self) -> Path:
        from quarry.cluster.nats_credentials import credentials_dir

        return credentials_dir(self.home)

    def nats_access(self, role: str) -> NatsAccess:
        """How a process of `role` reaches this cluster's NATS servers: its credentials file, the CA."""
        from quarry.cluster.nats_credentials import credentials_file

        return NatsAccess(credentials_file(self._nats_credentials_dir(), role), self.tls.ca if self.tls else None)

    def _nats_args(self, role: str) -> list[str]:
        """A node's options to reach NATS as `role` (files only: no secret is on a command line)."""
        access = self.nats_access(role)
        tls = ["--nats-tls-ca", str(access.tls_ca)] if access.tls_ca else []
        return ["--nats", ",".join(self.nats_urls), "--nats-credentials", str(access.credentials), *tls]

    def _join_args(self, name: str) -> list[str]:
        return ["index", "--join", *self._nats_args(INDEX), "--node-id", name, "--data", str(self._data(name))]

    def _vector_args(self) -> list[str]:
        args = ["vector", "--data", str(self._data("vector")), "--embedder", self.embedder]
        if self.embed_mode != "auto":  # auto is the vector node's default
            args += ["--embed-mode", self.embed_mode]
        return args

    def _spawn_query(self, peers: list[str], detach: bool) -> None:
        vector, ingest = self.node_addresses["vector"], self.node_addresses["ingest"]
        http = ["--http", self.http] if self.http else []
        http += [arg for name in self.http_allowed_hosts for arg in ("--http-allowed-host", name)]
        self._spawn("query", ["query", *peers, "--vector", vector, "--ingest", ingest, *http], detach)
        self._wait(["query"])

    def add_index_node(self, name: str | None = None) -> str:
        """Start one more index node joining the cluster on the log (its name: the next free index-N)."""
        if self.log != NATS:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "index nodes join a cluster on the log only")
        with self._lock:
            if name is None:
                n = 0
                while f"index-{n}" in self.procs:
                    n += 1
                name = f"index-{n}"
            self._spawn(name, self._join_args(name), detach=False)
        self._wait([name])
        self.save()
        return name

    def wait_until_placed(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until every partition has an active replica on a live node, as the cluster map and the
        heartbeats on NATS say (read as the admin user: it needs no bearer token of the cluster)."""
        from quarry.cluster.cluster_map import ClusterWatch
        from quarry.cluster.loop import LoopThread, connect

        deadline = time.monotonic() + timeout
        loop = LoopThread("quarry-placement")
        try:
            nc = loop.run(connect(self.nats_urls, "quarry-placement", self.nats_access(ADMIN)), timeout=timeout)
            watch = ClusterWatch(nc)
            try:
                loop.run(watch.start(), timeout=max(1.0, deadline - time.monotonic()))
                while not loop.run(_all_placed(watch), timeout=10):
                    if time.monotonic() > deadline:
                        raise QuarryError(errors_pb2.INTERNAL, f"partitions were not all placed within {timeout:.0f} s")
                    time.sleep(0.2)
            finally:
                loop.run(watch.stop(), timeout=5)
                loop.run(nc.close(), timeout=5)
        except FutureTimeoutError:
            raise QuarryError(
                errors_pb2.INTERNAL, f"the cluster map on NATS was not read within {timeout:.0f} s"
            ) from None
        finally:
            loop.stop()

    def info(self) -> ClusterInfo:
        """What the cluster records; `index`: where each partition is served, in partition order (the
        query node's address for each when it holds them)."""
        if self.colocate:
            index = [self.node_addresses[QUERY_NODE]] * self.partitions
        else:
            names = sorted((n for n in self.node_addresses if n.startswith("index-")), key=lambda n: int(n[6:]))
            index = [self.node_addresses[n] for n in names]
        return ClusterInfo(
            home=str(self.home),
            ingest=self.node_addresses["ingest"],
            query=self.node_addresses["query"],
            index=index,
            vector=self.node_addresses["vector"],
            pids=self.pids,
            embedder=self.embedder,
            nats=list(self.nats_urls),
            restarts=dict(self.restarts),
            supervisor=os.getpid() if self._supervise else 0,
            tls_ca=str(self.tls.ca) if self.tls else "",
            http=f"{'https' if self.tls else 'http'}://{self.http}/" if self.http else "",
        )

    def save(self) -> None:
        with self._lock:
            self.info().save(self.home)

    @property
    def addresses(self) -> dict[str, object]:
        return self.info().addresses

    @property
    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.procs.items()}

    def stop(self) -> None:
        """SIGTERM every node (front to back, the log last), wait, then SIGKILL stragglers."""
        self._stopping.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=5)
        with self._lock:
            procs = dict(self.procs)
        nodes = ["query", "ingest", "vector", *sorted(n for n in procs if n.startswith("index-"))]
        for phase in (nodes, sorted(n for n in procs if n.startswith("nats-"))):  # the log goes last
            stopping = [procs[name] for name in phase if name in procs]
            for proc in stopping:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            for proc in stopping:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        cluster_file = self.home / "cluster.json"
        if cluster_file.exists():
            cluster_file.unlink()

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        proc.send_signal(sig)
        proc.wait(timeout=STOP_TIMEOUT_S)

    def restart(self, name: str) -> None:
        """Start a stopped node again on the port it had, so its peers reconnect to it."""
        with self._lock:
            self._respawn(name)
        if not name.startswith("nats-"):
            self._wait([name])
        self.save()

    # ----- supervision --------------------------------------------------------------------------

    def _supervise_forever(self) -> None:
        backoff: dict[str, float] = {}
        due: dict[str, float] = {}
        up_since: dict[str, float] = {name: time.monotonic() for name in self.procs}
        while not self._stopping.wait(SUPERVISE_POLL_S):
            now = time.monotonic()
            with self._lock:
                procs = dict(self.procs)
            for name, proc in procs.items():
                code = proc.poll()
                if code is None:
                    if now - up_since.get(name, now) > SUPERVISE_STABLE_S:
                        backoff.pop(name, None)
                    continue
                if code == 0 or self._stopping.is_set():
                    continue  # stopped on purpose
                if name not in due:
                    delay = backoff.get(name, SUPERVISE_BACKOFF_S)
                    due[name] = now + delay
                    backoff[name] = min(delay * 2, SUPERVISE_MAX_BACKOFF_S)
                    continue
                if now < due[name]:
                    continue
                del due[name]
                try:
                    with self._lock:
                        self._respawn(name)
                        self.restarts[name] = self.restarts.get(name, 0) + 1
                    up_since[name] = time.monotonic()
                    self.save()
                except Exception as error:  # the next round tries again, later
                    print(f"quarry supervisor: restarting {name} failed: {error}", file=sys.stderr)

    def _respawn(self, name: str) -> None:
        args = self._args[name]
        if name.startswith("nats-"):
            self._spawn_process(name, args, detach=False, remember=False)
            return
        port = self.node_addresses[name].rsplit(":", 1)[1]
        self._spawn(name, [*args, "--port", port], detach=False, remember=False)

    # ----- internals ----------------------------------------------------------------------------

    def _data(self, name: str) -> Path:
        return self.home / "nodes" / name

    def _ingest_args(self) -> list[str]:
        roots = [arg for root in self.ingest_roots for arg in ("--ingest-root", str(root))]
        return ["--data", str(self._data("ingest")), *roots]

    def _cluster_key_file(self) -> Path:
        return self.home / "auth" / CLUSTER_KEY_FILE

    def _auth_args(self, role: str) -> list[str]:
        tokens = ["--tokens", str(self.tokens.path)] if self.auth and role in ("query", "ingest") else []
        return [*tokens, "--cluster-key-file", str(self._cluster_key_file())]

    def node_channel(self, name: str) -> grpc.Channel:
        """A plaintext channel to one node as another node opens it: its calls carry the cluster key."""
        key = read_cluster_key(self._cluster_key_file())
        channel = grpc.insecure_channel(self.node_addresses[name])
        return grpc.intercept_channel(channel, OutgoingInterceptor(cluster_key=key))

    def _run_file(self, name: str) -> Path:
        return self.home / "run" / f"{name}.json"

    def _spawn(self, name: str, args: list[str], detach: bool, remember: bool = True) -> None:
        if remember:
            self._args[name] = args
        run_file = self._run_file(name)
        run_file.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "quarry.cli",
            "node", *args, "--host", self.host, "--run-file", str(run_file), *self._auth_args(args[0]),
            *(self.tls.args() if self.tls else []),
        ]  # fmt: skip
        self._launch(name, command, detach)

    def _spawn_process(self, name: str, command: list[str], detach: bool, remember: bool = True) -> None:
        if remember:
            self._args[name] = command
        self._launch(name, command, detach)

    def _launch(self, name: str, command: list[str], detach: bool) -> None:
        log = open(self.home / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        self.procs[name] = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=detach,
        )
        log.close()

    def _wait(self, names: list[str]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        for name in names:
            run_file = self._run_file(name)
            while not run_file.exists():
                self._check_alive(name, deadline)
                time.sleep(0.05)
            self.node_addresses[name] = orjson.loads(run_file.read_bytes())["address"]

    def _wait_port(self, name: str, host: str, port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return
            except OSError:
                self._check_alive(name, deadline)
                time.sleep(0.05)

    def _check_alive(self, name: str, deadline: float) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            log = (self.home / "logs" / f"{name}.log").read_text(errors="replace")[-3000:]
            raise QuarryError(errors_pb2.INTERNAL, f"node {name} exited with {proc.returncode}:\n{log}")
        if time.monotonic() > deadline:
            raise QuarryError(errors_pb2.INTERNAL, f"node {name} did not start in {START_TIMEOUT_S:.0f} s")


def stop_recorded(home: Path) -> list[str]:
    """Stop the cluster recorded under `home` (started with --detach): its supervisor first, which stops
    the nodes, then any node still running; returns the nodes stopped."""
    info = ClusterInfo.load(home)
    if info is None:
        return []
    running = [name for name, pid in info.pids.items() if process_alive(pid)]
    if info.supervisor and process_alive(info.supervisor):
        os.kill(info.supervisor, signal.SIGTERM)
        _wait_gone([info.supervisor], STOP_TIMEOUT_S + 10)
    for pid in info.pids.values():
        if process_alive(pid):
            os.kill(pid, signal.SIGTERM)
    _wait_gone(list(info.pids.values()), STOP_TIMEOUT_S)
    for pid in info.pids.values():
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
    (home / "cluster.json").unlink(missing_ok=True)
    return running


async def _all_placed(watch: ClusterWatch) -> bool:
    """Whether every partition has an active replica on a node whose heartbeat is recent (read on the
    watch's loop, where its view changes)."""
    from quarry.cluster.cluster_map import now_ms
    from quarry.cluster.placement import ACTIVE

    if watch.config is None or watch.map is None:
        return False
    now = now_ms()
    layout = watch.map.placement

    def live(node: str) -> bool:
        beat = watch.heartbeats.get(node)
        return beat is not None and beat.alive(now)

    return all(
        any(r.state == ACTIVE and live(r.node) for r in layout.get(p, ())) for p in range(watch.config.partitions)
    )


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def process_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().split(b")")[-1].split()[0] != b"Z"
    except OSError:
        return True
