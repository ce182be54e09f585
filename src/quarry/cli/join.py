"""What `quarry node index --join` joins: the NATS servers, the node's name and its data directory,
and how it reaches NATS (its role's credentials, the servers' CA), from the options given or from the
local cluster recorded under the home (`quarry up --log nats`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quarry.cluster.nats_credentials import credentials_dir, credentials_file
from quarry.cluster.nats_permissions import INDEX
from quarry.core.config import ClusterInfo, resolve_home
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2


@dataclass(frozen=True)
class JoinPlan:
    node_id: str
    data: Path
    nats: list[str]
    credentials: Path | None = None
    tls_ca: Path | None = None


def joining(
    home: Path | None,
    nats: str | None,
    node_id: str | None,
    data: Path | None,
    credentials: Path | None = None,
    tls_ca: Path | None = None,
) -> JoinPlan:
    """The plan of a joining index node. Without --nats the cluster is the one running under the home,
    reached with the home's index credentials and its CA unless others are given; without --node-id the
    node takes the first `index-N` the home has no node of; without --data, its directory under the home."""
    resolved = resolve_home(home)
    info = ClusterInfo.load(resolved)
    urls = [u.strip() for u in (nats or "").split(",") if u.strip()]
    if not urls:
        if info is None or not info.nats:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"no cluster on the log runs under {resolved}: start one with `quarry up --log nats`, or give "
                "--nats URLS",
                parameter="--nats",
            )
        urls = list(info.nats)
        home_credentials = credentials_file(credentials_dir(resolved), INDEX)
        credentials = credentials or (home_credentials if home_credentials.exists() else None)
        tls_ca = tls_ca or (Path(info.tls_ca) if info.tls_ca and urls[0].startswith("tls://") else None)
    name = node_id or _free_name(resolved, info)
    return JoinPlan(name, data or resolved / "nodes" / name, urls, credentials, tls_ca)


def _free_name(home: Path, info: ClusterInfo | None) -> str:
    taken = set(info.pids) if info is not None else set()
    n = 0
    while f"index-{n}" in taken or (home / "nodes" / f"index-{n}").exists():
        n += 1
    return f"index-{n}"
