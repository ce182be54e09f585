"""What `quarry node index --join` joins: the NATS servers, the node's name and its data directory,
from the options given or from the local cluster recorded under the home (`quarry up --log nats`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quarry.core.config import ClusterInfo, resolve_home
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2


@dataclass(frozen=True)
class JoinPlan:
    node_id: str
    data: Path
    nats: list[str]


def joining(home: Path | None, nats: str | None, node_id: str | None, data: Path | None) -> JoinPlan:
    """The plan of a joining index node. Without --nats the cluster is the one running under the home;
    without --node-id the node takes the first `index-N` the home has no node of; without --data, its
    directory under the home."""
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
    name = node_id or _free_name(resolved, info)
    return JoinPlan(name, data or resolved / "nodes" / name, urls)


def _free_name(home: Path, info: ClusterInfo | None) -> str:
    taken = set(info.pids) if info is not None else set()
    n = 0
    while f"index-{n}" in taken or (home / "nodes" / f"index-{n}").exists():
        n += 1
    return f"index-{n}"
