"""The Kubernetes manifests under deploy/k8s and the NATS Helm values under deploy/nats describe a
cluster on the log that can run: every object is valid against the Kubernetes API schemas (strict:
no unknown fields), every container command is one the Quarry CLI accepts, every `$(VAR)` a container
uses is defined for it, every node has its authentication (the cluster key, and tokens on the public
nodes) from the Secret `quarry-auth` mounted where its options point, so it starts bound beyond
loopback, and the index nodes' identity, probes and disruption budget are what the cluster map and
rolling updates rely on. NATS: every Quarry pod mounts only its role's NATS user from the Secret
`quarry-nats` (never a secret in an argument or the environment), the NATS servers include the users'
authorization file from the same Secret (what `quarry cluster nats-credentials` writes, which a real
nats-server accepts), and NetworkPolicies admit only Quarry's pods to NATS and to the index and vector
nodes. Every pod runs as the image's unprivileged user with a read-only root filesystem. Nothing is
applied: there is no cluster here."""

from __future__ import annotations

import base64
import os
import posixpath
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import kubernetes_validate
import pytest
import yaml

from quarry.cluster import local_nats
from quarry.cluster.loop import refused_user
from quarry.cluster.nats_credentials import AUTHORIZATION_FILE, credentials_file, read_credentials
from quarry.cluster.nats_permissions import ADMIN, ROLES
from quarry.core.auth import Gate, NodeInterceptor, PublicInterceptor
from quarry.core.errors import QuarryError
from quarry.core.tokens import TokenStore
from tests.contract.cli_commands import node_security, resolve, role
from tests.shared_paths import REPO

K8S = REPO / "deploy" / "k8s"
NATS_VALUES = REPO / "deploy" / "nats" / "values.yaml"
KUBERNETES_VERSION = "1.37"  # the newest schemas kubernetes-validate 1.37 bundles
NODE_ROLES = {"node index", "node vector", "node ingest", "node query"}
PUBLIC_ROLES = {"node query", "node ingest"}  # they take --tokens: every call needs a bearer token
AUTH = K8S / "05-auth.yaml"  # how to create the Secret: no object (see there why)
AUTH_SECRET = "quarry-auth"
NATS_SECRET = "quarry-nats"
DOCKERFILE = REPO / "Dockerfile"
# The NATS user each command runs as (its role's credentials file in the Secret quarry-nats).
NATS_ROLE = {"cluster init": ADMIN, **{f"node {role}": role for role in ("index", "vector", "ingest", "query")}}
# What the NATS chart labels its server pods with (`nats.selectorLabels`) for the release `quarry-nats`.
NATS_POD_LABELS = {
    "app.kubernetes.io/name": "nats",
    "app.kubernetes.io/instance": "quarry-nats",
    "app.kubernetes.io/component": "nats",
}
NATS_CONFIG_DIR = "/etc/nats-config"  # where the chart mounts nats.conf; includes are relative to it
NATS_CLIENT_PORT, NATS_ROUTE_PORT = 4222, 6222  # the chart's defaults, which the values keep
INTERNAL_ROLES = {"node index", "node vector"}  # only other nodes call them
WORKLOADS = {"Deployment", "StatefulSet", "Job"}
LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/component")
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# What the downward API would give a pod, to expand `$(VAR)` the way the kubelet does.
FIELD_SAMPLES = {"metadata.name": "pod-0", "metadata.namespace": "some-namespace"}

Manifest = dict[str, Any]


def _manifests() -> list[tuple[str, Manifest]]:
    """(file name, object) for every document of every YAML file under deploy/k8s."""
    found = []
    for path in sorted([*K8S.glob("*.yaml"), *K8S.glob("*.yml")]):
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


MANIFESTS = _manifests()


def validate(manifest: Manifest) -> str:
    """Validate one object against the bundled Kubernetes schemas, strictly (an unknown field is an
    error); returns the Kubernetes version validated against, raises on an invalid object."""
    return kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def _objects(kind: str) -> list[Manifest]:
    return [m for _, m in MANIFESTS if m["kind"] == kind]


def _config_maps() -> dict[str, dict[str, str]]:
    return {m["metadata"]["name"]: m.get("data", {}) for m in _objects("ConfigMap")}


def _pod_spec(workload: Manifest) -> Manifest:
    spec: Manifest = workload["spec"]["template"]["spec"]
    return spec


