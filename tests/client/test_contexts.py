"""Which cluster a client talks to: the order of --cluster, $QUARRY_URL, --context, $QUARRY_CONTEXT, the
current context and the local cluster; the contexts file `quarry context` keeps (YAML, atomic, 0600); the
token and CA each target carries; and the errors a wrong URL, context, CA or token file gets. No cluster
runs here: resolution connects to nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from quarry.cli.main import with_default_command
from quarry.client.client import QuarryClient
from quarry.client.contexts import Context, ContextStore
from quarry.client.target import CLI_NAMES, resolve_target
from quarry.core.config import ClusterInfo
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

TOKEN = "qry_0123456789ab_" + "A" * 43
OTHER_TOKEN = "qry_ba9876543210_" + "B" * 43
VARIABLES = ("QUARRY_URL", "QUARRY_CONTEXT", "QUARRY_TOKEN", "QUARRY_TLS_CA", "QUARRY_HOME")


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No variable of the caller's shell, and a per-test configuration folder."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A data directory where `quarry up` recorded a cluster on 127.0.0.1:7001 (nothing listens)."""
    folder = tmp_path / "home"
    folder.mkdir()
    ClusterInfo(home=str(folder), ingest="127.0.0.1:7002", query="127.0.0.1:7001", index=[], vector="").save(folder)
    return folder


