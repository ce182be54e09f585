"""docker-compose.yml parses, and every Quarry command it starts is one the CLI accepts: the embedded
default (the services without a profile) and the `nats` profile (a cluster on the log: three NATS
JetStream servers, `quarry cluster init`, index nodes that --join, vector/ingest/query with --nats)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.contract.cli_commands import resolve, role
from tests.shared_paths import REPO

NODE_ROLES = {"node index", "node vector", "node ingest", "node query"}


def _services() -> dict[str, dict[str, Any]]:
    compose: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return compose["services"]


def _default() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _services().items() if not s.get("profiles")}


def _profile(profile: str) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _services().items() if profile in s.get("profiles", [])}


def _is_quarry(service: dict[str, Any]) -> bool:
    return str(service.get("image", "")).startswith("quarry:")


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