def _pod_labels(workload: Manifest) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def _workloads() -> list[Manifest]:
    return [m for _, m in MANIFESTS if m["kind"] in WORKLOADS]


def _quarry_containers() -> list[tuple[Manifest, Manifest]]:
    """(workload, container) for every container running the Quarry image."""
    return [
        (w, c)
        for w in _workloads()
        for c in [*_pod_spec(w).get("initContainers", []), *_pod_spec(w)["containers"]]
        if c["image"].startswith("quarry:")
    ]


def _environment(workload: Manifest, container: Manifest) -> dict[str, str]:
    """The container's environment as the kubelet builds it (envFrom, then env), with downward-API
    fields given sample values; a ConfigMap it names must be one of the manifests."""
    config_maps = _config_maps()
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        name = source["configMapRef"]["name"]
        assert name in config_maps, f"{workload['metadata']['name']}: no ConfigMap {name} in deploy/k8s"
        env.update(config_maps[name])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), var["value"])
        else:
            env[var["name"]] = FIELD_SAMPLES[var["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def _argv(workload: Manifest, container: Manifest) -> list[str]:
    """The arguments to the image's `quarry` ENTRYPOINT, `$(VAR)` expanded."""
    env = _environment(workload, container)
    return [VAR_REF.sub(lambda m: env[m.group(1)], arg) for arg in container["args"]]


def _command(workload: Manifest, container: Manifest) -> Any:
    return resolve(_argv(workload, container))


def _of_role(wanted: str) -> tuple[Manifest, Manifest]:
    found = [(w, c) for w, c in _quarry_containers() if role(_command(w, c)) == wanted]
    assert len(found) == 1, f"one workload runs `quarry {wanted}`, not {len(found)}"
    return found[0]


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _label_selector_matches(selector: Manifest, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) as the API server evaluates it."""
    if not all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        held = {
            "In": present and labels[key] in values,
            "NotIn": not present or labels[key] not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }
        if not held[operator]:
            return False
    return True


def _policies_selecting(labels: dict[str, str]) -> list[Manifest]:
    return [p for p in _objects("NetworkPolicy") if _label_selector_matches(p["spec"]["podSelector"], labels)]


def _image_user() -> str:
    users = [line.split(None, 1)[1].strip() for line in DOCKERFILE.read_text().splitlines() if line.startswith("USER ")]
    assert users, "the Dockerfile sets a USER"
    return users[-1]


def _secret_file(workload: Manifest, container: Manifest, path: Path | str) -> tuple[str, str]:
    """(Secret, key) of the file at `path` in the container: it must come from a Secret volume mounted
    read-only, as a whole (a subPath mount would not follow the Secret's updates). Parsing leaves a
    path option as click parsed it (a string); Typer makes it a Path when it calls the command."""
    path = Path(path)
    name = workload["metadata"]["name"]
    mounts = [m for m in container.get("volumeMounts", []) if path.is_relative_to(m["mountPath"])]
    assert len(mounts) == 1, f"{name}: {path} is on {len(mounts)} mounted volumes, not one"
    mount = mounts[0]
    assert mount.get("readOnly") is True, f"{name}: the volume holding {path} is mounted read-only"
    assert "subPath" not in mount, f"{name}: a subPath mount of {path} is never updated"
    volumes = {v["name"]: v for v in _pod_spec(workload).get("volumes", [])}
    secret = volumes[mount["name"]].get("secret")
    assert secret is not None, f"{name}: {path} is not on a Secret volume"
    inside = str(path.relative_to(mount["mountPath"]))
    items = {i["path"]: i["key"] for i in secret.get("items", [{"key": inside, "path": inside}])}
    assert inside in items, f"{name}: the Secret volume has no {inside}"
    return secret["secretName"], items[inside]


def _without(argv: list[str], *options: str) -> list[str]:
    """`argv` without these options and their values."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if not skip and arg in options:
            skip = True
            continue
        if not skip:
            kept.append(arg)
        skip = False
    return kept


def _secret_keys(workload: Manifest, secret: str = AUTH_SECRET) -> set[str]:
    """Every key of the Secret that the workload's pods can see (all of them, "*", without items)."""
    volumes = [v["secret"] for v in _pod_spec(workload).get("volumes", []) if "secret" in v]
    return {
        i["key"] if "items" in s else "*" for s in volumes if s["secretName"] == secret for i in s.get("items", [{}])
    }


def _port(container: Manifest, port: int | str) -> int:
    """A container port by number or by name."""
    for declared in container.get("ports", []):
        if port in (declared["containerPort"], declared.get("name")):
            return int(declared["containerPort"])
    raise AssertionError(f"{container['name']} declares no port {port!r}")


@pytest.mark.parametrize(
    "manifest",
    [m for _, m in MANIFESTS],
    ids=[f"{file}:{m['kind']}/{m['metadata']['name']}" for file, m in MANIFESTS],
)
def test_every_manifest_is_a_valid_kubernetes_object(manifest: Manifest) -> None:
    problem = None
    try:
        assert validate(manifest) == KUBERNETES_VERSION
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(step) for step in error.path)
        problem = f"invalid for Kubernetes {error.version} at {where}: {error.message}"
    if problem:
        pytest.fail(problem, pytrace=False)


def test_the_validation_rejects_an_invalid_manifest() -> None:
    deployment: Manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "broken"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "x", "image": "x"}]}},
        },
    }
    assert validate(deployment) == KUBERNETES_VERSION
    ill_typed = {**deployment, "spec": {**deployment["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(ill_typed)
    misspelt = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(misspelt)


def test_the_manifests_describe_every_part_of_the_cluster() -> None:
    kinds = {m["kind"] for _, m in MANIFESTS}
    assert {"ConfigMap", "Job", "StatefulSet", "Deployment", "Service", "PodDisruptionBudget"} <= kinds
    assert "HorizontalPodAutoscaler" in kinds


def test_no_manifest_hard_codes_a_namespace() -> None:
    for file, manifest in MANIFESTS:
        assert "namespace" not in manifest["metadata"], f"{file}: {manifest['metadata']['name']}"


def test_every_object_and_pod_carries_the_recommended_labels() -> None:
    for file, manifest in MANIFESTS:
        for key in LABELS:
            assert key in manifest["metadata"].get("labels", {}), f"{file}: {manifest['metadata']['name']} {key}"
    for workload in _workloads():
        for key in LABELS:
            assert key in _pod_labels(workload), f"{workload['metadata']['name']} pods: {key}"


def test_every_container_command_resolves_in_the_quarry_cli() -> None:
    roles = set()
    for workload, container in _quarry_containers():
        assert "command" not in container, "`command` would replace the image's `quarry` ENTRYPOINT"
        roles.add(role(_command(workload, container)))
    assert roles == NODE_ROLES | {"cluster init"}


def test_every_variable_reference_in_args_names_an_env_var_the_container_defines() -> None:
    for workload, container in _quarry_containers():
        env = _environment(workload, container)
        for arg in container["args"]:
            for name in VAR_REF.findall(arg):
                assert name in env, f"{workload['metadata']['name']}: $({name}) in {arg!r} is not defined"


def test_every_node_listens_on_all_interfaces_on_its_declared_port_and_is_probed_there() -> None:
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        if role(ctx) not in NODE_ROLES:
            continue
        name = workload["metadata"]["name"]
        assert ctx.params["host"] == "0.0.0.0", f"{name} must listen beyond loopback in a pod"
        port = ctx.params["port"]
        assert _port(container, port) == port
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["grpc"]["port"] == port, f"{name}: {probe} is a gRPC health check on {port}"
        assert not container["livenessProbe"]["grpc"].get("service"), f"{name}: liveness asks the server as a whole"


def test_every_node_is_a_node_of_the_cluster_on_the_log_of_the_helm_release() -> None:
    values = yaml.safe_load(NATS_VALUES.read_text())
    assert values.get("fullnameOverride") in (None, "")
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        assert ctx.params["nats"] == "nats://quarry-nats:4222", workload["metadata"]["name"]
        assert not ctx.params.get("index"), f"{workload['metadata']['name']}: --index is the embedded default's"
    readme = (K8S / "README.md").read_text()
    assert "helm install quarry-nats nats/nats -f deploy/nats/values.yaml" in readme
    assert "kubectl apply -f deploy/k8s/" in readme
    assert "kubectl scale sts/quarry-index --replicas=4" in readme


def test_every_node_has_the_cluster_key_and_the_public_ones_tokens_from_the_mounted_secret() -> None:
    seen = set()
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        if role(ctx) not in NODE_ROLES:
            continue
        name = workload["metadata"]["name"]
        seen.add(role(ctx))
        key = ctx.params["cluster_key_file"]
        assert key is not None, f"{name}: every node needs --cluster-key-file"
        assert _secret_file(workload, container, key) == (AUTH_SECRET, "cluster.key"), name
        if role(ctx) in PUBLIC_ROLES:
            tokens = ctx.params["tokens"]
            assert tokens is not None, f"{name}: the query and ingest nodes need --tokens"
            assert _secret_file(workload, container, tokens) == (AUTH_SECRET, "tokens.json"), name
        else:
            assert "tokens" not in ctx.params
            assert _secret_keys(workload) == {"cluster.key"}, f"{name} needs the cluster key only, not the tokens"
    assert seen == NODE_ROLES


def test_every_node_starts_beyond_loopback_with_what_the_secret_holds(tmp_path: Path) -> None:
    """What `05-auth.yaml` tells the user to put in the Secret (a key from `openssl rand -base64 48`,
    a token file with no token yet) is what each node needs to start on 0.0.0.0; without it, it refuses."""
    files = {"cluster.key": tmp_path / "cluster.key", "tokens.json": tmp_path / "tokens.json"}
    files["cluster.key"].write_text(base64.b64encode(os.urandom(48)).decode() + "\n")
    files["tokens.json"].write_text('{"version": 1, "tokens": []}')
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        if role(ctx) not in NODE_ROLES:
            continue
        name = workload["metadata"]["name"]
        security = node_security(ctx, lambda path, w=workload, c=container: files[_secret_file(w, c, path)[1]])
        assert security.server is not None, f"{name} checks its callers"
        assert security.outgoing is not None and security.outgoing.cluster_key, f"{name}: its calls carry the key"
        assert security.gate.enabled == (role(ctx) in PUBLIC_ROLES), name
        bare = resolve(_without(_argv(workload, container), "--tokens", "--cluster-key-file"))
        with pytest.raises(QuarryError, match="beyond loopback"):
            node_security(bare, lambda path: path)


def test_the_secret_is_created_by_hand_never_applied_with_the_manifests() -> None:
    assert not _objects("Secret"), (
        "a Secret in deploy/k8s would overwrite the real one at every `kubectl apply -f deploy/k8s/`"
    )
    assert not [d for d in yaml.safe_load_all(AUTH.read_text()) if d], f"{AUTH.name} holds no object"
    text = AUTH.read_text()
    for step in (
        "openssl rand -base64 48 > cluster.key",
        "quarry token create --tokens tokens.json --scope",
        f"kubectl create secret generic {AUTH_SECRET}",
        "--from-file=cluster.key=cluster.key --from-file=tokens.json=tokens.json",
        "--dry-run=client -o yaml | kubectl apply -f -",
    ):
        assert step in text, f"{AUTH.name} must say how: {step}"
    assert f"kubectl create secret generic {AUTH_SECRET}" in (K8S / "README.md").read_text()
    job, _ = _of_role("cluster init")  # talks to NATS only, no node: needs no key, only its NATS user
    assert _secret_keys(job) == set() and _secret_keys(job, NATS_SECRET) == {f"{ADMIN}.json"}


def test_the_probes_are_grpc_health_checks_that_need_no_token_or_key() -> None:
    def served(interceptor: grpc.ServerInterceptor, method: str) -> bool:
        handler = grpc.unary_unary_rpc_method_handler(lambda request, context: None)
        details = type("Details", (), {"method": method, "invocation_metadata": ()})()
        return interceptor.intercept_service(lambda _: handler, details) is handler

    health = "/grpc.health.v1.Health/Check"
    public = PublicInterceptor(Gate(TokenStore(Path("/nonexistent/tokens.json"))))
    internal = NodeInterceptor("k" * 32)
    assert served(public, health) and served(internal, health), "health is open on every node"
    assert not served(public, "/quarry.v1.QueryService/Search"), "a Quarry call is checked"
    assert not served(internal, "/quarry.v1.IndexService/Search"), "a Quarry call is checked"
    for workload, container in _quarry_containers():
        if role(_command(workload, container)) not in NODE_ROLES:
            continue
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            kinds = {"exec", "httpGet", "tcpSocket", "grpc"} & set(container[probe])
            assert kinds == {"grpc"}, f"{workload['metadata']['name']}: {probe} is a gRPC health check"


def test_telemetry_is_off_unless_configured() -> None:
    for workload, container in _quarry_containers():
        assert _environment(workload, container)["QUARRY_OTEL_EXPORTER"] == "none", workload["metadata"]["name"]


def test_every_data_directory_is_a_mounted_volume() -> None:
    for workload, container in _quarry_containers():
        data = _command(workload, container).params.get("data")
        if data is None:
            continue
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        assert str(data) in mounts, f"{workload['metadata']['name']}: --data {data} is not a volume"
        volume = mounts[str(data)]
        claims = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        pod_volumes = {v["name"] for v in _pod_spec(workload).get("volumes", [])}
        assert volume in claims | pod_volumes


def test_the_cluster_is_created_once_by_a_job() -> None:
    job, container = _of_role("cluster init")
    assert job["kind"] == "Job"
    assert _pod_spec(job)["restartPolicy"] in ("OnFailure", "Never")
    params = _command(job, container).params
    assert (params["partitions"], params["replicas"], params["log_replicas"]) == (16, 2, 3)


def test_index_nodes_are_a_statefulset_named_and_addressed_by_their_pods() -> None:
    sts, container = _of_role("node index")
    assert sts["kind"] == "StatefulSet"
    ctx = _command(sts, container)
    assert ctx.params["join"], "index nodes join the cluster map"
    args = container["args"]
    assert args[args.index("--node-id") + 1] == "$(POD_NAME)"
    service = sts["spec"]["serviceName"]
    port = ctx.params["port"]
    assert args[args.index("--advertise") + 1] == f"$(POD_NAME).{service}.$(POD_NAMESPACE).svc.cluster.local:{port}"
    fields = {v["name"]: v["valueFrom"]["fieldRef"]["fieldPath"] for v in container["env"] if "valueFrom" in v}
    assert fields["POD_NAME"] == "metadata.name"
    assert fields["POD_NAMESPACE"] == "metadata.namespace"
    headless = [s for s in _objects("Service") if s["metadata"]["name"] == service]
    assert len(headless) == 1 and headless[0]["spec"]["clusterIP"] == "None"
    assert _selects(headless[0]["spec"]["selector"], _pod_labels(sts))
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    mounted = {m["name"] for m in container["volumeMounts"] if m["mountPath"] == str(ctx.params["data"])}
    assert mounted and mounted <= claims, "each index node keeps its partitions on its own volume"


def test_an_index_node_is_ready_only_when_its_partitions_have_caught_up_with_the_log() -> None:
    sts, container = _of_role("node index")
    readiness = container["readinessProbe"]["grpc"]
    assert readiness == {"port": 7100, "service": "quarry.v1.IndexService"}
    assert container["livenessProbe"]["grpc"] == {"port": 7100}
    assert _pod_spec(sts)["terminationGracePeriodSeconds"] >= 30, "time to finish a commit"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}


def test_index_nodes_prefer_different_machines() -> None:
    sts, _ = _of_role("node index")
    terms = _pod_spec(sts)["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert any(
        t["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        and _selects(t["podAffinityTerm"]["labelSelector"]["matchLabels"], _pod_labels(sts))
        for t in terms
    )


def test_a_pod_disruption_budget_lets_one_index_node_down_at_a_time() -> None:
    sts, _ = _of_role("node index")
    budgets = [
        b for b in _objects("PodDisruptionBudget") if _selects(b["spec"]["selector"]["matchLabels"], _pod_labels(sts))
    ]
    assert len(budgets) == 1
    assert budgets[0]["spec"]["maxUnavailable"] == 1


def test_every_service_reaches_the_pods_of_one_workload_on_a_port_they_declare() -> None:
    for service in _objects("Service"):
        name = service["metadata"]["name"]
        targets = [w for w in _workloads() if _selects(service["spec"]["selector"], _pod_labels(w))]
        assert len(targets) == 1, f"Service {name} selects {len(targets)} workloads"
        containers = _pod_spec(targets[0])["containers"]
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert any(_port(c, target) for c in containers), f"Service {name}: no container port {target}"


def test_the_query_nodes_scale_on_cpu_between_two_and_more() -> None:
    deployment, container = _of_role("node query")
    assert deployment["kind"] == "Deployment"
    assert "replicas" not in deployment["spec"], "the HorizontalPodAutoscaler owns the replica count"
    scalers = [
        h
        for h in _objects("HorizontalPodAutoscaler")
        if h["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    ]
    assert len(scalers) == 1
    spec = scalers[0]["spec"]
    assert spec["scaleTargetRef"]["kind"] == "Deployment"
    assert spec["minReplicas"] == 2 and spec["maxReplicas"] > 2
    assert [m["resource"]["name"] for m in spec["metrics"]] == ["cpu"]
    assert "cpu" in container["resources"]["requests"], "CPU utilisation is relative to the request"
    ctx = _command(deployment, container)
    vector_sts, _ = _of_role("node vector")
    ingest, _ = _of_role("node ingest")
    services = {s["metadata"]["name"]: s for s in _objects("Service")}
    for address, workload in ((ctx.params["vector"], vector_sts), (ctx.params["ingest"], ingest)):
        host, port = address.rsplit(":", 1)
        assert _selects(services[host]["spec"]["selector"], _pod_labels(workload))
        assert int(port) in {p["port"] for p in services[host]["spec"]["ports"]}


def test_the_stateful_nodes_keep_their_data_and_the_stateless_ones_do_not_need_to() -> None:
    assert _of_role("node vector")[0]["kind"] == "StatefulSet"
    assert _of_role("node vector")[0]["spec"]["replicas"] == 1
    assert _of_role("node ingest")[0]["kind"] == "Deployment"


def _nested(values: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        values = values[key]
    return values


def test_the_nats_values_give_a_replicated_jetstream_that_fsyncs_every_write() -> None:
    values = yaml.safe_load(NATS_VALUES.read_text())
    assert _nested(values, "config.cluster.enabled") is True
    assert _nested(values, "config.cluster.replicas") == 3
    assert _nested(values, "config.jetstream.enabled") is True
    assert _nested(values, "config.jetstream.fileStore.enabled") is True
    assert _nested(values, "config.jetstream.fileStore.pvc.enabled") is True
    assert _nested(values, "config.jetstream.merge.sync_interval") == "always"
    assert _nested(values, "config.merge.max_payload") == "<< 8MB >>"
    job, container = _of_role("cluster init")
    assert _command(job, container).params["log_replicas"] <= values["config"]["cluster"]["replicas"]
    # The chart's preStop hook puts a server in lame-duck mode: nothing here replaces or removes it.
    assert "lifecycle" not in values.get("container", {}).get("merge", {})
    for patch in values.get("container", {}).get("patch", []):
        assert (patch["op"], patch["path"]) == ("add", "/volumeMounts/-"), patch


def test_the_kubernetes_version_validated_against_is_bundled() -> None:
    bundled = {re.sub(r"^(\d+\.\d+).*", r"\1", v) for v in kubernetes_validate.utils.all_versions()}
    assert KUBERNETES_VERSION in bundled


# ----- NATS users, network policies, unprivileged pods ----------------------------------------------


def test_every_quarry_process_reaches_nats_as_its_role_with_only_that_roles_credentials_mounted() -> None:
    seen = set()
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        name, wanted = workload["metadata"]["name"], NATS_ROLE[role(ctx)]
        seen.add(wanted)
        credentials = ctx.params["nats_credentials"]
        assert credentials is not None, f"{name} needs --nats-credentials"
        assert _secret_file(workload, container, credentials) == (NATS_SECRET, f"{wanted}.json"), name
        assert _secret_keys(workload, NATS_SECRET) == {f"{wanted}.json"}, f"{name} sees another role's user"
    assert seen == set(ROLES)


def test_no_argument_or_environment_variable_holds_a_credential() -> None:
    for workload, container in _quarry_containers():
        name = workload["metadata"]["name"]
        for value in [*_argv(workload, container), *_environment(workload, container).values()]:
            assert not re.search(r"://[^/@\s]*@", value), f"{name}: credentials in a URL: {value}"
            assert "password" not in value.lower(), f"{name}: {value}"
        for var in container.get("env", []):
            assert "secretKeyRef" not in var.get("valueFrom", {}), f"{name}: a secret in the environment"
        assert not [s for s in container.get("envFrom", []) if "secretRef" in s], f"{name}: a Secret as environment"


def _run_documented(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quarry.cli", *argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_nats_secret_made_as_documented_holds_what_the_pods_mount_and_the_servers_accept(tmp_path: Path) -> None:
    """`quarry cluster nats-credentials nats-users` (05-auth.yaml), then `--from-file=nats-users/`: the keys
    are the files. Every key a pod mounts is there; the NATS config the chart renders, with the Secret's
    authorization.conf mounted where the values put it, is valid for nats-server and lets in each role's
    user and no one else."""
    text = AUTH.read_text()
    assert "quarry cluster nats-credentials nats-users" in text
    assert f"kubectl create secret generic {NATS_SECRET} --from-file=nats-users/" in text
    made = _run_documented("cluster", "nats-credentials", "nats-users", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    users = tmp_path / "nats-users"
    keys = {path.name for path in users.iterdir()}
    assert keys == {f"{r}.json" for r in ROLES} | {AUTHORIZATION_FILE}
    for workload in _workloads():
        assert _secret_keys(workload, NATS_SECRET) <= keys
    values = yaml.safe_load(NATS_VALUES.read_text())
    mount = next(p["value"] for p in values["container"]["patch"] if p["path"] == "/volumeMounts/-")
    root = tmp_path / "pod"
    config_dir = root / NATS_CONFIG_DIR.lstrip("/")
    config_dir.mkdir(parents=True)
    mounted = root / mount["mountPath"].lstrip("/")
    mounted.mkdir(parents=True)
    (mounted / AUTHORIZATION_FILE).write_bytes((users / AUTHORIZATION_FILE).read_bytes())
    port = local_nats.free_port()
    include = values["config"]["merge"]["00$include"]
    (config_dir / "nats.conf").write_text(f"include {include};\nlisten: 127.0.0.1:{port}\n")
    server = local_nats.server_binary()
    checked = subprocess.run([server, "-t", "-c", str(config_dir / "nats.conf")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen(
        [server, "-c", str(config_dir / "nats.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        for name in ROLES:
            credentials = read_credentials(credentials_file(users, name))
            assert _nats_accepts(port, credentials.user, credentials.password) is None, name
        assert refused_user(_nats_accepts(port, ADMIN, "guessed"))
        assert refused_user(_nats_accepts(port, "", ""))
    finally:
        process.terminate()
        process.wait(timeout=10)


def _nats_accepts(port: int, user: str, password: str) -> BaseException | None:
    """None when the server at `port` lets the user in, else why not."""
    import asyncio

    import nats

    async def attempt() -> None:
        credentials = {"user": user, "password": password} if user else {}
        nc = await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False, connect_timeout=2, **credentials)
        await nc.close()

    deadline = time.monotonic() + 10
    while True:
        try:
            asyncio.run(attempt())
            return None
        except Exception as error:
            if refused_user(error) or time.monotonic() > deadline:
                return error
            time.sleep(0.2)  # not listening yet


def test_the_nats_servers_mount_only_the_users_file_and_run_unprivileged_with_a_read_only_root() -> None:
    values = yaml.safe_load(NATS_VALUES.read_text())
    include = posixpath.normpath(posixpath.join(NATS_CONFIG_DIR, values["config"]["merge"]["00$include"]))
    mounts = [p["value"] for p in values["container"]["patch"] if p["path"] == "/volumeMounts/-"]
    (mount,) = [m for m in mounts if include.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mount["readOnly"] is True
    volumes = [p["value"] for p in values["podTemplate"]["patch"] if p["path"] == "/spec/volumes/-"]
    (volume,) = [v for v in volumes if v["name"] == mount["name"]]
    items = {i["key"]: i["path"] for i in volume["secret"]["items"]}
    assert volume["secret"]["secretName"] == NATS_SECRET
    assert items == {AUTHORIZATION_FILE: posixpath.relpath(include, mount["mountPath"])}, (
        "the servers see no client secret"
    )
    assert values["natsBox"]["enabled"] is False, "nats-box would connect without a user"
    pod = values["podTemplate"]["merge"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0 and pod["fsGroup"] > 0
    for container in (values["container"]["merge"], values["reloader"]["merge"]):
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert values["config"].get("nats", {}).get("port", NATS_CLIENT_PORT) == NATS_CLIENT_PORT
    assert values["config"]["cluster"].get("port", NATS_ROUTE_PORT) == NATS_ROUTE_PORT


def _quarry_pod_labels() -> list[dict[str, str]]:
    return [
        _pod_labels(w)
        for w in _workloads()
        if any(c["image"].startswith("quarry:") for c in _pod_spec(w)["containers"])
    ]


def _admits_exactly_quarry_pods(rule: Manifest) -> bool:
    """Whether an ingress rule's `from` is Quarry's pods (every one of them, and no other source)."""
    sources = rule.get("from", [])
    if not sources or any(set(s) != {"podSelector"} for s in sources):
        return False  # no ipBlock, no namespaceSelector: other namespaces and addresses stay out

    def admitted(labels: dict[str, str]) -> bool:
        return any(_label_selector_matches(s["podSelector"], labels) for s in sources)

    return all(admitted(labels) for labels in _quarry_pod_labels()) and not admitted(NATS_POD_LABELS)


def test_only_quarry_pods_reach_nats_and_only_nats_servers_its_routes() -> None:
    (policy,) = _policies_selecting(NATS_POD_LABELS)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = policy["spec"]["ingress"]
    by_port = {tuple(p["port"] for p in rule["ports"]): rule for rule in rules}
    assert set(by_port) == {(NATS_CLIENT_PORT,), (NATS_ROUTE_PORT,)}, "the monitoring port and the rest stay closed"
    assert _admits_exactly_quarry_pods(by_port[(NATS_CLIENT_PORT,)])
    routes = by_port[(NATS_ROUTE_PORT,)]["from"]
    assert [set(s) for s in routes] == [{"podSelector"}]
    assert _label_selector_matches(routes[0]["podSelector"], NATS_POD_LABELS)
    assert not any(_label_selector_matches(routes[0]["podSelector"], labels) for labels in _quarry_pod_labels())


def test_only_quarry_pods_reach_the_index_and_vector_nodes_and_the_front_doors_stay_open() -> None:
    for workload, container in _quarry_containers():
        ctx = _command(workload, container)
        if role(ctx) not in NODE_ROLES:
            continue
        name, labels = workload["metadata"]["name"], _pod_labels(workload)
        policies = _policies_selecting(labels)
        if role(ctx) not in INTERNAL_ROLES:
            assert not policies, f"{name} is reachable as before: no policy selects it"
            continue
        assert len(policies) == 1, name
        (rule,) = policies[0]["spec"]["ingress"]
        assert _admits_exactly_quarry_pods(rule), name
        assert [_port(container, p["port"]) for p in rule["ports"]] == [ctx.params["port"]], name


def test_every_pod_runs_as_the_images_unprivileged_user_with_a_read_only_root_filesystem() -> None:
    uid, gid = (int(part) for part in _image_user().split(":"))
    assert uid != 0 and gid != 0
    for workload, container in _quarry_containers():
        name = workload["metadata"]["name"]
        pod = _pod_spec(workload)["securityContext"]
        assert pod["runAsNonRoot"] is True and (pod["runAsUser"], pod["runAsGroup"]) == (uid, gid), name
        assert pod["fsGroup"] == gid, f"{name}: its volumes must be writable for the image's group"
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False and security["capabilities"]["drop"] == ["ALL"], name
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in _pod_spec(workload).get("volumes", [])}
        assert "emptyDir" in volumes[mounts["/tmp"]], f"{name}: /tmp is scratch space on an emptyDir"
        assert not [
            m
            for m in container.get("volumeMounts", [])
            if m.get("readOnly") is False and "secret" in volumes.get(m["name"], {})
        ]


def test_the_image_is_built_with_its_model_and_runs_as_the_unprivileged_user_writing_nothing_in_it() -> None:
    lines = [line.strip() for line in DOCKERFILE.read_text().splitlines()]
    cache = next(
        re.fullmatch(r"ENV QUARRY_MODEL_CACHE=(\S+)", line)
        for line in lines
        if line.startswith("ENV QUARRY_MODEL_CACHE=")
    )
    assert cache is not None
    export = lines.index("RUN python -m quarry.vector.embed_onnx")
    user = max(i for i, line in enumerate(lines) if line.startswith("USER "))
    assert lines.index(cache.group(0)) < export < user, "the model is written at build, before the user drops root"
    home = re.search(r"\bHOME=(\S+)", DOCKERFILE.read_text())
    assert home is not None and home.group(1) == "/tmp", "nothing the image holds is the user's to write"
    for workload, container in _quarry_containers():
        for mount in container.get("volumeMounts", []):
            path = mount["mountPath"].rstrip("/") + "/"
            assert not (cache.group(1).rstrip("/") + "/").startswith(path), (
                f"{workload['metadata']['name']} hides the model"
            )