def private_file(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def add(name: str, cluster: str, **fields: object) -> Context:
    context = Context(name=name, cluster=cluster, **fields)  # type: ignore[arg-type]
    ContextStore().add(context)
    return context


def code_of(run: object) -> QuarryError:
    with pytest.raises(QuarryError) as raised:
        run()  # type: ignore[operator]
    return raised.value


# ----- precedence ----------------------------------------------------------------------------------


def test_each_source_overrides_the_ones_after_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add("current", "grpcs://current.example:1")
    add("env", "grpcs://env-context.example:2")
    add("flag", "grpcs://flag-context.example:3")

    def chosen(**given: str) -> str:
        return resolve_target(home=home, names=CLI_NAMES, **given).query

    assert chosen() == "127.0.0.1:7001"  # nothing named: the local cluster under --home
    ContextStore().use("current")
    assert chosen() == "current.example:1"
    monkeypatch.setenv("QUARRY_CONTEXT", "env")
    assert chosen() == "env-context.example:2"
    assert chosen(context="flag") == "flag-context.example:3"
    monkeypatch.setenv("QUARRY_URL", "grpcs://env-url.example:4")
    assert chosen(context="flag") == "env-url.example:4"
    assert chosen(url="grpcs://flag-url.example:5", context="flag") == "flag-url.example:5"


def test_the_context_local_is_the_cluster_under_home_whatever_is_current(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add("team", "grpcs://team.example:1")
    ContextStore().use("team")
    monkeypatch.setenv("QUARRY_CONTEXT", "team")
    target = resolve_target(context="local", home=home)
    assert (target.query, target.ingest, target.home) == ("127.0.0.1:7001", "127.0.0.1:7002", home)
    ContextStore().use("local")
    monkeypatch.delenv("QUARRY_CONTEXT")
    assert resolve_target(home=home).home == home


def test_a_remote_target_never_reads_the_local_record(tmp_path: Path) -> None:
    target = resolve_target(url="grpcs://quarry.example:7443", home=tmp_path / "no-cluster-here")
    assert (target.query, target.tls, target.ca, target.home) == ("quarry.example:7443", True, None, None)


def test_without_anything_named_and_no_local_cluster_the_error_names_every_way(tmp_path: Path) -> None:
    error = code_of(lambda: resolve_target(home=tmp_path / "empty", names=CLI_NAMES))
    assert error.code == errors_pb2.NODE_UNAVAILABLE
    assert "quarry up" in error.message and "--cluster" in error.message and "--context" in error.message


# ----- URLs ----------------------------------------------------------------------------------------


def test_urls_name_the_query_node_tls_and_the_ingest_node() -> None:
    plain = resolve_target(url="grpc://127.0.0.1:50051")
    assert (plain.query, plain.ingest, plain.tls) == ("127.0.0.1:50051", None, False)
    tls = resolve_target(url="grpcs://Quarry.Example.com:7443/?ingest=ingest.example.com:7444")
    assert (tls.query, tls.ingest, tls.tls) == ("quarry.example.com:7443", "ingest.example.com:7444", True)
    six = resolve_target(url="grpc://[::1]:9000?ingest=[::1]:9001")
    assert (six.query, six.ingest) == ("[::1]:9000", "[::1]:9001")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("quarry.example.com:7443", "scheme"),
        ("https://quarry.example.com:7443", "scheme"),
        ("grpcs://quarry.example.com", "no port"),
        ("grpcs://quarry.example.com:0", "no port"),
        ("grpcs://quarry.example.com:99999", "out of range"),
        ("grpcs://:7443", "no host"),
        ("grpcs://quarry.example.com:7443/api", "path"),
        ("grpcs://quarry.example.com:7443?ingest=ingest.example.com", "ingest='ingest.example.com'"),
        ("grpcs://quarry.example.com:7443?ingest=a:1&ingest=b:2", "twice"),
        ("grpcs://quarry.example.com:7443?token=x", "unknown parameter"),
    ],
)
def test_a_malformed_url_is_refused_naming_where_it_came_from(
    url: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = code_of(lambda: resolve_target(url=url, names=CLI_NAMES))
    assert (error.code, error.parameter) == (errors_pb2.INVALID_REQUEST, "--cluster")
    assert why in error.message, error.message
    monkeypatch.setenv("QUARRY_URL", url)
    assert code_of(lambda: resolve_target()).parameter == "QUARRY_URL"


def test_a_url_holding_credentials_is_refused_without_echoing_them() -> None:
    error = code_of(lambda: resolve_target(url=f"grpcs://{TOKEN}@quarry.example.com:7443"))
    assert error.code == errors_pb2.INVALID_REQUEST and "credentials" in error.message
    assert TOKEN not in str(error) and TOKEN not in json.dumps(error.as_dict())


def test_plaintext_beyond_loopback_is_refused_unless_insisted_on() -> None:
    for host in ("127.0.0.1", "localhost", "[::1]"):
        assert resolve_target(url=f"grpc://{host}:50051").tls is False
    error = code_of(lambda: resolve_target(url="grpc://10.1.2.3:50051", names=CLI_NAMES))
    assert (error.code, error.parameter) == (errors_pb2.INVALID_REQUEST, "--cluster")
    assert "--allow-plaintext" in error.message and "grpcs://" in error.message
    assert resolve_target(url="grpc://10.1.2.3:50051", allow_plaintext=True).query == "10.1.2.3:50051"
    add("lab", "grpc://10.1.2.3:50051")
    assert code_of(lambda: resolve_target(context="lab")).parameter == "contexts.lab.cluster"
    add("lab", "grpc://10.1.2.3:50051", allow_plaintext=True)
    assert resolve_target(context="lab").tls is False


# ----- tokens and CAs ------------------------------------------------------------------------------


def test_the_token_is_the_calls_else_quarry_token_else_the_contexts_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = private_file(tmp_path / "team.token", f"{OTHER_TOKEN}\n")
    add("team", "grpcs://team.example:1", token_file=str(token_file))
    assert resolve_target(context="team").token == OTHER_TOKEN
    monkeypatch.setenv("QUARRY_TOKEN", TOKEN)
    assert resolve_target(context="team").token == TOKEN
    assert resolve_target(context="team", token="qry_explicit").token == "qry_explicit"
    assert resolve_target(url="grpcs://team.example:1").token == TOKEN  # a URL has no token file
    assert "qry_" not in repr(resolve_target(context="team"))  # a target never prints its token


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o660])
def test_a_token_file_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    token_file = private_file(tmp_path / "team.token", TOKEN)
    token_file.chmod(mode)
    add("team", "grpcs://team.example:1", token_file=str(token_file))
    error = code_of(lambda: resolve_target(context="team"))
    assert (error.code, error.parameter) == (errors_pb2.PERMISSION_DENIED, "contexts.team.token-file")
    assert str(token_file) in error.message and "chmod 600" in error.message


def test_a_missing_or_empty_token_file_is_an_error_naming_it(tmp_path: Path) -> None:
    add("gone", "grpcs://team.example:1", token_file=str(tmp_path / "missing.token"))
    missing = code_of(lambda: resolve_target(context="gone"))
    assert (missing.code, missing.parameter) == (errors_pb2.NOT_FOUND, "contexts.gone.token-file")
    add("empty", "grpcs://team.example:1", token_file=str(private_file(tmp_path / "empty.token", "\n")))
    assert "empty" in code_of(lambda: resolve_target(context="empty")).message


