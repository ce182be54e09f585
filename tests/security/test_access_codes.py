"""A refusal of the caller is named as what it is on every call of the session API: through gRPC the
status and the ErrorDetail say UNAUTHENTICATED for a token the cluster does not know and PERMISSION_DENIED
for one without `read`, and neither the SDK nor the CLI ever names it a failure of storage
(SESSION_QUERY_PERSISTENCE_FAILED, docs/sessions.md#errors) or of an index."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import grpc
import orjson
import pytest
from grpc_status import rpc_status

from quarry.client.client import QuarryClient
from quarry.client.sessions import SessionsClient, session_query_code
from quarry.core.errors import QuarryError
from quarry.core.tokens import TokenStore
from quarry.v1 import errors_pb2, sessions_pb2, sessions_pb2_grpc
from tests.security.team_cluster import TeamCluster

pytestmark = pytest.mark.cluster

SESSION = "claude-code-session:0f6c1f0e-5a4e-4c1e-9d43-2d0f3b7f5b11"
# Every call of the session API (by its SDK method name, which session_query_code takes).
CALLS: dict[str, Callable[[SessionsClient], Any]] = {
    "list": lambda s: s.list(),
    "read": lambda s: s.read(SESSION),
    "surface": lambda s: s.surface(SESSION),
    "events": lambda s: s.events(SESSION),
    "event": lambda s: s.event(SESSION, 0),
    "trace_event": lambda s: s.trace_event(SESSION, 0),
    "lineage": lambda s: s.lineage(SESSION),
    "titles": lambda s: s.titles([SESSION]),
    "search_sessions": lambda s: s.search_sessions("vault"),
    "search_events": lambda s: s.search_events(SESSION, "vault"),
}
REFUSALS = {  # who -> (the code, the gRPC status)
    "writer": (errors_pb2.PERMISSION_DENIED, grpc.StatusCode.PERMISSION_DENIED),
    "stranger": (errors_pb2.UNAUTHENTICATED, grpc.StatusCode.UNAUTHENTICATED),
}


@pytest.fixture(scope="module")
def tokens(teams: TeamCluster) -> dict[str, str]:
    """A token holding `write` alone (no `read`) on team-a, and one the cluster never issued."""
    writer, _ = TokenStore.in_home(teams.local.home).create("writer", {"team-a": ["write"]})
    return {"writer": writer, "stranger": "qry_000000000000_not-a-token-of-this-cluster"}


@pytest.mark.parametrize("who", REFUSALS)
def test_the_grpc_status_and_detail_name_the_refusal(teams: TeamCluster, tokens: dict[str, str], who: str) -> None:
    code, status = REFUSALS[who]
    with grpc.insecure_channel(teams.local.info().query) as channel:
        stub = sessions_pb2_grpc.SessionQueryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ListSessions(
                sessions_pb2.ListSessionsRequest(), metadata=[("authorization", f"Bearer {tokens[who]}")], timeout=30
            )
    assert refused.value.code() == status
    [packed] = rpc_status.from_call(refused.value).details
    detail = errors_pb2.ErrorDetail()
    assert packed.Unpack(detail) and detail.code == code


@pytest.mark.parametrize("who", REFUSALS)
def test_no_call_names_a_refusal_as_a_storage_failure(teams: TeamCluster, tokens: dict[str, str], who: str) -> None:
    code, _ = REFUSALS[who]
    info = teams.local.info()
    with QuarryClient(info.query, info.ingest, token=tokens[who]) as client:
        for operation, call in CALLS.items():
            with pytest.raises(QuarryError) as refused:
                call(client.sessions)
            assert refused.value.code == code, operation
            assert session_query_code(refused.value, operation) == "", operation


def test_the_cli_prints_the_refusal_by_its_code_alone(teams: TeamCluster, tokens: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "QUARRY_TOKEN"} | {"QUARRY_TOKEN": tokens["writer"]}
    command = [sys.executable, "-m", "quarry.cli", "--home", str(teams.local.home)]
    plain = subprocess.run([*command, "sessions", "read", SESSION], capture_output=True, text=True, env=env)
    assert plain.returncode == 2 and "PERMISSION_DENIED" in plain.stderr, plain.stderr
    assert "SESSION_QUERY" not in plain.stderr
    as_json = subprocess.run(
        [*command, "--format", "json", "sessions", "search", "vault"], capture_output=True, text=True, env=env
    )
    error = orjson.loads(as_json.stdout)["error"]
    assert error["code"] == "PERMISSION_DENIED" and "SESSION_QUERY" not in error["message"]
