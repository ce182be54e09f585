"""docker-compose.yml parses, and every Quarry command it starts is one the CLI accepts: the embedded
default (the services without a profile) and the `nats` profile (a cluster on the log: three NATS
JetStream servers, `quarry cluster init`, index nodes that --join, vector/ingest/query with --nats).
Both start with authentication: the one-shot `auth-init` makes the cluster key and the token file in
the volume `auth`, and every node waits for it and reads them there; for the `nats` profile it also
makes a NATS user per role there and the servers' authorization file in the volume `nats-auth`, which
every NATS server includes, and each process reaches NATS with its role's file. Every Quarry container
runs as the image's unprivileged user with a read-only root filesystem."""

from __future__ import annotations

import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from quarry.cluster.local_nats import server_binary
from quarry.cluster.nats_credentials import AUTHORIZATION_FILE, credentials_file, read_credentials
from quarry.cluster.nats_permissions import ADMIN, ROLES
from quarry.core.auth import read_cluster_key
from quarry.core.errors import QuarryError
from quarry.core.tokens import TokenStore
from tests.contract.cli_commands import node_security, resolve, role
from tests.shared_paths import REPO

NODE_ROLES = {"node index", "node vector", "node ingest", "node query"}
PUBLIC_ROLES = {"node query", "node ingest"}  # they take --tokens: every call needs a bearer token
AUTH_INIT = "auth-init"
AUTH_VOLUME = "auth"
NATS_AUTH_VOLUME = "nats-auth"  # the NATS servers' authorization file (hashes and permissions)
NATS_CONFIG = "/etc/nats/quarry.conf"
NATS_ROLE = {"cluster init": ADMIN, **{f"node {role}": role for role in ("index", "vector", "ingest", "query")}}


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return compose


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _compose()["services"]
    return services


def _default() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _services().items() if not s.get("profiles")}


def _profile(profile: str) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _services().items() if profile in s.get("profiles", [])}


def _is_quarry(service: dict[str, Any]) -> bool:
    """A service running the image's `quarry` ENTRYPOINT (not one that replaces it, like auth-init)."""
    return str(service.get("image", "")).startswith("quarry:") and "entrypoint" not in service


def _commands(services: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each Quarry service's command, resolved through the CLI (raises on anything it would refuse)."""
    return {name: resolve(s["command"]) for name, s in services.items() if _is_quarry(s)}


def _match(pattern: str, text: str) -> re.Match[str]:
    found = re.fullmatch(pattern, text)
    assert found is not None, f"{text!r} is not {pattern}"
    return found


def _nats_servers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services.items() if str(s.get("image", "")).startswith("nats:")}


def test_every_quarry_command_of_the_embedded_default_exists_in_the_cli() -> None:
    services = _default()
    commands = _commands(services)
    assert {role(ctx) for ctx in commands.values()} == NODE_ROLES
    for name, ctx in commands.items():
        assert ctx.params.get("host") == "0.0.0.0", f"{name} must listen beyond loopback in a container"
        assert not ctx.params.get("nats"), f"{name}: the embedded default needs no NATS"
        if role(ctx) == "node index":
            assert ctx.params["partition"] and not ctx.params["join"], f"{name} holds fixed partitions"
    assert "otel-collector" in services
    assert not _nats_servers(services), "the embedded default runs no NATS server"


def test_every_quarry_command_of_the_nats_profile_exists_in_the_cli() -> None:
    services = _profile("nats")
    commands = _commands(services)
    assert {role(ctx) for ctx in commands.values()} == NODE_ROLES | {"cluster init"}
    for name, ctx in commands.items():
        assert ctx.params.get("nats"), f"{name}: a node of the cluster on the log needs --nats"
        assert not ctx.params.get("index"), f"{name}: --index is the embedded default's"
        if role(ctx) in NODE_ROLES:
            assert ctx.params.get("host") == "0.0.0.0", f"{name} must listen beyond loopback in a container"


def test_the_nats_profile_does_not_reuse_a_service_name_or_host_port_of_the_default() -> None:
    default, cluster = _default(), _profile("nats")
    assert not set(default) & set(cluster)
    ports = [p.split(":")[0] for s in [*default.values(), *cluster.values()] for p in s.get("ports", [])]
    assert len(ports) == len(set(ports)), f"host ports bound twice: {ports}"


