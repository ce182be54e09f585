"""Where a cluster's data lives and how its nodes find each other.

The data directory is `--home`, else `$QUARRY_HOME`, else a per-user default. Inside it:
`cluster.json` (the addresses and pids of a running local cluster), `nodes/<name>/` (each node's
data) and `logs/<name>.log`.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

CLUSTER_FILE = "cluster.json"
QUERY_NODE = "query"  # the query node's name; also its name in the map when it holds the partitions itself


def default_home() -> Path:
    """The per-user default data directory (XDG data home)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "quarry"


def resolve_home(home: str | Path | None) -> Path:
    if home:
        return Path(home).expanduser().resolve()
    env = os.environ.get("QUARRY_HOME")
    if env:
        return Path(env).expanduser().resolve()
    return default_home()


@dataclass
class ClusterInfo:
    """What `quarry up` records so every other command can reach the cluster."""

    home: str
    ingest: str
    query: str
    index: list[str]
    vector: str
    pids: dict[str, int] = field(default_factory=dict)
    embedder: str = "minilm"
    nats: list[str] = field(default_factory=list)  # a cluster on the log: its NATS servers' URLs
    restarts: dict[str, int] = field(default_factory=dict)  # node -> times the supervisor restarted it
    supervisor: int = 0  # the pid of the process supervising the nodes (`quarry up`)
    tls_ca: str = ""  # the CA of the nodes' certificates, when they serve TLS (`quarry up --tls-dir`)
    http: str = ""  # the web reader's and HTTP API's root URL, when the query node serves HTTP (`--http`)

    def save(self, home: Path) -> None:
        path = home / CLUSTER_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2))
        tmp.replace(path)

    @classmethod
    def load(cls, home: Path) -> ClusterInfo | None:
        path = home / CLUSTER_FILE
        if not path.exists():
            return None
        body = orjson.loads(path.read_bytes())
        known = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in body.items() if key in known})

    @property
    def addresses(self) -> dict[str, object]:
        return {"ingest": self.ingest, "query": self.query, "index": self.index, "vector": self.vector}
