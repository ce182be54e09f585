"""OpenTelemetry setup shared by every node and client.

Exporter by configuration: `QUARRY_OTEL_EXPORTER` = none (default) | console | otlp (endpoint from
the standard OTEL_EXPORTER_OTLP_ENDPOINT). With an exporter, gRPC interceptors make every hop a span
and carry the W3C trace context in the call metadata.

With `none`, tracing is off in that process: no provider is installed, spans are no-ops and channels
and servers carry no interceptors. Recording spans that nobody receives cost ~0.6 ms per gRPC hop
on a 2-core machine (bench/RESULTS.md), for nothing. A process that installs its own tracer provider
(an application embedding the client library) gets traced channels.

OpenTelemetry is imported when it is used, not with this module: a client whose tracing is off (the
`quarry` command) never loads it, which saves ~70 ms of its start (issue 13).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from quarry.core import outgoing, tls

if TYPE_CHECKING:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

EXPORTERS = ("none", "console", "otlp")
_provider: TracerProvider | None = None


def _exporter(kind: str) -> SpanExporter | None:
    if kind == "none":
        return None
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if kind == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(insecure=True)
    raise ValueError(f"QUARRY_OTEL_EXPORTER must be one of {', '.join(EXPORTERS)}, not {kind!r}")


def setup_telemetry(
    service_name: str, exporter: str | None = None, extra: SpanExporter | None = None
) -> TracerProvider | None:
    """Install the process-wide tracer provider once, when some exporter will receive its spans;
    later calls return the same provider. None when tracing stays off (exporter `none`, no extra)."""
    global _provider
    if _provider is not None:
        return _provider
    kind = exporter or os.environ.get("QUARRY_OTEL_EXPORTER", "none")
    exporters = [e for e in (_exporter(kind), extra) if e is not None]
    if not exporters:
        return None
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    for span_exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    _provider = provider
    return provider


def tracing_enabled() -> bool:
    """Whether this process has a real tracer provider (ours, or one its host application set). Setting
    one imports opentelemetry.trace, and so does a provider named by $OTEL_PYTHON_TRACER_PROVIDER (which
    get_tracer_provider loads): without either, there is none, and OpenTelemetry stays unimported."""
    if "opentelemetry.trace" not in sys.modules and "OTEL_PYTHON_TRACER_PROVIDER" not in os.environ:
        return False
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def shutdown_telemetry() -> None:
    """Flush and stop exporting (at node shutdown)."""
    if _provider is not None:
        _provider.shutdown()


def server_interceptors() -> list[grpc.ServerInterceptor]:
    if not tracing_enabled():
        return []
    from opentelemetry import trace
    from opentelemetry.instrumentation.grpc import server_interceptor

    return [server_interceptor(tracer_provider=trace.get_tracer_provider())]


# The largest message a Quarry node or client sends or takes: one session travels as one message
# (IngestSessions, UpsertSessions), and a long agent log parses to about four times its bytes, so 1 GiB
# carries a log of some 250 MB (protobuf itself stops at 2 GiB).
MAX_MESSAGE_BYTES = 1 << 30


def traced_channel(
    address: str, bearer: str | None = None, tls_ca: Path | None = None, client_tls: bool = False
) -> grpc.Channel:
    """A channel whose calls are client spans carrying the current trace context (a plain channel when
    tracing is off), and carry what quarry.core.outgoing adds: a client's `bearer` token, or a node's cluster
    key and its caller's scopes. TLS (quarry.core.tls): a client's with the cluster's CA `tls_ca` (with
    `client_tls` and no CA: the system's roots), a node's with its own certificate; plaintext otherwise."""
    credentials = (
        tls.client_channel_credentials(tls_ca) if tls_ca is not None or client_tls else tls.node_channel_credentials()
    )
    options = [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        # A node restarted on its port is found again within a second (gRPC's defaults back off
        # to two minutes), and a dead one fails calls at once rather than holding them.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]
    channel = (
        grpc.secure_channel(address, credentials, options=options)
        if credentials is not None
        else grpc.insecure_channel(address, options=options)
    )
    added = outgoing.interceptor(bearer)
    if added is not None:
        channel = grpc.intercept_channel(channel, added)
    if not tracing_enabled():
        return channel
    from opentelemetry import trace
    from opentelemetry.instrumentation.grpc import client_interceptor, grpcext

    # grpcext, not grpc.intercept_channel: the OpenTelemetry interceptor implements grpcext's interface.
    return grpcext.intercept_channel(channel, client_interceptor(tracer_provider=trace.get_tracer_provider()))


def tracer(name: str) -> trace.Tracer:
    from opentelemetry import trace

    return trace.get_tracer(name)