def test_the_ca_is_the_calls_else_quarry_tls_ca_else_the_contexts_else_the_system_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context_ca, env_ca, flag_ca = (private_file(tmp_path / f"{n}.pem", "PEM") for n in ("context", "env", "flag"))
    add("team", "grpcs://team.example:1", ca=str(context_ca))
    add("roots", "grpcs://public.example:443")
    assert resolve_target(context="roots").ca is None  # verified with the system's roots
    assert resolve_target(context="team").ca == context_ca
    monkeypatch.setenv("QUARRY_TLS_CA", str(env_ca))
    assert resolve_target(context="team").ca == env_ca
    assert resolve_target(context="team", ca=flag_ca).ca == flag_ca
    assert resolve_target(url="grpcs://team.example:1", ca=flag_ca).ca == flag_ca
    assert resolve_target(url="grpc://127.0.0.1:1").ca is None  # plaintext: the variable is not for it


def test_a_missing_ca_file_is_an_error_naming_where_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.pem"
    flag = code_of(lambda: resolve_target(url="grpcs://team.example:1", ca=missing, names=CLI_NAMES))
    assert (flag.code, flag.parameter) == (errors_pb2.NOT_FOUND, "--ca")
    assert str(missing) in flag.message
    add("team", "grpcs://team.example:1", ca=str(missing))
    assert code_of(lambda: resolve_target(context="team")).parameter == "contexts.team.ca"
    monkeypatch.setenv("QUARRY_TLS_CA", str(missing))
    assert code_of(lambda: resolve_target(context="team")).parameter == "QUARRY_TLS_CA"


def test_a_ca_for_a_plaintext_url_is_a_contradiction(tmp_path: Path) -> None:
    ca = private_file(tmp_path / "ca.pem", "PEM")
    error = code_of(lambda: resolve_target(url="grpc://127.0.0.1:1", ca=ca, names=CLI_NAMES))
    assert (error.code, error.parameter) == (errors_pb2.INVALID_REQUEST, "--ca")


# ----- contexts ------------------------------------------------------------------------------------


def test_an_unknown_context_is_not_found_naming_where_it_was_named(monkeypatch: pytest.MonkeyPatch) -> None:
    add("team", "grpcs://team.example:1")
    flag = code_of(lambda: resolve_target(context="teem", names=CLI_NAMES))
    assert (flag.code, flag.parameter) == (errors_pb2.NOT_FOUND, "--context")
    assert "teem" in flag.message and "team" in flag.message and "local" in flag.message
    monkeypatch.setenv("QUARRY_CONTEXT", "teem")
    assert code_of(lambda: resolve_target()).parameter == "QUARRY_CONTEXT"
    monkeypatch.delenv("QUARRY_CONTEXT")
    store = ContextStore()
    store.path.write_text(store.path.read_text() + "current-context: deleted-by-hand\n")
    assert code_of(lambda: resolve_target()).parameter == "current-context"
    assert code_of(lambda: store.use("teem")).code == errors_pb2.NOT_FOUND
    assert code_of(lambda: store.remove("teem")).code == errors_pb2.NOT_FOUND


def test_the_contexts_file_is_private_yaml_in_the_xdg_config_folder(clean_env: Path, tmp_path: Path) -> None:
    token_file = private_file(tmp_path / "team.token", TOKEN)
    store = ContextStore()
    assert store.path == clean_env / "quarry" / "contexts.yaml"
    store.add(Context("team", "grpcs://team.example:7443", ingest="ingest.example:7444", token_file=str(token_file)))
    store.add(Context("lab", "grpc://10.0.0.5:7000", allow_plaintext=True))
    store.use("team")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert yaml.safe_load(store.path.read_text()) == {
        "current-context": "team",
        "contexts": {
            "lab": {"cluster": "grpc://10.0.0.5:7000", "allow-plaintext": True},
            "team": {
                "cluster": "grpcs://team.example:7443",
                "ingest": "ingest.example:7444",
                "token-file": str(token_file),
            },
        },
    }
    assert TOKEN not in store.path.read_text()  # the file says where the token is, never what
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["contexts.yaml", "contexts.yaml.lock"]
    store.remove("team")
    assert store.load().current == "" and list(store.load().contexts) == ["lab"]


