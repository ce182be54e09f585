"""Quarry's gRPC API from Node (@grpc/grpc-js, stubs loaded from proto/ by @grpc/proto-loader): a search, a
unit query, a paged walk and a typed error decoded from grpc-status-details-bin, against a live 2-partition
cluster. The Node side is tests/node/client.test.mjs; `make node-deps` installs its packages (pinned by
package-lock.json); node and npm come from the machine's package manager (.ci/run installs them if missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from quarry.client.client import QuarryClient
from quarry.core.config import ClusterInfo
from tests.cluster.corpus import write_corpus

pytestmark = pytest.mark.cluster

NODE_TEST = Path(__file__).resolve().parent.parent / "node"
PROTO = NODE_TEST.parent.parent / "proto"

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_TEST / "node_modules").is_dir(),
    reason="node or the Node test's packages are missing: `make node-deps` installs them (CI runs it)",
)


@needs_node
def test_node_client_searches_walks_and_decodes_a_typed_error(
    light_home: Path, light_client: QuarryClient, tmp_path: Path
) -> None:
    write_corpus(tmp_path / "archive")
    assert list(light_client.ingest_paths([tmp_path / "archive"]))[-1].report.issues == []
    info = ClusterInfo.load(light_home)
    assert info is not None
    result = subprocess.run(
        ["node", "--test", "client.test.mjs"],
        cwd=NODE_TEST,
        env={"PATH": os.environ["PATH"], "QUARRY_QUERY": info.query, "QUARRY_PROTO": str(PROTO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# pass 4" in result.stdout and "# fail 0" in result.stdout
