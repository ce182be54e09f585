"""A query node holding the partitions works on a few clients' calls at once and queues the rest; the
other nodes' calls never wait."""

from __future__ import annotations

import os
import threading
import time
from concurrent import futures

import grpc
import pytest

from quarry.core import admission

CALLS = 16


class Busy:
    """A handler that stays a while and records how many calls it ran at once."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def handle(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        return request


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(admission, "_slots", None)  # restored after the test
    return admission.limit_to_cpus()


def served(busy: Busy) -> tuple[grpc.Server, int]:
    method = {"Call": grpc.unary_unary_rpc_method_handler(busy.handle)}
    handlers = [
        grpc.method_handlers_generic_handler(service, method)
        for service in ("quarry.v1.QueryService", "quarry.v1.IndexService")
    ]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=CALLS), interceptors=admission.server_interceptors())
    server.add_generic_rpc_handlers(handlers)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def most_at_once(service: str) -> int:
    busy = Busy()
    server, port = served(busy)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(f"/{service}/Call")
            with futures.ThreadPoolExecutor(CALLS) as pool:
                assert list(pool.map(lambda i: call(bytes([i]), timeout=30), range(CALLS))) == [
                    bytes([i]) for i in range(CALLS)
                ]
    finally:
        server.stop(None)
    return busy.most


def test_a_clients_calls_wait_for_one_of_two_slots_per_cpu(limited: int) -> None:
    assert limited == admission.ADMITTED_PER_CPU * len(os.sched_getaffinity(0)) < CALLS
    assert 1 < most_at_once("quarry.v1.QueryService") <= limited


def test_another_nodes_calls_never_wait(limited: int) -> None:
    assert most_at_once("quarry.v1.IndexService") > limited


def test_a_process_that_admits_every_call_has_no_interceptor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission, "_slots", None)
    assert admission.server_interceptors() == []
    assert admission.run_admitted(sum, [1, 2]) == 3