def test_concurrent_writers_lose_nothing() -> None:
    def writer(i: int) -> None:
        ContextStore().add(Context(f"c{i}", f"grpcs://c{i}.example:1"))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ContextStore().load().contexts) == sorted(f"c{i}" for i in range(16))


def test_a_contexts_file_another_user_may_write_is_refused() -> None:
    add("team", "grpcs://team.example:1")
    store = ContextStore()
    store.path.chmod(0o620)
    error = code_of(lambda: resolve_target(context="team"))
    assert error.code == errors_pb2.INVALID_REQUEST and "chmod 600" in error.message


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("contexts:\n  team:\n    cluster: grpcs://a:1\n    tokenfile: /x\n", "contexts.team.tokenfile"),
        ("contexts:\n  team:\n    ingest: a:1\n", "contexts.team.cluster"),
        ("contexts:\n  team: grpcs://a:1\n", "contexts.team"),
        ("contexts:\n  local:\n    cluster: grpcs://a:1\n", "contexts.local"),
        ("current: team\n", "current"),
        ("contexts: [\n", ""),
    ],
)
def test_a_malformed_contexts_file_names_the_entry(body: str, where: str) -> None:
    store = ContextStore()
    store.path.parent.mkdir(parents=True)
    private_file(store.path, body)
    error = code_of(lambda: resolve_target(context="team"))
    assert error.code == errors_pb2.INVALID_REQUEST and str(store.path) in error.message
    assert error.parameter == (where or str(store.path)), error


def test_connect_resolves_as_the_cli_does(home: Path, tmp_path: Path) -> None:
    """QuarryClient.connect: the same order, and the same errors (nothing listens: no call is made)."""
    add("team", "grpcs://team.example:1", ca=str(tmp_path / "missing.pem"))
    assert code_of(lambda: QuarryClient.connect(context="team")).parameter == "contexts.team.ca"
    assert code_of(lambda: QuarryClient.connect("grpc://10.0.0.1:1")).parameter == "url"
    with QuarryClient.connect(home=home), QuarryClient.connect("grpcs://team.example:1", token=TOKEN):
        pass


def test_an_ingest_call_without_an_ingest_address_names_the_option() -> None:
    """The ingest node is asked of the cluster; when it cannot say, the error says how to give it."""
    with QuarryClient.connect("grpc://127.0.0.1:1") as client:
        error = code_of(lambda: client.delete(["session:claude-code-session:x"]))
    assert (error.code, error.parameter) == (errors_pb2.INVALID_REQUEST, "ingest")
    assert "?ingest=HOST:PORT" in error.message and "--ingest" in error.message


# ----- the CLI -------------------------------------------------------------------------------------


def test_the_global_options_come_before_the_command() -> None:
    for options in (
        ["--cluster", "grpcs://a:1"],
        ["--cluster=grpcs://a:1"],
        ["--context", "team"],
        ["--context=team", "--ca", "ca.pem"],
        ["--allow-plaintext", "--cluster", "grpc://10.0.0.1:1"],
    ):
        assert with_default_command([*options, "sqlite", "locking"]) == [*options, "search", "sqlite", "locking"]
        assert with_default_command([*options, "status"]) == [*options, "status"]


