"""Calls to the partitions a query node holds itself go through the generated stubs without the wire,
and behave as calls over it: typed errors come back typed, a crash comes back as a failed call, and the
servicer runs with the scopes the call would have carried."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from quarry.core import auth
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.in_process import InProcessError, InProcessServices
from quarry.core.node import typed_errors
from quarry.core.outgoing import SCOPES
from quarry.core.tokens import TokenStore
from quarry.v1 import errors_pb2, index_pb2, index_pb2_grpc


class RecordingIndex(index_pb2_grpc.IndexServiceServicer):
    def __init__(self) -> None:
        self.seen: list[tuple[object, frozenset[str] | None]] = []

    @typed_errors
    def Stats(self, request: index_pb2.PartitionStatsRequest, context: grpc.ServicerContext):
        self.seen.append((auth.CALLER.get(), SCOPES.get()))
        if request.partitions == [7]:
            raise QuarryError(errors_pb2.NOT_HOSTED, "partition 7 is not held by this node")
        if request.partitions == [8]:
            raise ZeroDivisionError("division by zero")
        return index_pb2.NodeStats(partitions=[index_pb2.PartitionStats(partition=p) for p in request.partitions])

    def SearchSessions(self, request: index_pb2.PartitionSearchRequest, context: grpc.ServicerContext):
        raise RuntimeError("not wrapped in typed_errors")


@pytest.fixture
def index() -> Iterator[tuple[RecordingIndex, index_pb2_grpc.IndexServiceStub]]:
    servicer, services = RecordingIndex(), InProcessServices()
    index_pb2_grpc.add_IndexServiceServicer_to_server(servicer, services)
    yield servicer, index_pb2_grpc.IndexServiceStub(services.channel())
    auth.configure_node("query", "127.0.0.1", None, None)  # what the tests changed, back to nothing checked


def test_an_answer_is_the_servicers_own(index) -> None:
    _, stub = index
    answer = stub.Stats(index_pb2.PartitionStatsRequest(partitions=[0, 1]), timeout=5)
    assert [p.partition for p in answer.partitions] == [0, 1]


def test_a_typed_error_comes_back_as_the_same_typed_error(index) -> None:
    _, stub = index
    with pytest.raises(InProcessError) as failed:
        stub.Stats(index_pb2.PartitionStatsRequest(partitions=[7]))
    typed = from_rpc_error(failed.value)
    assert (typed.code, typed.message) == (errors_pb2.NOT_HOSTED, "partition 7 is not held by this node")


@pytest.mark.parametrize(("method", "request_"), [
    ("Stats", index_pb2.PartitionStatsRequest(partitions=[8])),
    ("SearchSessions", index_pb2.PartitionSearchRequest()),
])  # fmt: skip
def test_a_crash_is_a_failed_call_naming_it(index, method, request_) -> None:
    _, stub = index
    with pytest.raises(grpc.RpcError) as failed:
        getattr(stub, method)(request_)
    typed = from_rpc_error(failed.value)
    assert typed.code == errors_pb2.INTERNAL and ("division by zero" in typed.message or "not wrapped" in typed.message)


def test_the_servicer_runs_with_the_callers_scopes_and_no_caller(index) -> None:
    servicer, stub = index
    token = SCOPES.set(frozenset({"team-a"}))
    try:
        stub.Stats(index_pb2.PartitionStatsRequest(partitions=[0]))
    finally:
        SCOPES.reset(token)
    assert servicer.seen == [(None, frozenset({"team-a"}))]


def test_a_node_checking_tokens_sends_no_scope_for_a_call_without_one(index, tmp_path) -> None:
    # Fail closed, as over the wire: a call of the node's own with no caller's scopes sees none.
    servicer, stub = index
    tokens = TokenStore(tmp_path / "tokens.json")
    tokens.initialize()
    key = tmp_path / "cluster.key"
    key.write_text("k" * 40)
    auth.configure_node("query", "127.0.0.1", tokens.path, key, holds_partitions=True)
    stub.Stats(index_pb2.PartitionStatsRequest(partitions=[0]))
    assert servicer.seen == [(None, frozenset())]


def test_a_query_node_holding_partitions_with_tokens_needs_the_cluster_key(tmp_path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    tokens.initialize()
    with pytest.raises(QuarryError) as refused:
        auth.configure_node("query", "127.0.0.1", tokens.path, None, holds_partitions=True)
    assert refused.value.parameter == "--cluster-key-file"
    auth.configure_node("query", "127.0.0.1", None, None)
