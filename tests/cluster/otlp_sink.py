"""A minimal OTLP/gRPC trace receiver for tests: the nodes export to it with the real OTLP
exporter, and the test reads which services reported spans under which trace id."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class OtlpSink(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.services_by_trace: dict[str, set[str]] = defaultdict(set)
        self.span_names_by_trace: dict[str, list[str]] = defaultdict(list)
        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request, context):
        with self._lock:
            for resource_spans in request.resource_spans:
                attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                service = attributes.get("service.name", "?")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        trace_id = span.trace_id.hex()
                        self.services_by_trace[trace_id].add(service)
                        self.span_names_by_trace[trace_id].append(f"{service}:{span.name}")
        return trace_service_pb2.ExportTraceServiceResponse()

    def wait_for_services(self, trace_id: str, wanted: set[str], timeout: float = 20.0) -> set[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                seen = set(self.services_by_trace.get(trace_id, set()))
            if wanted <= seen:
                return seen
            time.sleep(0.1)
        return seen

    def stop(self) -> None:
        self.server.stop(grace=None)