def test_the_nats_profile_runs_three_routed_jetstream_servers_with_fsync_on_every_write() -> None:
    servers = _nats_servers(_profile("nats"))
    assert len(servers) == 3
    for name, server in servers.items():
        major, minor = (int(n) for n in _match(r"nats:(\d+)\.(\d+)\b.*", server["image"]).groups())
        assert (major, minor) >= (2, 11), f"{name}: {server['image']}"
        command = server["command"]
        assert "-js" in command or "--jetstream" in command
        assert command[command.index("--cluster_name") + 1] == "quarry"
        assert command[command.index("--server_name") + 1] == name
        routes = command[command.index("--routes") + 1].split(",")
        assert {_match(r"nats://([^:]+):6222", r).group(1) for r in routes} == set(servers)
        config = next(v.split(":")[0] for v in server["volumes"] if v.endswith(":/etc/nats/quarry.conf:ro"))
        assert command[command.index("-c") + 1] == "/etc/nats/quarry.conf"
        text = (REPO / config).read_text()
        assert re.search(r"^\s*sync_interval:\s*always\s*$", text, re.M)
        store = re.search(r"^\s*store_dir:\s*(\S+)\s*$", text, re.M)
        assert store is not None and any(v == f"{name}:{store.group(1)}" for v in server["volumes"]), (
            f"{name}: JetStream's store_dir must be the service's volume"
        )
        assert re.search(r"^max_payload:\s*8MB\s*$", text, re.M)


def test_every_nats_url_of_the_profile_names_its_nats_servers() -> None:
    services = _profile("nats")
    servers = set(_nats_servers(services))
    for name, ctx in _commands(services).items():
        hosts = {_match(r"nats://([^:]+):4222", u).group(1) for u in ctx.params["nats"].split(",")}
        assert hosts == servers, f"{name}: {ctx.params['nats']}"


def test_the_nats_profile_index_nodes_join_under_distinct_names_at_their_service_address() -> None:
    services = _profile("nats")
    joined = {name: ctx for name, ctx in _commands(services).items() if role(ctx) == "node index"}
    assert len(joined) == 3
    assert len({ctx.params["node_id"] for ctx in joined.values()}) == 3
    for name, ctx in joined.items():
        assert ctx.params["join"], f"{name} must --join the cluster map"
        assert ctx.params["advertise"] == f"{name}:{ctx.params['port']}", f"{name} must advertise its own address"
        assert services[name]["depends_on"]["cluster-init"] == {"condition": "service_completed_successfully"}
    init = next(name for name, ctx in _commands(services).items() if role(ctx) == "cluster init")
    assert services[init]["restart"] == "no", "cluster init is one-shot"


def _mounts(service: dict[str, Any]) -> list[tuple[str, PurePosixPath, bool]]:
    """(source, target, read-only) of each of a service's volumes (short syntax)."""
    found = []
    for spec in service.get("volumes", []):
        source, target, *mode = spec.split(":")
        found.append((source, PurePosixPath(target), mode == ["ro"]))
    return found


def _volume_file(service: dict[str, Any], path: Path) -> tuple[str, PurePosixPath, bool]:
    """(volume, path inside it, read-only) of the file at `path` in the service's container."""
    holding = [(s, t, ro) for s, t, ro in _mounts(service) if PurePosixPath(path).is_relative_to(t)]
    assert len(holding) == 1, f"{path} is on {len(holding)} mounted volumes, not one"
    source, target, read_only = holding[0]
    return source, PurePosixPath(path).relative_to(target), read_only


