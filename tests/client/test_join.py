"""What `quarry node index --join` joins when it is not told: the local cluster on the log under the
home, with the next free node name and a data directory beside the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from quarry.cli.join import joining
from quarry.core.config import ClusterInfo
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2


def record(home: Path, nats: list[str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    pids = {"index-0": 1, "index-1": 2, "nats-0": 3}
    ClusterInfo(home=str(home), ingest="", query="", index=[], vector="", pids=pids, nats=nats).save(home)


def test_without_options_it_joins_the_homes_cluster_as_the_next_index_node(tmp_path: Path) -> None:
    record(tmp_path, ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"])
    (tmp_path / "nodes" / "index-2").mkdir(parents=True)  # a node that ran here before
    plan = joining(tmp_path, None, None, None)
    assert (plan.node_id, plan.data, plan.nats) == (
        "index-3",
        tmp_path / "nodes" / "index-3",
        ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"],
    )


def test_given_options_win(tmp_path: Path) -> None:
    plan = joining(tmp_path, "nats://a:4222, nats://b:4222", "index-7", tmp_path / "data")
    assert (plan.node_id, plan.data, plan.nats) == ("index-7", tmp_path / "data", ["nats://a:4222", "nats://b:4222"])


def test_a_home_without_a_cluster_on_the_log_is_a_clear_error(tmp_path: Path) -> None:
    record(tmp_path, [])
    with pytest.raises(QuarryError) as refused:
        joining(tmp_path, None, None, None)
    assert (refused.value.code, refused.value.parameter) == (errors_pb2.INVALID_REQUEST, "--nats")
    assert "quarry up --log nats" in refused.value.message
