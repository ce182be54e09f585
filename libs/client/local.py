"""Start, stop and restart a local cluster: every node a real process on a free localhost port.

Nodes bind port 0 and announce the port they got in a run file, so no port is guessed. A node
restarted by `restart()` binds its previous port again, so its peers' channels reconnect."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from quarry.core.config import ClusterInfo
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0


class LocalCluster:
    def __init__(
        self,
        home: Path,
        shards: int = 2,
        embedder: str = "minilm",
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        embed_mode: str = "auto",
    ) -> None:
        """`embed_mode`: the vector node's, auto (embed in the background) or manual (only on backfill)."""
        self.home = Path(home)
        self.shards = shards
        self.embedder = embedder
        self.embed_mode = embed_mode
        self.host = host
        self.env = {**os.environ, **(env or {})}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.node_addresses: dict[str, str] = {}
        self._args: dict[str, list[str]] = {}

    # ----- lifecycle ----------------------------------------------------------------------------

    def start(self, detach: bool = False) -> ClusterInfo:
        """Start every node and record the cluster in `<home>/cluster.json`."""
        existing = ClusterInfo.load(self.home)
        if existing is not None and any(process_alive(pid) for pid in existing.pids.values()):
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"a cluster is already running under {self.home} (query node {existing.query}); "
                "stop it with `quarry down`",
            )
        for sub in ("nodes", "logs", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        try:
            for shard in range(self.shards):
                name = f"index-{shard}"
                args = [
                    "index",
                    "--partition",
                    str(shard),
                    "--partitions",
                    str(self.shards),
                    "--data",
                    str(self._data(name)),
                ]
                self._spawn(name, args, detach)
            self._wait([f"index-{i}" for i in range(self.shards)])
            index_list = ",".join(self.node_addresses[f"index-{i}"] for i in range(self.shards))
            vector_args = ["vector", "--data", str(self._data("vector")), "--embedder", self.embedder]
            if self.embed_mode != "auto":  # auto is the vector node's default
                vector_args += ["--embed-mode", self.embed_mode]
            self._spawn("vector", [*vector_args, "--index", index_list], detach)
            self._spawn("ingest", ["ingest", "--index", index_list, "--data", str(self._data("ingest"))], detach)
            self._wait(["vector", "ingest"])
            vector = self.node_addresses["vector"]
            self._spawn(
                "query",
                [
                    "query",
                    "--index",
                    index_list,
                    "--vector",
                    vector,
                    "--ingest",
                    self.node_addresses["ingest"],
                ],
                detach,
            )
            self._wait(["query"])
        except BaseException:
            self.stop()
            raise
        info = self.info()
        info.save(self.home)
        return info

    def info(self) -> ClusterInfo:
        return ClusterInfo(
            home=str(self.home),
            ingest=self.node_addresses["ingest"],
            query=self.node_addresses["query"],
            index=[self.node_addresses[f"index-{i}"] for i in range(self.shards)],
            vector=self.node_addresses["vector"],
            pids=self.pids,
            embedder=self.embedder,
        )

    @property
    def addresses(self) -> dict[str, object]:
        return self.info().addresses

    @property
    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.procs.items()}

    def stop(self) -> None:
        """SIGTERM every node (front to back), wait, then SIGKILL stragglers."""
        order = ["query", "ingest", "vector", *sorted(n for n in self.procs if n.startswith("index-"))]
        for name in order:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for proc in self.procs.values():
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
        port = self.node_addresses[name].rsplit(":", 1)[1]
        self._spawn(name, [*self._args[name], "--port", port], detach=False, remember=False)
        self._wait([name])
        ClusterInfo.save(self.info(), self.home)

    # ----- internals ----------------------------------------------------------------------------

    def _data(self, name: str) -> Path:
        return self.home / "nodes" / name

    def _run_file(self, name: str) -> Path:
        return self.home / "run" / f"{name}.json"

    def _spawn(self, name: str, args: list[str], detach: bool, remember: bool = True) -> None:
        if remember:
            self._args[name] = args
        run_file = self._run_file(name)
        run_file.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "quarry.client.cli",
            "node", *args, "--host", self.host, "--run-file", str(run_file),
        ]  # fmt: skip
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
                proc = self.procs[name]
                if proc.poll() is not None:
                    log = (self.home / "logs" / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise QuarryError(errors_pb2.INTERNAL, f"node {name} exited with {proc.returncode}:\n{log}")
                if time.monotonic() > deadline:
                    raise QuarryError(errors_pb2.INTERNAL, f"node {name} did not start in {START_TIMEOUT_S:.0f} s")
                time.sleep(0.05)
            self.node_addresses[name] = orjson.loads(run_file.read_bytes())["address"]


def stop_recorded(home: Path) -> list[str]:
    """Stop the cluster recorded under `home` (started with --detach); returns the nodes stopped."""
    info = ClusterInfo.load(home)
    if info is None:
        return []
    stopped = []
    for name, pid in info.pids.items():
        if process_alive(pid):
            os.kill(pid, signal.SIGTERM)
            stopped.append(name)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for pid in info.pids.values():
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
    (home / "cluster.json").unlink(missing_ok=True)
    return stopped


def process_alive(pid: int) -> bool:
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
