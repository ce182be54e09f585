"""The CLI, `quarry mcp` and the Python client against a cluster they did not start: a 2-partition cluster with
tokens and TLS, reached from a working folder and a --home that hold no record of it, through
`quarry --cluster grpcs://…` with $QUARRY_TOKEN and --ca, and through a named context (its token file and
CA file). The README's quick examples run both ways; what would make them unsafe (no CA, no token) fails."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.config import ClusterInfo
from quarry.core.tls import TlsFiles
from quarry.core.tokens import TokenStore
from tests.cluster.corpus import SESSIONS, session_id, write_corpus
from tests.cluster.test_tls import write_certificates
from tests.shared_paths import INGEST_ROOTS

pytestmark = pytest.mark.cluster

VARIABLES = ("QUARRY_URL", "QUARRY_CONTEXT", "QUARRY_TOKEN", "QUARRY_TLS_CA", "QUARRY_HOME")


@dataclass
class Remote:
    url: str  # grpcs://127.0.0.1:PORT, the query node alone
    ingest: str  # the ingest node's HOST:PORT
    tls: TlsFiles
    token: str  # read and write on the scope `default`
    token_file: Path  # holds `token`, mode 0600
    config: Path  # XDG_CONFIG_HOME, holding the context `remote`
    workdir: Path  # where the commands run: no cluster, no data directory
    home: Path  # the --home they get: no cluster.json


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    tls = write_certificates(tmp_path_factory.mktemp("tls"))
    cluster_home = tmp_path_factory.mktemp("quarry-remote")
    store = TokenStore.in_home(cluster_home)
    admin, _ = store.create("operator", {"default": ["admin"]})
    token, _ = store.create("laptop", {"default": ["read", "write"]})
    local = LocalCluster(cluster_home, partitions=2, embedder="none", tls=tls, ingest_roots=INGEST_ROOTS)
    local.start()
    try:
        info = local.info()
        archive = tmp_path_factory.mktemp("archive")
        write_corpus(archive)
        with QuarryClient.connect(f"grpcs://{info.query}?ingest={info.ingest}", token=admin, ca=tls.ca) as client:
            report = list(client.ingest_paths([archive]))[-1].report
            assert report.sessions_written == len(SESSIONS), report
        elsewhere = tmp_path_factory.mktemp("elsewhere")
        token_file = elsewhere / "remote.token"
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
        for folder in ("work", "home", "config"):
            (elsewhere / folder).mkdir()
        yield Remote(
            url=f"grpcs://{info.query}",
            ingest=info.ingest,
            tls=tls,
            token=token,
            token_file=token_file,
            config=elsewhere / "config",
            workdir=elsewhere / "work",
            home=elsewhere / "home",
        )
    finally:
        local.stop()


def quarry(remote: Remote, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """`quarry --home <empty> ARGS` from the working folder, with none of the shell's QUARRY_ variables
    (but `token` as $QUARRY_TOKEN) and the test's contexts file."""
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["XDG_CONFIG_HOME"] = str(remote.config)
    if token:
        env["QUARRY_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(remote.home), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=remote.workdir,
        timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def json_of(result: subprocess.CompletedProcess[str]) -> Any:
    return orjson.loads(ok(result))


@pytest.fixture(scope="module")
def with_context(remote: Remote) -> Remote:
    """The context `remote` (the URL, its ingest node, the CA and the token file), made the current one."""
    added = ["--cluster", remote.url, "--ingest", remote.ingest, "--ca", str(remote.tls.ca)]
    ok(quarry(remote, "context", "add", "remote", *added, "--token-file", str(remote.token_file)))
    ok(quarry(remote, "context", "use", "remote"))
    return remote


WAYS = ("url", "context")


def run_way(remote: Remote, way: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A command through --cluster URL with $QUARRY_TOKEN and --ca, or through the current context alone."""
    if way == "url":
        return quarry(remote, "--cluster", remote.url, "--ca", str(remote.tls.ca), *args, token=remote.token)
    return quarry(remote, *args)


@pytest.mark.parametrize("way", WAYS)
def test_the_readme_examples_run_against_the_remote_cluster(with_context: Remote, way: str) -> None:
    remote = with_context

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_way(remote, way, *args)

    envelope = json_of(run("--format", "json", "search", "sqlite locking"))
    assert envelope["hits"][0]["session"]["id"] == session_id("sqlite")
    assert (
        envelope["hits"][0]["session"]["id"]
        == json_of(run("--format", "json", "sqlite locking"))["hits"][0]["session"]["id"]
    )  # a query without a command is a search

    rows = ok(run("--format", "ndjson", "messages where role:assistant AND text:timeout")).splitlines()
    assert {orjson.loads(line)["sessionId"] for line in rows} == {session_id("sqlite"), session_id("retry")}

    facets = json_of(run("--format", "json", "facets"))
    assert int(facets["global"]["totalSessions"]) == len(SESSIONS)

    listed = json_of(run("--format", "json", "sessions", "list"))
    assert {item["header"]["id"] for item in listed["items"]} == {session_id(key) for key in SESSIONS}
    read = json_of(run("--format", "json", "sessions", "read", session_id("sqlite")))
    assert read["session"]["id"] == session_id("sqlite") and read["events"]

    resolved = json_of(run("--format", "json", "read", f"session:{session_id('sqlite')}"))
    assert resolved["resolved"] is True

    status = json_of(run("--format", "json", "status"))
    assert sorted(n["role"] for n in status["nodes"]) == ["ingest", "query", "vector"]
    assert all(n["up"] for n in status["nodes"])

    embedding = json_of(run("--format", "json", "embed", "status"))
    assert embedding["vectorReachable"] is True


def test_delete_reaches_the_ingest_node_by_url_context_and_the_port_the_cluster_reports(
    with_context: Remote,
) -> None:
    """The ingest node from ?ingest=, from the context, and (neither given) at the query node's host on
    the port the cluster reports; each deletion is gone from searches when the command returns."""
    remote = with_context
    plans = [
        ("css", ["--cluster", f"{remote.url}?ingest={remote.ingest}", "--ca", str(remote.tls.ca)], remote.token),
        ("deploy", [], None),  # the current context
        ("retry", ["--cluster", remote.url, "--ca", str(remote.tls.ca)], remote.token),  # the reported port
    ]
    for key, options, token in plans:
        report = json_of(
            quarry(remote, *options, "--format", "json", "delete", f"session:{session_id(key)}", token=token)
        )
        assert report["deleted"] == [session_id(key)], (key, report)
        listed = json_of(quarry(remote, *options, "--format", "json", "sessions", "list", token=token))
        assert session_id(key) not in {item["header"]["id"] for item in listed["items"]}, key


def test_status_of_a_remote_cluster_reads_no_local_record(with_context: Remote, tmp_path: Path) -> None:
    """A --home whose (stale) record says its supervisor restarted the query node: a remote status does
    not mix that in; the record's cluster is not the one asked."""
    remote = with_context
    ClusterInfo(
        home=str(remote.home), ingest="127.0.0.1:1", query="127.0.0.1:2", index=[], vector="", restarts={"query": 7}
    ).save(remote.home)
    try:
        status = json_of(run_way(remote, "url", "--format", "json", "status"))
        assert all(n["up"] for n in status["nodes"]) and {n["restarts"] for n in status["nodes"]} == {0}
        with_flag = json_of(quarry(remote, "--context", "remote", "--format", "json", "status"))
        assert {n["restarts"] for n in with_flag["nodes"]} == {0}
    finally:
        (remote.home / "cluster.json").unlink()


def test_an_unverified_or_anonymous_call_fails(with_context: Remote) -> None:
    remote = with_context
    # No CA: verified with the system's roots, which do not hold the cluster's CA.
    unverified = quarry(remote, "--cluster", remote.url, "--format", "json", "status", token=remote.token)
    assert unverified.returncode == 2 and orjson.loads(unverified.stdout)["error"]["code"] == "NODE_UNAVAILABLE"
    # A URL carries no token: without $QUARRY_TOKEN the call has none.
    anonymous = quarry(remote, "--cluster", remote.url, "--ca", str(remote.tls.ca), "--format", "json", "status")
    assert anonymous.returncode == 2 and orjson.loads(anonymous.stdout)["error"]["code"] == "UNAUTHENTICATED"
    # The local cluster, chosen over the current context, is not running under this --home.
    local = quarry(remote, "--context", "local", "status")
    assert local.returncode == 2 and "no cluster is running under" in local.stderr


def test_mcp_over_stdio_and_the_python_client_address_the_context(
    with_context: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = with_context
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["XDG_CONFIG_HOME"] = str(remote.config)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "quarry.cli", "--home", str(remote.home), "--context", "remote", "mcp"],
        env=env,
        cwd=remote.workdir,
    )

    async def search() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("search", {"query": "sqlite locking"})

    result = anyio.run(search)
    assert not result.is_error, result
    assert result.structured_content["hits"][0]["session"]["id"] == session_id("sqlite")

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(remote.config))
    with QuarryClient.connect(context="remote") as client:
        assert client.search("sqlite locking").hits[0].session.id == session_id("sqlite")
    with QuarryClient.connect(remote.url, token=remote.token, ca=remote.tls.ca) as client:
        assert client.search("sqlite locking").hits[0].session.id == session_id("sqlite")