def quarry(env_config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["XDG_CONFIG_HOME"] = str(env_config)
    return subprocess.run(
        [sys.executable, "-m", "quarry.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_quarry_context_add_use_list_remove(clean_env: Path, tmp_path: Path) -> None:
    token_file = private_file(tmp_path / "team.token", TOKEN)
    ca = private_file(tmp_path / "ca.pem", "PEM")
    home = str(tmp_path / "home")
    options = ["--cluster", "grpcs://team.example:7443", "--ca", str(ca), "--token-file", str(token_file)]
    added = quarry(clean_env, "context", "add", "team", *options, "--ingest", "ingest.example:7444")
    assert added.returncode == 0, added.stderr
    assert "added context team" in added.stdout and "quarry context use team" in added.stderr
    assert quarry(clean_env, "context", "use", "team").returncode == 0

    listed = json.loads(quarry(clean_env, "--home", home, "--format", "json", "context", "list").stdout)
    assert listed["current"] == "team"
    assert [(c["name"], c["current"]) for c in listed["contexts"]] == [("local", False), ("team", True)]
    team = listed["contexts"][1]
    assert (team["cluster"], team["ingest"], team["ca"], team["token_file"]) == (
        "grpcs://team.example:7443",
        "ingest.example:7444",
        str(ca),
        str(token_file),
    )
    assert yaml.safe_load(quarry(clean_env, "--home", home, "--format", "yaml", "context", "list").stdout) == listed
    ndjson = quarry(clean_env, "--home", home, "--format", "ndjson", "context", "list").stdout.splitlines()
    assert [json.loads(line) for line in ndjson] == listed["contexts"]
    csv = quarry(clean_env, "--home", home, "--format", "csv", "context", "list").stdout.splitlines()
    assert csv[0] == "name,current,cluster,ingest,ca,token_file,allow_plaintext,home"
    assert csv[2].startswith("team,true,grpcs://team.example:7443,ingest.example:7444,")
    plain = quarry(clean_env, "--home", home, "context", "list").stdout.splitlines()
    assert plain[0].startswith("  local") and home in plain[0]
    assert plain[1].startswith("* team") and "grpcs://team.example:7443" in plain[1]

    removed = quarry(clean_env, "context", "remove", "team")
    assert removed.returncode == 0 and "the local cluster is current" in removed.stdout
    after = json.loads(quarry(clean_env, "--format", "json", "context", "list").stdout)
    assert after["current"] == "local" and [c["name"] for c in after["contexts"]] == ["local"]


def test_quarry_context_add_checks_what_a_command_would(clean_env: Path, tmp_path: Path) -> None:
    open_token = tmp_path / "open.token"
    open_token.write_text(TOKEN)
    open_token.chmod(0o644)
    refusals = [
        (["local", "--cluster", "grpcs://a.example:1"], "INVALID_REQUEST", "name"),
        (["bad name", "--cluster", "grpcs://a.example:1"], "INVALID_REQUEST", "name"),
        (["team", "--cluster", "https://a.example:1"], "INVALID_REQUEST", "--cluster"),
        (["team", "--cluster", "grpc://10.0.0.5:1"], "INVALID_REQUEST", "--cluster"),
        (["team", "--cluster", "grpcs://a.example:1", "--ca", str(tmp_path / "none.pem")], "NOT_FOUND", "--ca"),
        (["team", "--cluster", "grpcs://a.example:1", "--token-file", str(open_token)], "PERMISSION_DENIED", None),
        (["team", "--cluster", "grpcs://a.example:1?ingest=b:2", "--ingest", "c:3"], "INVALID_REQUEST", "--ingest"),
        (["team", "--cluster", "grpcs://a.example:1", "--ingest", "no-port"], "INVALID_REQUEST", "--ingest"),
    ]
    for args, code, parameter in refusals:
        refused = quarry(clean_env, "--format", "json", "context", "add", *args)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
        error = json.loads(refused.stdout)["error"]
        assert error["code"] == code, (args, error)
        assert error.get("parameter") == (parameter or "--token-file"), (args, error)
    assert not (clean_env / "quarry" / "contexts.yaml").exists()  # nothing refused was stored
    allowed = quarry(clean_env, "context", "add", "lab", "--cluster", "grpc://10.0.0.5:1", "--allow-plaintext")
    assert allowed.returncode == 0, allowed.stderr


def test_context_commands_and_a_search_by_url_start_light() -> None:
    """`quarry context --help` loads nothing heavy; a search given --cluster reads no contexts file (and
    so imports no YAML), even when one exists (tests/client/test_cli_imports.py's rule)."""
    from tests.client.test_cli_imports import NEVER_AT_START, SEARCH_IMPORTS_ANYWAY, _loaded

    assert [m for m in (*NEVER_AT_START, "typer.rich_utils") if m in _loaded("main.run()", ["context", "--help"])] == []
    add("team", "grpcs://team.example:1")
    loaded = _loaded("main.run()", ["--cluster", "grpc://127.0.0.1:1", "search", "sqlite"])
    assert "quarry.client.client" in loaded
    assert [m for m in NEVER_AT_START if m in loaded and m not in SEARCH_IMPORTS_ANYWAY] == []