def _auth_init(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run auth-init's entrypoint here, with its volume `auth` at tmp_path (and any other at
    tmp_path/<volume>), with `command` as `docker compose run auth-init …` would give it."""
    service = _services()[AUTH_INIT]
    program, flag, script = service["entrypoint"]
    assert (program, flag) == ("python", "-c"), "auth-init runs the image's Python"
    for volume, target, _ in _mounts(service):
        here = tmp_path if volume == AUTH_VOLUME else tmp_path / volume
        script = script.replace(f'"{target}/', f'"{here}/')
    return subprocess.run([sys.executable, flag, script, *command], capture_output=True, text=True, timeout=120)


def test_auth_init_makes_a_random_key_and_an_empty_token_file_once_in_a_writable_volume(tmp_path: Path) -> None:
    service = _services()[AUTH_INIT]
    assert str(service["image"]).startswith("quarry:")
    assert not service.get("profiles"), "both topologies depend on it"
    assert service["restart"] == "no", "auth-init is one-shot"
    assert "command" not in service, "its command is what `docker compose run auth-init …` runs after it"
    assert _mounts(service) == [
        (AUTH_VOLUME, PurePosixPath("/auth"), False),
        (NATS_AUTH_VOLUME, PurePosixPath("/nats-auth"), False),
    ], "auth-init writes the volumes"
    assert {AUTH_VOLUME, NATS_AUTH_VOLUME} <= set(_compose()["volumes"])
    ran = _auth_init(tmp_path)
    assert ran.returncode == 0, ran.stderr
    key, tokens = tmp_path / "cluster.key", tmp_path / "tokens.json"
    for made in (key, tokens):
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made.name
    assert len(read_cluster_key(key) or "") >= 32
    assert TokenStore(tokens).exists() and TokenStore(tokens).records() == []
    first = key.read_text()
    assert _auth_init(tmp_path).returncode == 0
    assert key.read_text() == first, "a second run keeps the cluster's key"
    other = tmp_path / "other"
    other.mkdir()
    assert _auth_init(other).returncode == 0
    assert (other / "cluster.key").read_text() != first, "the key is random"


def test_the_documented_token_command_creates_a_token_the_nodes_accept(tmp_path: Path) -> None:
    text = (REPO / "docker-compose.yml").read_text()
    documented = re.search(rf"^#\s+docker compose run --rm {AUTH_INIT} (quarry token create .*)$", text, re.M)
    assert documented is not None, "docker-compose.yml says how to create a token"
    argv = shlex.split(documented.group(1))
    ctx = resolve(argv[1:])
    assert role(ctx) == "token create"
    volume, inside, read_only = _volume_file(_services()[AUTH_INIT], ctx.params["tokens"])
    assert (volume, str(inside), read_only) == (AUTH_VOLUME, "tokens.json", False)
    local = [str(tmp_path / "tokens.json") if a == str(ctx.params["tokens"]) else a for a in argv[1:]]
    ran = _auth_init(tmp_path, sys.executable, "-m", "quarry.cli", *local)
    assert ran.returncode == 0, ran.stderr
    caller = TokenStore(tmp_path / "tokens.json").authenticate(ran.stdout.strip())
    assert caller is not None and caller.scopes("write") == frozenset(ctx.params["scope"])


@pytest.mark.parametrize("profile", [None, "nats"])
def test_every_node_waits_for_auth_init_and_starts_with_what_it_made(profile: str | None, tmp_path: Path) -> None:
    services = _default() if profile is None else _profile(profile)
    assert _auth_init(tmp_path).returncode == 0
    nodes = {name: ctx for name, ctx in _commands(services).items() if role(ctx) in NODE_ROLES}
    assert {role(ctx) for ctx in nodes.values()} == NODE_ROLES
    for name, ctx in nodes.items():
        service = services[name]
        assert service["depends_on"][AUTH_INIT] == {"condition": "service_completed_successfully"}, name
        key, tokens = ctx.params["cluster_key_file"], ctx.params.get("tokens")
        assert key is not None, f"{name}: every node needs --cluster-key-file"
        assert _volume_file(service, key) == (AUTH_VOLUME, PurePosixPath("cluster.key"), True), name
        if role(ctx) in PUBLIC_ROLES:
            assert tokens is not None, f"{name}: the query and ingest nodes need --tokens"
            assert _volume_file(service, tokens) == (AUTH_VOLUME, PurePosixPath("tokens.json"), True), name

        def local(path: Path, service: dict[str, Any] = service) -> Path:
            return tmp_path / str(_volume_file(service, path)[1])

        security = node_security(ctx, local)
        assert security.server is not None, f"{name} checks its callers"
        assert security.outgoing is not None and security.outgoing.cluster_key, f"{name}: its calls carry the key"
        without = [a for a in service["command"] if not a.startswith("/auth/")]
        without = [a for a in without if a not in ("--tokens", "--cluster-key-file", "--nats-credentials")]
        with pytest.raises(QuarryError, match="beyond loopback"):
            node_security(resolve(without), local)


def test_an_unknown_option_a_missing_one_or_an_ill_typed_value_would_be_caught() -> None:
    with pytest.raises(Exception) as unknown:
        resolve(["node", "index", "--partition", "0", "--data", "/d", "--no-such-option"])
    assert type(unknown.value).__name__ == "NoSuchOption"
    with pytest.raises(Exception) as missing:
        resolve(["node", "ingest", "--nats", "nats://n:4222"])
    assert type(missing.value).__name__ == "MissingParameter"
    with pytest.raises(Exception) as required:
        resolve(["cluster", "init", "--partitions", "16"])
    assert type(required.value).__name__ == "MissingParameter"
    with pytest.raises(Exception) as ill_typed:
        resolve(["node", "query", "--nats", "nats://n:4222", "--port", "seventy"])
    assert type(ill_typed.value).__name__ == "BadParameter"


def test_auth_init_makes_a_nats_user_per_role_once_and_the_servers_users_without_a_secret(tmp_path: Path) -> None:
    assert _auth_init(tmp_path).returncode == 0
    users = {name: credentials_file(tmp_path / "nats", name) for name in ROLES}
    for name, path in users.items():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert read_credentials(path).user == name
    first = {name: path.read_bytes() for name, path in users.items()}
    authorization = (tmp_path / NATS_AUTH_VOLUME / AUTHORIZATION_FILE).read_text()
    assert authorization.count('password: "$2') == len(ROLES)
    assert not any(read_credentials(path).password in authorization for path in users.values())
    assert _auth_init(tmp_path).returncode == 0
    assert {name: path.read_bytes() for name, path in users.items()} == first, "a second run keeps the users"


def test_every_nats_server_includes_the_users_auth_init_made_and_nats_server_accepts_the_config(tmp_path: Path) -> None:
    assert _auth_init(tmp_path).returncode == 0
    servers = _nats_servers(_profile("nats"))
    for name, server in servers.items():
        assert server["depends_on"][AUTH_INIT] == {"condition": "service_completed_successfully"}, name
        config = next(v.split(":")[0] for v in server["volumes"] if v.endswith(f":{NATS_CONFIG}:ro"))
        text = (REPO / config).read_text()
        include = re.search(r'^include "([^"]+)"', text, re.M)
        assert include is not None, f"{name}: the config includes the users"
        target = PurePosixPath(NATS_CONFIG).parent / include.group(1)
        assert _volume_file(server, Path(target)) == (NATS_AUTH_VOLUME, PurePosixPath(AUTHORIZATION_FILE), True), name
        # The config as the container sees it, its include beside it: nats-server takes it.
        pod = tmp_path / name
        (pod / include.group(1)).parent.mkdir(parents=True)
        (pod / include.group(1)).write_bytes((tmp_path / NATS_AUTH_VOLUME / AUTHORIZATION_FILE).read_bytes())
        (pod / "quarry.conf").write_text(text)
        checked = subprocess.run(
            [server_binary(), "-t", "-c", str(pod / "quarry.conf")], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr


def test_every_process_of_the_nats_profile_reaches_nats_with_its_roles_file_from_the_volume(tmp_path: Path) -> None:
    assert _auth_init(tmp_path).returncode == 0
    services = _profile("nats")
    seen = set()
    for name, ctx in _commands(services).items():
        wanted = NATS_ROLE[role(ctx)]
        seen.add(wanted)
        path = ctx.params["nats_credentials"]
        assert path is not None, f"{name} needs --nats-credentials"
        volume, inside, read_only = _volume_file(services[name], Path(path))
        assert (volume, str(inside), read_only) == (AUTH_VOLUME, f"nats/{wanted}.json", True), name
        assert read_credentials(tmp_path / inside).user == wanted, name
        assert services[name]["depends_on"][AUTH_INIT] == {"condition": "service_completed_successfully"}, name
        for arg in services[name]["command"]:
            assert not re.search(r"://[^/@\s]*@", str(arg)), f"{name}: credentials in a URL"
    assert seen == set(ROLES)


def test_every_quarry_container_runs_read_only_as_the_images_user_writing_only_its_volumes_and_tmp() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    user = re.findall(r"^USER (\S+)$", dockerfile, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    owned = re.search(r"chown \S+ (.+)$", dockerfile, re.M)
    assert owned is not None
    made_writable = {PurePosixPath(p) for p in owned.group(1).split()}
    for name, service in _services().items():
        if not str(service.get("image", "")).startswith("quarry:"):
            continue
        assert service.get("read_only") is True, f"{name}: a read-only root filesystem"
        assert "/tmp" in service.get("tmpfs", []), f"{name}: /tmp is a tmpfs"
        assert "user" not in service, f"{name} runs as the image's user"
        for volume, target, read_only in _mounts(service):
            if not read_only and volume in _compose()["volumes"]:
                assert target in made_writable, f"{name}: a new volume at {target} would be root's, not writable"
