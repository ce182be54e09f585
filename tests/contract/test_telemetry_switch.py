"""Tracing is off unless an exporter receives the spans: no interceptors, no recorded spans."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
from quarry.core import telemetry
telemetry.setup_telemetry("probe")
channel = telemetry.traced_channel("127.0.0.1:1")
print(telemetry.tracing_enabled(), len(telemetry.server_interceptors()), type(channel).__module__)
"""


def _probe(exporter: str) -> list[str]:
    env = {"QUARRY_OTEL_EXPORTER": exporter, "PATH": ""}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_no_exporter_means_no_tracing_machinery() -> None:
    enabled, interceptors, channel_module = _probe("none")
    assert (enabled, interceptors) == ("False", "0")
    assert channel_module.startswith("grpc.")  # a plain channel, not the OpenTelemetry wrapper


def test_an_exporter_turns_tracing_on() -> None:
    enabled, interceptors, channel_module = _probe("console")
    assert (enabled, interceptors) == ("True", "1")
    assert not channel_module.startswith("grpc._channel")
